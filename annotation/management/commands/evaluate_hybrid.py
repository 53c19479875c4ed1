"""``manage.py evaluate_hybrid``: how good are scores with only a share of presence HITs judged by people?"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.automation.judges.base import JudgeError

KEYS = ("accuracy", "summary_pearson", "summary_kendall", "system_pearson", "system_kendall")


class Command(BaseCommand):
    help = (
        "Cross-validate budgeted human presence judgments on a labelled folder: per fold (split by example) the judge "
        "is trained on the other folds, the share of presence HITs it is least sure of keep their gold labels and "
        "the rest take the judge's; random routing at the same share is the baseline."
    )

    def add_arguments(self, parser):
        from annotation.scoring.routing import MEASURES

        parser.add_argument("--folder", required=True, help="A REALSumm/PyrXSum-style folder with labels/.")
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument("--human-share", type=float, default=0.25, help="Share of presence HITs people judge (0-1).")
        parser.add_argument("--judge", default="features",
                            help="features (the frozen-features judge, trained per fold; default) or an untrained "
                                 "registry judge such as lexical, rouge1.")
        parser.add_argument("--rounds", type=int, default=3,
                            help="Spend the budget in R rounds, refitting the judge on the human labels after each.")
        parser.add_argument("--measure", choices=MEASURES, default="expected_errors",
                            help="How unsure the judge is of a HIT (all are reported under 'measures').")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--test-folder", default=None, help="Also route this folder zero-shot (judge trained on --folder).")
        parser.add_argument("--curve", action="store_true", help="Also the whole curve, shares 0, 0.1, ..., 1.0.")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--save", metavar="NAME", default=None,
                            help="With --curve: keep the result for the judges page (MODELS_DIR/hybrid-curves/NAME.json).")

    def handle(self, *args, **options):
        from annotation.automation.judges.datasets import dataset_from_folder
        from annotation.automation.judges.hybrid import TRAINED_JUDGES, evaluate_hybrid
        from annotation.automation.judges.registry import backends, parse_name

        judge = options["judge"]
        if options["save"] and not options["curve"]:
            raise CommandError("--save keeps the curve: add --curve")
        if judge not in TRAINED_JUDGES and parse_name(judge)[0] in ("trained", "llm", "nli"):
            raise CommandError(f"--judge {judge}: use features (trained per fold here) or an untrained judge "
                               f"({', '.join(b for b in backends() if b not in ('trained', 'llm', 'nli'))})")
        try:
            data = dataset_from_folder(options["folder"])
            test = dataset_from_folder(options["test_folder"]) if options["test_folder"] else None
            result = evaluate_hybrid(
                data, folds=options["folds"], share=options["human_share"], judge=judge, rounds=options["rounds"],
                seed=options["seed"], measure=options["measure"], curve=options["curve"], test_data=test,
            )
        except (JudgeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["save"]:
            from annotation.automation.judges.hybrid import save_curve

            result["folder"] = str(options["folder"])
            self.stderr.write(f"saved to {save_curve(result, options['save'])}")
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        self.stdout.write(f"{'':<28}{'share':>7}" + "".join(f"{k:>17}" for k in KEYS))
        rows = [(f"routed ({result['measure']})", result), ("random", result["random"])]
        rows += [(f"  measure {m}", f) for m, f in result["measures"].items() if m != result["measure"]]
        if "zero_shot" in result:
            rows += [("zero-shot routed", result["zero_shot"]), ("zero-shot random", result["zero_shot"]["random"])]
        for point in result.get("curve", []):
            rows += [("curve routed", point["routed"]), ("curve random", point["random"])]
        for name, figures in rows:
            self.stdout.write(f"{name:<28}{figures['human_share']:>7.2f}" + "".join(f"{figures[k]:>17.3f}" for k in KEYS))
        self.stdout.write(
            f"{result['pairs']} pairs, {result['presence_hits']} presence HITs, {result['folds']} folds, "
            f"{result['rounds']} round(s), judge {result['judge']}: {result['seconds']['total']} s"
        )
