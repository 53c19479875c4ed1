"""Gold scores of a campaign, from the database through the pure functions of ``annotation.scoring``.

Every aggregate is computed over arrays pulled with one query each (never a
query per row).  Which gold label counts: the crowd's majority where the
crowd judged a unit, otherwise a label imported with the data set.
"""

from __future__ import annotations

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import scoring
from annotation.models import (
    AgreementCache,
    Campaign,
    GoldPresence,
    PresenceJudgment,
    SummaryScore,
    System,
    SystemScore,
    SystemSummary,
)
from annotation.selectors.scores import N_BOOT, bootstrap_seed, gold_rows, none_if_nan, store_agreement
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

    All of them: every system score is rebuilt from the summary scores.  Some (after presence HITs, an exclusion,
    an override): their systems' stored sums change by the difference these summaries' scores made, under a
    lock on the campaign's system rows, in the same transaction: the sums' work grows with the HIT, not with the
    campaign.  Either way the figures that need every summary score or judgment of the campaign (the intervals,
    per-system and pooled alpha, ``updated_at``) are recomputed once at the end (``refresh_figures``), in the same
    transaction: with a Redis broker once per coalesced drain, whatever the number of HITs it gathered.
    """
    full = summary_ids is None
    if summary_ids is None:
        summary_ids = list(SystemSummary.objects.filter(system__campaign=campaign).values_list("pk", flat=True))
    summary_ids = list(summary_ids)
    texts = _texts(campaign, summary_ids)
    # The campaign's figures first (``lock_figures``), whether all summaries or some are rescored: a full
    # recomputation and a HIT's update never hold each other's rows in opposite orders.
    locked = lock_figures(campaign)
    before = {}
    if not full:
        # What the summaries counted before.
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
    if full or not _add_differences(locked, texts, before, scores):
        recompute_system_scores(campaign)
    else:
        refresh_figures(campaign)
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
def recompute_system_scores(campaign: Campaign) -> None:
    """Per-system means of the summary scores and the sums behind them, then the figures (``refresh_figures``)."""
    # Locked while rebuilt: a HIT's update waits, then adds its difference to these sums.
    lock_figures(campaign)
    rows = list(
        SummaryScore.objects.filter(summary__system__campaign=campaign).values_list(
            "summary__system_id", "summary__example_id", "qapyramid", "nqapyramid", "predicate_level", "n_units"
        )
    )
    systems = list(System.objects.filter(campaign=campaign).values_list("pk", flat=True))
    results = []
    if rows:
        system_pos = {pk: i for i, pk in enumerate(systems)}
        array = np.array([[system_pos[r[0]], r[1], _nan(r[2]), _nan(r[3]), _nan(r[4]), r[5]] for r in rows], dtype=float)
        sys_index = array[:, 0].astype(int)
        q_mean = scoring.system_scores(sys_index, array[:, 2], len(systems))
        n_mean = scoring.system_scores(sys_index, array[:, 3], len(systems))
        p_mean = scoring.system_scores(sys_index, array[:, 4], len(systems))
        counts = np.bincount(sys_index[~np.isnan(array[:, 2])], minlength=len(systems))
        sums = {field: _sums(sys_index, array[:, column], len(systems)) for field, column in zip(SUMMED, (2, 3, 4))}
        units = np.bincount(sys_index, weights=array[:, 5], minlength=len(systems)).astype(int)
        for pk, i in system_pos.items():
            results.append(
                SystemScore(
                    system_id=pk,
                    n_summaries=int(counts[i]) if i < len(counts) else 0,
                    qapyramid=none_if_nan(float(q_mean[i])) if i < len(q_mean) else None,
                    nqapyramid=none_if_nan(float(n_mean[i])) if i < len(n_mean) else None,
                    predicate_level=none_if_nan(float(p_mean[i])) if i < len(p_mean) else None,
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
                       *(name for pair in SUMMED.values() for name in pair if name != "n_summaries")],
    )
    refresh_figures(campaign)


def lock_figures(campaign: Campaign) -> dict[int, SystemScore]:
    """Lock the campaign's stored figures for the rest of the transaction and return its system rows (by system):
    first the row of its stored agreement (created empty if there is none: it exists before any system row
    does, so every writer queues on it), then every system row, in one order.  Every writer of the figures
    (a score update, a recomputation, ``refresh_campaign_figures``) takes it first: they run one after the other."""
    kind = AgreementCache.Kind.SCORES
    if not AgreementCache.objects.filter(campaign=campaign, kind=kind, n_boot=N_BOOT).exists():
        try:
            with transaction.atomic():
                AgreementCache.objects.create(campaign=campaign, kind=kind, n_boot=N_BOOT, stamp=[], data={})
        except IntegrityError:
            pass  # a concurrent writer created it: it is locked below, after that writer's commit
    list(AgreementCache.objects.select_for_update().filter(campaign=campaign, kind=kind, n_boot=N_BOOT).values_list("pk"))
    # (``of``: the system rows only, not the ``System`` rows the filter joins, which other work locks.)
    return {row.system_id: row for row in SystemScore.objects.select_for_update(of=("self",)).filter(
        system__campaign=campaign).order_by("pk")}


@transaction.atomic
def refresh_campaign_figures(campaign: Campaign) -> dict:
    """``refresh_figures`` on its own, under ``lock_figures`` (after judgments that changed no gold label: they
    move alpha only)."""
    lock_figures(campaign)
    return refresh_figures(campaign)


def refresh_figures(campaign: Campaign) -> dict:
    """The figures of the campaign's system scores that read every summary score or judgment, from what is stored:
    each system's 95% interval (a percentile bootstrap resampling examples, ``N_BOOT`` draws seeded from the
    campaign and the scores it summarises: ``bootstrap_seed``), its Krippendorff's alpha and the pooled alpha
    with its interval (``store_agreement``), and ``updated_at``.  The one place they are written: every score
    update calls it in its transaction (under the lock on the system rows), and no page or file computes them.
    Returns the agreement stored."""
    rows = list(SummaryScore.objects.filter(summary__system__campaign=campaign).order_by(
        "summary__system_id", "summary__example_id").values_list(
        "summary__system_id", "summary__example_id", "qapyramid", "nqapyramid", "predicate_level"))
    systems = sorted(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    position = {pk: i for i, (pk, _) in enumerate(systems)}
    ci, means = None, {}
    if rows:
        system_index = np.array([position[r[0]] for r in rows], dtype=np.int64)
        examples = np.array([r[1] for r in rows], dtype=np.int64)
        columns = {field: np.array([_nan(r[k]) for r in rows], dtype=float) for k, field in enumerate(SUMMED, start=2)}
        # The means shown, from every summary score in one order: a HIT's kept sums and a full rebuild give the same
        # figures to the last digit (the kept sums only spare the rebuild; their rounding never reaches a view).
        means = {field: scoring.system_scores(system_index, values, len(systems)) for field, values in columns.items()}
        values = columns["qapyramid"]
        if not np.isnan(values).all():
            # Seeded from what the interval summarises (the scores to 12 digits: a kept sum and a rebuilt one seed alike).
            stamp = [[int(r[0]) for r in rows], [int(r[1]) for r in rows],
                     [None if r[2] is None else round(r[2], 12) for r in rows]]
            ci = scoring.bootstrap_score_ci(values, examples, system_index, n_boot=N_BOOT,
                                            seed=bootstrap_seed(campaign.pk, stamp))
    agreement = store_agreement(campaign)
    now = timezone.now()
    for pk, name in systems:
        i = position[pk]
        low, high = (none_if_nan(float(v)) for v in ci[i]) if ci is not None and i < len(ci) else (None, None)
        shown = {field: none_if_nan(float(m[i])) if i < len(m) else None for field, m in means.items()}
        SystemScore.objects.filter(system_id=pk).update(
            qapyramid_low=low, qapyramid_high=high, alpha=agreement["per_system"].get(name), updated_at=now, **shown)
    return agreement


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


def labelled_pairs(campaign: Campaign) -> set[tuple[int, int]]:
    """The (unit, summary) pairs the crowd's gold labels are kept for, as the pipeline keeps them: those of judgments
    without a HIT (imported), of completed HITs, and those with a crowd label already (a HIT reopened after its
    completion keeps its label until it is done again).  A HIT still being judged has none yet: a recomputation
    while HITs are submitted labels what the pipeline labels, nothing from a HIT's first judgments."""
    from django.db.models import Q
    from hits.models import HIT

    judged = PresenceJudgment.objects.filter(summary__system__campaign=campaign).filter(
        Q(assignment__isnull=True) | Q(assignment__hit__state=HIT.State.COMPLETED))
    labelled = GoldPresence.objects.filter(summary__system__campaign=campaign, origin=GoldPresence.Origin.MAJORITY)
    return set(judged.values_list("unit_id", "summary_id").distinct()) | set(labelled.values_list("unit_id", "summary_id"))


def recompute_gold(campaign: Campaign, progress=None) -> dict:
    """Full recomputation: every crowd gold label from the judgments that count, then every score.

    ``progress(done, total, message)``, when given, hears of each of the two steps.
    """
    progress = progress or (lambda done, total, message="": None)
    progress(0, 2, "gold labels")
    with transaction.atomic():
        # The crowd's labels are locked first (in the order every writer of them uses), then the judgments read: a
        # HIT's follow-up or an exclusion that wrote a label meanwhile has committed, and its judgments are counted
        # here, never overwritten by counts read before it (a recomputation while HITs are submitted loses nothing).
        list(GoldPresence.objects.select_for_update(of=("self",)).filter(
            summary__system__campaign=campaign, origin=GoldPresence.Origin.MAJORITY).order_by("unit_id", "summary_id")
            .values_list("pk"))
        pairs = labelled_pairs(campaign)
        n_gold = refresh_gold(campaign, pairs)
        progress(1, 2, "scores and intervals")
        n_summaries = recompute_summary_scores(campaign)
    progress(2, 2, "recomputed")
    return {"gold_labels": n_gold, "summaries": n_summaries}
