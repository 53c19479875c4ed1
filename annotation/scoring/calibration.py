"""Calibrating an automatic judge's presence probabilities on a campaign's own human labels (pure functions).

Under budgeted presence a unit nobody judged may count as its judge's probability (the expected value of
its presence indicator).  That reading needs calibrated probabilities: of the units given 0.7, about 70%
present.  The rule (``calibrate``):

- **Platt scaling**: ``q = sigmoid(a * logit(p) + b)``, fitted by Newton's method on the log loss (a small
  ridge keeps it finite on separable data).  Two parameters: it cannot overfit a few hundred labels the way
  isotonic regression can, and it keeps the judge's order.
- **Enough labels**: at least ``MIN_LABELS`` human-labelled units, at least ``MIN_PER_CLASS`` present and
  as many absent, over at least ``MIN_EXAMPLES`` examples.  Below that the campaign's units count as the
  judge's label (the fallback), and the reason says what is missing.
- **Out of fold**: the human-labelled units are split into ``FOLDS`` folds by example (every unit of an
  example in the same fold).  Each fold's calibrated probabilities come from a fit on the other folds, so a
  unit's own label never calibrates its own probability; the reliability (ECE, plot) is measured on these.
  Units nobody judged take the fit on all the human labels (their own label is unknown anyway).
- **Expected calibration error**: ``N_BINS`` = 10 equal-width bins of the probability; the ECE is the
  mean over units of |bin's share present - bin's mean probability| (bins weighted by their units).
- **Weighted** (the active routing rule, issue 37): people judged a random draw of HITs with known inclusion
  probabilities pi, so each human-labelled unit stands for 1/pi units of the campaign.  With ``weights`` (1/pi per
  human row) the bins' shares and means, the ECE (bins weighted by their total weight) and the Platt fit are all
  weighted: the figures describe every unit, not only the ones the draw favoured.  Without weights (the
  uncertainty rule, whose labels are on the units routing chose) they describe the routed units only.
- **Applied only when it helps**: when the calibrated ECE (out of fold, weighted) is not lower than the judge's
  own, the calibration is not applied (method "none", no calibrated probabilities) and the reason says so, with
  both figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MIN_LABELS = 50
MIN_PER_CLASS = 10
MIN_EXAMPLES = 2
FOLDS = 5
N_BINS = 10
RIDGE = 1e-3
EPS = 1e-6


def _logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=float), EPS, 1 - EPS)
    return np.log(p / (1 - p))


def _sigmoid(z) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def platt_fit(probabilities, labels, steps: int = 50, weights=None) -> tuple[float, float]:
    """(a, b) of ``sigmoid(a * logit(p) + b)`` minimising the (``weights``-weighted) log loss on ``labels``
    (Newton's method).  The weights are scaled to mean 1, so the ridge weighs as much as unweighted."""
    x = _logit(probabilities)
    y = np.asarray(labels, dtype=float)
    v = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    v = v / v.mean() if len(v) else v

    def loss(a, b):
        z = a * x + b
        # log(1 + e^z) - y z, written to stay finite for large |z|
        return float(np.sum(v * (np.logaddexp(0.0, z) - y * z)) + RIDGE * (a * a + b * b) / 2)

    a, b = 1.0, 0.0
    current = loss(a, b)
    for _ in range(steps):
        q = _sigmoid(a * x + b)
        w = v * q * (1 - q)
        grad = np.array([np.sum(v * (q - y) * x) + RIDGE * a, np.sum(v * (q - y)) + RIDGE * b])
        hess = np.array([[np.sum(w * x * x) + RIDGE, np.sum(w * x)], [np.sum(w * x), np.sum(w) + RIDGE]])
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            break
        # Damped Newton: halve the step until the loss goes down (a full step can overshoot on sure judges).
        scale = 1.0
        while scale > 1e-6 and loss(a - scale * step[0], b - scale * step[1]) > current:
            scale /= 2
        if scale <= 1e-6:
            break
        a, b = a - scale * step[0], b - scale * step[1]
        previous, current = current, loss(a, b)
        if previous - current < 1e-10:
            break
    return float(a), float(b)


def platt_apply(probabilities, params: tuple[float, float]) -> np.ndarray:
    a, b = params
    return _sigmoid(a * _logit(probabilities) + b)


def reliability_bins(probabilities, labels, n_bins: int = N_BINS, weights=None) -> list[dict]:
    """Per equal-width bin: its bounds, units, their total weight, (weighted) mean probability and share present
    (None for an empty bin).  ``weights``: one per unit (1/pi), 1 when not given."""
    p = np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)
    y = np.asarray(labels, dtype=float)
    w = np.ones(len(p)) if weights is None else np.asarray(weights, dtype=float)
    index = np.minimum((p * n_bins).astype(int), n_bins - 1)
    bins = []
    for k in range(n_bins):
        rows = index == k
        n = int(rows.sum())
        total = float(w[rows].sum())
        bins.append({"low": k / n_bins, "high": (k + 1) / n_bins, "n": n, "weight": total,
                     "mean_probability": float(np.sum(w[rows] * p[rows]) / total) if n else None,
                     "share_present": float(np.sum(w[rows] * y[rows]) / total) if n else None})
    return bins


def expected_calibration_error(probabilities, labels, n_bins: int = N_BINS, weights=None) -> float:
    """sum over bins of W_k |share present_k - mean probability_k| / sum W_k, with W_k the bin's total weight (its
    units without ``weights``); the shares and means weighted too.  NaN without units."""
    bins = reliability_bins(probabilities, labels, n_bins, weights)
    total = sum(b["weight"] for b in bins)
    if not total:
        return float("nan")
    return float(sum(b["weight"] * abs(b["share_present"] - b["mean_probability"]) for b in bins if b["n"]) / total)


def example_folds(groups, n_folds: int = FOLDS) -> np.ndarray:
    """A fold per row, every row of a group (an example) in the same fold; groups dealt in order of their ids."""
    codes = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    return codes % max(1, min(n_folds, int(codes.max()) + 1 if codes.size else 1))


@dataclass
class Calibration:
    """What ``calibrate`` decided and measured.  ``probabilities``: the calibrated probability of every row
    (out of fold on the human-labelled rows), or None under the fallback."""

    method: str  # "platt" or "none" (the fallback)
    n_labels: int
    n_present: int
    reason: str = ""
    params: tuple[float, float] | None = None
    probabilities: np.ndarray | None = None
    ece_before: float | None = None
    ece_after: float | None = None
    bins_before: list = field(default_factory=list)
    bins_after: list = field(default_factory=list)
    #: True when the figures and the fit are weighted by 1/pi (a representative sample: the active rule).
    weighted: bool = False

    @property
    def fitted(self) -> bool:
        return self.method == "platt"

    def as_dict(self) -> dict:
        return {
            "method": self.method, "fitted": self.fitted, "n_labels": self.n_labels, "n_present": self.n_present,
            "reason": self.reason, "params": list(self.params) if self.params else None,
            "ece_before": self.ece_before, "ece_after": self.ece_after, "n_bins": N_BINS,
            "bins_before": self.bins_before, "bins_after": self.bins_after, "weighted": self.weighted,
            "not_applied": self.method == "none" and self.ece_after is not None,
            "rule": rule_text(),
        }


def rule_text() -> str:
    return (f"Platt scaling when at least {MIN_LABELS} human-labelled units ({MIN_PER_CLASS}+ present and {MIN_PER_CLASS}+ "
            f"absent) over {MIN_EXAMPLES}+ examples; {FOLDS}-fold out of fold by example; ECE over {N_BINS} equal bins "
            f"(weighted by 1/pi under the active rule); applied only when it lowers the ECE.")


def calibrate(probabilities, human_rows, labels, groups, human_probabilities=None, weights=None) -> Calibration:
    """Calibrate ``probabilities`` (every row) on the human ``labels`` of ``human_rows`` (see the module docstring).

    ``groups[i]``: the example of human row i (the folds).  ``human_probabilities``: the judge's probabilities of
    the human rows if they differ from ``probabilities[human_rows]`` (a judge retrained on the labels gives its
    out-of-fold ones, so the fit sees how it does on units it did not learn from).  ``weights``: 1/pi per human
    row (the active rule); the ECE, the bins and the fit are weighted by them."""
    p_all = np.asarray(probabilities, dtype=float)
    human_rows = np.asarray(human_rows, dtype=np.int64)
    y = np.asarray(labels, dtype=int)
    p = p_all[human_rows] if human_probabilities is None else np.asarray(human_probabilities, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    n, k = int(len(y)), int(y.sum())
    n_examples = len(np.unique(np.asarray(groups))) if n else 0
    result = Calibration(method="none", n_labels=n, n_present=k, weighted=w is not None)
    if n:
        result.ece_before = expected_calibration_error(p, y, weights=w)
        result.bins_before = reliability_bins(p, y, weights=w)
    missing = []
    if n < MIN_LABELS:
        missing.append(f"{n} human-labelled units of the {MIN_LABELS} needed")
    if min(k, n - k) < MIN_PER_CLASS:
        missing.append(f"{k} present and {n - k} absent (at least {MIN_PER_CLASS} of each needed)")
    if n_examples < MIN_EXAMPLES:
        missing.append(f"{n_examples} example(s) (at least {MIN_EXAMPLES} needed)")
    if missing:
        result.reason = "too few human labels to calibrate: " + "; ".join(missing)
        return result
    folds = example_folds(groups)
    out_of_fold = np.empty(n)
    for f in np.unique(folds):
        held = folds == f
        train = ~held
        if len(np.unique(y[train])) < 2:  # a fold's complement with one class: nothing to learn its fit from
            out_of_fold[held] = p[held]
            continue
        out_of_fold[held] = platt_apply(p[held], platt_fit(p[train], y[train], weights=None if w is None else w[train]))
    result.ece_after = expected_calibration_error(out_of_fold, y, weights=w)
    result.bins_after = reliability_bins(out_of_fold, y, weights=w)
    if not result.ece_after < result.ece_before:
        # Issue 37: a live campaign showed 0.151 before and 0.244 after, and its scores switched to the calibrated
        # probability.  An adjustment that does not help is not applied.
        sample = "1/pi-weighted" if w is not None else "on the units people judged"
        result.reason = (f"calibration not applied: it does not lower the expected calibration error ({sample}, out "
                         f"of fold: {result.ece_before:.3f} as the judge gives them, {result.ece_after:.3f} calibrated)")
        return result
    params = platt_fit(p, y, weights=w)
    calibrated = platt_apply(p_all, params)
    calibrated[human_rows] = out_of_fold
    result.method, result.params, result.probabilities = "platt", params, calibrated
    return result
