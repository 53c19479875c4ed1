"""``manage.py autoscore``: score a campaign's summaries with an automatic presence judge (via Celery)."""

from __future__ import annotations

import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.automation.judges.base import JudgeError
from annotation.management.campaigns import campaign_from_slug
from annotation.models import AutoscoreRun


class Command(BaseCommand):
    help = (
        "SemiAutoQAPyramid (or AutoQAPyramid with --generate-qas): judge every unit of the campaign's summaries "
        "with an automatic judge, in chunks run by Celery workers (in this process when no broker is configured)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--judge", default="trained", help="lexical, rouge1/2/L, trained[:NAME], nli:MODEL, llm[:MODEL]")
        parser.add_argument("--system", action="append", default=[], help="Only this system (repeatable).")
        parser.add_argument("--generate-qas", action="store_true", help="AutoQAPyramid: generate QA pairs from the references.")
        parser.add_argument("--resume", type=int, default=None, metavar="RUN", help="Queue again the unfinished chunks of a run.")
        parser.add_argument("--no-wait", action="store_true", help="Return once the chunks are queued.")
        parser.add_argument("--timeout", type=float, default=3600.0, help="Seconds to wait for the workers.")

    def handle(self, *args, **options):
        from annotation.automation.autoscore import resume_autoscore_run, start_autoscore_run

        campaign = campaign_from_slug(options["campaign"])
        try:
            if options["resume"] is not None:
                run = AutoscoreRun.objects.filter(campaign=campaign, pk=options["resume"]).first()
                if run is None:
                    raise CommandError(f"no autoscore run {options['resume']} in campaign '{campaign.slug}'")
                resume_autoscore_run(run)
            else:
                run = start_autoscore_run(
                    campaign, options["judge"], systems=options["system"] or None, generate_qas=options["generate_qas"]
                )
        except (JudgeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"run {run.pk}: {run.n_chunks} chunks queued with judge {run.judge_name}")
        if options["no_wait"] and not settings.CELERY_TASK_ALWAYS_EAGER:
            return
        deadline = time.monotonic() + options["timeout"]
        while True:
            run.refresh_from_db()
            self.stderr.write(f"\rchunks {run.n_done}/{run.n_chunks} ({run.progress:.0%}) {run.state}   ", ending="")
            if run.state in (AutoscoreRun.State.FINISHED, AutoscoreRun.State.FAILED):
                break
            if time.monotonic() > deadline:
                raise CommandError(f"run {run.pk} not finished after {options['timeout']:.0f} s; see it with --resume {run.pk}")
            time.sleep(1.0)
        self.stderr.write("")
        if run.state == AutoscoreRun.State.FAILED:
            raise CommandError(f"run {run.pk} failed: {run.error}")
        presence = run.results.get("presence") or {}
        tau = (run.results.get("correlation") or {}).get("all", {}).get("kendall", {})
        self.stdout.write(
            f"run {run.pk} finished: {run.timings.get('pairs')} pairs, {run.timings.get('pairs_per_second')} pairs/s"
            + (f"; accuracy {presence['accuracy']:.3f}, F1 of 'present' {presence['f1_present']:.3f}" if presence.get("accuracy") is not None else "")
            + (f"; Kendall tau system {tau.get('system')}, summary {tau.get('summary')}" if tau else "")
        )
        sys.stdout.flush()
