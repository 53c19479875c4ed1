"""Budgeted routing of presence HITs between the crowd and an automatic judge (pure functions).

A presence HIT groups several units of one summary (a summary x predicate for QA campaigns, a
chunk of a reference's units for "scu" campaigns).  Given the judge's presence probability of
every unit, its decision threshold and the HIT each unit belongs to, these functions say how
unsure the judge is of each HIT and which HITs go to people within a budget.  Numbers in,
choices out: no Django, no models, so the evaluation command and the campaign worker share
them.

Uncertainty measures (larger = less sure):

- ``margin``: minus the smallest distance of one of the HIT's units to the threshold, each
  distance scaled by the room on its side (``(p - t) / (1 - t)`` above, ``(t - p) / t`` below),
  so a judge whose threshold is not 0.5 is measured fairly.  One coin-flip unit is enough to
  make a HIT unsure.
- ``expected_errors``: the expected number of wrong labels among the HIT's units if the judge's
  labels were kept, sum of ``p`` over units it calls absent and ``1 - p`` over those it calls
  present.  It reads the probabilities as calibrated ones and counts every unsure unit.
- ``expected_error_rate``: the same divided by the HIT's units (unsure per judgment bought).
- ``expected_score_error``: each unit's error probability divided by the number of units of its
  summary, summed over the HIT: how far the summary's score is expected to move when people
  correct the HIT (a wrong label weighs more in a summary with few units).
"""

from __future__ import annotations

import math

import numpy as np

MEASURES = ("margin", "expected_errors", "expected_error_rate", "expected_score_error")


def hit_budget(n_hits: int, share: float) -> int:
    """How many of ``n_hits`` HITs a human share buys: never more than ``share`` of them (rounded down)."""
    if not 0.0 <= share <= 1.0 or math.isnan(share):
        raise ValueError(f"the human share must be between 0 and 1, not {share!r}")
    # 1e-9 so that e.g. 0.3 x 10 (2.9999999999999996 in floating point) buys 3 HITs, not 2.
    return min(int(n_hits), int(math.floor(share * n_hits + 1e-9)))


def round_budgets(total: int, rounds: int) -> list[int]:
    """``total`` HITs spread over ``rounds`` rounds as evenly as possible (earlier rounds get the remainder)."""
    if rounds < 1:
        raise ValueError("there must be at least one round")
    base, extra = divmod(int(total), int(rounds))
    return [base + (1 if r < extra else 0) for r in range(rounds)]


def unit_margins(probabilities, threshold) -> np.ndarray:
    """Each unit's scaled distance to the threshold, in [0, 1] (0: on the threshold, 1: certain)."""
    p = np.asarray(probabilities, dtype=float)
    t = np.clip(np.asarray(threshold, dtype=float), 1e-6, 1 - 1e-6)  # one threshold, or one per unit
    return np.where(p >= t, (p - t) / (1 - t), (t - p) / t).clip(0.0, 1.0)


def unit_error_probabilities(probabilities, threshold) -> np.ndarray:
    """The probability that the judge's label of each unit is wrong, reading ``p`` as calibrated."""
    p = np.asarray(probabilities, dtype=float).clip(0.0, 1.0)
    return np.where(p >= threshold, 1.0 - p, p)


def hit_uncertainty(probabilities, threshold, hit_index, n_hits: int | None = None,
                    measure: str = "expected_errors", summary_sizes=None) -> np.ndarray:
    """One uncertainty per HIT (larger = less sure) from its units' probabilities.

    ``hit_index[i]`` is the HIT (0..n_hits-1) of unit ``i``; ``summary_sizes[i]`` the number of
    units of unit ``i``'s summary (``expected_score_error`` only).  A HIT without units gets -inf
    (nothing to ask a person).
    """
    if measure not in MEASURES:
        raise ValueError(f"unknown uncertainty measure {measure!r}; use one of {', '.join(MEASURES)}")
    hit_index = np.asarray(hit_index, dtype=np.int64)
    n = int(n_hits if n_hits is not None else (hit_index.max() + 1 if hit_index.size else 0))
    counts = np.bincount(hit_index, minlength=n).astype(float)
    if measure == "margin":
        smallest = np.full(n, np.inf)
        np.minimum.at(smallest, hit_index, unit_margins(probabilities, threshold))
        result = -smallest
    else:
        errors = unit_error_probabilities(probabilities, threshold)
        if measure == "expected_score_error":
            if summary_sizes is None:
                raise ValueError("expected_score_error needs the summary sizes")
            errors = errors / np.maximum(np.asarray(summary_sizes, dtype=float), 1.0)
        result = np.bincount(hit_index, weights=errors, minlength=n)
        if measure == "expected_error_rate":
            result = result / np.maximum(counts, 1.0)
    return np.where(counts > 0, result, -np.inf)


def least_sure(uncertainty, budget: int, exclude=None, seed: int = 0) -> np.ndarray:
    """Indices of at most ``budget`` HITs, the least sure first, never one of ``exclude`` (already routed).

    Ties are broken at random with ``seed``, so that equal HITs are not routed by their order
    in the campaign.  HITs with uncertainty -inf (no units) are never chosen.
    """
    uncertainty = np.asarray(uncertainty, dtype=float)
    allowed = np.isfinite(uncertainty)
    if exclude is not None and len(exclude):
        allowed[np.asarray(exclude, dtype=np.int64)] = False
    candidates = np.flatnonzero(allowed)
    budget = max(0, min(int(budget), candidates.size))
    if budget == 0:
        return np.zeros(0, dtype=np.int64)
    tie_break = np.random.default_rng(seed).random(candidates.size)
    order = np.lexsort((tie_break, -uncertainty[candidates]))
    return candidates[order[:budget]]


def random_choice(n_hits: int, budget: int, exclude=None, seed: int = 0, eligible=None) -> np.ndarray:
    """``budget`` HITs drawn uniformly at random (the baseline the routing is measured against)."""
    allowed = np.ones(int(n_hits), dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool).copy()
    if exclude is not None and len(exclude):
        allowed[np.asarray(exclude, dtype=np.int64)] = False
    candidates = np.flatnonzero(allowed)
    budget = max(0, min(int(budget), candidates.size))
    return np.sort(np.random.default_rng(seed).choice(candidates, size=budget, replace=False)).astype(np.int64)


def hybrid_labels(judge_labels, human_labels, human_mask) -> np.ndarray:
    """A unit's label: the human one where people judged it, the judge's elsewhere."""
    human_mask = np.asarray(human_mask, dtype=bool)
    return np.where(human_mask, np.asarray(human_labels, dtype=bool), np.asarray(judge_labels, dtype=bool))


def unit_prior(unit_index, labels, observed) -> tuple[np.ndarray, np.ndarray]:
    """What people said about the same unit in other summaries: per row, the share of the unit's other
    human-labelled rows that are present (NaN where there is none), and how many there are.

    ``unit_index[i]`` identifies row i's unit (the same reference unit in every system's summary);
    ``observed[i]`` says whether people labelled row i (``labels[i]`` is only read there).
    """
    # Dense codes: a campaign passes database ids, whose largest value says nothing about how many units there are.
    unit_index = np.unique(np.asarray(unit_index, dtype=np.int64), return_inverse=True)[1].ravel()
    observed = np.asarray(observed, dtype=bool)
    present = observed & np.asarray(labels, dtype=bool)
    seen = np.bincount(unit_index, weights=observed)[unit_index] - observed
    yes = np.bincount(unit_index, weights=present)[unit_index] - present
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(seen > 0, yes / np.maximum(seen, 1), np.nan)
    return share, seen
