"""Gold scores of a campaign, from the database through the pure functions of ``annotation.scoring``.

Every aggregate is computed over arrays pulled with one query each (never a
query per row).  Which gold label counts: the crowd's majority where the
crowd judged a unit, otherwise a label imported with the data set.
"""

from __future__ import annotations

import numpy as np
from django.db import transaction

from annotation import scoring
from annotation.models import (
    Campaign,
    GoldPresence,
    PresenceJudgment,
    SummaryScore,
    System,
    SystemScore,
    SystemSummary,
)
from annotation.services.gold import refresh_gold

N_BOOT = 1000


def _gold_rows(campaign: Campaign, summary_ids=None):
    """(unit, summary, predicate, present) rows of the labels that count, majority first."""
    rows = GoldPresence.objects.filter(summary__system__campaign=campaign)
    if summary_ids is not None:
        rows = rows.filter(summary_id__in=summary_ids)
    chosen: dict[tuple[int, int], tuple] = {}
    for unit, summary, predicate, present, origin in rows.values_list(
        "unit_id", "summary_id", "unit__predicate_id", "present", "origin"
    ).order_by("origin"):
        # "imported" sorts before "majority": a majority label replaces an imported one.
        chosen[(unit, summary)] = (unit, summary, predicate or -1, -1 if present is None else int(present))
    return list(chosen.values())


def _texts(campaign: Campaign, summary_ids):
    rows = SystemSummary.objects.filter(pk__in=summary_ids).values_list("pk", "text", "example__reference")
    return {pk: (text, reference) for pk, text, reference in rows}


@transaction.atomic
def recompute_summary_scores(campaign: Campaign, summary_ids=None) -> int:
    """Recompute the scores of these summaries (all of the campaign's by default), then the system scores.

    Per-system alpha needs every judgment of the campaign: it is refreshed by
    a full recomputation only, not after each presence HIT.
    """
    full = summary_ids is None
    if summary_ids is None:
        summary_ids = list(SystemSummary.objects.filter(system__campaign=campaign).values_list("pk", flat=True))
    summary_ids = list(summary_ids)
    rows = _gold_rows(campaign, summary_ids)
    position = {pk: i for i, pk in enumerate(summary_ids)}
    scores = {pk: dict(n_units=0, n_present=0, qapyramid=None, predicate_level=None, repetition_rate=None, length_penalty=None, nqapyramid=None) for pk in summary_ids}
    if rows:
        array = np.array(rows, dtype=np.int64)
        index = np.array([position[s] for s in array[:, 1]])
        present = array[:, 3]
        q = scoring.qapyramid_scores(index, present, len(summary_ids))
        p = scoring.predicate_level_scores(index, array[:, 2], present, len(summary_ids))
        labelled = present >= 0
        n_units = np.bincount(index[labelled], minlength=len(summary_ids))
        n_present = np.bincount(index[labelled], weights=present[labelled], minlength=len(summary_ids)).astype(int)
        texts = _texts(campaign, summary_ids)
        for pk, i in position.items():
            if n_units[i] == 0:
                continue
            entry = scores[pk]
            entry.update(n_units=int(n_units[i]), n_present=int(n_present[i]), qapyramid=float(q[i]), predicate_level=float(p[i]))
            text, reference = texts[pk]
            if text.strip() and reference.strip():
                rp = scoring.repetition_rate(text)
                p_r = float(scoring.repetition_penalty(rp))
                p_l = float(scoring.length_penalty(len(text.split()), len(reference.split()), p_r, campaign.length_penalty_alpha))
                entry.update(repetition_rate=rp, length_penalty=p_l, nqapyramid=p_r * p_l * float(q[i]))
    SummaryScore.objects.bulk_create(
        [SummaryScore(summary_id=pk, **values) for pk, values in scores.items()],
        update_conflicts=True,
        unique_fields=["summary"],
        update_fields=["n_units", "n_present", "qapyramid", "predicate_level", "repetition_rate", "length_penalty", "nqapyramid"],
        batch_size=2000,
    )
    # Bootstrap intervals and per-system alpha read every row of the campaign: the full recomputation
    # refreshes them; after a single HIT only the means move (the leaderboard refreshes stale intervals).
    recompute_system_scores(campaign, with_alpha=full, n_boot=N_BOOT if full else 0)
    return len(summary_ids)


def _judgment_arrays(campaign: Campaign, system_id=None):
    """Judgments that count, as arrays: pair index (unit, summary), label, example index, system id."""
    rows = PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False)
    if system_id is not None:
        rows = rows.filter(summary__system_id=system_id)
    data = np.array(
        list(rows.values_list("unit_id", "summary_id", "present", "summary__example_id", "summary__system_id")), dtype=np.int64
    ).reshape(-1, 5)
    if data.size == 0:
        return data, np.zeros(0, np.int64)
    _, pair_index = np.unique(data[:, :2], axis=0, return_inverse=True)
    return data, pair_index.ravel()


def agreement(campaign: Campaign, n_boot: int = N_BOOT) -> dict:
    """Krippendorff's alpha (nominal) pooled with a 95% bootstrap interval (resampling examples), per system, and percent agreement."""
    data, pairs = _judgment_arrays(campaign)
    if data.size == 0:
        return {"pooled": None, "ci95": [None, None], "per_system": {}, "percent_agreement": None, "n_judgments": 0}
    labels = data[:, 2]
    pooled = scoring.krippendorff_alpha_nominal(pairs, labels)
    lo, hi = scoring.bootstrap_alpha_ci(pairs, labels, data[:, 3], n_boot=n_boot) if n_boot else (float("nan"), float("nan"))
    names = dict(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    per_system = {}
    for system_id in np.unique(data[:, 4]):
        rows = data[:, 4] == system_id
        _, sub_pairs = np.unique(pairs[rows], return_inverse=True)
        per_system[names[int(system_id)]] = _none_if_nan(scoring.krippendorff_alpha_nominal(sub_pairs.ravel(), labels[rows]))
    return {
        "pooled": _none_if_nan(pooled),
        "ci95": [_none_if_nan(lo), _none_if_nan(hi)],
        "per_system": per_system,
        "percent_agreement": _none_if_nan(scoring.percent_agreement(pairs, labels)),
        "n_judgments": int(len(labels)),
    }


def _none_if_nan(x):
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def recompute_system_scores(campaign: Campaign, n_boot: int = N_BOOT, with_alpha: bool = True) -> None:
    """Per-system means of the summary scores, with bootstrap intervals resampling examples."""
    rows = list(
        SummaryScore.objects.filter(summary__system__campaign=campaign).values_list(
            "summary__system_id", "summary__example_id", "qapyramid", "nqapyramid", "predicate_level"
        )
    )
    systems = list(System.objects.filter(campaign=campaign).values_list("pk", flat=True))
    alpha = agreement(campaign, n_boot=0)["per_system"] if with_alpha else None
    names = dict(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    results = []
    if rows:
        system_pos = {pk: i for i, pk in enumerate(systems)}
        array = np.array([[system_pos[r[0]], r[1], _nan(r[2]), _nan(r[3]), _nan(r[4])] for r in rows], dtype=float)
        sys_index = array[:, 0].astype(int)
        q_mean = scoring.system_scores(sys_index, array[:, 2], len(systems))
        n_mean = scoring.system_scores(sys_index, array[:, 3], len(systems))
        p_mean = scoring.system_scores(sys_index, array[:, 4], len(systems))
        ci = scoring.bootstrap_score_ci(array[:, 2], array[:, 1].astype(int), sys_index, n_boot=n_boot) if n_boot else None
        counts = np.bincount(sys_index[~np.isnan(array[:, 2])], minlength=len(systems))
        for pk, i in system_pos.items():
            results.append(
                SystemScore(
                    system_id=pk,
                    n_summaries=int(counts[i]) if i < len(counts) else 0,
                    qapyramid=_none_if_nan(float(q_mean[i])) if i < len(q_mean) else None,
                    qapyramid_low=_none_if_nan(float(ci[i, 0])) if ci is not None and i < len(ci) else None,
                    qapyramid_high=_none_if_nan(float(ci[i, 1])) if ci is not None and i < len(ci) else None,
                    nqapyramid=_none_if_nan(float(n_mean[i])) if i < len(n_mean) else None,
                    predicate_level=_none_if_nan(float(p_mean[i])) if i < len(p_mean) else None,
                    alpha=alpha.get(names[pk]) if alpha is not None else None,
                )
            )
    SystemScore.objects.bulk_create(
        results,
        update_conflicts=True,
        unique_fields=["system"],
        update_fields=["n_summaries", "qapyramid", "nqapyramid", "predicate_level"]
        + (["qapyramid_low", "qapyramid_high"] if n_boot else [])
        + (["alpha"] if with_alpha else []),
    )


def _nan(x):
    return np.nan if x is None else x


def recompute_gold(campaign: Campaign, progress=None) -> dict:
    """Full recomputation: every crowd gold label from the judgments that count, then every score.

    ``progress(done, total, message)``, when given, hears of each of the two steps.
    """
    progress = progress or (lambda done, total, message="": None)
    progress(0, 2, "gold labels")
    pairs = set(
        PresenceJudgment.objects.filter(summary__system__campaign=campaign).values_list("unit_id", "summary_id").distinct()
    )
    with transaction.atomic():
        n_gold = refresh_gold(campaign, pairs)
        progress(1, 2, "scores and intervals")
        n_summaries = recompute_summary_scores(campaign)
    progress(2, 2, "recomputed")
    return {"gold_labels": n_gold, "summaries": n_summaries}


def campaign_scores(campaign: Campaign, n_boot: int = N_BOOT) -> dict:
    """The campaign's scores in the shape ``manage.py campaign_scores --format json`` prints."""
    alpha = agreement(campaign, n_boot=n_boot)
    systems = {}
    for system in System.objects.filter(campaign=campaign).select_related("score").order_by("name"):
        score = getattr(system, "score", None)
        systems[system.name] = {
            "qapyramid": score.qapyramid if score else None,
            "nqapyramid": score.nqapyramid if score else None,
            "n_summaries": score.n_summaries if score else 0,
            "ci95": [score.qapyramid_low, score.qapyramid_high] if score else [None, None],
            "predicate_level": score.predicate_level if score else None,
        }
    n_units = len(_gold_rows(campaign))
    return {
        "campaign": campaign.slug,
        "n_units": n_units,
        "n_judgments": alpha["n_judgments"],
        "alpha": {"pooled": alpha["pooled"], "ci95": alpha["ci95"], "per_system": alpha["per_system"]},
        "percent_agreement": alpha["percent_agreement"],
        "systems": systems,
    }


def refresh_stale_intervals(campaign: Campaign) -> bool:
    """Recompute system intervals and alpha when summary scores changed after them (for the leaderboard)."""
    from django.db.models import Max

    newest_summary = SummaryScore.objects.filter(summary__system__campaign=campaign).aggregate(m=Max("updated_at"))["m"]
    oldest_system = SystemScore.objects.filter(system__campaign=campaign).aggregate(m=Max("updated_at"))["m"]
    stale = SystemScore.objects.filter(system__campaign=campaign, qapyramid_low__isnull=True, qapyramid__isnull=False).exists()
    if newest_summary is None or (oldest_system is not None and newest_summary <= oldest_system and not stale):
        return False
    recompute_system_scores(campaign, with_alpha=True)
    return True
