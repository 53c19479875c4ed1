"""``manage.py prolific_publish --campaign SLUG [--dry-run] [--format json] [--budget-cap USD]``: run a campaign on
Prolific.

Checks every stage's reward against Prolific's minimum hourly pay (refused with the numbers below it), launches a
draft campaign (creating its first HITs), then creates, filters and publishes its studies
(``hits.prolific.publishing``).  Safe to run again: studies already on Prolific are kept (their places grown when
the campaign has more open work), and one whose create call lost its reply is found by its internal name rather
than created twice.

``--dry-run`` sends nothing (and needs no token): it prints ``{"requests": [{"method", "path", "body"}, ...],
"cost_preview": {...}}`` with the exact bodies a publish would send now; what Prolific or the first publish
chooses (group and study ids) shows as a placeholder in angle brackets; a study's completion code is the one the
publish sends (fixed by the kept batch), and the groups' workspace is read as the publish reads it when a token
is set (``GET /users/me/``, nothing changed on Prolific).
For a draft campaign the launch is simulated in a transaction that is rolled back.
"""

from __future__ import annotations

import json
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.management.campaigns import after_launch, launch_line, launched_hits
from annotation.management.commands.mturk_publish import budget_cap_option, campaign_for
from annotation.models import Campaign
from annotation.services.costs import campaign_cost_preview
from annotation.services.pipeline import LaunchError, ensure_batch, launch_campaign
from annotation.services.prolific import check_campaign_hourly
from hits.models import Batch
from hits.markets.money import currency_of, money
from hits.prolific.client import ProlificError
from hits.prolific.money import planned_currency
from hits.prolific.models import ProlificStudy
from hits.prolific.pricing import MIN_HOURLY_SOURCE, HourlyRateTooLow
from hits.prolific.publishing import PublishRefused, planned_requests, publish_batch


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = "Launch (if draft) and publish a campaign's studies on Prolific."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--dry-run", action="store_true", help="Print the requests and the cost preview; send nothing.")
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument("--budget-cap", help="In the workspace's currency: create or grow no study that would take the campaign's Prolific "
                                                 "commitment (rewards, bonuses and fees) over it.")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        if campaign.backend != Campaign.Backend.PROLIFIC:
            raise CommandError(
                f"campaign '{campaign.slug}' runs on {campaign.get_backend_display()}, not Prolific: choose the Prolific "
                "market on its settings page or in the API (backend \"prolific\") before launch, or import it with "
                "--market prolific"
            )
        if campaign.state in (Campaign.State.FINISHED, Campaign.State.CANCELLED):
            raise CommandError(f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}")
        cap = budget_cap_option(options["budget_cap"])
        # The workspace's currency (read, nothing changed): Prolific's minimum and every amount are in it.
        currency = planned_currency(Batch.objects.filter(pk=campaign.batch_id).first())
        try:
            rates = check_campaign_hourly(campaign, currency)
        except HourlyRateTooLow as exc:
            raise CommandError(f"not published: pay below Prolific's minimum hourly rate ({MIN_HOURLY_SOURCE}): {exc}") from None
        if options["dry_run"]:
            return self._dry_run(campaign, cap, rates, options["format"], currency)
        if not settings.PROLIFIC_API_TOKEN:
            raise CommandError("PROLIFIC_API_TOKEN is not set: Prolific's API needs a token (Prolific: Settings > API "
                               "tokens); --dry-run shows the requests without one")
        preview = campaign_cost_preview(campaign, Campaign.Backend.PROLIFIC)
        launched = None
        try:
            with transaction.atomic():
                if campaign.state == Campaign.State.DRAFT:
                    launched = launch_campaign(campaign)
                batch = Batch.objects.get(pk=Campaign.objects.get(pk=campaign.pk).batch_id)
                if cap is not None:
                    Batch.objects.filter(pk=batch.pk).update(budget_cap=cap)
            batch.refresh_from_db()
            report = publish_batch(batch)
        except (PublishRefused, LaunchError, ProlificError, HourlyRateTooLow) as exc:
            again = f"prolific_publish --campaign {campaign.slug}"
            raise CommandError(str(exc) + after_launch(campaign, launched is not None, again)) from None
        studies = ProlificStudy.objects.filter(batch=batch).exclude(prolific_id=None).count()
        if options["format"] == "json":
            self.stdout.write(json.dumps({**report.as_dict(), "currency": currency_of(batch), "launched_hits": None if launched is None else launched_hits(campaign, launched),
                                          "studies": studies, "cost_preview": preview.as_dict()}, indent=2))
            return
        if launched is not None:
            self.stdout.write(launch_line(campaign, launched) + " created.")
        self.stdout.write(
            f"Created {len(report.created)} studies ({report.recovered} found again by name), published "
            f"{len(report.published)}, grew {len(report.grown)}; {studies} on Prolific; {money(report.committed, batch)} committed."
        )
        for error in report.errors:
            self.stdout.write(self.style.WARNING(f"{error.get('study') or error.get('group')}: {error['error']}"))
        if report.stopped:
            self.stdout.write(self.style.WARNING(f"Stopped: {report.stopped}."))

    def _dry_run(self, campaign, cap, rates, fmt, currency):
        preview = campaign_cost_preview(campaign, Campaign.Backend.PROLIFIC)
        provisional = campaign.state == Campaign.State.DRAFT
        # The batch (its random key names the studies and groups) is kept: the real publish then sends these names.
        batch = ensure_batch(campaign)
        requests: list[dict] = []
        try:
            with transaction.atomic():
                if provisional:
                    launch_campaign(campaign)
                batch.refresh_from_db()
                if cap is not None:
                    batch.budget_cap = cap
                batch.currency = currency  # in memory: the hourly check and the bodies in the workspace's currency
                requests = planned_requests(batch)
                raise _Rollback
        except _Rollback:
            pass
        except (LaunchError, HourlyRateTooLow) as exc:
            raise CommandError(str(exc)) from None
        result = {
            "campaign": campaign.slug,
            "backend": Campaign.Backend.PROLIFIC.value,
            "currency": currency,
            "provisional_hit_ids": provisional,
            "hourly": [rate.as_dict() for rate in rates],
            "requests": requests,
            "cost_preview": preview.as_dict(),
        }
        if fmt == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        for request in requests:
            body = request["body"]
            what = body.get("internal_name") or body.get("name") or body
            self.stdout.write(f"{request['method']} {request['path']}: {what}")
        self.stdout.write(f"{len(requests)} requests; cost preview {money(preview.total, currency)} (rewards "
                          f"{money(preview.rewards, currency)} + Prolific's fee {money(preview.fees, currency)}, "
                          f"estimated at the campaign's fee rate).")
