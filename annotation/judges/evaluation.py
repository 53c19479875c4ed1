"""Cross-validated evaluation of the trained judge on a labelled data set (folds split by example).

Figures, pooled over the held-out folds:
- accuracy and F1 of presence decisions against the gold labels;
- summary scores s_i = share of units judged present; summary-level Pearson / Kendall =
  mean over examples of the correlation across systems between s_i and the gold score;
  system-level = correlation of the systems' mean scores;
- ``train_seconds``: feature extraction of every pair once plus the heads' fits of all folds
  (inner threshold calibration included); ``pairs_per_second``: inference throughput
  (features + head) over all pairs.
The threshold of each fold is chosen on that fold's training examples only.
"""

from __future__ import annotations

import time

import numpy as np

from annotation.judges.comparison import presence_agreement
from annotation.judges.trained import PresenceDataset, fit_head
from annotation.scoring.correlation import summary_level_correlation, system_level_correlation

LEXICAL_THRESHOLD = 0.7


def score_figures(decisions, data: PresenceDataset, probabilities=None) -> dict:
    """Accuracy, F1 and summary/system correlations of binary ``decisions`` against ``data``'s labels.

    With ``probabilities``, also the correlations of the soft score (mean presence probability
    of a summary's units, Lite2Pyramid's probability variant) under ``*_probability`` keys.
    """
    decisions = np.asarray(decisions, dtype=bool)
    labels = np.asarray(data.labels, dtype=bool)
    agreement = presence_agreement(decisions, labels)
    keys = list(zip(data.examples, data.systems))
    summaries = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    index = np.array([summaries[k] for k in keys])
    n = len(summaries)
    counts = np.bincount(index, minlength=n)
    predicted = np.bincount(index, weights=decisions, minlength=n) / counts
    gold = np.bincount(index, weights=labels, minlength=n) / counts
    example_names = {e: i for i, e in enumerate(dict.fromkeys(data.examples))}
    system_names = {s: i for i, s in enumerate(dict.fromkeys(data.systems))}
    example_index = np.array([example_names[e] for e, _ in summaries])
    system_index = np.array([system_names[s] for _, s in summaries])
    figures = {"accuracy": agreement["accuracy"], "f1": agreement["f1"]}
    soft = None if probabilities is None else np.bincount(index, weights=np.asarray(probabilities, float), minlength=n) / counts
    for method in ("pearson", "kendall"):
        figures[f"summary_{method}"] = summary_level_correlation(predicted, gold, example_index, system_index, method)[0]
        figures[f"system_{method}"] = system_level_correlation(predicted, gold, system_index, method)
        if soft is not None:
            figures[f"summary_{method}_probability"] = summary_level_correlation(soft, gold, example_index, system_index, method)[0]
            figures[f"system_{method}_probability"] = system_level_correlation(soft, gold, system_index, method)
    return {k: round(float(v), 4) for k, v in figures.items()}


def _features(data: PresenceDataset):
    from annotation.judges.encoder import shared_encoder
    from annotation.judges.features import pair_features

    started = time.perf_counter()
    features = pair_features(data.pairs, shared_encoder())
    return features, time.perf_counter() - started


def cross_validate(data: PresenceDataset, folds: int = 5, test_data: PresenceDataset | None = None, seed: int = 0) -> dict:
    """k-fold cross-validation by example (see the module docstring); optionally zero-shot on ``test_data``."""
    from sklearn.model_selection import GroupKFold

    if folds < 2:
        raise ValueError("--folds must be at least 2")
    if len(set(data.examples)) < folds:
        raise ValueError(f"{len(set(data.examples))} examples cannot be split into {folds} folds")
    features, feature_seconds = _features(data)
    labels = np.asarray(data.labels)
    groups = np.asarray(data.examples)
    probabilities = np.zeros(len(labels))
    decisions = np.zeros(len(labels), dtype=bool)
    thresholds = []
    fit_started = time.perf_counter()
    for train, test in GroupKFold(n_splits=folds).split(features, labels, groups):
        head, threshold = fit_head(features[train], labels[train], groups[train], seed=seed)
        probabilities[test] = head.predict_proba(features[test])[:, 1]
        decisions[test] = probabilities[test] >= threshold
        thresholds.append(threshold)
    fit_seconds = time.perf_counter() - fit_started
    predict_started = time.perf_counter()
    head.predict_proba(features)
    predict_seconds = time.perf_counter() - predict_started
    result = score_figures(decisions, data, probabilities)
    result.update(
        train_seconds=round(feature_seconds + fit_seconds, 1),
        pairs_per_second=round(len(labels) / (feature_seconds + predict_seconds), 1),
        feature_seconds=round(feature_seconds, 1),
        fit_seconds=round(fit_seconds, 1),
        folds=folds,
        pairs=len(labels),
        thresholds=[round(t, 3) for t in thresholds],
        lexical_baseline=score_figures(features[:, 0] >= LEXICAL_THRESHOLD, data),
    )
    if test_data is not None:
        head, threshold = fit_head(features, labels, groups, seed=seed)
        test_features, test_seconds = _features(test_data)
        test_probabilities = head.predict_proba(test_features)[:, 1]
        result["zero_shot"] = {
            **score_figures(test_probabilities >= threshold, test_data, test_probabilities),
            "pairs": len(test_data),
            "threshold": round(threshold, 3),
            "pairs_per_second": round(len(test_data) / test_seconds, 1),
            "lexical_baseline": score_figures(test_features[:, 0] >= LEXICAL_THRESHOLD, test_data),
        }
    return result
