"""Majority vote over presence judgments."""

from __future__ import annotations

import numpy as np

TIE_RULES = ("absent", "present", "exclude")


def judgment_counts(unit_index, labels, n_units: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: number of judgments n_u and number of "present" labels p_u (vectorised with bincount)."""
    unit_index = np.asarray(unit_index, dtype=np.int64)
    labels = np.asarray(labels, dtype=np.int64)
    if unit_index.shape != labels.shape:
        raise ValueError("unit_index and labels must have the same length")
    if labels.size and not np.isin(labels, (0, 1)).all():
        raise ValueError("labels must be 0 (not present) or 1 (present)")
    size = int(n_units) if n_units is not None else (int(unit_index.max()) + 1 if unit_index.size else 0)
    n = np.bincount(unit_index, minlength=size)
    present = np.bincount(unit_index, weights=labels, minlength=size).astype(np.int64)
    return n, present


def majority_vote(unit_index, labels, n_units: int | None = None, tie: str = "absent") -> np.ndarray:
    """Gold label per unit by majority vote.

    gold_u = 1 if 2·p_u > n_u, 0 if 2·p_u < n_u; a tie (2·p_u = n_u, possible
    with an even number of judges) is decided by ``tie``:

    - "absent" (default, as PyrXSum did): the unit counts as not present;
    - "present": the unit counts as present;
    - "exclude": the unit gets no gold label (-1) and is left out of scores.

    Units without any judgment get -1.  Returns an int8 array of length n_units.
    """
    if tie not in TIE_RULES:
        raise ValueError(f"tie must be one of {', '.join(TIE_RULES)}")
    n, present = judgment_counts(unit_index, labels, n_units)
    gold = np.full(n.shape, -1, dtype=np.int8)
    twice = 2 * present
    gold[(n > 0) & (twice > n)] = 1
    gold[(n > 0) & (twice < n)] = 0
    ties = (n > 0) & (twice == n)
    if tie == "absent":
        gold[ties] = 0
    elif tie == "present":
        gold[ties] = 1
    return gold
