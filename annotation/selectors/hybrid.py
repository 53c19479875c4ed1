"""Scores of a budgeted campaign: the human gold where people judged a unit, the judge's output elsewhere.

For summary i with units U_i (every unit of its candidate presence HITs), the hybrid score is
    s_i = (sum over u in U_i judged by people of their majority label (0/1)
           + sum over u in U_i not judged by people of j_u) / |U_i|
where j_u is the judge's label (0/1) under the campaign's "label" rule, or its probability calibrated on
the campaign's human labels under the "probability" rule (``annotation.scoring.calibration``; labels while
there are too few human labels to calibrate).  A system's score is the mean of its summaries' scores, with
a 95% percentile bootstrap interval resampling examples (as the gold scores); under the probability rule
each replicate also draws every judge unit's presence from its probability.  Each system also reports the share of its units people
judged, and the scores name the judge version that labelled the rest.  Units people judged whose
majority was a tie left out by the tie rule take the judge's label.
"""

from __future__ import annotations

import numpy as np
from django.db.models import Count, Q

from annotation import scoring
from annotation.scoring.routing import hit_budget
from annotation.services.hybrid import example_progress, examples_needed, routing_finished
from hits.models import HIT
from annotation.models import (
    AutoPresence, Campaign, GoldPresence, HybridScore, PresenceCandidate, PresenceRound, System, SystemSummary,
)

N_BOOT = 1000  # as the gold scores' intervals (annotation.selectors.scores)


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
    of the routed HITs that became gold checks (people answer those too, but are measured against the key)."""
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


def compute_hybrid_scores(campaign: Campaign, n_boot: int = N_BOOT, seed: int = 0) -> dict | None:
    """Per-system hybrid scores (see the module docstring) under the campaign's rule, with the per-summary scores
    (``summary_scores``: by system, the leaderboard's dots; ``summaries``: one row per summary) and the
    calibration of the judge's latest labels.  None for a campaign that is not budgeted.  Read by the routing
    pass and the label updates, which store it (``annotation.services.hybrid_scores``); pages read the stored copy."""
    if not campaign.is_hybrid:
        return None
    run = latest_labelling(campaign)
    calibration = (run.results or {}).get("calibration") if run else None
    scoring_used, reason = scoring_rule(campaign, calibration)
    result = {
        "human_presence_share": campaign.human_presence_share,
        "judge": campaign.presence_judge,
        "judge_version": run.judge_version if run else None,
        "setting": campaign.judge_scoring,
        "scoring": scoring_used,
        "scoring_reason": reason,
        "calibration": calibration,
        "n_boot": n_boot,
        "seed": seed,
        "n_units": 0,
        "human_units": 0,
        "systems": {},
        "summary_scores": {},
        "summaries": [],
    }
    result["rule"] = rule_statement(result)
    units = {(u, c_summary) for c_summary, unit_list in PresenceCandidate.objects.filter(campaign=campaign).values_list("summary_id", "units") for u in unit_list}
    if not units:
        return result
    judge = {}
    if run is not None:
        judge = {(u, s): (p, c) for u, s, p, c in AutoPresence.objects.filter(run=run).values_list("unit_id", "summary_id", "present", "calibrated")}
    probability = scoring_used == "probability"
    human = human_labels(campaign)
    summary_info = dict(
        (pk, (example, system, external))
        for pk, example, system, external in SystemSummary.objects.filter(system__campaign=campaign).values_list(
            "pk", "example_id", "system_id", "example__external_id")
    )
    per_summary: dict[int, list] = {}  # summary -> [units, present (a sum of probabilities under that rule), human units, human present]
    judge_units: list[tuple[int, float]] = []  # (summary, calibrated probability) of the units the judge scores
    for key in sorted(units):
        if key in human:
            value, by_people = float(human[key]), 1
        elif key in judge:
            label, calibrated = judge[key]
            value, by_people = (float(calibrated) if probability and calibrated is not None else float(label)), 0
            judge_units.append((key[1], value))
        else:
            continue  # neither judged yet (before the first routing pass)
        entry = per_summary.setdefault(key[1], [0, 0.0, 0, 0])
        entry[0] += 1
        entry[1] += value
        entry[2] += by_people
        entry[3] += value if by_people else 0
    systems = list(System.objects.filter(campaign=campaign).order_by("name").values_list("pk", "name"))
    position = {pk: i for i, (pk, _) in enumerate(systems)}
    summary_ids = sorted(per_summary)
    if not summary_ids:
        return result
    counts = np.array([per_summary[s] for s in summary_ids], dtype=float)
    scores = counts[:, 1] / counts[:, 0]
    system_index = np.array([position[summary_info[s][1]] for s in summary_ids], dtype=np.int64)
    example_index = np.array([summary_info[s][0] for s in summary_ids], dtype=np.int64)
    means = scoring.system_scores(system_index, scores, len(systems))
    ci = None
    if n_boot and probability:
        # The judge's part is uncertain too: each replicate draws the judge units' presence from their probability.
        row_of = {s: i for i, s in enumerate(summary_ids)}
        ci = scoring.bootstrap_hybrid_score_ci(
            counts[:, 3], counts[:, 0], np.array([row_of[s] for s, _ in judge_units], dtype=np.int64),
            np.array([p for _, p in judge_units], dtype=float), example_index, system_index, n_boot=n_boot, seed=seed,
        )
    elif n_boot:
        ci = scoring.bootstrap_score_ci(scores, example_index, system_index, n_boot=n_boot, seed=seed)
    for pk, name in systems:
        i = position[pk]
        rows = system_index == i
        n_units = int(counts[rows, 0].sum())
        result["systems"][name] = {
            "qapyramid": none_if_nan(float(means[i])) if i < len(means) and rows.any() else None,
            "ci95": [none_if_nan(float(ci[i, 0])), none_if_nan(float(ci[i, 1]))] if ci is not None and i < len(ci) and rows.any() else [None, None],
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


def hybrid_unit_rows(campaign: Campaign):
    """Every candidate unit of a budgeted campaign for the export, human and judge outputs kept apart: (example,
    system, unit, human majority label or None, judge label or None, judge probability or None, calibrated
    probability or None, scored by: "people" / "judge_label" / "judge_probability" / "" (nobody yet), the value
    the unit counts as in the hybrid score or None).  Ordered by example position, system, unit."""
    run = latest_labelling(campaign)
    calibration = (run.results or {}).get("calibration") if run else None
    probability = scoring_rule(campaign, calibration)[0] == "probability"
    judge = {}
    if run is not None:
        judge = {(u, s): (y, p, c) for u, s, y, p, c in AutoPresence.objects.filter(run=run).values_list(
            "unit_id", "summary_id", "present", "probability", "calibrated")}
    human = human_labels(campaign)
    info = {pk: (position, example, system) for pk, position, example, system in SystemSummary.objects.filter(
        system__campaign=campaign).values_list("pk", "example__position", "example__external_id", "system__name")}
    keys = sorted({(u, s) for s, units in PresenceCandidate.objects.filter(campaign=campaign).values_list("summary_id", "units")
                   for u in units}, key=lambda k: (info[k[1]][0], info[k[1]][2], k[0]))
    for unit, summary in keys:
        label, p, c = judge.get((unit, summary), (None, None, None))
        people = human.get((unit, summary))
        if people is not None:
            by, value = "people", int(people)
        elif label is not None and probability and c is not None:
            by, value = "judge_probability", c
        elif label is not None:
            by, value = "judge_label", int(label)
        else:
            by, value = "", None
        yield (info[summary][1], info[summary][2], unit, None if people is None else int(people),
               None if label is None else int(label), p, c, by, value)


def hybrid_scores(campaign: Campaign, with_summaries: bool = False, n_boot: int | None = None) -> dict | None:
    """The campaign's stored hybrid scores (recomputed after each routing pass and when human labels change, never
    per request); computed here only for a budgeted campaign nothing stored them for yet.  With ``with_summaries``
    the per-summary scores are kept (``summary_scores``: the leaderboard's dots; ``summaries``)."""
    if not campaign.is_hybrid:
        return None
    stored = None if n_boot is not None else HybridScore.objects.filter(campaign=campaign).values_list("data", "computed_at").first()
    if stored is not None:
        result = dict(stored[0])
        result["computed_at"] = stored[1].isoformat()
    else:
        # An explicit ``n_boot`` (a script's choice) computes afresh with that many draws.
        result = compute_hybrid_scores(campaign, n_boot=N_BOOT if n_boot is None else n_boot) or {}
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
