"""Agreement among presence judges: Krippendorff's alpha (nominal) and percent agreement.

Nominal alpha from the coincidence matrix o (values c, k):
o_ck = Σ_u Σ_{i≠j in u} [v_i = c][v_j = k] / (n_u − 1) over units with n_u ≥ 2
pairable values, n_c = Σ_k o_ck, n = Σ_c n_c, and

    alpha = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c · n_k.

Alpha is undefined (NaN) when no unit has two judgments or when every
pairable judgment has the same value (no expected disagreement).
"""

from __future__ import annotations

import warnings

import numpy as np


def value_counts(unit_index, labels, n_units: int | None = None):
    """Units × values matrix of judgment counts, and the sorted distinct values."""
    unit_index = np.asarray(unit_index, dtype=np.int64)
    labels = np.asarray(labels)
    values, codes = np.unique(labels, return_inverse=True)
    size = int(n_units) if n_units is not None else (int(unit_index.max()) + 1 if unit_index.size else 0)
    counts = np.zeros((size, len(values)), dtype=np.float64)
    np.add.at(counts, (unit_index, codes.ravel()), 1.0)
    return counts, values


def _pairable(counts: np.ndarray) -> np.ndarray:
    return counts[counts.sum(axis=1) >= 2]


def krippendorff_alpha_nominal(unit_index, labels, n_units: int | None = None) -> float:
    """Krippendorff's alpha for nominal data, computed by the ``krippendorff`` package.

    Uses the package's ``value_counts`` input (units × values), so the cost
    grows with the number of units, never with raters × units.  Returns NaN
    when alpha is undefined (see the module docstring).
    """
    import krippendorff

    counts, _ = value_counts(unit_index, labels, n_units)
    pairable = _pairable(counts)
    if pairable.shape[0] == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"))


def coincidences(counts: np.ndarray) -> np.ndarray:
    """Coincidence matrix contribution of each unit: shape (units, V, V)."""
    n_u = counts.sum(axis=1)
    weight = np.where(n_u >= 2, 1.0 / np.maximum(n_u - 1, 1), 0.0)
    outer = counts[:, :, None] * counts[:, None, :]
    diagonal = np.einsum("uv,vw->uvw", counts, np.eye(counts.shape[1]))
    return (outer - diagonal) * weight[:, None, None]


def alpha_from_coincidences(o: np.ndarray) -> np.ndarray:
    """Nominal alpha from coincidence matrices (..., V, V); NaN where undefined."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    total = np.einsum("...c,...k->...ck", n_c, n_c)
    eye = np.eye(o.shape[-1], dtype=bool)
    observed = np.where(eye, 0.0, o).sum(axis=(-2, -1))
    expected = np.where(eye, 0.0, total).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def percent_agreement(unit_index, labels, n_units: int | None = None) -> float:
    """Pooled pairwise agreement: Σ_u Σ_v n_uv(n_uv − 1) / Σ_u n_u(n_u − 1), over units with ≥ 2 judgments."""
    counts, _ = value_counts(unit_index, labels, n_units)
    pairable = _pairable(counts)
    pairs = (pairable.sum(axis=1) * (pairable.sum(axis=1) - 1)).sum()
    if pairs == 0:
        return float("nan")
    return float((pairable * (pairable - 1)).sum() / pairs)


def bootstrap_alpha_ci(
    unit_index, labels, group_index, n_boot: int = 1000, ci: float = 0.95, seed: int = 0, n_units: int | None = None
) -> tuple[float, float]:
    """Percentile bootstrap interval of nominal alpha, resampling groups (examples) with replacement.

    ``group_index`` gives each judgment's group (its unit's example).  Each
    group's coincidence matrix is computed once; a replicate is then a
    weighted sum of group matrices (weights = how often the group was drawn),
    so 1,000 replicates cost one matrix product.
    """
    unit_index = np.asarray(unit_index, dtype=np.int64)
    group_index = np.asarray(group_index, dtype=np.int64)
    counts, _ = value_counts(unit_index, labels, n_units)
    if counts.shape[1] < 2 or counts.shape[0] == 0:
        return float("nan"), float("nan")
    unit_group = np.full(counts.shape[0], -1, dtype=np.int64)
    unit_group[unit_index] = group_index
    used = unit_group >= 0
    groups, group_of_unit = np.unique(unit_group[used], return_inverse=True)
    per_unit = coincidences(counts[used])
    v = counts.shape[1]
    per_group = np.zeros((len(groups), v * v))
    np.add.at(per_group, group_of_unit, per_unit.reshape(len(per_unit), v * v))
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(groups), np.full(len(groups), 1.0 / len(groups)), size=n_boot)
    replicates = alpha_from_coincidences((draws @ per_group).reshape(n_boot, v, v))
    replicates = replicates[~np.isnan(replicates)]
    if replicates.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - ci) / 2.0
    lo, hi = np.quantile(replicates, [tail, 1.0 - tail])
    return float(lo), float(hi)
