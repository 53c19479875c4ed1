"""``manage.py evaluate_presence_judge``: k-fold evaluation of the trained judge on a labelled folder."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.judges.base import JudgeError

KEYS = ("accuracy", "f1", "summary_pearson", "system_pearson", "summary_kendall", "system_kendall")


class Command(BaseCommand):
    help = "Cross-validate the trained presence judge (folds split by example), optionally zero-shot on a second folder."

    def add_arguments(self, parser):
        parser.add_argument("--folder", required=True)
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument("--test-folder", default=None)
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, **options):
        from annotation.judges.evaluation import cross_validate
        from annotation.judges.trained import dataset_from_folder

        try:
            data = dataset_from_folder(options["folder"])
            test = dataset_from_folder(options["test_folder"]) if options["test_folder"] else None
            result = cross_validate(data, folds=options["folds"], test_data=test)
        except (JudgeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        rows = [("trained judge", result), ("lexical baseline", result["lexical_baseline"])]
        if "zero_shot" in result:
            rows += [("zero-shot", result["zero_shot"]), ("zero-shot lexical", result["zero_shot"]["lexical_baseline"])]
        self.stdout.write(f"{'':<20}" + "".join(f"{k:>17}" for k in KEYS))
        for name, figures in rows:
            self.stdout.write(f"{name:<20}" + "".join(f"{figures[k]:>17.3f}" for k in KEYS))
        self.stdout.write(
            f"{result['pairs']} pairs, {result['folds']} folds: train {result['train_seconds']} s, "
            f"{result['pairs_per_second']} pairs/s inference"
        )
