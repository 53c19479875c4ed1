"""Retraining a judge on a campaign's own human labels between routing rounds.

A campaign's judge (any registry judge: lexical, trained, nli, ...) keeps its probabilities; what
is retrained is a small logistic regression on top of them, fitted on the human gold labels the
campaign has so far.  Its inputs: the judge's probability (as a logit), the unit's content-word
recall and ROUGE-1/2 recall by the summary, and the unit prior: what people said about the same
reference unit in the other systems' summaries (share present, centred on 0.5 and 0 where nobody
judged it, with an indicator and the log count).  It learns where this campaign's people draw the
line from a few hundred labels without overfitting, and it is cheap enough to refit after every
round.  Its probabilities are calibrated on the human labels, so its threshold is 0.5.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from annotation.automation.judges.base import PresencePair, clean_summary
from annotation.automation.judges.lexical import content_word_recall, ngram_recall, stemmed_tokens

ADAPTER_FEATURES = ("judge_logit", "content_recall", "rouge1_recall", "rouge2_recall")
PRIOR_FEATURES = ("unit_prior_centred", "unit_prior_known", "unit_prior_log_count")
#: Fewer human labels than this (or only one label value) leave the judge as it is.
MIN_LABELS = 30
#: The ridge of the few-labels shift (active rule): the penalty FEW_LABELS_RIDGE / 2 x (b^2 + c^2) on its log loss.
FEW_LABELS_RIDGE = 1.0
#: Column of the unit prior (share present - 0.5) in ``with_unit_prior``'s features.
PRIOR_COLUMN = len(ADAPTER_FEATURES)


def adapter_features(pairs: Sequence[PresencePair], probabilities) -> np.ndarray:
    """The adapter's inputs (pairs x ``ADAPTER_FEATURES``)."""
    p = np.clip(np.asarray(probabilities, dtype=float), 1e-4, 1 - 1e-4)
    rows = np.zeros((len(pairs), len(ADAPTER_FEATURES)))
    rows[:, 0] = np.log(p / (1 - p))
    for i, pair in enumerate(pairs):
        unit, summary = stemmed_tokens(pair.unit), stemmed_tokens(clean_summary(pair.summary))
        rows[i, 1:] = content_word_recall(pair.unit, pair.summary), ngram_recall(unit, summary, 1), ngram_recall(unit, summary, 2)
    return rows


def with_unit_prior(features: np.ndarray, units, labels, observed) -> np.ndarray:
    """``features`` with the unit prior columns (``PRIOR_FEATURES``) from the human labels of ``observed`` rows."""
    from annotation.scoring.routing import unit_prior

    share, seen = unit_prior(units, labels, observed)
    known = seen > 0
    return np.column_stack([features, np.where(known, share - 0.5, 0.0), known.astype(float), np.log1p(seen)])


class Adapter:
    """The fitted logistic regression (``None`` model: not enough labels; the judge's own output is used), or under
    the active rule with few labels the shift of the judge's logit (``shift``: (b, c), see the module docstring)."""

    def __init__(self, model=None, n_labels: int = 0, shift: tuple[float, float] | None = None):
        self.model = model
        self.n_labels = n_labels
        self.shift = shift

    @property
    def fitted(self) -> bool:
        return self.model is not None or self.shift is not None

    def predict(self, features: np.ndarray) -> np.ndarray:
        if self.model is None:
            b, c = self.shift
            return 1.0 / (1.0 + np.exp(-np.clip(features[:, 0] + b + c * features[:, PRIOR_COLUMN], -40, 40)))
        return self.model.predict_proba(features)[:, 1]


def fit_adapter(features: np.ndarray, labels, sample_weight=None, few_labels: bool = False) -> Adapter:
    """Fit on the human-labelled rows (weighted by ``sample_weight``: 1/pi under the active rule).  Too few labels
    or one class only: an unfitted adapter, or with ``few_labels`` (the active rule) the shift of the judge's logit
    (module docstring); no label at all: unfitted."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray(labels, dtype=int)
    if len(labels) < MIN_LABELS or len(np.unique(labels)) < 2:
        if few_labels and len(labels):
            return Adapter(None, len(labels), shift=fit_shift(features, labels, sample_weight))
        return Adapter(None, len(labels))
    if sample_weight is not None:
        # Mean 1: the weights say which labels stand for more of the campaign, not how hard to regularise.
        sample_weight = np.asarray(sample_weight, dtype=float) / np.mean(sample_weight)
    model = LogisticRegression(C=1.0, max_iter=1000).fit(features, labels, sample_weight=sample_weight)
    return Adapter(model, len(labels))


def fit_shift(features: np.ndarray, labels, sample_weight=None, steps: int = 50) -> tuple[float, float]:
    """(b, c) minimising sum_i w_i logloss(y_i, sigmoid(logit_i + b + c prior_i)) + FEW_LABELS_RIDGE / 2 (b^2 + c^2),
    by Newton's method (the objective is strictly convex: the ridge keeps one label value finite).  The weights are
    scaled to mean 1, so the ridge weighs against the number of labels, not the size of 1/pi."""
    y = np.asarray(labels, dtype=float)
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    w = w / w.mean()
    x = np.column_stack([np.ones(len(y)), features[:, PRIOR_COLUMN]])
    offset = features[:, 0]
    theta = np.zeros(2)
    for _ in range(steps):
        q = 1.0 / (1.0 + np.exp(-np.clip(offset + x @ theta, -40, 40)))
        grad = x.T @ (w * (q - y)) + FEW_LABELS_RIDGE * theta
        hess = (x * (w * q * (1 - q))[:, None]).T @ x + FEW_LABELS_RIDGE * np.eye(2)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(theta[0]), float(theta[1])
