"""``manage.py evaluate_presence_judge``: k-fold evaluation of a trained judge kind on a labelled folder."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.automation.judges.base import JudgeError

KEYS = ("accuracy", "f1_present", "summary_pearson", "system_pearson", "summary_kendall", "system_kendall")


def add_judge_options(parser) -> None:
    """The judge kind and the cross-encoder's training settings (defaults: ``CrossEncoderSettings``)."""
    from annotation.automation.judges.crossencoder import CrossEncoderSettings

    defaults = CrossEncoderSettings()
    parser.add_argument("--kind", choices=["cross-encoder", "features"], default="cross-encoder",
                        help="cross-encoder (default) or the frozen-features gradient-boosted judge.")
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--frozen-layers", type=int, default=defaults.frozen_layers,
                        help="Bottom MiniLM layers kept frozen (their states are computed once per pair).")
    parser.add_argument("--max-length", type=int, default=defaults.max_length, help="Tokens per (unit, summary) input.")
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--no-features", action="store_true", help="Cross-encoder head without the pair features.")


def settings_from_options(options):
    from annotation.automation.judges.crossencoder import CrossEncoderSettings

    if not 0 <= options["frozen_layers"] <= 5 or options["epochs"] < 1 or options["max_length"] < 16:
        raise CommandError("--frozen-layers must be 0-5, --epochs at least 1, --max-length at least 16")
    return CrossEncoderSettings(
        frozen_layers=options["frozen_layers"], max_length=options["max_length"], epochs=options["epochs"],
        learning_rate=options["learning_rate"], batch_size=options["batch_size"], use_features=not options["no_features"],
    )


class Command(BaseCommand):
    help = "Cross-validate the trained presence judge (folds split by example), optionally zero-shot on a second folder."

    def add_arguments(self, parser):
        parser.add_argument("--folder", required=True)
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument("--test-folder", default=None)
        parser.add_argument("--format", choices=["json", "table"], default="table")
        add_judge_options(parser)

    def handle(self, *args, **options):
        from annotation.automation.judges.evaluation import cross_validate
        from annotation.automation.judges.datasets import dataset_from_folder

        try:
            data = dataset_from_folder(options["folder"])
            test = dataset_from_folder(options["test_folder"]) if options["test_folder"] else None
            result = cross_validate(data, folds=options["folds"], test_data=test, kind=options["kind"],
                                    settings=settings_from_options(options))
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
