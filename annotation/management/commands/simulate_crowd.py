"""``manage.py simulate_crowd``: simulated workers do a campaign's HITs through the real pages over HTTP.

``--mode fast`` (local backend) calls the services behind the pages instead, in-process and without rendering
HTML (``annotation.management.simulation.service_driver``): a campaign at the paper's size in minutes, not hours.
A local rehearsal ends with its money reconciled (``--approve``: after the simulated researcher approved it all).

``--backend mturk`` rehearses an MTurk campaign on the local MTurk stand-in (``manage.py mturk_standin``,
with ``MTURK_ENDPOINT_URL`` pointing at it): simulated MTurk workers find and accept the HITs there, work
on the framed pages and submit through the stand-in's externalSubmit; the platform's sync runs between
rounds.

``--backend prolific`` rehearses a Prolific campaign on the Prolific stand-in that ``PROLIFIC_API_URL`` points at
(``manage.py prolific_standin``; it must be running: its state outlives the command, so ``prolific_sync``,
``prolific_reconcile`` and the payout page see the same studies and money afterwards).  The command publishes
the campaign's studies, then simulated participants start them on the stand-in, work on the platform's pages and
come back with the completion code; screening, a return, a time-out, forged ids, the sync, the researcher's
review and the bonuses follow (``annotation.management.simulation.simulate_prolific_crowd``).

On a market the command fails (non-zero exit) with the market's own error when the market refuses the
credentials (one read before anything is launched), and when the work is stuck for a reason the platform can
name (``annotation.management.rehearsal_checks``)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from annotation.management.campaigns import after_launch, campaign_from_slug, launch_line
from annotation.management.rehearsal_checks import RehearsalFailed, check_credentials, why_stuck
from annotation.models import Campaign
from annotation.services.pipeline import LaunchError, launch_campaign
from annotation.management.simulation import MODES, simulate_crowd, simulate_mturk_crowd, simulate_prolific_crowd, standin_state


class Command(BaseCommand):
    help = "Run simulated workers (log in, accept, submit over HTTP) until the campaign is done or stuck."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--workers", type=int, default=8, help="Number of simulated workers (default 8).")
        parser.add_argument("--accuracy", type=float, default=0.95, help="Share of right answers of careful workers (default 0.95).")
        parser.add_argument("--careless", type=int, default=0, help="How many of the workers answer at random.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--url", help="Base URL of a running server (default: serve in-process on loopback).")
        parser.add_argument("--max-seconds", type=float, default=3600)
        parser.add_argument("--backend", choices=["local", "mturk", "prolific"], default="local",
                            help="mturk: MTurk workers on the stand-in at MTURK_ENDPOINT_URL (the campaign's backend must be "
                                 "MTurk); prolific: Prolific participants on the stand-in at PROLIFIC_API_URL (the campaign's "
                                 "market must be Prolific).")
        parser.add_argument(
            "--same-answers", action="store_true",
            help="Presence answers depend on the seed, the unit, the system and the judgments it has so far, not on who "
            "answers: two campaigns on the same data (e.g. one under each presence rule) get the same answers.",
        )
        parser.add_argument(
            "--mode", choices=MODES, default="html",
            help="With the local backend: html (default) drives the worker pages over HTTP; fast calls the services "
            "behind them in-process (same hand-out, validation, quality control and money, no page rendered): for "
            "rehearsals at full size.",
        )
        parser.add_argument(
            "--threads", type=int, default=1,
            help="With --mode fast on PostgreSQL: the simulated workers work in this many threads at once, each with "
            "its own database connection (default 1: one at a time, following --seed exactly). 2 uses both cores of a "
            "small machine; the run then depends on timing as a real crowd's does.",
        )
        parser.add_argument("--approve", action="store_true",
                            help="With the local backend: afterwards the simulated researcher approves all submitted "
                                 "work (as the bulk review does) before the money is reconciled.")
        parser.add_argument("--forged", type=int, default=None,
                            help="With --backend mturk or prolific: forged submissions to try (made-up ids; default 0 on "
                                 "MTurk, 1 on Prolific).")
        parser.add_argument("--reject", type=int, default=1,
                            help="With --backend prolific: completed main-study sessions the simulated researcher rejects "
                                 "whole, with a category and a message (default 1).")

    def handle(self, *args, **options):
        from django.conf import settings

        campaign = campaign_from_slug(options["campaign"])
        if options["backend"] == "mturk":
            if not settings.MTURK_ENDPOINT_URL:
                raise CommandError("--backend mturk needs MTURK_ENDPOINT_URL set to the stand-in (manage.py mturk_standin)")
            if campaign.backend == Campaign.Backend.LOCAL:
                raise CommandError(f"campaign '{campaign.slug}' runs on local workers: set its backend to mturk-sandbox first")
        if options["backend"] == "prolific":
            self._check_prolific(campaign, settings)
        if options["forged"] is not None and options["forged"] < 0:
            raise CommandError("--forged cannot be negative")
        if options["backend"] != "local" and (options["mode"] != "html" or options["approve"]):
            raise CommandError("--mode and --approve are for the local backend; the markets' rehearsals drive the pages")
        if options["threads"] < 1:
            raise CommandError("--threads must be at least 1")
        if options["threads"] > 1 and options["mode"] != "fast":
            raise CommandError("--threads is for --mode fast")
        if options["threads"] > 1 and connection.vendor != "postgresql":
            raise CommandError(f"--threads needs PostgreSQL (DATABASE_URL): {connection.vendor} lets one connection write at a time")
        if options["reject"] < 0:
            raise CommandError("--reject cannot be negative")
        if not 0.0 <= options["accuracy"] <= 1.0:
            raise CommandError("--accuracy must be between 0 and 1")
        if options["workers"] < 1 or not 0 <= options["careless"] <= options["workers"]:
            raise CommandError("--workers must be at least 1 and --careless between 0 and --workers")
        if options["backend"] != "local":
            try:
                check_credentials(campaign)
            except RehearsalFailed as exc:
                raise CommandError(str(exc)) from None
        launched = campaign.state == Campaign.State.DRAFT
        if launched:
            try:
                created = launch_campaign(campaign)
            except LaunchError as exc:
                raise CommandError(f"cannot launch: {exc}") from None
            self.stdout.write(launch_line(campaign, created))
            campaign.refresh_from_db()
        try:
            self._rehearse(campaign, options, settings)
        except CommandError as exc:
            raise CommandError(str(exc) + after_launch(campaign, launched, self._again(options))) from None
        except Exception as exc:  # noqa: BLE001 - the campaign is running: say so and how to go on, not a bare traceback
            raise CommandError(f"the rehearsal failed: {exc!r}" + after_launch(campaign, launched, self._again(options))) from exc

    @staticmethod
    def _again(options) -> str:
        mode = f" --mode {options['mode']}" if options["mode"] != "html" else ""
        return f"simulate_crowd --campaign {options['campaign']} --backend {options['backend']} --workers {options['workers']}{mode}"

    def _rehearse(self, campaign, options, settings) -> None:
        if campaign.state != Campaign.State.RUNNING:
            raise CommandError(f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}, not running")
        if options["backend"] == "mturk":
            report = simulate_mturk_crowd(
                campaign,
                options["workers"],
                standin_url=settings.MTURK_ENDPOINT_URL,
                accuracy=options["accuracy"],
                seed=options["seed"],
                careless=options["careless"],
                forged=options["forged"] or 0,
                base_url=options["url"],
                max_seconds=options["max_seconds"],
            )
        elif options["backend"] == "prolific":
            from hits.prolific.client import ProlificError
            from hits.prolific.pricing import HourlyRateTooLow
            from hits.prolific.publishing import PublishRefused

            try:
                report = self._prolific(campaign, options, settings)
            except (ValueError, PublishRefused, ProlificError, HourlyRateTooLow) as exc:
                raise CommandError(str(exc)) from None
        else:
            report = simulate_crowd(
                campaign,
                options["workers"],
                accuracy=options["accuracy"],
                seed=options["seed"],
                careless=options["careless"],
                base_url=options["url"],
                max_seconds=options["max_seconds"],
                same_answers=options["same_answers"],
                mode=options["mode"],
                approve=options["approve"],
                threads=options["threads"],
            )
        for line in report.lines():
            self.stdout.write(line)
        if report.money is not None and report.money.problems:
            raise CommandError("the rehearsal's money does not reconcile: " + "; ".join(report.money.problems))
        reasons = why_stuck(campaign) if report.stuck and options["backend"] != "local" else []
        if reasons:
            raise CommandError("the rehearsal is stuck: " + "; ".join(reasons))

    @staticmethod
    def _check_prolific(campaign, settings) -> None:
        """Only against a stand-in: never Prolific itself (real participants and money)."""
        if campaign.backend != Campaign.Backend.PROLIFIC:
            raise CommandError(f"campaign '{campaign.slug}' runs on {campaign.get_backend_display()}, not Prolific: choose "
                               "the Prolific market on its settings page (or import it with --market prolific) first")
        if not settings.PROLIFIC_API_TOKEN:
            raise CommandError("--backend prolific needs PROLIFIC_API_TOKEN (the stand-in's token, as "
                               "manage.py prolific_standin prints it)")
        try:
            standin_state(settings.PROLIFIC_API_URL)
        except ValueError as exc:
            raise CommandError(f"--backend prolific runs against the Prolific stand-in only: {exc}") from None

    @staticmethod
    def _prolific(campaign, options, settings):
        return simulate_prolific_crowd(
            campaign,
            options["workers"],
            standin_url=settings.PROLIFIC_API_URL,
            accuracy=options["accuracy"],
            seed=options["seed"],
            careless=options["careless"],
            forged=1 if options["forged"] is None else options["forged"],
            reject=options["reject"],
            base_url=options["url"],
            max_seconds=options["max_seconds"],
        )
