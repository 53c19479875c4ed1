"""Every pair of a campaign's systems compared (``annotation.scoring.pairs``): the data each test reads.

``pair_comparisons`` is the one entry point (``campaign_scores``, the leaderboard page and API, the export):
full-human campaigns test the stored per-summary gold scores, paired by example; budgeted campaigns under the
active rule adjust the stored design differences of every pair (``annotation.selectors.hybrid.active_scores``).
At the paper's size (10 systems, 500 examples, 45 pairs) it reads 5,000 stored summary scores and takes a few
milliseconds of arithmetic, so views compute it on read and it follows the stored scores without a cache.
"""

from __future__ import annotations

import numpy as np

from annotation.models import Campaign, SummaryScore, System
from annotation.scoring import active, pairs as pair_tests

ONE_SYSTEM = "only one system: there is no pair to compare"
NO_SYSTEM = "no system yet"
NO_GOLD = "no summary has a gold score yet (no unit decided): no pair can be compared"
NO_DRAW = "no unit has been decided by a draw yet: no pair can be compared"
UNCERTAINTY_RULE = ("no test holds its 5% under the uncertainty rule: the judge chose which units people saw, so no "
                    "difference computed from these labels has a known error (the active rule draws them at random)")


def pair_comparisons(campaign: Campaign, ranking: list[str], hybrid: dict | None = None) -> dict:
    """The campaign's pairwise comparisons, in the keys ``campaign_scores`` carries at its top level:

    ``pairs`` (one entry per pair, S (S - 1) / 2, ``higher`` / ``lower`` / ``difference`` / ``ci95`` /
    ``p_value`` / ``p_holm`` / ``separated`` / ``no_comparison``; budgeted: ``ci95_examples`` too, full-human:
    ``n_examples``), ``pairs_method`` (``paired-t+holm``, ``aipw-design+holm`` or ``none``), ``pairs_statement``
    (the method and its adjustment in one sentence) and ``pairs_no_comparison`` (why no pair is compared, else
    None).  ``ranking``: every system of the campaign, best first (``selectors.scores.rank_systems`` of the figures
    the caller shows); ``hybrid``: the stored hybrid scores when the caller has read them already."""
    if campaign.is_hybrid:
        from annotation.selectors.hybrid import hybrid_scores

        hybrid = hybrid if hybrid is not None else hybrid_scores(campaign) or {}
        if campaign.routing_rule != Campaign.RoutingRule.ACTIVE:
            return _result("none", "No pairwise test under the uncertainty rule.", [], UNCERTAINTY_RULE)
        method = pair_tests.DESIGN
        reason = _too_few(len(ranking))
        if reason is None and not hybrid.get("pairs"):
            reason = NO_DRAW
        pairs = []
        if reason is None:
            # Every pair of the ranking, the stored difference where there is one (a system without a score: none).
            stored = {(p["higher"], p["lower"]): p for p in hybrid["pairs"]}
            pairs = pair_tests.design_comparisons([
                _with_variance(stored.get((a, b)) or {"higher": a, "lower": b, "difference": None})
                for j, a in enumerate(ranking) for b in ranking[j + 1:]
            ])
        return _result(method, pair_tests.METHOD_STATEMENTS[method], pairs, reason)
    method = pair_tests.PAIRED_T
    statement = pair_tests.METHOD_STATEMENTS[method]
    reason = _too_few(len(ranking))
    if reason:
        return _result(method, statement, [], reason)
    rows = np.array(list(SummaryScore.objects.filter(summary__system__campaign=campaign, qapyramid__isnull=False).values_list(
        "summary__example_id", "summary__system_id", "qapyramid")), dtype=float).reshape(-1, 3)
    if not rows.size:
        return _result(method, statement, [], NO_GOLD)
    column_of = {pk: ranking.index(name) for pk, name in System.objects.filter(campaign=campaign, name__in=ranking).values_list("pk", "name")}
    known = np.array([int(pk) in column_of for pk in rows[:, 1]], dtype=bool)
    rows = rows[known]
    examples, row = np.unique(rows[:, 0], return_inverse=True)
    scores = np.full((examples.size, len(ranking)), np.nan)
    scores[row.ravel(), [column_of[int(pk)] for pk in rows[:, 1]]] = rows[:, 2]
    return _result(method, statement, pair_tests.paired_example_comparisons(ranking, scores), None)


def _too_few(n_systems: int) -> str | None:
    return NO_SYSTEM if n_systems == 0 else ONE_SYSTEM if n_systems == 1 else None


def _with_variance(pair: dict) -> dict:
    """A stored difference with its design variance (scores stored before the variance was kept: from the
    half-width of its normal interval, which is 1.96 sqrt(variance))."""
    if pair.get("variance") is not None or pair.get("difference") is None:
        return pair
    low, high = pair.get("ci95") or (None, None)
    if low is None or high is None:
        return {**pair, "variance": None}
    return {**pair, "variance": ((high - low) / (2 * active.Z95)) ** 2}


def _result(method: str, statement: str, pairs: list[dict], reason: str | None) -> dict:
    return {"pairs_method": method if method == "none" else f"{method}+{pair_tests.ADJUSTMENT}",
            "pairs_statement": statement, "pairs": pairs, "pairs_no_comparison": reason}


#: The columns of the export's ``pairs.csv`` (``pair_rows``).
PAIR_COLUMNS = ["higher", "lower", "difference", "ci95_low", "ci95_high", "ci95_examples_low", "ci95_examples_high",
                "p_value", "p_holm", "separated", "n_examples", "no_comparison", "method"]


def pair_rows(comparisons: dict):
    """The rows of ``pairs.csv``: one per pair, empty cells where a figure does not apply."""
    for p in comparisons["pairs"]:
        examples = p.get("ci95_examples") or [None, None]
        yield ["" if v is None else v for v in (
            p["higher"], p["lower"], p["difference"], *p["ci95"], *examples, p["p_value"], p["p_holm"],
            int(p["separated"]), p.get("n_examples"), p["no_comparison"], comparisons["pairs_method"])]


def pair_matrix(comparisons: dict, ranking: list[str]) -> dict:
    """The pairs as a compact upper-triangular matrix for the leaderboard: one row per system but the last, one
    column per system but the first (by rank), cell (i, j) for j > i the row system minus the column system
    (``difference`` signed that way, ``separated``, ``interval`` and ``p_holm`` for its title, or the reason
    it is not compared)."""
    by_pair = {}
    for p in comparisons["pairs"]:
        by_pair[(p["higher"], p["lower"])] = (1, p)
        by_pair[(p["lower"], p["higher"])] = (-1, p)
    rows = []
    for i, name in enumerate(ranking[:-1]):
        cells = []
        for other in ranking[1:]:
            j = ranking.index(other)
            if j <= i:
                cells.append(None)
                continue
            sign, p = by_pair.get((name, other), (1, None))
            if p is None or p["difference"] is None:
                cells.append({"against": other, "difference": None,
                              "reason": p["no_comparison"] if p else "not compared"})
                continue
            low, high = p["ci95"]
            cells.append({
                "against": other, "difference": sign * p["difference"], "separated": p["separated"],
                "interval": [low, high] if sign > 0 else [-high, -low], "p_holm": p["p_holm"],
            })
        rows.append({"rank": i + 1, "system": name, "cells": cells})
    return {"columns": [{"rank": k + 2, "system": name} for k, name in enumerate(ranking[1:])], "rows": rows}
