"""Cross-validated evaluation of a trained judge kind on a labelled data set (folds split by example).

Figures, pooled over the held-out folds:
- accuracy and the present-class F1 of presence decisions against the gold labels;
- summary scores s_i = share of units judged present (``*_probability`` keys: mean presence
  probability); summary-level Pearson / Kendall = mean over examples of the correlation across
  systems between s_i and the gold score; system-level = correlation of the systems' mean scores;
- ``train_seconds``: what training costs for all folds: the per-pair work done once (pair
  features; for the cross-encoder also the frozen bottom layers' states) plus every fold's fit;
  ``pairs_per_second``: inference throughput over all pairs (features, bottom, top and head).
Everything a fold chooses (epoch, decision threshold) is chosen on that fold's training
examples only.  The zero-shot test set is judged by the mean probability of the fold models
(cross-encoder) or by a head refitted on all pairs (features), never tuned on it.
"""

from __future__ import annotations

import time

import numpy as np

from annotation.automation.judges.comparison import presence_agreement
from annotation.automation.judges.datasets import PresenceDataset
from annotation.automation.judges.heads import fit_head
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
    figures = {"accuracy": agreement["accuracy"], "f1_present": agreement["f1_present"]}
    soft = None if probabilities is None else np.bincount(index, weights=np.asarray(probabilities, float), minlength=n) / counts
    for method in ("pearson", "kendall"):
        figures[f"summary_{method}"], _, figures[f"summary_{method}_undefined"] = summary_level_correlation(
            predicted, gold, example_index, system_index, method
        )
        figures[f"system_{method}"] = system_level_correlation(predicted, gold, system_index, method)
        if soft is not None:
            figures[f"summary_{method}_probability"] = summary_level_correlation(soft, gold, example_index, system_index, method)[0]
            figures[f"system_{method}_probability"] = system_level_correlation(soft, gold, system_index, method)
    return {k: round(float(v), 4) for k, v in figures.items()}


def _features(data: PresenceDataset):
    from annotation.automation.judges.encoder import shared_encoder
    from annotation.automation.judges.features import pair_features

    started = time.perf_counter()
    features = pair_features(data.pairs, shared_encoder())
    return features, time.perf_counter() - started


def _check_folds(data: PresenceDataset, folds: int) -> None:
    if folds < 2:
        raise ValueError("--folds must be at least 2")
    if len(set(data.examples)) < folds:
        raise ValueError(f"{len(set(data.examples))} examples cannot be split into {folds} folds")


def cross_validate(
    data: PresenceDataset, folds: int = 5, test_data: PresenceDataset | None = None, seed: int = 0,
    kind: str = "cross-encoder", settings=None,
) -> dict:
    """k-fold cross-validation by example (see the module docstring); optionally zero-shot on ``test_data``."""
    _check_folds(data, folds)
    if kind == "cross-encoder":
        return cross_validate_cross_encoder(data, folds, test_data, seed, settings)
    if kind != "features":
        raise ValueError(f"unknown judge kind {kind!r}")
    return cross_validate_features(data, folds, test_data, seed)


def cross_validate_cross_encoder(data: PresenceDataset, folds: int, test_data: PresenceDataset | None, seed: int,
                                 settings=None) -> dict:
    """The cross-encoder's k-fold evaluation: bottom states cached once, one fresh top per fold."""
    from dataclasses import asdict, replace

    from sklearn.model_selection import GroupKFold

    from annotation.automation.judges import crossencoder
    from annotation.automation.judges.encoder import shared_encoder

    settings = replace(settings or crossencoder.CrossEncoderSettings(), seed=seed)
    encoder = shared_encoder()
    started = time.perf_counter()
    states = crossencoder.prepare(data.pairs, encoder, settings)
    prepare_seconds = time.perf_counter() - started
    labels = np.asarray(data.labels)
    groups = np.asarray(data.examples)
    probabilities = np.zeros(len(labels))
    decisions = np.zeros(len(labels), dtype=bool)
    # the two stacked models alone, each at the threshold its validation chose (for the record)
    parts = {name: (np.zeros(len(labels)), np.zeros(len(labels), dtype=bool)) for name in ("cross_encoder", "features_head")}
    fold_reports, models = [], []
    fit_seconds = predict_seconds = 0.0
    for fold, (train, test) in enumerate(GroupKFold(n_splits=folds).split(states.features, labels, groups)):
        fit_started = time.perf_counter()
        trained = crossencoder.train_judge(encoder, states, labels, groups, train, settings)
        fit_seconds += time.perf_counter() - fit_started
        predict_started = time.perf_counter()
        probabilities[test], *alone = crossencoder.predict_judge(trained, states, test, components=True)
        predict_seconds += time.perf_counter() - predict_started
        decisions[test] = probabilities[test] >= trained["threshold"]
        for (name, (p, d)), q, t in zip(parts.items(), alone, trained.get("component_thresholds", [0.5, 0.5])):
            p[test], d[test] = q, q >= t
        models.append(trained)
        fold_reports.append({
            "fold": fold, "threshold": trained["threshold"], "validation": trained["validation"], "stack": trained["stack"],
            "history": trained["history"], "train_pairs": trained["train_pairs"],
            "test": score_figures(decisions[test], _subset(data, test), probabilities[test]),
        })
        crossencoder.log_progress(f"fold {fold}: {fold_reports[-1]['test']}")
    result = score_figures(decisions, data, probabilities)
    result.update(
        kind="cross-encoder",
        settings=asdict(settings),
        train_seconds=round(prepare_seconds + fit_seconds, 1),
        pairs_per_second=round(len(labels) / (prepare_seconds + predict_seconds), 1),
        feature_seconds=states.seconds["features"],
        bottom_seconds=states.seconds["bottom"],
        fit_seconds=round(fit_seconds, 1),
        folds=folds,
        pairs=len(labels),
        thresholds=[round(m["threshold"], 3) for m in models],
        fold_details=fold_reports,
        **{f"{name}_alone": score_figures(d, data, p) for name, (p, d) in parts.items()},
        lexical_baseline=score_figures(states.features[:, 0] >= LEXICAL_THRESHOLD, data),
    )
    if test_data is not None:
        test_started = time.perf_counter()
        test_states = crossencoder.prepare(test_data.pairs, encoder, settings)
        rows = np.arange(len(test_data))
        test_probabilities = np.mean([crossencoder.predict_judge(m, test_states, rows) for m in models], axis=0)
        threshold = float(np.mean([m["threshold"] for m in models]))
        result["zero_shot"] = {
            **score_figures(test_probabilities >= threshold, test_data, test_probabilities),
            "pairs": len(test_data),
            "threshold": round(threshold, 3),
            "model": f"mean probability of the {folds} fold models, mean of their thresholds",
            "pairs_per_second": round(len(test_data) / (time.perf_counter() - test_started), 1),
            "lexical_baseline": score_figures(test_states.features[:, 0] >= LEXICAL_THRESHOLD, test_data),
        }
    return result


def _subset(data: PresenceDataset, rows) -> PresenceDataset:
    rows = list(rows)
    return PresenceDataset(
        pairs=[data.pairs[i] for i in rows], labels=[data.labels[i] for i in rows],
        examples=[data.examples[i] for i in rows], systems=[data.systems[i] for i in rows], sources=data.sources,
    )


def cross_validate_features(data: PresenceDataset, folds: int, test_data: PresenceDataset | None, seed: int) -> dict:
    """The frozen-features judge's k-fold evaluation: features once, one gradient-boosted head per fold."""
    from sklearn.model_selection import GroupKFold

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
        kind="features",
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
