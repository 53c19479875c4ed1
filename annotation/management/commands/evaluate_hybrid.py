"""``manage.py evaluate_hybrid``: how good are scores with only a share of presence HITs judged by people?"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.automation.judges.base import JudgeError

#: The table's columns: the figures of ``hybrid.KEYS``, the summary r with the judge's units by probability, and
#: the presence assignments people do against the paper's protocol.
TABLE_KEYS = ("accuracy", "summary_pearson", "summary_pearson_probability", "summary_kendall", "system_pearson",
              "system_kendall", "combined_cost_share")


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
        parser.add_argument("--rule", choices=["active", "uncertainty"], default="active",
                            help="Whose figures the top-level keys are: active (random draws with known probabilities, "
                                 "AIPW scores; the default for new campaigns) or uncertainty (the least-sure HITs). Both "
                                 "rules always run: 'summary' holds each one's bias, interval coverage and width.")
        parser.add_argument("--seed", type=int, default=None, help="One seed (default 0): a single run.")
        parser.add_argument("--seeds", default=None, metavar="0,1,2,3,4",
                            help="Several seeds, comma-separated: the pair features are computed once, each figure is "
                                 "reported as the median and range over the seeds (JSON: 'seeds' holds each run).")
        parser.add_argument("--third-judge-rate", type=float, default=None, metavar="RATE",
                            help="Share of routed HITs needing a third judge under the adaptive rule, for the combined "
                                 "cost (default 0.278, measured on the paper's released judgments).")
        parser.add_argument("--test-folder", default=None, help="Also route this folder zero-shot (judge trained on --folder).")
        parser.add_argument("--curve", action="store_true", help="Also the whole curve, shares 0, 0.1, ..., 1.0.")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--save", metavar="NAME", default=None,
                            help="With --curve: keep the result for the judges page (MODELS_DIR/hybrid-curves/NAME.json).")

    def handle(self, *args, **options):
        from annotation.automation.judges.datasets import dataset_from_folder
        from annotation.automation.judges.hybrid import (
            DEFAULT_THIRD_JUDGE_RATE, TRAINED_JUDGES, evaluate_hybrid, evaluate_seeds, parse_seeds,
        )
        from annotation.automation.judges.registry import backends, parse_name

        judge = options["judge"]
        if options["save"] and not options["curve"]:
            raise CommandError("--save keeps the curve: add --curve")
        if judge not in TRAINED_JUDGES and parse_name(judge)[0] in ("trained", "llm", "nli"):
            raise CommandError(f"--judge {judge}: use features (trained per fold here) or an untrained judge "
                               f"({', '.join(b for b in backends() if b not in ('trained', 'llm', 'nli'))})")
        if options["seed"] is not None and options["seeds"] is not None:
            raise CommandError("give either --seed N (one run) or --seeds 0,1,2 (several), not both")
        if options["seed"] is not None and options["seed"] < 0:
            raise CommandError(f"--seed {options['seed']} is negative; seeds are 0 or more")
        rate = DEFAULT_THIRD_JUDGE_RATE if options["third_judge_rate"] is None else options["third_judge_rate"]
        try:
            seeds = parse_seeds(options["seeds"]) if options["seeds"] is not None else None
            data = dataset_from_folder(options["folder"])
            test = dataset_from_folder(options["test_folder"]) if options["test_folder"] else None
            common = dict(folds=options["folds"], share=options["human_share"], judge=judge, rounds=options["rounds"],
                          measure=options["measure"], curve=options["curve"], test_data=test, third_judge_rate=rate,
                          rule=options["rule"])
            if seeds is None:
                result = evaluate_hybrid(data, seed=options["seed"] or 0, **common)
            else:
                result = evaluate_seeds(data, seeds, progress=self._seed_done, **common)
        except (JudgeError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["save"]:
            from annotation.automation.judges.hybrid import save_curve

            result["folder"] = str(options["folder"])
            self.stderr.write(f"saved to {save_curve(result, options['save'])}")
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        self._table(result)

    def _seed_done(self, run: dict) -> None:
        """One line per finished seed on stderr (a long run shows its progress; the line is the seed's whole JSON)."""
        self.stderr.write(f"seed {run['seed']} done: summary r {run['summary_pearson']:.3f}, by probability "
                          f"{run['summary_pearson_probability']:.3f}, random {run['random']['summary_pearson']:.3f}, "
                          f"{run['seconds']['total']} s. JSON: " + json.dumps(run))

    def _table(self, result: dict) -> None:
        ranges = result.get("ranges")
        width = 21 if ranges else 17
        widths = [max(width, len(k) + 2) for k in TABLE_KEYS]
        self.stdout.write(f"{'':<30}{'share':>7}" + "".join(f"{k:>{w}}" for k, w in zip(TABLE_KEYS, widths)))
        rows = [(f"routed ({result['rule']} rule)", ()), ("active rule", ("rules", "active")),
                (f"uncertainty rule ({result['measure']})", ("rules", "uncertainty")), ("random", ("random",))]
        rows += [(f"  measure {m}", ("measures", m)) for m in result["measures"] if m != result["measure"]]
        if "zero_shot" in result:
            rows += [("zero-shot routed", ("zero_shot",)), ("zero-shot random", ("zero_shot", "random"))]
        for number in range(len(result.get("curve", []))):
            rows += [("curve routed", ("curve", number, "routed")), ("curve random", ("curve", number, "random"))]
        for name, path in rows:
            figures, spread = result, ranges
            for step in path:
                figures = figures[step]
                spread = spread[step] if spread is not None else None
            cells = []
            for key, w in zip(TABLE_KEYS, widths):
                cell = _number(figures.get(key))
                if spread is not None and key in spread:
                    low, high = spread[key]
                    cell += f" ({_number(low)}-{_number(high)})"
                cells.append(f"{cell:>{w}}")
            self.stdout.write(f"{name:<30}{figures['human_share']:>7.2f}" + "".join(cells))
        self._summary(result["summary"])
        seeds = result.get("seeds")
        if seeds:
            self.stdout.write(f"medians (min-max) over {len(seeds)} seeds: {', '.join(str(r['seed']) for r in seeds)}")
        self.stdout.write(
            f"{result['pairs']} pairs, {result['presence_hits']} presence HITs, {result['folds']} folds, "
            f"{result['rounds']} round(s), judge {result['judge']}; combined cost = routed HIT share x "
            f"(2 + {result['third_judge_rate']}) / 3 (adaptive third judge); {result['seconds']['total']} s"
        )


    def _summary(self, summary: dict) -> None:
        """Each rule's system scores against the full-human means of the same examples."""
        keys = ("coverage", "mean_bias", "mean_abs_bias", "mae", "ci_width", "system_tau", "system_tau_display",
                "summary_pearson_display")
        self.stdout.write(f"{'system scores vs full-human':<30}" + "".join(f"{k:>{max(len(k) + 2, 9)}}" for k in keys))
        for name, figures in summary.items():
            cells = "".join(f"{_number(figures.get(k), 4 if 'bias' in k or k == 'mae' else 3):>{max(len(k) + 2, 9)}}" for k in keys)
            self.stdout.write(f"{name + ' rule (' + str(figures['seeds']) + ' seeds)':<30}" + cells)
        self.stdout.write("coverage: share of (system, seed) 95% intervals holding the full-human mean (active: the design "
                          "interval; uncertainty: the bootstrap the leaderboard no longer shows)")


def _number(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
