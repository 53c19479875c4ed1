"""Reads behind the agreement dashboard (and the leaderboard's verification figures): how much the crowd agrees, where, and since when.

- Presence: Krippendorff's alpha (nominal) over the judgments that count
  (under the adaptive presence rule, the first two of every unit by
  submission time: a balanced design, since only disagreeing units get a
  third judge), pooled, per system and per batch of units in the order they were
  completed, each with a 95% percentile bootstrap interval resampling
  examples (``annotation.scoring.bootstrap_alpha_ci``).
- Verification: alpha and percent agreement of the verifiers' valid/invalid
  verdicts on the same questions.  Generation has one writer per predicate,
  so no agreement is defined for it.
- Per-worker accuracy: the share of a judge's labels equal to the crowd's
  majority label of the same (unit, summary).
- The units the judges disagree on most, and the predicates the pipeline
  flagged.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime
from functools import reduce
from operator import or_

import numpy as np
from django.db.models import Count, F, FilteredRelation, Max, Min, Q, Sum

from annotation import scoring
from annotation.models import AgreementCache, Campaign, ContentUnit, GoldPresence, Predicate, PresenceJudgment, System, SystemSummary, Verification
from annotation.selectors.scores import balanced_alpha, first_per_pair, judgments_stamp, stored_figures

MAX_BATCHES = 10
MIN_UNITS_PER_BATCH = 20


def _clean(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _alpha_with_interval(pairs: np.ndarray, labels: np.ndarray, examples: np.ndarray, n_boot: int) -> dict:
    _, compact = np.unique(pairs, return_inverse=True)
    compact = compact.ravel()
    alpha = scoring.krippendorff_alpha_nominal(compact, labels)
    lo, hi = scoring.bootstrap_alpha_ci(compact, labels, examples, n_boot=n_boot) if n_boot else (math.nan, math.nan)
    return {"alpha": _clean(alpha), "lo": _clean(lo), "hi": _clean(hi), "n_judgments": int(len(labels))}


def verification_agreement(campaign: Campaign) -> dict:
    """How often the two verifiers of a question agree (valid/invalid), with nominal alpha."""
    rows = np.array(
        list(Verification.objects.filter(unit__example__campaign=campaign, excluded=False).values_list("unit_id", "valid")), dtype=np.int64
    ).reshape(-1, 2)
    if rows.size == 0:
        return {"percent": None, "alpha": None, "n_questions": 0, "positive_share": None}
    _, units = np.unique(rows[:, 0], return_inverse=True)
    percent = scoring.percent_agreement(units.ravel(), rows[:, 1])
    alpha = scoring.krippendorff_alpha_nominal(units.ravel(), rows[:, 1])
    clean = lambda x: None if np.isnan(x) else float(x)  # noqa: E731
    return {"percent": clean(percent), "alpha": clean(alpha), "n_questions": int(units.max()) + 1,
            "positive_share": float(rows[:, 1].mean())}


def presence_judgments(campaign: Campaign):
    """Judgments that count, in time order, as an array (columns unit, summary, present, example, system, worker,
    judgment id) read in one query, and the (unit, summary) pair index of every row."""
    rows = (
        PresenceJudgment.objects.filter(summary__system__campaign=campaign, excluded=False)
        .order_by("created_at", "pk")
        .values_list("unit_id", "summary_id", "present", "summary__example_id", "summary__system_id", "worker_id", "pk")
    )
    data = np.array(list(rows), dtype=np.int64).reshape(-1, 7)
    if data.size == 0:
        return data, np.zeros(0, np.int64)
    _, pair_index = np.unique(data[:, :2], axis=0, return_inverse=True)
    return data, pair_index.ravel()


def per_batch(data: np.ndarray, pairs: np.ndarray, n_boot: int) -> list[dict]:
    """Alpha per batch of (unit, summary) pairs, in the order their last judgment arrived; each batch's time is
    its last judgment's, read for all batches in one query."""
    n_pairs = int(pairs.max()) + 1 if pairs.size else 0
    if n_pairs < 2 * MIN_UNITS_PER_BATCH:
        return []
    # Judgments are in time order: a pair's completion is the position of its last judgment.
    last = np.zeros(n_pairs, dtype=np.int64)
    np.maximum.at(last, pairs, np.arange(len(pairs)))
    order = np.argsort(last, kind="stable")
    n_batches = min(MAX_BATCHES, n_pairs // MIN_UNITS_PER_BATCH)
    batch_of_pair = np.empty(n_pairs, dtype=np.int64)
    for b, chunk in enumerate(np.array_split(order, n_batches)):
        batch_of_pair[chunk] = b
    batch_of_judgment = batch_of_pair[pairs]
    chunks = [np.flatnonzero(batch_of_pair == b) for b in range(n_batches)]
    last_ids = [int(data[int(last[chunk].max()), 6]) for chunk in chunks]
    finished = dict(PresenceJudgment.objects.filter(pk__in=last_ids).values_list("pk", "created_at"))
    out = []
    for b, chunk_pairs in enumerate(chunks):
        rows = batch_of_judgment == b
        result = _alpha_with_interval(pairs[rows], data[rows, 2], data[rows, 3], n_boot)
        result.update(batch=b + 1, n_units=int(len(chunk_pairs)), until=finished[last_ids[b]])
        out.append(result)
    return out


def worker_accuracy(campaign: Campaign) -> list[dict]:
    """Per judge: the share of their labels (that count) equal to the crowd's majority label of the same
    (unit, summary), where there is one; counted by the database in one grouped query.  Lowest first; judges
    of equal accuracy in the order of their first judgment (a second query only when two of them share its
    time)."""
    counted = PresenceJudgment.objects.annotate(
        majority=FilteredRelation(
            "unit__gold", condition=Q(unit__gold__origin=GoldPresence.Origin.MAJORITY, unit__gold__summary_id=F("summary_id"))
        )
    ).filter(majority__present__isnull=False, summary__system__campaign=campaign, excluded=False)
    rows = list(
        counted.values("worker_id").annotate(
            name=Max("worker__external_id"),
            n=Count("pk"),
            agree=Count("pk", filter=Q(present=F("majority__present"))),
            first_at=Min("created_at"),
        )
    )
    starts = Counter((r["agree"] / r["n"], r["first_at"]) for r in rows)
    tied = [r for r in rows if starts[(r["agree"] / r["n"], r["first_at"])] > 1]
    first_pk = {}
    if tied:
        first_pk = dict(
            counted.filter(reduce(or_, (Q(worker_id=r["worker_id"], created_at=r["first_at"]) for r in tied)))
            .values("worker_id")
            .annotate(first=Min("pk"))
            .values_list("worker_id", "first")
        )
    ranked = sorted(rows, key=lambda r: (r["agree"] / r["n"], r["first_at"], first_pk.get(r["worker_id"], 0)))
    return [{"worker": r["name"], "worker_id": r["worker_id"], "accuracy": r["agree"] / r["n"], "n": r["n"]} for r in ranked]


def accuracy_histogram(rows: list[dict], n_bins: int = 10) -> tuple[list[int], list[float]]:
    """Counts of workers per accuracy bin of width 1/n_bins over [0, 1] (the last bin includes 1)."""
    edges = [i / n_bins for i in range(n_bins + 1)]
    counts = [0] * n_bins
    for row in rows:
        counts[min(int(row["accuracy"] * n_bins), n_bins - 1)] += 1
    return counts, edges


def most_disagreement(data: np.ndarray, pairs: np.ndarray, limit: int = 15) -> list[dict]:
    """The (unit, summary) pairs whose judges split most evenly (at least two judgments)."""
    if data.size == 0:
        return []
    n = np.bincount(pairs)
    n_present = np.bincount(pairs, weights=data[:, 2]).astype(int)
    minority = np.minimum(n_present, n - n_present) / np.maximum(n, 1)
    candidates = np.flatnonzero((n >= 2) & (minority > 0))
    ranked = candidates[np.lexsort((-n[candidates], -minority[candidates]))][:limit]
    _, first_row = np.unique(pairs, return_index=True)  # the first row of every pair (pairs index 0..n-1)
    keys = [(int(data[first_row[p], 0]), int(data[first_row[p], 1])) for p in ranked]
    units = ContentUnit.objects.in_bulk([u for u, _ in keys])
    summaries = SystemSummary.objects.select_related("system", "example").in_bulk([s for _, s in keys])
    return [
        {
            "unit": units[u],
            "summary": summaries[s],
            "n": int(n[p]),
            "n_present": int(n_present[p]),
        }
        for (u, s), p in zip(keys, ranked)
    ]


def agreement_dashboard(campaign: Campaign, n_boot: int = 500) -> dict:
    """Everything the agreement page shows (see the module docstring), as last computed while the judgments, the
    verdicts and the majority labels are unchanged (``dashboard_stamp``): a view reads the stored figures, then
    the few rows they name (the most disputed units, the flagged predicates), instead of every judgment."""
    board = stored_figures(
        campaign, AgreementCache.Kind.DASHBOARD, n_boot, dashboard_stamp(campaign), lambda: _storable(compute_dashboard(campaign, n_boot))
    )
    return {
        **board,
        "batches": [{**b, "until": datetime.fromisoformat(b["until"])} for b in board["batches"]],
        "disagreement": _disputed_rows(board["disagreement"]),
        "flagged": list(
            Predicate.objects.filter(example__campaign=campaign, flagged=True).select_related("example", "sentence")[:200]
        ),
    }


def dashboard_stamp(campaign: Campaign) -> list:
    """What the dashboard's figures depend on: the judgments (``judgments_stamp``), the verdicts and the crowd's
    majority labels (a researcher's correction replaces one), each as counts and id sums in one aggregate query."""
    majority = GoldPresence.objects.filter(summary__system__campaign=campaign, origin=GoldPresence.Origin.MAJORITY).aggregate(
        n=Count("pk"), ids=Sum("pk"), present=Count("pk", filter=Q(present=True)),
    )
    return [judgments_stamp(campaign), verdicts_stamp(campaign), [int(v or 0) for v in majority.values()]]


def verdicts_stamp(campaign: Campaign) -> list[int]:
    """The verifiers' verdicts in one aggregate query: count and id sum, of all and of the excluded ones."""
    verdicts = Verification.objects.filter(unit__example__campaign=campaign).aggregate(
        n=Count("pk"), ids=Sum("pk"), n_excluded=Count("pk", filter=Q(excluded=True)), excluded_ids=Sum("pk", filter=Q(excluded=True)),
    )
    return [int(v or 0) for v in verdicts.values()]


def stored_verification_agreement(campaign: Campaign) -> dict:
    """``verification_agreement`` as last computed while the verdicts are unchanged (the leaderboard's panel)."""
    return stored_figures(
        campaign, AgreementCache.Kind.VERIFICATION, 0, verdicts_stamp(campaign), lambda: verification_agreement(campaign)
    )


def _storable(board: dict) -> dict:
    """The computed board as JSON: batch times as ISO text, the disputed units by id."""
    return {
        **board,
        "batches": [{**b, "until": b["until"].isoformat()} for b in board["batches"]],
        "histogram": [list(part) for part in board["histogram"]],
        "disagreement": [{"unit": r["unit"].pk, "summary": r["summary"].pk, "n": r["n"], "n_present": r["n_present"]}
                         for r in board["disagreement"]],
    }


def _disputed_rows(stored: list[dict]) -> list[dict]:
    units = ContentUnit.objects.in_bulk([r["unit"] for r in stored])
    summaries = SystemSummary.objects.select_related("system", "example").in_bulk([r["summary"] for r in stored])
    # A unit or summary removed since (its campaign's judgments then changed too, and the next view recomputes).
    return [{**r, "unit": units[r["unit"]], "summary": summaries[r["summary"]]} for r in stored
            if r["unit"] in units and r["summary"] in summaries]


def compute_dashboard(campaign: Campaign, n_boot: int = 500) -> dict:
    """The dashboard's figures from every judgment that counts (the flagged predicates aside)."""
    all_data, all_pairs = presence_judgments(campaign)
    # Under the adaptive rule alpha (and pairwise agreement) are over the first two judgments of every unit, a
    # balanced design; worker accuracy and the most disputed units still read every judgment.
    first_two = balanced_alpha(campaign)
    data, pairs = all_data, all_pairs
    if first_two and all_data.size:
        data = all_data[first_per_pair(all_pairs)]
        _, pairs = np.unique(data[:, :2], axis=0, return_inverse=True)
        pairs = pairs.ravel()
    pooled = (
        _alpha_with_interval(pairs, data[:, 2], data[:, 3], n_boot)
        if data.size
        else {"alpha": None, "lo": None, "hi": None, "n_judgments": 0}
    )
    pooled["percent"] = _clean(scoring.percent_agreement(pairs, data[:, 2])) if data.size else None
    pooled["positive_share"] = float(data[:, 2].mean()) if data.size else None
    names = dict(System.objects.filter(campaign=campaign).values_list("pk", "name"))
    systems = []
    for system_id, name in sorted(names.items(), key=lambda item: item[1]):
        rows = data[:, 4] == system_id if data.size else np.zeros(0, bool)
        if not rows.any():
            systems.append({"name": name, "alpha": None, "lo": None, "hi": None, "n_judgments": 0})
            continue
        result = _alpha_with_interval(pairs[rows], data[rows, 2], data[rows, 3], n_boot)
        result["name"] = name
        systems.append(result)
    accuracy = worker_accuracy(campaign)
    pooled["first_two"] = first_two
    pooled["n_all_judgments"] = int(len(all_data))
    return {
        "presence": pooled,
        "verification": verification_agreement(campaign),
        "systems": systems,
        "batches": per_batch(data, pairs, n_boot),
        "worker_accuracy": accuracy,
        "histogram": accuracy_histogram(accuracy),
        "disagreement": most_disagreement(all_data, all_pairs),
    }
