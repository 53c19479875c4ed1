"""The gradient-boosted head of the trained judges (over the pair features), and its threshold calibration."""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from annotation.automation.judges.base import JudgeError

# Small trees with large leaves: ~20 features, tens of thousands of noisy labels.
HEAD_SETTINGS = {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15, "min_samples_leaf": 100}


class Head(HistGradientBoostingClassifier):
    """The gradient-boosted head, fitted and applied on one OpenMP thread.

    scikit-learn's boosting runs its loops on every core through OpenMP.  On these small trees the threads
    mostly wait for each other, and when the machine is busy (a Celery worker beside the web server, or
    torch's own OpenMP runtime in the same process) they spin: one fit of 240 pairs took 12 s on two
    threads against 0.03 s on one.  One thread is never slower here, so the head always uses one."""

    def fit(self, X, y, sample_weight=None):
        with threadpool_limits(limits=1, user_api="openmp"):
            return super().fit(X, y, sample_weight=sample_weight)

    def predict_proba(self, X):
        with threadpool_limits(limits=1, user_api="openmp"):
            return super().predict_proba(X)


def new_head(n_rows: int, seed: int = 0) -> Head:
    """An unfitted gradient-boosted head sized for ``n_rows`` training pairs."""
    # Leaves of 100 pairs suit tens of thousands of pairs; a small campaign gets proportionally smaller ones.
    leaf = min(HEAD_SETTINGS["min_samples_leaf"], max(5, n_rows // 20))
    return Head(random_state=seed, **{**HEAD_SETTINGS, "min_samples_leaf": leaf})


def best_threshold(probabilities, labels) -> float:
    """The threshold maximising accuracy on (out-of-fold) training predictions; ties go to the middle."""
    probabilities = np.asarray(probabilities, dtype=float)
    labels = np.asarray(labels, dtype=bool)
    candidates = np.linspace(0.05, 0.95, 91)
    accuracy = np.array([np.mean((probabilities >= t) == labels) for t in candidates])
    best = np.flatnonzero(accuracy == accuracy.max())
    return float(candidates[best[len(best) // 2]])


def fit_head(features: np.ndarray, labels, groups, inner_folds: int = 3, seed: int = 0):
    """Fit the head on all rows; calibrate its threshold on out-of-fold predictions (split by example)."""
    from sklearn.model_selection import GroupKFold

    labels = np.asarray(labels)
    groups = np.asarray(groups)
    n_groups = len(np.unique(groups))
    threshold = 0.5
    if n_groups >= inner_folds and len(np.unique(labels)) == 2:
        oof = np.zeros(len(labels))
        for train, test in GroupKFold(n_splits=inner_folds).split(features, labels, groups):
            if len(np.unique(labels[train])) < 2:
                oof[test] = labels[train][0]
                continue
            oof[test] = new_head(len(train), seed).fit(features[train], labels[train]).predict_proba(features[test])[:, 1]
        threshold = best_threshold(oof, labels)
    if len(np.unique(labels)) < 2:
        raise JudgeError("the training data has only one label value; a judge needs present and absent examples")
    head = new_head(len(labels), seed).fit(features, labels)
    return head, threshold
