"""``manage.py mturk_publish --campaign SLUG [--sandbox] [--dry-run] [--format json]``: run a campaign on MTurk.

Launches a draft campaign (creating its first HITs) and publishes every
unpublished open HIT of its batch on MTurk, after checking that the account
balance covers the campaign's cost preview.  Safe to run again: HITs already
on MTurk are skipped, and one interrupted half-way is found by its request
token rather than created twice.

``--dry-run`` calls no AWS API: it prints the CreateHIT requests (boto3
parameter names) and the cost preview.  For a draft campaign the launch is
simulated in a transaction that is rolled back, so the HIT ids in the
request tokens are provisional.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.management.campaigns import after_launch, launch_line
from annotation.models import Campaign
from annotation.services.costs import campaign_cost_preview
from annotation.services.pipeline import LaunchError, ensure_batch, launch_campaign
from hits.models import Batch
from hits.mturk import fees
from hits.mturk.client import MTurk, MTurkError
from hits.mturk.models import MTurkHIT
from hits.mturk.publishing import PublishRefused, check_balance, planned_requests, progress, publish_batch
from hits.outbox import send_now


class _Rollback(Exception):
    pass


def campaign_for(slug: str) -> Campaign:
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None:
        raise CommandError(f"no campaign '{slug}'")
    return campaign


def mturk_backend(campaign: Campaign, sandbox: bool) -> str:
    """The MTurk backend to use: ``--sandbox`` forces the sandbox, otherwise the campaign's own setting."""
    if campaign.backend == Campaign.Backend.PROLIFIC:
        raise CommandError(
            f"campaign '{campaign.slug}' runs on Prolific, not MTurk: publish it with "
            f"'manage.py prolific_publish --campaign {campaign.slug}' (or set its market to MTurk on its settings page first)"
        )
    if sandbox:
        return Campaign.Backend.MTURK_SANDBOX
    if campaign.backend == Campaign.Backend.LOCAL:
        raise CommandError(
            f"campaign '{campaign.slug}' runs on local workers: set its backend to mturk-sandbox or mturk-live, or pass --sandbox"
        )
    return campaign.backend


def use_backend(campaign: Campaign, backend: str) -> Batch:
    """Point the campaign and its batch at ``backend``; refused once HITs are on another MTurk account."""
    batch = ensure_batch(campaign)
    if batch.backend != backend and MTurkHIT.objects.filter(hit__batch=batch).exists():
        raise CommandError(f"campaign '{campaign.slug}' already has HITs on {batch.backend}; it cannot move to {backend}")
    Campaign.objects.filter(pk=campaign.pk).update(backend=backend)
    Batch.objects.filter(pk=batch.pk).update(backend=backend)
    campaign.backend = batch.backend = backend
    return batch


def budget_cap_option(raw: str | None) -> Decimal | None:
    """``--budget-cap`` (USD) checked: None when not given; an error naming the option for anything but an amount > 0."""
    if raw is None:
        return None
    try:
        cap = Decimal(raw).quantize(fees.CENT)
    except InvalidOperation:
        raise CommandError(f"--budget-cap '{raw}' is not an amount of money") from None
    if not cap.is_finite() or cap <= 0:
        raise CommandError("--budget-cap must be more than 0")
    return cap


def requests_cost(requests: list[dict]) -> Decimal:
    """Exact money the listed CreateHIT requests commit: sum of (reward + fee) x MaxAssignments."""
    return sum((fees.hit_commitment(Decimal(r["Reward"]), r["MaxAssignments"]) for r in requests), Decimal("0.00"))


class Command(BaseCommand):
    help = "Launch (if draft) and publish a campaign's HITs on Amazon Mechanical Turk."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--sandbox", action="store_true", help="Use the MTurk sandbox whatever the campaign's backend.")
        parser.add_argument("--dry-run", action="store_true", help="Print the requests and costs; call no AWS API.")
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument("--budget-cap", help="USD: stop publishing before the campaign's MTurk spending would exceed it.")
        parser.add_argument("--limit", type=int, help="Publish at most this many HITs now.")
        parser.add_argument(
            "--background", action="store_true",
            help="Hand the publishing to Celery (MTURK_PUBLISH_CHUNK HITs per task); follow it with mturk_sync or --progress.",
        )
        parser.add_argument("--progress", action="store_true", help="Only show how far publishing has gone.")
        parser.add_argument("--redo-share", type=float, default=0.10,
                            help="Cost preview: expected share of predicates that go round again (default 0.10).")
        parser.add_argument("--judges", type=int,
                            help="Cost preview: expected presence judges, each meeting every gold check once "
                                 "(default: from the campaign's gold share).")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        if options["progress"]:
            if campaign.batch is None:
                raise CommandError(f"campaign '{campaign.slug}' has no HITs yet")
            self.stdout.write(json.dumps(progress(campaign.batch)))
            return
        backend = mturk_backend(campaign, options["sandbox"])
        cap = self._cap(options["budget_cap"])
        if not 0 <= options["redo_share"] <= campaign.max_redo_rounds:
            raise CommandError(f"--redo-share must be between 0 and the campaign's max_redo_rounds ({campaign.max_redo_rounds})")
        if options["judges"] is not None and options["judges"] < 1:
            raise CommandError("--judges must be at least 1")
        self.estimate = {"redo_share": options["redo_share"], "judges": options["judges"]}
        if options["dry_run"]:
            return self._dry_run(campaign, backend, cap, options["format"])
        if campaign.state in (Campaign.State.FINISHED, Campaign.State.CANCELLED):
            raise CommandError(f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}")
        preview = campaign_cost_preview(campaign, backend, **self.estimate)
        mturk = MTurk(sandbox=backend == Campaign.Backend.MTURK_SANDBOX)
        created = None
        try:
            if campaign.state == Campaign.State.DRAFT:
                # The launch is refused when the balance cannot cover the whole campaign's preview.
                balance = check_balance(mturk, preview.total)
                self.stdout.write(f"Balance ${balance} covers the cost preview of ${preview.total}.")
            with transaction.atomic():
                batch = use_backend(campaign, backend)
                if cap is not None:
                    Batch.objects.filter(pk=batch.pk).update(budget_cap=cap)
                    batch.budget_cap = cap
                created = launch_campaign(campaign) if campaign.state == Campaign.State.DRAFT else None
            if created is not None:  # after the commit: the routing pass has posted its HITs
                self.stdout.write(launch_line(campaign, created) + " created.")
            batch.refresh_from_db()
            if options["background"]:
                send_now("hits.mturk.publish_batch", [batch.pk])
                self.stdout.write(f"Publishing handed to Celery: {json.dumps(progress(batch))}")
                return
            report = publish_batch(batch, limit=options["limit"], mturk=mturk)
        except (PublishRefused, LaunchError, MTurkError) as exc:
            again = f"mturk_publish --campaign {campaign.slug}" + (" --sandbox" if options["sandbox"] else "")
            raise CommandError(str(exc) + after_launch(campaign, created is not None, again)) from None
        total = MTurkHIT.objects.filter(hit__batch=batch).count()
        if options["format"] == "json":
            self.stdout.write(json.dumps({**report.as_dict(), "on_mturk": total, "cost_preview": preview.as_dict()}, indent=2))
            return
        self.stdout.write(
            f"Published {report.published} HITs ({report.recovered} found again by request token); "
            f"{total} on MTurk, {report.remaining} waiting; ${report.committed} committed."
        )
        if report.stopped:
            self.stdout.write(self.style.WARNING(f"Stopped: {report.stopped}."))

    def _cap(self, raw):
        return budget_cap_option(raw)

    def _dry_run(self, campaign, backend, cap, fmt):
        preview = campaign_cost_preview(campaign, backend, **self.estimate)
        provisional = campaign.state == Campaign.State.DRAFT
        requests: list[dict] = []
        try:
            with transaction.atomic():
                batch = use_backend(campaign, backend)
                if cap is not None:
                    batch.budget_cap = cap
                if provisional:
                    launch_campaign(campaign)
                requests = planned_requests(batch)
                raise _Rollback
        except _Rollback:
            pass
        except LaunchError as exc:
            raise CommandError(str(exc)) from None
        result = {
            "campaign": campaign.slug,
            "backend": backend,
            "provisional_hit_ids": provisional,
            "requests": requests,
            "requests_cost": str(requests_cost(requests)),
            "cost_preview": preview.as_dict(),
        }
        if fmt == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        for request in requests:
            self.stdout.write(
                f"{request['UniqueRequestToken']}: {request['Title']} ${request['Reward']} x {request['MaxAssignments']}"
            )
        self.stdout.write(
            f"{len(requests)} CreateHIT requests committing ${result['requests_cost']}; "
            f"campaign cost preview ${preview.total} (rewards ${preview.rewards} + fees ${preview.fees})."
        )
