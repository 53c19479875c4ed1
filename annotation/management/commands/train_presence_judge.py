"""``manage.py train_presence_judge``: train the offline presence judge on gold labels."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.automation.judges.base import JudgeError
from annotation.management.commands.evaluate_presence_judge import add_judge_options, settings_from_options
from annotation.management.campaigns import campaign_from_slug


class Command(BaseCommand):
    help = "Train the offline presence judge on campaigns' gold labels or on REALSumm/PyrXSum-style folders."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", action="append", default=[], help="Campaign slug (repeatable).")
        parser.add_argument("--folder", action="append", default=[], help="Data set folder (repeatable).")
        parser.add_argument("--out", default=None, help="Model name under MODELS_DIR (default PRESENCE_JUDGE_MODEL).")
        parser.add_argument(
            "--validation-share", type=float, default=None,
            help="Share of examples held out to validate (cross-encoder: 0.15, they also pick the epoch and the "
            "threshold; features: 0.2).",
        )
        add_judge_options(parser)

    def handle(self, *args, **options):
        from annotation.automation.judges.datasets import PresenceDataset, dataset_from_campaigns, dataset_from_folder
        from annotation.automation.judges.training import train_presence_judge

        if not options["campaign"] and not options["folder"]:
            raise CommandError("give --campaign SLUG or --folder DIR (each may be repeated)")
        if options["validation_share"] is not None and not 0 <= options["validation_share"] < 1:
            raise CommandError("--validation-share must be in [0, 1)")
        try:
            data = PresenceDataset()
            parts = [dataset_from_campaigns([campaign_from_slug(s) for s in options["campaign"]])] if options["campaign"] else []
            parts += [dataset_from_folder(f) for f in options["folder"]]
            for part in parts:
                for name in ("pairs", "labels", "examples", "systems", "sources"):
                    getattr(data, name).extend(getattr(part, name))
            metadata = train_presence_judge(
                data, options["out"], validation_share=options["validation_share"], kind=options["kind"],
                settings=settings_from_options(options),
            )
        except JudgeError as exc:
            raise CommandError(str(exc)) from None
        summary = {k: metadata[k] for k in ("name", "threshold", "training_data", "validation", "seconds")}
        self.stdout.write(json.dumps(summary, indent=2))
