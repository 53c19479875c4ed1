"""Scores of a budgeted campaign: the human labels where people judged a unit, the judge's outputs elsewhere.

Under the active routing rule (``Campaign.RoutingRule.ACTIVE``) each system's score is the AIPW estimate
(``annotation.scoring.active``): with w_u = 1 / (summaries of the system x units of u's summary), f_u the judge's
cross-fitted probability, y_u the human label and, per candidate HIT h, xi_h (posted to people) and pi_h (its
known probability of that),
    theta_hat = sum_u w_u f_u + sum_h xi_h / pi_h sum_{u in h} w_u (y_u - f_u),
unbiased for the full-human score whatever the judge.  Two 95% intervals: the design interval (Deville's variance
per draw; target: the full-human score on these examples) and the example interval (the per-summary AIPW values'
spread over examples; target: the system's score on documents like these).  Pairwise differences come from the
same design.  Per summary, a *display score* (the human label where people judged, the calibrated probability
elsewhere, the raw one when calibration was not applied) is for browsing, not for ranking.

Under the uncertainty rule (people judged the HITs the judge was least sure of), summary i's score is
    s_i = (sum over u in U_i judged by people of their majority label (0/1)
           + sum over u in U_i not judged by people of j_u) / |U_i|
where j_u is the judge's label (0/1) under the campaign's "label" rule, or its probability calibrated on the
campaign's human labels under the "probability" rule (labels while there are too few human labels to calibrate),
and a system's score is the mean of its summaries'.  No interval is given (``NO_INTERVAL_REASON``): the judge chose
which units people saw.  Each system also reports the share of its units people judged, and the scores name the
judge version that labelled the rest.  Units people judged whose majority was a tie take the judge's output.
"""

from __future__ import annotations

import numpy as np
from django.db.models import Count, Q

from annotation import scoring
from annotation.scoring import active
from annotation.scoring.routing import hit_budget
from annotation.services.hybrid import example_progress, examples_needed, routing_finished
from hits.models import HIT
from annotation.models import (
    AutoPresence, Campaign, GoldPresence, HybridScore, PresenceCandidate, PresenceRound, System, SystemSummary,
)



def none_if_nan(x):
    return None if x is None or np.isnan(x) else float(x)


def latest_labelling(campaign: Campaign):
    """The judge's latest labels of the candidate units (an ``AutoscoreRun``), or None before the first pass."""
    last = (
        PresenceRound.objects.filter(campaign=campaign, labelling_run__isnull=False)
        .select_related("labelling_run").order_by("-number").first()
    )
    return last.labelling_run if last else None


def human_labels(campaign: Campaign, unit_ids=None) -> dict[tuple[int, int], bool]:
    """(unit, summary) -> label of the units people judged: the crowd's majority, and the known (imported) labels
    of the routed HITs that became gold checks (people answer those too, but are measured against the key); a
    researcher's gold override replaces either."""
    majority = GoldPresence.objects.filter(
        summary__system__campaign=campaign, origin=GoldPresence.Origin.MAJORITY, present__isnull=False
    )
    if unit_ids is not None:
        majority = majority.filter(unit_id__in=unit_ids)
    labels = {}
    for summary_id, units, answer_key in PresenceCandidate.objects.filter(
        campaign=campaign, hit__kind=HIT.Kind.GOLD
    ).values_list("summary_id", "units", "hit__answer_key"):
        known = (answer_key or {}).get("labels", {})
        for unit in units:
            if str(unit) in known:
                labels[(unit, summary_id)] = bool(known[str(unit)])
    labels.update(((u, s), p) for u, s, p in majority.values_list("unit_id", "summary_id", "present"))
    # A researcher's override (the unit inspector) is a human label too, and the one that counts.
    overrides = GoldPresence.objects.filter(
        summary__system__campaign=campaign, origin=GoldPresence.Origin.OVERRIDE, present__isnull=False
    )
    if unit_ids is not None:
        overrides = overrides.filter(unit_id__in=unit_ids)
    labels.update(((u, s), p) for u, s, p in overrides.values_list("unit_id", "summary_id", "present"))
    return labels


def scoring_rule(campaign: Campaign, calibration: dict | None) -> tuple[str, str]:
    """(the rule the scores use, why): the campaign's setting, or labels while the calibration cannot be fitted."""
    if campaign.judge_scoring == Campaign.JudgeScoring.LABEL:
        return "label", "the campaign's setting: units the judge labels count as its label"
    if calibration and calibration.get("fitted"):
        return "probability", "the campaign's setting: units the judge labels count as its calibrated probability"
    reason = (calibration or {}).get("reason") or "no calibration yet (before the first routing pass)"
    return "label", f"falls back to the judge's labels: {reason}"


def rule_statement(result: dict) -> str:
    """One sentence saying how the hybrid scores were computed (the leaderboard, the export and the command)."""
    judge = "its calibrated probability" if result.get("scoring") == "probability" else "its label"
    return (f"Units people judged count as their majority label; units only the judge labelled count as {judge}"
            + ("" if result.get("scoring") == result.get("setting") else " (" + result.get("scoring_reason", "") + ")") + ".")


#: Under the uncertainty rule no interval is given, and this is why.
NO_INTERVAL_REASON = (
    "No interval: under the uncertainty rule the judge chose which units people saw (the ones it was least sure of), "
    "so no interval computed from these labels holds its 95%. The active rule draws them at random with known "
    "probabilities and gives intervals that do."
)
PAPERS = [
    {"authors": "Zrnic & Candès", "title": "Active Statistical Inference", "year": 2024, "arxiv": "2403.03208"},
    {"authors": "Li, Zrnic & Candès", "title": "robust active statistical inference", "year": 2025, "arxiv": "2511.08991"},
    {"authors": "Angelopoulos, Bates, Fannjiang, Jordan & Zrnic", "title": "Prediction-powered inference",
     "year": 2023, "venue": "Science"},
]
TARGETS = {"ci95": active.TARGET_DESIGN, "ci95_examples": active.TARGET_EXAMPLES}
#: How the active rule's intervals are built (``annotation.scoring.intervals``); stored scores without it predate
#: the construction and are recomputed on the next read (``ensure_hybrid_scores``).
INTERVAL_METHOD = ("Wilson score interval at the estimate's effective sample size, within [0, 1] (a difference within "
                   "[-1, 1]), holding the score; none while no unit of the system was judged by people")
DISPLAY_NOTE = ("Display score: the human label where a person judged the unit, the judge's calibrated probability "
                "elsewhere (its raw probability when calibration was not applied); for browsing summaries, not for ranking systems.")


def estimator_statement() -> str:
    """The active rule's method and assumptions in a few sentences (the leaderboard, the JSON, the README)."""
    return (
        "Each system's score is the augmented inverse-probability-weighted (AIPW) mean over its units: every unit counts "
        "as the judge's cross-fitted probability f, plus (y - f) / pi where people judged it (y their label, pi the "
        "known probability that its HIT went to people). The HITs people judge are drawn at random in each routing "
        "round with these probabilities, favouring the judge's unsure HITs, so the score is unbiased for the "
        "full-human score whatever the judge's quality. Two 95% intervals: the design interval (sampling of HITs per "
        "draw, Deville's variance) targets " + active.TARGET_DESIGN + "; the example interval (the spread of the "
        "per-summary AIPW values over examples) targets " + active.TARGET_EXAMPLES + ". A system is said to score "
        "higher than another only when the design interval of their difference, from the same draws, excludes 0."
    )


def compute_hybrid_scores(campaign: Campaign, seed: int = 0) -> dict | None:
    """Per-system hybrid scores under the campaign's routing rule, with the per-summary scores (``summary_scores``:
    by system, the leaderboard's dots; ``summaries``: one row per summary) and the calibration of the judge's latest
    labels.  None for a campaign that is not budgeted.  Read by the routing pass and the label updates, which store
    it (``annotation.services.hybrid_scores``); pages read the stored copy.

    The active rule: ``active_scores`` (AIPW with two intervals, pairwise differences, display scores per
    summary).  The uncertainty rule: the module docstring's plug-in scores, with no interval (``NO_INTERVAL_REASON``)."""
    if not campaign.is_hybrid:
        return None
    run = latest_labelling(campaign)
    calibration = (run.results or {}).get("calibration") if run else None
    scoring_used, reason = scoring_rule(campaign, calibration)
    rule_active = campaign.routing_rule == Campaign.RoutingRule.ACTIVE
    result = {
        "human_presence_share": campaign.human_presence_share,
        "routing_rule": campaign.routing_rule,
        "judge": campaign.presence_judge,
        "judge_version": run.judge_version if run else None,
        "setting": campaign.judge_scoring,
        "scoring": "aipw" if rule_active else scoring_used,
        "scoring_reason": "the active rule: the AIPW estimate" if rule_active else reason,
        "calibration": calibration,
        "seed": seed,
        "n_units": 0,
        "human_units": 0,
        "systems": {},
        "pairs": [],
        "summary_scores": {},
        "summaries": [],
    }
    if rule_active:
        result["estimator"] = {"name": "aipw", "rule": "active", "statement": estimator_statement(), "targets": TARGETS,
                               "papers": PAPERS, "display_score": DISPLAY_NOTE, "interval": INTERVAL_METHOD}
        result["rule"] = estimator_statement()
        return active_scores(campaign, run, result)
    result["rule"] = rule_statement(result)
    result["estimator"] = {"name": scoring_used, "rule": "uncertainty", "statement": result["rule"], "targets": {},
                           "papers": [], "no_interval_reason": NO_INTERVAL_REASON}
    result["no_interval_reason"] = NO_INTERVAL_REASON
    units = {(u, c_summary) for c_summary, unit_list in PresenceCandidate.objects.filter(campaign=campaign).values_list("summary_id", "units") for u in unit_list}
    if not units:
        return result
    judge = {}
    if run is not None:
        judge = {(u, s): (p, c) for u, s, p, c in AutoPresence.objects.filter(run=run).values_list("unit_id", "summary_id", "present", "calibrated")}
    probability = scoring_used == "probability"
    human = human_labels(campaign)
    summary_info = summaries_of(campaign)
    per_summary: dict[int, list] = {}  # summary -> [units, present (a sum of probabilities under that rule), human units]
    for key in sorted(units):
        if key in human:
            value, by_people = float(human[key]), 1
        elif key in judge:
            label, calibrated = judge[key]
            value, by_people = (float(calibrated) if probability and calibrated is not None else float(label)), 0
        else:
            continue  # neither judged yet (before the first routing pass)
        entry = per_summary.setdefault(key[1], [0, 0.0, 0])
        entry[0] += 1
        entry[1] += value
        entry[2] += by_people
    systems = list(System.objects.filter(campaign=campaign).order_by("name").values_list("pk", "name"))
    position = {pk: i for i, (pk, _) in enumerate(systems)}
    summary_ids = sorted(per_summary)
    if not summary_ids:
        return result
    counts = np.array([per_summary[s] for s in summary_ids], dtype=float)
    scores = counts[:, 1] / counts[:, 0]
    system_index = np.array([position[summary_info[s][1]] for s in summary_ids], dtype=np.int64)
    means = scoring.system_scores(system_index, scores, len(systems))
    for pk, name in systems:
        i = position[pk]
        rows = system_index == i
        n_units = int(counts[rows, 0].sum())
        score = none_if_nan(float(means[i])) if i < len(means) and rows.any() else None
        result["systems"][name] = {
            "qapyramid": score, "score": score,
            # No interval holds its 95% here (NO_INTERVAL_REASON): none is given.
            "ci95": [None, None], "ci_low": None, "ci_high": None, "ci95_examples": [None, None],
            "no_interval_reason": NO_INTERVAL_REASON,
            "n_summaries": int(rows.sum()),
            "n_units": n_units,
            "human_share": (float(counts[rows, 2].sum()) / n_units) if n_units else None,
        }
    result["n_units"] = int(counts[:, 0].sum())
    result["human_units"] = int(counts[:, 2].sum())
    result["summary_scores"] = {name: [float(v) for v in scores[system_index == position[pk]]] for pk, name in systems}
    result["summaries"] = [
        {"summary": s, "example": summary_info[s][2], "system": systems[system_index[k]][1], "score": float(scores[k]), "n_units": int(counts[k, 0]),
         "human_units": int(counts[k, 2])}
        for k, s in enumerate(summary_ids)
    ]
    return result


def summaries_of(campaign: Campaign) -> dict[int, tuple[int, int, str]]:
    """summary -> (example id, system id, example external id)."""
    return {
        pk: (example, system, external)
        for pk, example, system, external in SystemSummary.objects.filter(system__campaign=campaign).values_list(
            "pk", "example_id", "system_id", "example__external_id")
    }


def active_scores(campaign: Campaign, run, result: dict) -> dict:
    """The active rule's scores (``annotation.scoring.active``), from arrays gathered here: per unit of every candidate
    HIT, f = ``AutoPresence.cross_fitted`` (its ``probability`` where none is stored), y = the human label where the
    HIT is done (a tie, or a HIT still with people: NaN, counting as f); per candidate HIT pi, sampled (posted to
    people) and its draw (``stratum``).  A candidate no draw has decided yet counts as f with no residual, and the
    result says ``provisional`` with the count (``undecided_units``); a unit the judge has not labelled yet is left out.
    Per system: ``score`` (= ``qapyramid``, the ranking's figure), ``ci95`` = [``ci_low``, ``ci_high``] (the design
    interval) and ``ci95_examples``; ``pairs``: every pair's difference with both intervals, best first.  Per summary
    (``summaries``, ``summary_scores``): the display score (``DISPLAY_NOTE``)."""
    candidates = list(PresenceCandidate.objects.filter(campaign=campaign).order_by("pk").values_list(
        "summary_id", "units", "inclusion_probability", "stratum", "hit_id", "hit__state", "hit__kind"))
    judge = {}
    if run is not None:
        judge = {(u, s): (p, x, c) for u, s, p, x, c in AutoPresence.objects.filter(run=run).values_list(
            "unit_id", "summary_id", "probability", "cross_fitted", "calibrated")}
    human = human_labels(campaign)
    summary_info = summaries_of(campaign)
    systems = list(System.objects.filter(campaign=campaign).order_by("name").values_list("pk", "name"))
    position = {pk: i for i, (pk, _) in enumerate(systems)}
    summary_row: dict[int, int] = {}
    unit_summary, f, y, unit_hit, display, people = [], [], [], [], [], []
    pi, sampled, stratum = [], [], []
    undecided = pending = 0
    for summary, units, p, draw, hit_id, state, kind in candidates:
        decided = draw is not None and p is not None
        drawn = decided and hit_id is not None
        done = drawn and (state == HIT.State.COMPLETED or kind == HIT.Kind.GOLD)
        h = len(pi)
        pi.append(p if drawn else np.nan)
        sampled.append(drawn)
        stratum.append(draw if decided else np.nan)
        for unit in units:
            key = (unit, summary)
            if key not in judge:
                continue  # the judge has not labelled it yet (before the first routing pass)
            probability, cross_fitted, calibrated = judge[key]
            label = human.get(key)
            undecided += not decided
            pending += drawn and not done
            unit_summary.append(summary_row.setdefault(summary, len(summary_row)))
            f.append(probability if cross_fitted is None else cross_fitted)
            y.append(float(label) if done and label is not None else np.nan)
            unit_hit.append(h)
            display.append(float(label) if label is not None else (calibrated if calibrated is not None else probability))
            people.append(label is not None)
    result["provisional"] = undecided > 0
    result["undecided_units"] = undecided
    result["pending_units"] = pending
    if not unit_summary:
        return result
    summary_ids = sorted(summary_row, key=summary_row.get)
    summary_system = np.array([position[summary_info[s][1]] for s in summary_ids], dtype=np.int64)
    summary_example = np.array([summary_info[s][0] for s in summary_ids], dtype=np.int64)
    arrays = dict(unit_summary=np.array(unit_summary), f=np.array(f, dtype=float), y=np.array(y, dtype=float),
                  unit_hit=np.array(unit_hit), pi=np.array(pi, dtype=float), sampled=np.array(sampled, dtype=bool),
                  stratum=np.array(stratum, dtype=float))
    # One reduced design for every system and every pair (a pair no longer goes over the units again).
    design = active.Design(**arrays, summary_system=summary_system, summary_example=summary_example)
    estimates = [design.system_estimate(k) for k in range(len(systems))]
    unit_system = summary_system[arrays["unit_summary"]]
    people = np.array(people, dtype=bool)
    n_units_of = np.bincount(arrays["unit_summary"], minlength=len(summary_ids))
    display_score = np.bincount(arrays["unit_summary"], weights=np.array(display, dtype=float), minlength=len(summary_ids)) / n_units_of
    human_of = np.bincount(arrays["unit_summary"], weights=people.astype(float), minlength=len(summary_ids))
    for pk, name in systems:
        i = position[pk]
        estimate = estimates[i]
        mine = unit_system == i
        n_units = int(mine.sum())
        score = none_if_nan(estimate["score"]) if estimate else None
        low, high = (none_if_nan(v) for v in estimate["ci95"]) if estimate else (None, None)
        result["systems"][name] = {
            "qapyramid": score, "score": score, "ci95": [low, high], "ci_low": low, "ci_high": high,
            "ci95_examples": [none_if_nan(v) for v in estimate["ci95_examples"]] if estimate else [None, None],
            # Why there is no interval yet (no unit of the system judged by people), else None.
            "no_interval_reason": estimate["no_interval_reason"] if estimate else active.NO_LABEL_REASON,
            "n_summaries": int((summary_system == i).sum()), "n_units": n_units,
            "human_share": float(people[mine].sum()) / n_units if n_units else None,
        }
    index_of = {name: position[pk] for pk, name in systems}
    ranked = sorted((name for name in result["systems"] if result["systems"][name]["score"] is not None),
                    key=lambda name: (-result["systems"][name]["score"], name))
    for j, higher in enumerate(ranked):
        for k, lower in enumerate(ranked[j + 1:], start=j + 1):
            d = design.difference(index_of[higher], index_of[lower])
            low, high = (none_if_nan(v) for v in d["ci95"])
            result["pairs"].append({
                "higher": higher, "lower": lower, "adjacent": k == j + 1, "difference": none_if_nan(d["difference"]),
                "ci95": [low, high], "ci95_examples": [none_if_nan(v) for v in d["ci95_examples"]],
                "variance": none_if_nan(d["variance"]),
                "no_interval_reason": d["no_interval_reason"],
                # "A scores higher than B" only when the design interval of A - B excludes 0.
                "separated": low is not None and low > 0,
            })
    result["n_units"] = len(unit_summary)
    result["human_units"] = int(people.sum())
    result["summary_scores"] = {name: [float(display_score[r]) for r in range(len(summary_ids)) if summary_system[r] == position[pk]]
                                for pk, name in systems}
    result["summaries"] = [
        {"summary": s, "example": summary_info[s][2], "system": systems[summary_system[r]][1], "score": float(display_score[r]),
         "display": True, "n_units": int(n_units_of[r]), "human_units": int(human_of[r])}
        for r, s in enumerate(summary_ids)
    ]
    return result


#: The columns of ``hybrid_units.csv`` (``hybrid_unit_rows``).
UNIT_COLUMNS = ["example", "system", "unit", "human_label", "judge_label", "judge_probability", "judge_calibrated",
                "scored_by", "counted_as", "inclusion_probability", "routed", "stratum", "decided_round", "cross_fitted",
                "display_score"]


def hybrid_unit_rows(campaign: Campaign):
    """Every candidate unit of a budgeted campaign for the export (``UNIT_COLUMNS``), human and judge outputs kept
    apart: example, system, unit, human majority label, judge label, judge probability, calibrated probability (None
    where absent); ``scored_by`` and ``counted_as``, the value the unit counts as in the system's score; then its
    HIT's design: pi (``inclusion_probability``, None under the uncertainty rule or before its draw), xi (``routed``,
    0/1), ``stratum`` (the draw), ``decided_round``, the judge's ``cross_fitted`` probability f, and the unit's
    ``display_score`` (the per-summary views' value).

    Under the active rule a unit counts as f + xi (y - f) / pi (``scored_by`` "people" where its label enters, y from a
    finished HIT, else "judge": f); under the uncertainty rule as the human label ("people") or the judge's label or
    calibrated probability ("judge_label" / "judge_probability"), and its display score is that value.  Ordered by
    example position, system, unit."""
    run = latest_labelling(campaign)
    calibration = (run.results or {}).get("calibration") if run else None
    rule_active = campaign.routing_rule == Campaign.RoutingRule.ACTIVE
    probability = scoring_rule(campaign, calibration)[0] == "probability"
    judge = {}
    if run is not None:
        judge = {(u, s): (y, p, c, x) for u, s, y, p, c, x in AutoPresence.objects.filter(run=run).values_list(
            "unit_id", "summary_id", "present", "probability", "calibrated", "cross_fitted")}
    human = human_labels(campaign)
    info = {pk: (position, example, system) for pk, position, example, system in SystemSummary.objects.filter(
        system__campaign=campaign).values_list("pk", "example__position", "example__external_id", "system__name")}
    design = {}
    for summary, units, pi, draw, decided_round, hit_id, state, kind in PresenceCandidate.objects.filter(campaign=campaign).values_list(
            "summary_id", "units", "inclusion_probability", "stratum", "decided_round", "hit_id", "hit__state", "hit__kind"):
        done = hit_id is not None and (state == HIT.State.COMPLETED or kind == HIT.Kind.GOLD)
        for unit in units:
            design[(unit, summary)] = (pi, int(hit_id is not None), draw, decided_round, done)
    keys = sorted(design, key=lambda k: (info[k[1]][0], info[k[1]][2], k[0]))
    for unit, summary in keys:
        label, p, c, x = judge.get((unit, summary), (None, None, None, None))
        pi, routed, draw, decided_round, done = design[(unit, summary)]
        people = human.get((unit, summary))
        display = float(people) if people is not None else (c if c is not None else p)
        if rule_active:
            f = p if x is None else x
            if f is None:
                by, value = "", None
            elif routed and pi and draw is not None and done and people is not None:
                by, value = "people", f + (float(people) - f) / pi
            else:
                by, value = "judge", f
        elif people is not None:
            by, value = "people", int(people)
        elif label is not None and probability and c is not None:
            by, value = "judge_probability", c
        elif label is not None:
            by, value = "judge_label", int(label)
        else:
            by, value = "", None
        if not rule_active:
            display = value
        yield (info[summary][1], info[summary][2], unit, None if people is None else int(people),
               None if label is None else int(label), p, c, by, value, pi, routed, draw, decided_round, x, display)


def hybrid_scores(campaign: Campaign, with_summaries: bool = False, fresh: bool = False) -> dict | None:
    """The campaign's stored hybrid scores (recomputed after each routing pass and when human labels change, never
    per request); computed here only for a budgeted campaign nothing stored them for yet, or when ``fresh`` (a
    script's choice).  With ``with_summaries`` the per-summary scores are kept (``summary_scores``: the leaderboard's
    dots; ``summaries``)."""
    if not campaign.is_hybrid:
        return None
    stored = None if fresh else HybridScore.objects.filter(campaign=campaign).values_list("data", "computed_at").first()
    if stored is not None:
        result = dict(stored[0])
        result["computed_at"] = stored[1].isoformat()
    else:
        result = compute_hybrid_scores(campaign) or {}
        result["computed_at"] = None
    if not with_summaries:
        result.pop("summary_scores", None)
        result.pop("summaries", None)
    return result


def routing_progress(campaign: Campaign) -> dict:
    """Rounds and the budget spent, for the progress page and the API."""
    counts = PresenceCandidate.objects.filter(campaign=campaign).aggregate(
        candidates=Count("pk"), routed=Count("pk", filter=Q(hit__isnull=False)),
        done=Count("pk", filter=Q(hit__state=HIT.State.COMPLETED) | Q(hit__kind=HIT.Kind.GOLD)),
    )
    budget = hit_budget(counts["candidates"], campaign.human_presence_share)
    # One grouped query for every round's counts (not two per round).
    per_round = {
        row["round"]: row
        for row in PresenceCandidate.objects.filter(campaign=campaign, round__isnull=False).values("round").annotate(
            completed=Count("pk", filter=Q(hit__state=HIT.State.COMPLETED) | Q(hit__kind=HIT.Kind.GOLD)),
            gold_checks=Count("pk", filter=Q(hit__kind=HIT.Kind.GOLD)),
        ).order_by()
    }
    rounds = [
        {
            "number": r.number, "state": r.state, "routed": r.routed, "budget": r.budget, "judge_version": r.judge_version,
            "training_labels": r.training_labels,
            "completed": per_round.get(r.number, {}).get("completed", 0),
            "gold_checks": per_round.get(r.number, {}).get("gold_checks", 0),
        }
        for r in PresenceRound.objects.filter(campaign=campaign).order_by("number")
    ]
    started, total = example_progress(campaign)
    last = rounds[-1] if rounds else None
    waiting = None
    if last is None or last["state"] == PresenceRound.State.DONE:
        number = 1 if last is None else last["number"] + 1
        if number < campaign.n_presence_rounds and started < examples_needed(campaign, number, total):
            # The next round waits for its part of the examples (a QA campaign's examples settle one by one).
            waiting = {"round": number, "opens": True, "examples_needed": examples_needed(campaign, number, total),
                       "examples_started": started}
    elif last["number"] == campaign.n_presence_rounds and started < total:
        # The last round takes the share of the examples still to come.
        waiting = {"round": last["number"], "opens": False, "examples_needed": total, "examples_started": started}
    return {
        "human_share": campaign.human_presence_share,
        "rounds_planned": campaign.n_presence_rounds,
        "examples": total,
        "waiting": waiting,
        "candidates": counts["candidates"],
        "budget": budget,
        "routed": counts["routed"],
        "completed": counts["done"],
        "spent_share": (counts["routed"] / budget) if budget else None,
        "rounds": rounds,
        # The last routing pass that failed (cleared by the next that works): what the judge said, when, how often.
        "error": {"message": campaign.routing_error, "at": campaign.routing_error_at, "failures": campaign.routing_failures}
        if campaign.routing_error else None,
        # The pipeline's own test (which also waits for examples whose presence has not started yet).
        "finished": routing_finished(campaign),
    }
