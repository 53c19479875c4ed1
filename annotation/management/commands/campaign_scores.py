"""``manage.py campaign_scores``: per-system QAPyramid / nQAPyramid and agreement."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from annotation.management.campaigns import campaign_from_slug
from annotation.selectors.scores import campaign_scores
from annotation.services.scores import ensure_summary_scores


class Command(BaseCommand):
    help = "Print a campaign's scores: JSON for scripts (--format json) or a table for people."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument("--bootstrap", type=int, default=1000, help="Bootstrap replicates for intervals.")
        parser.add_argument(
            "--per-summary", action="store_true",
            help="Also every system summary: example, system, qapyramid, p_r, p_l, nqapyramid, length (NLTK word tokens); "
            "under budgeted presence also its hybrid score (hybrid) and its human-judged units.",
        )

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        ensure_summary_scores(campaign)
        result = campaign_scores(campaign, n_boot=options["bootstrap"], per_summary=options["per_summary"])
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        alpha = result["alpha"]
        self.stdout.write(f"Campaign {result['campaign']}: {result['n_units']:,} units, {result['n_judgments']:,} judgments")
        if alpha["pooled"] is not None:
            self.stdout.write(f"Krippendorff's alpha (pooled): {alpha['pooled']:.3f}  95% CI {_ci(alpha['ci95'])}")
        else:
            self.stdout.write("Krippendorff's alpha: undefined (no unit with two judgments, or no disagreement possible)")
        hybrid = result.get("hybrid")
        if hybrid:
            # Budgeted presence: the ranking is on the hybrid scores; the human-only figures follow, by name.
            self.stdout.write(
                f"Ranking (budgeted presence, {hybrid['human_presence_share']:.0%} human share): human labels where people "
                f"judged, judge {hybrid['judge_version'] or hybrid['judge']} elsewhere"
            )
            # The rule the scores follow, and each interval's target (or why there is none).
            estimator = hybrid.get("estimator") or {}
            if estimator.get("name") == "aipw":
                targets = estimator["targets"]
                self.stdout.write(f"Estimator (active rule): {hybrid['rule']}")
                self.stdout.write(f"Design interval: {targets['ci95']}. Example interval: {targets['ci95_examples']}.")
                if hybrid.get("provisional"):
                    self.stdout.write(f"Provisional: {hybrid['undecided_units']} units not decided by a draw yet count as the judge's.")
            else:
                self.stdout.write(f"Scoring rule ({hybrid['scoring']}): {hybrid['rule']} {hybrid.get('no_interval_reason', '')}")
            self.stdout.write(f"{'#':>3} {'system':<32} {'QAPyramid':>9} {'95% CI design':>15} {'95% CI examples':>15} {'human':>6} {'units':>6} {'alpha':>6} {'n':>5}")
            for name, s in result["systems"].items():
                human = "—" if s["human_share"] is None else f"{s['human_share']:.0%}"
                self.stdout.write(
                    f"{s['rank']:>3} {name:<32} {_f(s['qapyramid']):>9} {_ci(s['ci95']):>15} {_ci(s.get('ci95_examples') or [None, None]):>15} "
                    f"{human:>6} {s['n_units']:>6} {_f(alpha['per_system'].get(name), 2):>6} {s['n_summaries']:>5}"
                )
            for name, s in result["systems"].items():
                if s.get("no_interval_reason") and estimator.get("name") == "aipw":
                    self.stdout.write(f"  {name}: {s['no_interval_reason']}")
            self._pairs(result)
            self.stdout.write("")
            self.stdout.write(
                "Human labels only (not a ranking: each figure rests on the summaries and units people judged, "
                "a different part of each system)"
            )
            self.stdout.write(f"{'system':<36} {'QAPyramid':>9} {'95% CI':>15} {'nQAPyramid':>10} {'summaries':>9} {'units':>6}")
            for name, s in result["human_only"].items():
                self.stdout.write(
                    f"{name:<36} {_f(s['qapyramid']):>9} {_ci(s['ci95']):>15} {_f(s['nqapyramid']):>10} "
                    f"{s['n_summaries']:>9} {s['n_units']:>6}"
                )
        else:
            self.stdout.write(f"{'#':>3} {'system':<32} {'QAPyramid':>9} {'95% CI':>15} {'nQAPyramid':>10} {'alpha':>6} {'n':>5}")
            for name, s in result["systems"].items():
                self.stdout.write(
                    f"{s['rank']:>3} {name:<32} {_f(s['qapyramid']):>9} {_ci(s['ci95']):>15} "
                    f"{_f(s['nqapyramid']):>10} {_f(alpha['per_system'].get(name), 2):>6} {s['n_summaries']:>5}"
                )
            self._pairs(result)
        if options["per_summary"]:
            self.stdout.write("")
            self.stdout.write(f"{'example':<24} {'system':<24} {'QAPyramid':>9} {'p_r':>6} {'p_l':>6} {'nQAPyramid':>10} {'length':>6}")
            for s in result["summaries"]:
                self.stdout.write(
                    f"{s['example'][:24]:<24} {s['system'][:24]:<24} {_f(s['qapyramid']):>9} {_f(s['p_r']):>6} {_f(s['p_l']):>6} "
                    f"{_f(s['nqapyramid']):>10} {'—' if s['length'] is None else s['length']:>6}"
                )

    def _pairs(self, result):
        """Every pair of systems: the method in one line, then each pair's difference, interval and verdict."""
        self.stdout.write(f"Every pair of systems ({result['pairs_method']}): {result['pairs_statement']}")
        if result["pairs_no_comparison"]:
            self.stdout.write(f"  No comparison: {result['pairs_no_comparison']}.")
        for p in result["pairs"]:
            if p["no_comparison"]:
                self.stdout.write(f"  {p['higher']} vs {p['lower']}: no comparison ({p['no_comparison']})")
                continue
            verdict = "scores higher than" if p["separated"] else "not separated from"
            examples = f" examples {_ci(p['ci95_examples'])}" if "ci95_examples" in p else ""
            self.stdout.write(f"  {p['higher']} {verdict} {p['lower']}: {_f(p['difference'])} {_ci(p['ci95'])}{examples} "
                              f"p(Holm) {_f(p['p_holm'])}")


def _f(x, digits=3):
    return "—" if x is None else f"{x:.{digits}f}"


def _ci(ci):
    return "[" + _f(ci[0]) + ", " + _f(ci[1]) + "]"
