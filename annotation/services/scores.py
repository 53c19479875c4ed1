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
    PresenceJudgment,
    SummaryScore,
    System,
    SystemScore,
    SystemSummary,
)
from annotation.selectors.scores import N_BOOT, agreement, gold_rows, none_if_nan
from annotation.services.gold import refresh_gold


def _texts(campaign: Campaign, summary_ids):
    rows = SystemSummary.objects.filter(pk__in=summary_ids).values_list("pk", "text", "example__reference", "system_id")
    return {pk: (text, reference, system) for pk, text, reference, system in rows}


#: The per-summary figures a system's stored sums add up (SummaryScore field -> SystemScore sum and count fields).
SUMMED = {
    "qapyramid": ("qapyramid_sum", "n_summaries"),
    "nqapyramid": ("nqapyramid_sum", "n_nqapyramid"),
    "predicate_level": ("predicate_level_sum", "n_predicate_level"),
}


@transaction.atomic
def recompute_summary_scores(campaign: Campaign, summary_ids=None) -> int:
    """Recompute the scores of these summaries (all of the campaign's by default), then the system scores.

    All of them: every system score is rebuilt from the summary scores, with intervals and alpha.  Some (after
    presence HITs): their systems' stored sums change by the difference these summaries' scores made, under a
    lock on those systems' rows, in the same transaction: the work grows with the HIT, not with the campaign.
    Per-system alpha and the intervals need every judgment or summary score of the campaign: they are
    refreshed by a full recomputation, or by the leaderboard when they are stale (``refresh_stale_intervals``).
    """
    full = summary_ids is None
    if summary_ids is None:
        summary_ids = list(SystemSummary.objects.filter(system__campaign=campaign).values_list("pk", flat=True))
    summary_ids = list(summary_ids)
    texts = _texts(campaign, summary_ids)
    locked, before = {}, {}
    if not full:
        # Lock the systems' rows first (in one order: no deadlock), then read what the summaries counted before.
        systems = sorted({system for _, _, system in texts.values()})
        locked = {row.system_id: row for row in SystemScore.objects.select_for_update().filter(system_id__in=systems).order_by("pk")}
        before = {row["summary_id"]: row for row in SummaryScore.objects.filter(summary_id__in=summary_ids).values(
            "summary_id", "n_units", *SUMMED)}
    rows = gold_rows(campaign, summary_ids)
    position = {pk: i for i, pk in enumerate(summary_ids)}
    scores = {
        pk: dict(n_units=0, n_present=0, qapyramid=None, predicate_level=None, repetition_rate=None, length_penalty=None,
                 length=None, nqapyramid=None)
        for pk in summary_ids
    }
    # The penalties depend on the texts only: every summary gets them, labelled or not (a researcher
    # compares lengths before the presence stage is over).
    reference_lengths: dict[str, int] = {}
    for pk, (text, reference, _) in texts.items():
        if text.strip() and reference.strip():
            tokens = scoring.word_tokens(text)
            rp = scoring.repetition_rate(tokens)
            p_l = scoring.length_penalty(len(tokens), _cached_length(reference_lengths, reference), scoring.repetition_penalty(rp),
                                         campaign.length_penalty_alpha)
            scores[pk].update(repetition_rate=rp, length_penalty=float(p_l), length=len(tokens))
    if rows:
        array = np.array(rows, dtype=np.int64)
        index = np.array([position[s] for s in array[:, 1]])
        present = array[:, 3]
        q = scoring.qapyramid_scores(index, present, len(summary_ids))
        p = scoring.predicate_level_scores(index, array[:, 2], present, len(summary_ids))
        labelled = present >= 0
        n_units = np.bincount(index[labelled], minlength=len(summary_ids))
        n_present = np.bincount(index[labelled], weights=present[labelled], minlength=len(summary_ids)).astype(int)
        for pk, i in position.items():
            if n_units[i] == 0:
                continue
            entry = scores[pk]
            entry.update(n_units=int(n_units[i]), n_present=int(n_present[i]), qapyramid=float(q[i]), predicate_level=float(p[i]))
            if entry["length_penalty"] is not None:
                entry["nqapyramid"] = (1.0 - entry["repetition_rate"]) * entry["length_penalty"] * float(q[i])
    SummaryScore.objects.bulk_create(
        [SummaryScore(summary_id=pk, **values) for pk, values in scores.items()],
        update_conflicts=True,
        unique_fields=["summary"],
        update_fields=["n_units", "n_present", "qapyramid", "predicate_level", "repetition_rate", "length_penalty", "length", "nqapyramid"],
        batch_size=2000,
    )
    # Bootstrap intervals and per-system alpha read every row of the campaign: the full recomputation
    # refreshes them; after a single HIT only the sums and means move (the leaderboard refreshes stale intervals).
    if full or not _add_differences(locked, texts, before, scores):
        recompute_system_scores(campaign, with_alpha=full, n_boot=N_BOOT if full else 0)
    if campaign.is_hybrid:
        from annotation.services.hybrid_scores import refresh_hybrid_scores

        # Human labels changed: the stored hybrid scores follow (the judge's part waits for the next routing pass).
        refresh_hybrid_scores(campaign)
    return len(summary_ids)


def _add_differences(locked: dict, texts: dict, before: dict, after: dict) -> bool:
    """Move the locked system rows' sums and counts by what the summaries' scores changed (``before`` -> ``after``);
    False (nothing written) when a system has no stored sums yet: the caller rebuilds them."""
    systems = {system for _, _, system in texts.values()}
    if any(system not in locked or locked[system].qapyramid_sum is None for system in systems):
        return False
    changes = {system: dict.fromkeys(["n_units", *(f for pair in SUMMED.values() for f in pair)], 0) for system in systems}
    for pk, (_, _, system) in texts.items():
        old, new, change = before.get(pk, {}), after[pk], changes[system]
        change["n_units"] += new["n_units"] - old.get("n_units", 0)
        for field, (total, count) in SUMMED.items():
            for value, sign in ((old.get(field), -1), (new[field], 1)):
                if value is not None:
                    change[total] += sign * value
                    change[count] += sign
    for system, change in changes.items():
        row = locked[system]
        values = {"n_units": row.n_units + change["n_units"]}
        for field, (total, count) in SUMMED.items():
            n = getattr(row, count) + change[count]
            # No summary left: the sum is exactly 0 (no rounding carried over).
            summed = (getattr(row, total) or 0.0) + change[total] if n else 0.0
            values.update({total: summed, count: n, field: summed / n if n else None})
        # ``update`` leaves ``updated_at`` alone: the intervals stay marked stale for the leaderboard.
        SystemScore.objects.filter(pk=row.pk).update(**values)
    return True


def ensure_summary_scores(campaign: Campaign) -> bool:
    """Compute the campaign's summary scores when there are none yet, or when some lack their token length
    (stored before lengths were counted in tokens); True when it recomputed."""
    rows = SummaryScore.objects.filter(summary__system__campaign=campaign)
    if rows.exists() and not rows.filter(length__isnull=True).exclude(summary__text="").exists():
        ensure_hybrid_scores(campaign)
        return False
    recompute_summary_scores(campaign)
    return True


def ensure_hybrid_scores(campaign: Campaign) -> bool:
    """Store a budgeted campaign's hybrid scores when nothing stored them yet (a campaign from before they were
    stored, or finished before its next routing pass) or what is stored predates the named estimator, so that no
    request computes them again; True when it did."""
    from annotation.models import HybridScore
    from annotation.services.hybrid_scores import refresh_hybrid_scores

    if not campaign.is_hybrid:
        return False
    stored = HybridScore.objects.filter(campaign=campaign).values_list("data", flat=True).first()
    # Scores stored before the estimator was named (bootstrap intervals that did not hold their 95%), or under the
    # active rule before its intervals respected [0, 1] (no ``interval`` named), are redone.
    estimator = (stored or {}).get("estimator")
    if estimator is not None and (estimator.get("rule") != "active" or "interval" in estimator):
        return False
    refresh_hybrid_scores(campaign)
    return True


@transaction.atomic
def recompute_system_scores(campaign: Campaign, n_boot: int = N_BOOT, with_alpha: bool = True) -> None:
    """Per-system means of the summary scores, with bootstrap intervals resampling examples."""
    # The systems' rows are locked while rebuilt: a HIT's update waits, then adds its difference to these sums.
    list(SystemScore.objects.select_for_update().filter(system__campaign=campaign).order_by("pk").values_list("pk"))
    rows = list(
        SummaryScore.objects.filter(summary__system__campaign=campaign).values_list(
            "summary__system_id", "summary__example_id", "qapyramid", "nqapyramid", "predicate_level", "n_units"
        )
    )
    systems = list(System.objects.filter(campaign=campaign).values_list("pk", flat=True))
    alpha = agreement(campaign, n_boot=0)["per_system"] if with_alpha else None
    names = dict(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    results = []
    if rows:
        system_pos = {pk: i for i, pk in enumerate(systems)}
        array = np.array([[system_pos[r[0]], r[1], _nan(r[2]), _nan(r[3]), _nan(r[4]), r[5]] for r in rows], dtype=float)
        sys_index = array[:, 0].astype(int)
        q_mean = scoring.system_scores(sys_index, array[:, 2], len(systems))
        n_mean = scoring.system_scores(sys_index, array[:, 3], len(systems))
        p_mean = scoring.system_scores(sys_index, array[:, 4], len(systems))
        ci = scoring.bootstrap_score_ci(array[:, 2], array[:, 1].astype(int), sys_index, n_boot=n_boot) if n_boot else None
        counts = np.bincount(sys_index[~np.isnan(array[:, 2])], minlength=len(systems))
        sums = {field: _sums(sys_index, array[:, column], len(systems)) for field, column in zip(SUMMED, (2, 3, 4))}
        units = np.bincount(sys_index, weights=array[:, 5], minlength=len(systems)).astype(int)
        for pk, i in system_pos.items():
            results.append(
                SystemScore(
                    system_id=pk,
                    n_summaries=int(counts[i]) if i < len(counts) else 0,
                    qapyramid=none_if_nan(float(q_mean[i])) if i < len(q_mean) else None,
                    qapyramid_low=none_if_nan(float(ci[i, 0])) if ci is not None and i < len(ci) else None,
                    qapyramid_high=none_if_nan(float(ci[i, 1])) if ci is not None and i < len(ci) else None,
                    nqapyramid=none_if_nan(float(n_mean[i])) if i < len(n_mean) else None,
                    predicate_level=none_if_nan(float(p_mean[i])) if i < len(p_mean) else None,
                    alpha=alpha.get(names[pk]) if alpha is not None else None,
                    n_units=int(units[i]),
                    qapyramid_sum=sums["qapyramid"][0][i],
                    nqapyramid_sum=sums["nqapyramid"][0][i],
                    n_nqapyramid=sums["nqapyramid"][1][i],
                    predicate_level_sum=sums["predicate_level"][0][i],
                    n_predicate_level=sums["predicate_level"][1][i],
                )
            )
    SystemScore.objects.bulk_create(
        results,
        update_conflicts=True,
        unique_fields=["system"],
        update_fields=["n_summaries", "qapyramid", "nqapyramid", "predicate_level", "n_units",
                       *(name for pair in SUMMED.values() for name in pair if name != "n_summaries")]
        + (["qapyramid_low", "qapyramid_high"] if n_boot else [])
        + (["alpha"] if with_alpha else []),
    )


def _cached_length(cache: dict, text: str) -> int:
    # Every system's summary of an example shares its reference: tokenise it once.
    if text not in cache:
        cache[text] = scoring.token_length(text)
    return cache[text]


def _sums(system_index, values, n_systems: int) -> tuple[list[float], list[int]]:
    """Per system: the sum of its summaries' values and how many there are (NaN left out), as the means use."""
    keep = ~np.isnan(values)
    total = np.bincount(system_index[keep], weights=values[keep], minlength=n_systems)
    count = np.bincount(system_index[keep], minlength=n_systems)
    return [float(x) for x in total], [int(x) for x in count]


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
