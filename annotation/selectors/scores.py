"""Reads of a campaign's gold data: the labels that count, the judgments as arrays, the crowd's
agreement (Krippendorff's alpha), and the scores as ``manage.py campaign_scores`` prints them."""

from __future__ import annotations

import hashlib
import json

import numpy as np

from annotation import scoring
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Q, Sum

from annotation.models import AgreementCache, Campaign, GoldPresence, PresenceJudgment, SummaryScore, System, SystemSummary
from annotation.selectors.pairs import pair_comparisons

N_BOOT = 1000


def gold_rows(campaign: Campaign, summary_ids=None) -> list[tuple[int, int, int, int]]:
    """(unit, summary, predicate, present) rows of the gold labels that count, one per (unit, summary).

    The crowd's majority label replaces an imported one for the same pair; ``predicate`` is -1 for a
    unit without one (an SCU) and ``present`` is -1 where the tie rule left the unit unlabelled.
    """
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


#: Under the adaptive presence rule, alpha is computed over this many judgments of every unit: the first ones.
BALANCED_JUDGMENTS = 2


def first_per_pair(pairs: np.ndarray, k: int = BALANCED_JUDGMENTS) -> np.ndarray:
    """A mask keeping, of rows in time order, the first ``k`` of every pair (``pairs``: a pair index per row)."""
    if pairs.size == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(pairs, kind="stable")  # rows of each pair together, still in time order
    sorted_pairs = pairs[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_pairs)) + 1]
    rank = np.arange(len(pairs)) - np.repeat(starts, np.diff(np.r_[starts, len(pairs)]))
    keep = np.empty(len(pairs), dtype=bool)
    keep[order] = rank < k
    return keep


def balanced_alpha(campaign: Campaign) -> bool:
    """Whether agreement is computed over the first two judgments of every unit (the adaptive presence rule:
    only units whose first two judges disagree get a third, so alpha over all judgments would be biased)."""
    return campaign.presence_judges == Campaign.PresenceJudges.ADAPTIVE


def judgment_arrays(campaign: Campaign, system_id=None, *, balanced: bool | None = None):
    """Judgments that count, as arrays: pair index (unit, summary), label, example index, system id.

    ``balanced`` (by default under the adaptive presence rule): only the first two judgments of every unit,
    by submission time."""
    rows = PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False)
    if system_id is not None:
        rows = rows.filter(summary__system_id=system_id)
    balanced = balanced_alpha(campaign) if balanced is None else balanced
    # Time order matters only to keep each unit's first judgments (a paper-size campaign's 260,000 rows come
    # unsorted otherwise: the sort was most of the score update's figures).
    if balanced:
        rows = rows.order_by("created_at", "pk")
    # The rows straight from the cursor (no model layer per row: a fifth of the time at the paper's size).
    query, params = rows.values_list(
        "unit_id", "summary_id", "present", "summary__example_id", "summary__system_id").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        data = np.array(cursor.fetchall(), dtype=np.int64).reshape(-1, 5)
    if data.size == 0:
        return data, np.zeros(0, np.int64)
    pair_index = _pair_index(data)
    if balanced:
        data = data[first_per_pair(pair_index)]
        pair_index = _pair_index(data)
    return data, pair_index


def _pair_index(data: np.ndarray) -> np.ndarray:
    """Each row's (unit, summary) pair, numbered in (unit, summary) order (one integer key per pair: sorting 260,000
    keys takes milliseconds where sorting the rows of pairs took a second)."""
    key = data[:, 0] * (int(data[:, 1].max()) + 1) + data[:, 1]
    return np.unique(key, return_inverse=True)[1].ravel()


def judgments_stamp(campaign: Campaign) -> list:
    """What the agreement figures depend on, in one aggregate query (no judgment leaves the database): the
    judgments' count, largest id and id sum, the same over the excluded ones, the presence rule and the systems'
    names.  A new, removed, excluded or re-included judgment changes it."""
    figures = PresenceJudgment.objects.filter(summary__system__campaign=campaign).aggregate(
        n=Count("pk"), top=Max("pk"), ids=Sum("pk"),
        n_excluded=Count("pk", filter=Q(excluded=True)), excluded_ids=Sum("pk", filter=Q(excluded=True)),
    )
    names = sorted(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    # (PostgreSQL sums integers as decimals: every figure as an int, for JSON.)
    return [[int(figures[k] or 0) for k in ("n", "top", "ids", "n_excluded", "excluded_ids")], campaign.presence_judges,
            [list(pair) for pair in names]]


def bootstrap_seed(campaign_id: int, stamp) -> int:
    """The seed of a bootstrap summarising ``stamp`` (JSON: what the figures are computed from) of a campaign: the
    same campaign in the same state gives the same draws, hence the same interval on every page and in every file."""
    digest = hashlib.sha256(json.dumps([campaign_id, stamp], sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:8], "big")


#: What each interval is, in one line (the leaderboard, the JSON, the docs): its target and its method.
INTERVALS = {
    "ci95": "95% interval of the system's mean QAPyramid; target: its score on documents like these; method: "
            f"Wilson score interval on [0, 1] at the variance of the mean that a bootstrap resampling examples gives "
            f"({N_BOOT:,} draws, seeded from the campaign and its scores)",
    "alpha_ci95": "95% interval of the pooled Krippendorff's alpha (nominal); target: the crowd's agreement on documents "
                  f"like these; method: percentile bootstrap resampling examples ({N_BOOT:,} draws, seeded from the "
                  "campaign and its judgments)",
}
#: Why a system has no gold interval yet.
NO_INTERVAL_YET = "no interval yet: no unit of this system has a gold label"


def agreement(campaign: Campaign, n_boot: int = N_BOOT) -> dict:
    """The scores' agreement (``compute_agreement``) as the score update last stored it with the system scores
    (``annotation.services.scores.refresh_figures``): every page, the API, the command and the export read this
    one figure, never a new computation.  Computed (and stored) here only for a campaign nothing stored it for
    yet, or for ``n_boot`` other than ``N_BOOT`` (a script's own choice: stored apart, while the judgments are
    unchanged)."""
    if n_boot == N_BOOT:
        stored = AgreementCache.objects.filter(
            campaign=campaign, kind=AgreementCache.Kind.SCORES, n_boot=N_BOOT).values_list("data", flat=True).first()
        if stored:  # (an empty row is the figures' lock before their first computation: ``lock_figures``)
            return _in_order(stored)
    stamp = judgments_stamp(campaign)
    return _in_order(stored_figures(campaign, AgreementCache.Kind.SCORES, n_boot, stamp,
                                    lambda: compute_agreement(campaign, n_boot=n_boot, stamp=stamp)))


def _in_order(figures: dict) -> dict:
    """The figures with the systems' alphas by name: PostgreSQL's JSON keeps no key order, so a figure just computed
    and the same figure read back would otherwise print differently."""
    if "per_system" not in figures:
        return figures
    return {**figures, "per_system": dict(sorted(figures["per_system"].items()))}


def store_agreement(campaign: Campaign) -> dict:
    """Compute the scores' agreement with ``N_BOOT`` draws and store it (the score update's step, in its
    transaction); returns it."""
    stamp = judgments_stamp(campaign)
    data = compute_agreement(campaign, n_boot=N_BOOT, stamp=stamp)
    AgreementCache.objects.update_or_create(
        campaign=campaign, kind=AgreementCache.Kind.SCORES, n_boot=N_BOOT, defaults={"stamp": stamp, "data": data})
    return data


def stored_figures(campaign: Campaign, kind: str, n_boot: int, stamp, compute):
    """The figures of ``kind`` stored for ``campaign`` while their ``stamp`` (JSON) is unchanged; else ``compute()``
    (JSON as well), stored with the stamp."""
    cached = AgreementCache.objects.filter(campaign=campaign, kind=kind, n_boot=n_boot).values_list("stamp", "data").first()
    if cached is not None and cached[0] == stamp:
        return cached[1]
    data = compute()
    try:
        with transaction.atomic():  # a concurrent view may store the same figures first: either row is right
            AgreementCache.objects.update_or_create(
                campaign=campaign, kind=kind, n_boot=n_boot, defaults={"stamp": stamp, "data": data}
            )
    except IntegrityError:
        pass
    return data


def compute_agreement(campaign: Campaign, n_boot: int = N_BOOT, stamp=None) -> dict:
    """Krippendorff's alpha (nominal) pooled with a 95% bootstrap interval (resampling examples), per system, and
    percent agreement.  The bootstrap is seeded from the campaign and its judgments (``stamp``, by default
    ``judgments_stamp``): the same judgments give the same interval."""
    data, pairs = judgment_arrays(campaign)
    if data.size == 0:
        return {"pooled": None, "ci95": [None, None], "per_system": {}, "percent_agreement": None, "n_judgments": 0,
                "first_two": balanced_alpha(campaign)}
    labels = data[:, 2]
    pooled = scoring.krippendorff_alpha_nominal(pairs, labels)
    lo, hi = float("nan"), float("nan")
    if n_boot:
        seed = bootstrap_seed(campaign.pk, judgments_stamp(campaign) if stamp is None else stamp)
        lo, hi = scoring.bootstrap_alpha_ci(pairs, labels, data[:, 3], n_boot=n_boot, seed=seed)
    names = dict(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    per_system = {}
    for system_id in np.unique(data[:, 4]):
        rows = data[:, 4] == system_id
        _, sub_pairs = np.unique(pairs[rows], return_inverse=True)
        per_system[names[int(system_id)]] = none_if_nan(scoring.krippendorff_alpha_nominal(sub_pairs.ravel(), labels[rows]))
    return {
        "pooled": none_if_nan(pooled),
        "ci95": [none_if_nan(lo), none_if_nan(hi)],
        "per_system": per_system,
        "percent_agreement": none_if_nan(scoring.percent_agreement(pairs, labels)),
        "n_judgments": int(len(labels)),
        "first_two": balanced_alpha(campaign),
    }


def none_if_nan(x):
    """``x`` as a float, or None for NaN or None (for JSON and templates)."""
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


SUMMARY_FIELDS = (
    "summary__example__external_id", "summary__system__name", "qapyramid", "repetition_rate", "length_penalty",
    "nqapyramid", "length", "n_units", "n_present",
)


def summary_score_rows(campaign: Campaign, system: str | None = None):
    """The stored figures of every system summary (optionally of one system), ordered by example position, then
    system name, as a queryset of value tuples (a page of them is read with a slice); ``summary_score_entry``
    turns one into the figures ``summary_scores`` gives."""
    rows = SummaryScore.objects.filter(summary__system__campaign=campaign)
    if system is not None:
        rows = rows.filter(summary__system__name=system)
    return rows.order_by("summary__example__position", "summary__system__name").values_list(*SUMMARY_FIELDS)


def summary_score_entry(row: tuple) -> dict:
    example, name, q, rp, p_l, n, length, n_units, n_present = row
    return {
        "example": example, "system": name, "qapyramid": q, "p_r": None if rp is None else 1.0 - rp, "p_l": p_l,
        "nqapyramid": n, "length": length, "n_units": n_units, "n_present": n_present,
    }


def summary_scores(campaign: Campaign, system: str | None = None) -> list[dict]:
    """One entry per system summary: example (external id), system, qapyramid, p_r, p_l, nqapyramid, length (tokens).

    p_r and p_l depend on the texts only and are there even where no unit has a gold label
    (qapyramid and nqapyramid are then None).  Ordered by example position, then system name.
    """
    return [summary_score_entry(row) for row in summary_score_rows(campaign, system)]


def rank_systems(systems: dict) -> dict:
    """``{name: figures}`` ordered best first by ``qapyramid`` (systems without a score last, ties by name),
    each with its ``rank`` (1-based)."""
    # Scores equal to 12 digits tie (a kept sum and a rebuilt one differ in the last bits): the name breaks the tie,
    # so every view ranks alike.
    order = sorted(systems.items(), key=lambda kv: (kv[1].get("qapyramid") is None, -round(kv[1].get("qapyramid") or 0.0, 12), kv[0]))
    return {name: {**figures, "rank": i + 1} for i, (name, figures) in enumerate(order)}


def gold_pairs(campaign: Campaign) -> int:
    """How many (unit, summary) pairs have a gold label (imported, the crowd's, or left out by the tie rule), counted
    in the database."""
    return GoldPresence.objects.filter(summary__system__campaign=campaign).values("unit_id", "summary_id").distinct().count()


def gold_figure(score) -> dict:
    """A system's gold score and 95% interval as every view gives them (``score``: its ``SystemScore`` or None), with
    ``no_interval_reason`` where there is no interval yet (never a number standing in for one)."""
    ci = [score.qapyramid_low, score.qapyramid_high] if score else [None, None]
    return {"qapyramid": score.qapyramid if score else None, "ci95": ci,
            "no_interval_reason": NO_INTERVAL_YET if ci[0] is None else None}


def campaign_scores(campaign: Campaign, n_boot: int = N_BOOT, per_summary: bool = False) -> dict:
    """The campaign's scores in the shape ``manage.py campaign_scores --format json`` prints.

    ``systems`` is the ranking, best first (``ranked_by``): the gold scores, or under budgeted presence the
    hybrid scores (human labels where people judged, the judge's elsewhere: under the active rule the AIPW estimate,
    each system with ``score``, ``ci_low``/``ci_high`` (the design interval) and ``ci95_examples``, and
    ``hybrid.estimator`` naming the method, the intervals' targets and the papers; under the uncertainty rule no
    interval, with ``no_interval_reason``).  A budgeted campaign's gold scores
    rest on human labels only, over different summaries and units per system: they move to ``human_only``
    (by name, with the summaries and units each rests on), not a ranking.
    With ``per_summary``, a ``summaries`` list of ``summary_scores`` is added.
    """
    alpha = agreement(campaign, n_boot=n_boot)
    gold = {}
    for system in System.objects.filter(campaign=campaign).select_related("score").order_by("name"):
        score = getattr(system, "score", None)
        gold[system.name] = {
            **gold_figure(score),
            "nqapyramid": score.nqapyramid if score else None,
            "n_summaries": score.n_summaries if score else 0,
            # The labelled (unit, summary) pairs its scores rest on, kept with the sums (ties the tie rule left out do not count).
            "n_units": score.n_units if score else 0,
            "predicate_level": score.predicate_level if score else None,
            # This system's Krippendorff's alpha: the figure of ``alpha.per_system`` (stored with it).
            "alpha": score.alpha if score else None,
        }
    n_units = gold_pairs(campaign)
    extra = {}
    if campaign.is_hybrid:
        from annotation.selectors.hybrid import hybrid_scores

        # Budgeted presence: the scores that mix human and judge labels, with the share people judged, rank.
        # The stored scores, with their own intervals (``hybrid["n_boot"]`` draws): ``n_boot`` is for the gold and alpha.
        hybrid = hybrid_scores(campaign, with_summaries=per_summary)
        by_summary = {(row["example"], row["system"]): row for row in hybrid.pop("summaries", [])}
        hybrid.pop("summary_scores", None)
        figures = hybrid["systems"]
        # ``hybrid.systems``: each system's score under the rule (``scoring``); the figures behind it rank in ``systems``.
        hybrid["systems"] = {name: f["qapyramid"] for name, f in figures.items()}
        extra = {"ranked_by": "hybrid", "systems": rank_systems(figures), "human_only": gold, "hybrid": hybrid}
    result = {
        "campaign": campaign.slug,
        "n_units": n_units,
        "n_judgments": alpha["n_judgments"],
        "alpha": {"pooled": alpha["pooled"], "ci95": alpha["ci95"], "per_system": alpha["per_system"]},
        # Each interval's target and method in one line.
        "intervals": INTERVALS,
        "percent_agreement": alpha["percent_agreement"],
        "length_penalty_alpha": campaign.length_penalty_alpha,
        "ranked_by": "gold",
        "systems": rank_systems(gold),
        **extra,
    }
    # Every pair of systems, with the verdict after Holm's adjustment over all of them (``pairs_method``).
    result.update(pair_comparisons(campaign, ranking=list(result["systems"]), hybrid=extra.get("hybrid")))
    if per_summary:
        result["summaries"] = summary_scores(campaign)
        if campaign.is_hybrid:
            # Budgeted presence: each summary's hybrid score under the uncertainty rule, its display score under the
            # active rule (``hybrid_kind``; for browsing, not ranking); qapyramid stays the human-only figure.
            for entry in result["summaries"]:
                row = by_summary.get((entry["example"], entry["system"]))
                entry["hybrid"] = row["score"] if row else None
                entry["hybrid_kind"] = "display score" if row and row.get("display") else "score"
                entry["hybrid_human_units"] = row["human_units"] if row else 0
    return result

