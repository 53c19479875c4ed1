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
    """The fitted logistic regression (``None`` model: not enough labels; the judge's own output is used)."""

    def __init__(self, model=None, n_labels: int = 0):
        self.model = model
        self.n_labels = n_labels

    @property
    def fitted(self) -> bool:
        return self.model is not None

    def predict(self, features: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(features)[:, 1]


def fit_adapter(features: np.ndarray, labels, sample_weight=None) -> Adapter:
    """Fit on the human-labelled rows; an unfitted adapter when there are too few labels or one class only.
    ``sample_weight`` (1/pi under the active rule) makes labels drawn with unequal probabilities stand for every
    unit; it is rescaled to average 1, so the regularisation weighs as without weights."""
    from sklearn.linear_model import LogisticRegression

    labels = np.asarray(labels, dtype=int)
    if len(labels) < MIN_LABELS or len(np.unique(labels)) < 2:
        return Adapter(None, len(labels))
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=float)
        sample_weight = sample_weight * (len(sample_weight) / sample_weight.sum())
    model = LogisticRegression(C=1.0, max_iter=1000).fit(features, labels, sample_weight=sample_weight)
    return Adapter(model, len(labels))
