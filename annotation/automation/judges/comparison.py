"""Comparison of an automatic judge with the gold labels and the gold QAPyramid.

- presence: accuracy = (TP + TN) / N and the F1 of the "present" class,
  2TP / (2TP + FP + FN), over every (unit, summary) pair that has a gold
  label (the paper's "micro-F1" on binary labels equals accuracy, so the
  F1 is named for its class, ``f1_present``);
- scores: Kendall's tau (and Pearson) between the automatic score and the
  gold QAPyramid, at system level and summary level, for all systems and
  each named subgroup (``annotation.scoring.correlation``);
- the same correlations for ROUGE-1/2/L recall of the summary against the reference.
"""

from __future__ import annotations

import math

import numpy as np

METHODS = ("kendall", "pearson")


def presence_agreement(predicted, gold) -> dict:
    """Accuracy and the F1 of the "present" class (``f1_present``) of binary predictions against gold labels."""
    predicted = np.asarray(predicted, dtype=bool)
    gold = np.asarray(gold, dtype=bool)
    n = int(gold.size)
    tp = int(np.sum(predicted & gold))
    fp = int(np.sum(predicted & ~gold))
    fn = int(np.sum(~predicted & gold))
    tn = n - tp - fp - fn
    accuracy = (tp + tn) / n if n else float("nan")
    f1 = 2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else float("nan")
    return {"n": n, "accuracy": accuracy, "f1_present": f1, "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def _clean(value):
    """JSON-safe: NaN becomes None, numpy scalars plain floats, recursively."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(float(value)) else round(float(value), 6)
    if isinstance(value, np.integer):
        return int(value)
    return value


def score_correlations(metric, gold, example_index, system_index, subgroups=None) -> dict:
    from annotation.scoring.correlation import correlations_by_subgroup

    return correlations_by_subgroup(metric, gold, example_index, system_index, subgroups=subgroups, methods=METHODS)


def _subgroup_indices(subgroups, system_position) -> dict:
    """{name: [system index]} from {name: [system id or name]}; unknown members are left out."""
    if not subgroups:
        return {}
    return {
        name: [system_position[m] for m in members if m in system_position]
        for name, members in subgroups.items()
    }


def compare_run_with_gold(run, subgroups=None) -> dict:
    """Agreement and correlations of a finished autoscore run with the campaign's gold (see module doc)."""
    from annotation.automation.judges.lexical import rouge_recalls
    from annotation.models import AutoPresence, AutoSummaryScore, SystemSummary
    from annotation.scoring.qapyramid import qapyramid_scores
    from annotation.selectors.scores import gold_rows as gold_rows_of

    summaries = list(
        SystemSummary.objects.filter(auto_scores__run=run)
        .values_list("pk", "system_id", "system__name", "example_id", "text", "example__reference")
        .order_by("system__name", "example__position")
    )
    if not summaries:
        return {"n_summaries": 0}
    summary_ids = [s[0] for s in summaries]
    position = {pk: i for i, pk in enumerate(summary_ids)}
    system_names = sorted({s[2] for s in summaries})
    system_position = {name: i for i, name in enumerate(system_names)}
    system_position.update({s[1]: system_position[s[2]] for s in summaries})
    system_index = np.array([system_position[s[2]] for s in summaries])
    examples = sorted({s[3] for s in summaries})
    example_index = np.array([examples.index(s[3]) for s in summaries])

    auto = dict(AutoSummaryScore.objects.filter(run=run).values_list("summary_id", "score"))
    auto_scores = np.array([np.nan if auto.get(pk) is None else auto[pk] for pk in summary_ids], dtype=float)

    gold_rows = gold_rows_of(run.campaign, summary_ids)
    result = {"n_summaries": len(summaries), "systems": system_names}
    labelled = [(u, s, y) for u, s, _, y in gold_rows if y >= 0]
    if labelled:
        gold_present = np.array([y for _, _, y in labelled])
        gold_scores = qapyramid_scores([position[s] for _, s, _ in labelled], gold_present, len(summary_ids))
    else:
        gold_scores = np.full(len(summary_ids), np.nan)
    if not run.generate_qas and labelled:
        predicted = dict(
            ((u, s), y) for u, s, y in AutoPresence.objects.filter(run=run).values_list("unit_id", "summary_id", "present")
        )
        pairs = [(predicted[(u, s)], bool(y)) for u, s, y in labelled if (u, s) in predicted]
        if pairs:
            result["presence"] = presence_agreement([p for p, _ in pairs], [g for _, g in pairs])
    groups = _subgroup_indices(subgroups, system_position)
    result["has_gold"] = bool(labelled)
    per_system = []
    for name in system_names:
        rows = system_index == system_position[name]
        per_system.append(
            {
                "system": name,
                "auto": float(np.nanmean(auto_scores[rows])) if np.any(~np.isnan(auto_scores[rows])) else None,
                "gold": float(np.nanmean(gold_scores[rows])) if np.any(~np.isnan(gold_scores[rows])) else None,
            }
        )
    result["system_scores"] = per_system
    if labelled:
        result["correlation"] = score_correlations(auto_scores, gold_scores, example_index, system_index, groups)
        rouge = np.array([rouge_recalls(reference or "", text or "") if reference else (np.nan,) * 3 for *_, text, reference in summaries], dtype=float)
        result["rouge"] = {
            variant: score_correlations(rouge[:, i], gold_scores, example_index, system_index, groups)
            for i, variant in enumerate(("rouge1", "rouge2", "rougeL"))
        }
    return _clean(result)
