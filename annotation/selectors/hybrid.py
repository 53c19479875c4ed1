"""Scores of a budgeted campaign: the human gold where people judged a unit, the judge's label elsewhere.

For summary i with units U_i (every unit of its candidate presence HITs), the hybrid score is
    s_i = (|{u in U_i judged by people, majority present}| + |{u in U_i not judged by people, judge present}|) / |U_i|
and a system's score is the mean of its summaries' scores, with a 95% percentile bootstrap interval
resampling examples (as the gold scores).  Each system also reports the share of its units people
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
from annotation.models import AutoPresence, Campaign, GoldPresence, PresenceCandidate, PresenceRound, System, SystemSummary

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


def hybrid_scores(campaign: Campaign, n_boot: int = N_BOOT, with_summaries: bool = False) -> dict | None:
    """Per-system hybrid scores (see the module docstring); None for a campaign that is not budgeted.  With
    ``with_summaries``, ``summary_scores`` maps each system to its summaries' hybrid scores (the leaderboard's dots)."""
    if not campaign.is_hybrid:
        return None
    run = latest_labelling(campaign)
    result = {
        "human_presence_share": campaign.human_presence_share,
        "judge": campaign.presence_judge,
        "judge_version": run.judge_version if run else None,
        "n_units": 0,
        "human_units": 0,
        "systems": {},
    }
    units = {(u, c_summary) for c_summary, unit_list in PresenceCandidate.objects.filter(campaign=campaign).values_list("summary_id", "units") for u in unit_list}
    if not units:
        return result
    judge = {}
    if run is not None:
        judge = {(u, s): p for u, s, p in AutoPresence.objects.filter(run=run).values_list("unit_id", "summary_id", "present")}
    human = human_labels(campaign)
    summary_info = dict(
        (pk, (example, system))
        for pk, example, system in SystemSummary.objects.filter(system__campaign=campaign).values_list("pk", "example_id", "system_id")
    )
    per_summary: dict[int, list[int]] = {}  # summary -> [units, present, human units]
    for key in units:
        if key in human:
            label, by_people = human[key], 1
        elif key in judge:
            label, by_people = judge[key], 0
        else:
            continue  # neither judged yet (before the first routing pass)
        entry = per_summary.setdefault(key[1], [0, 0, 0])
        entry[0] += 1
        entry[1] += int(label)
        entry[2] += by_people
    systems = list(System.objects.filter(campaign=campaign).order_by("name").values_list("pk", "name"))
    position = {pk: i for i, (pk, _) in enumerate(systems)}
    summary_ids = list(per_summary)
    if not summary_ids:
        return result
    counts = np.array([per_summary[s] for s in summary_ids], dtype=float)
    scores = counts[:, 1] / counts[:, 0]
    system_index = np.array([position[summary_info[s][1]] for s in summary_ids], dtype=np.int64)
    example_index = np.array([summary_info[s][0] for s in summary_ids], dtype=np.int64)
    means = scoring.system_scores(system_index, scores, len(systems))
    ci = scoring.bootstrap_score_ci(scores, example_index, system_index, n_boot=n_boot) if n_boot else None
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
    if with_summaries:
        result["summary_scores"] = {name: [float(v) for v in scores[system_index == position[pk]]] for pk, name in systems}
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
