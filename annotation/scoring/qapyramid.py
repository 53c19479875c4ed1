"""QAPyramid scores: the share of a reference's QA pairs (or units) present in a summary."""

from __future__ import annotations

import numpy as np


def qapyramid_scores(summary_index, present, n_summaries: int | None = None) -> np.ndarray:
    """QAPyramid_i = (number of present units of summary i) / K_i.

    ``present`` holds one gold label per (unit, summary) row: 1, 0, or -1
    for a unit without a gold label (e.g. a tie under the "exclude" rule),
    which is left out of both the numerator and K_i.  Summaries without any
    labelled unit get NaN.
    """
    summary_index = np.asarray(summary_index, dtype=np.int64)
    present = np.asarray(present, dtype=np.int64)
    keep = present >= 0
    size = int(n_summaries) if n_summaries is not None else (int(summary_index.max()) + 1 if summary_index.size else 0)
    k = np.bincount(summary_index[keep], minlength=size).astype(float)
    hits = np.bincount(summary_index[keep], weights=present[keep], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, hits / np.maximum(k, 1), np.nan)


def predicate_level_scores(summary_index, predicate_index, present, n_summaries: int | None = None) -> np.ndarray:
    """Predicate-level variant: mean over a summary's predicates of the share of that predicate's pairs present.

    score_i = (1/P_i) Σ_p present_ip / K_ip, so that predicates with many
    minor arguments do not outweigh the others.
    """
    summary_index = np.asarray(summary_index, dtype=np.int64)
    predicate_index = np.asarray(predicate_index, dtype=np.int64)
    present = np.asarray(present, dtype=np.int64)
    keep = present >= 0
    s, p, y = summary_index[keep], predicate_index[keep], present[keep]
    pairs, inverse = np.unique(np.stack([s, p]), axis=1, return_inverse=True)
    inverse = inverse.ravel()
    share = np.bincount(inverse, weights=y) / np.bincount(inverse)
    size = int(n_summaries) if n_summaries is not None else (int(summary_index.max()) + 1 if summary_index.size else 0)
    total = np.bincount(pairs[0], weights=share, minlength=size)
    count = np.bincount(pairs[0], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def system_scores(system_index, summary_scores, n_systems: int | None = None) -> np.ndarray:
    """A system's score = mean of its summaries' scores (NaN summaries left out)."""
    system_index = np.asarray(system_index, dtype=np.int64)
    scores = np.asarray(summary_scores, dtype=float)
    keep = ~np.isnan(scores)
    size = int(n_systems) if n_systems is not None else (int(system_index.max()) + 1 if system_index.size else 0)
    total = np.bincount(system_index[keep], weights=scores[keep], minlength=size)
    count = np.bincount(system_index[keep], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)
