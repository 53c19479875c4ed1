"""Meta-evaluation: how an automatic metric's ranking agrees with the gold QAPyramid.

- system level: the correlation between the systems' mean scores;
- summary level: for each example, the correlation across systems of the
  summaries' scores, then the mean over all examples, an example where it
  is undefined (all systems tied on one side, or a single system scored)
  counting as 0, as the QAPyramid authors' code does; how many were
  undefined is reported with it.
Kendall's tau is scipy's tau-b; Pearson and Spearman as in scipy.
"""

from __future__ import annotations

import warnings

import numpy as np

from annotation.scoring.intervals import wilson_interval

METHODS = ("kendall", "pearson", "spearman")


def correlation(x, y, method: str = "kendall") -> float:
    """One correlation coefficient; NaN when undefined (fewer than 2 points, or a constant side)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    from scipy import stats  # here, not at start: SciPy's statistics take seconds to import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "kendall":
            return float(stats.kendalltau(x, y).statistic)
        if method == "pearson":
            return float(stats.pearsonr(x, y)[0])
        return float(stats.spearmanr(x, y).statistic)


def _means(values, index):
    index = np.asarray(index, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    keep = ~np.isnan(values)
    size = int(index.max()) + 1 if index.size else 0
    total = np.bincount(index[keep], weights=values[keep], minlength=size)
    count = np.bincount(index[keep], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def system_level_correlation(metric, gold, system_index, method: str = "kendall") -> float:
    """Correlation between per-system means of ``metric`` and of ``gold`` (one value per summary)."""
    return correlation(_means(metric, system_index), _means(gold, system_index), method)


def summary_level_correlation(metric, gold, example_index, system_index, method: str = "kendall") -> tuple[float, int, int]:
    """Mean over examples of the across-system correlation: (mean, examples, undefined examples).

    Every example with at least one summary scored on both sides counts; an example whose
    correlation is undefined (systems all tied on the metric or on the gold, or fewer than two
    summaries) contributes 0 to the mean.  Averaging over defined examples only would reward a
    metric for tying systems.
    """
    metric = np.asarray(metric, dtype=float)
    gold = np.asarray(gold, dtype=float)
    example_index = np.asarray(example_index, dtype=np.int64)
    scored = ~(np.isnan(metric) | np.isnan(gold))
    order = np.argsort(example_index, kind="stable")
    bounds = np.flatnonzero(np.diff(example_index[order])) + 1
    values = []
    undefined = 0
    for rows in np.split(order, bounds):
        if not rows.size or not scored[rows].any():
            continue
        r = correlation(metric[rows], gold[rows], method)
        if np.isnan(r):
            undefined += 1
            r = 0.0
        values.append(r)
    return (float(np.mean(values)) if values else float("nan")), len(values), undefined


def correlations_by_subgroup(metric, gold, example_index, system_index, subgroups=None, methods=METHODS) -> dict:
    """System- and summary-level correlations for all systems and for each named subgroup of system indices."""
    system_index = np.asarray(system_index, dtype=np.int64)
    groups = {"all": None, **(subgroups or {})}
    result = {}
    for name, members in groups.items():
        rows = np.ones(system_index.shape, bool) if members is None else np.isin(system_index, list(members))
        entry = {}
        for method in methods:
            summary, n_examples, n_undefined = summary_level_correlation(
                np.asarray(metric)[rows], np.asarray(gold)[rows], np.asarray(example_index)[rows], system_index[rows], method
            )
            entry[method] = {
                "system": system_level_correlation(np.asarray(metric)[rows], np.asarray(gold)[rows], system_index[rows], method),
                "summary": summary,
                "n_examples": n_examples,
                "n_undefined": n_undefined,
            }
        result[name] = entry
    return result


def bootstrap_score_ci(summary_scores, example_index, system_index, n_boot: int = 1000, ci: float = 0.95, seed: int = 0):
    """Interval of each system's mean score over examples: the Wilson interval on [0, 1]
    (``annotation.scoring.intervals``) at the variance of the mean that a bootstrap resampling examples with
    replacement gives (``n_boot`` draws from ``seed``); where that variance is 0 (every example scores the same, or
    a single example) the interval has the width its examples allow.  It lies in [0, 1] and holds the system's mean.

    Returns an array (systems x 2) of [lo, hi] (NaN for a system without a score).  Vectorised: the replicate
    means are one product of the draw counts with the systems x examples score matrix.
    """
    from statistics import NormalDist

    scores = np.asarray(summary_scores, dtype=float)
    examples, ex = np.unique(np.asarray(example_index, dtype=np.int64), return_inverse=True)
    ex = ex.ravel()
    system_index = np.asarray(system_index, dtype=np.int64)
    n_sys = int(system_index.max()) + 1 if system_index.size else 0
    matrix = np.zeros((n_sys, len(examples)))
    mask = np.zeros((n_sys, len(examples)))
    keep = ~np.isnan(scores)
    np.add.at(matrix, (system_index[keep], ex[keep]), scores[keep])
    np.add.at(mask, (system_index[keep], ex[keep]), 1.0)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(examples), np.full(len(examples), 1.0 / len(examples)), size=n_boot).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (draws @ matrix.T) / (draws @ mask.T)
        mean = matrix.sum(axis=1) / mask.sum(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variance = np.nanvar(means, axis=0, ddof=1) if n_boot > 1 else np.zeros(n_sys)
    n_examples = (mask > 0).sum(axis=1)
    z = NormalDist().inv_cdf(0.5 + ci / 2.0)
    return np.array([wilson_interval(m, v, n, z=z) for m, v, n in zip(mean, np.nan_to_num(variance), n_examples)],
                    dtype=float).reshape(n_sys, 2)


def bootstrap_hybrid_score_ci(fixed_present, n_units, judge_summary, judge_probability, example_index, system_index,
                              n_boot: int = 1000, ci: float = 0.95, seed: int = 0):
    """Percentile bootstrap interval of each system's mean score when part of every summary's units count as a
    probability: each replicate resamples examples with replacement (as ``bootstrap_score_ci``) and draws the
    presence of every judge-scored unit from its probability (Bernoulli).

    Per summary i: ``fixed_present[i]`` units counted present for sure (human labels), ``n_units[i]`` units in
    all; ``judge_summary[j]`` / ``judge_probability[j]``: the summary and probability of judge unit j.  Returns
    an array (systems x 2) of [lo, hi]; the same ``seed`` gives the same interval.
    """
    fixed = np.asarray(fixed_present, dtype=float)
    n_units = np.asarray(n_units, dtype=float)
    judge_summary = np.asarray(judge_summary, dtype=np.int64)
    p = np.clip(np.asarray(judge_probability, dtype=float), 0.0, 1.0)
    examples, ex = np.unique(np.asarray(example_index, dtype=np.int64), return_inverse=True)
    ex = ex.ravel()
    system_index = np.asarray(system_index, dtype=np.int64)
    n_sys = int(system_index.max()) + 1 if system_index.size else 0
    n_ex = len(examples)
    cell = system_index * n_ex + ex
    mask = np.bincount(cell, minlength=n_sys * n_ex).reshape(n_sys, n_ex).astype(float)
    p32 = p.astype(np.float32)
    rng = np.random.default_rng(seed)
    means = np.empty((n_boot, n_sys))
    for b in range(n_boot):
        weights = rng.multinomial(n_ex, np.full(n_ex, 1.0 / n_ex)).astype(float)
        drawn = np.bincount(judge_summary, weights=rng.random(p.size, dtype=np.float32) < p32, minlength=fixed.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            scores = (fixed + drawn) / n_units
        sums = np.bincount(cell, weights=np.nan_to_num(scores), minlength=n_sys * n_ex).reshape(n_sys, n_ex)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[b] = (sums @ weights) / (mask @ weights)
    tail = (1.0 - ci) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.nanquantile(means, [tail, 1.0 - tail], axis=0).T
