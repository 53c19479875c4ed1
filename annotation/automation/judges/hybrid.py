"""Evaluating budgeted human presence judgments (SemiAutoQAPyramid with routing) on labelled data.

For each fold (folds split by example), the judge is trained on the other folds only; the
fold's presence HITs are ranked by the judge's uncertainty and the least sure ``share`` of them
take their gold labels (what people would have said), the rest keep the judge's labels.  With
``rounds`` > 1 the budget is spent in rounds and, after each round, the judge is refitted on the
training folds plus the fold's human labels so far (the campaign's active rounds); the next
round goes to the then least-sure HITs and the last refit labels what people did not see.

A presence HIT of a labelled SCU folder is what an "scu" campaign would post: one summary's
units in reference order, ``SCU_UNITS_PER_HIT`` (4) per HIT.

Figures (pooled over the held-out folds, as ``evaluation.score_figures``): accuracy of the
hybrid labels against the gold, summary- and system-level Pearson and Kendall of the hybrid
scores against the gold scores.  The same procedure with the HITs drawn at random (same seed,
same rounds and refits) is the baseline under ``random``.

Judges: ``features`` (the frozen-features gradient-boosted judge) is trained per fold and, between
rounds, refitted with the fold's human labels added (weight ``HUMAN_WEIGHT``); an untrained registry
judge (``lexical``, ``rouge1``, ...) keeps its probabilities and, between rounds, gets the adapter
the campaigns use (a logistic regression on the human labels so far).
"""

from __future__ import annotations

import time
import numpy as np

from annotation.automation.judges.datasets import PresenceDataset
from annotation.automation.judges.evaluation import score_figures
from annotation.models.stages import SCU_UNITS_PER_HIT
from annotation.scoring import routing

KEYS = ("accuracy", "summary_pearson", "summary_kendall", "system_pearson", "system_kendall")
CURVE_SHARES = tuple(round(0.1 * i, 1) for i in range(11))
TRAINED_JUDGES = ("features",)
# In-fold human labels weigh more than the training folds' when the judge is refitted between rounds:
# they are about the very references (and units) still to be judged.
HUMAN_WEIGHT = 3.0


def presence_hit_index(data: PresenceDataset, units_per_hit: int = SCU_UNITS_PER_HIT) -> np.ndarray:
    """The presence HIT (0..n-1) of every pair: a summary's units in order, ``units_per_hit`` per HIT."""
    position: dict[tuple[str, str], int] = {}
    keys: dict[tuple[str, str, int], int] = {}
    index = np.zeros(len(data), dtype=np.int64)
    for row, summary in enumerate(zip(data.examples, data.systems)):
        seen = position.get(summary, 0)
        position[summary] = seen + 1
        index[row] = keys.setdefault((*summary, seen // units_per_hit), len(keys))
    return index


def _fit(features, labels, groups, seed, weights=None, threshold=None):
    from annotation.automation.judges.heads import fit_head, new_head

    if threshold is None:
        return fit_head(features, labels, groups, seed=seed)
    # Between rounds only the head is refitted; the threshold chosen on the training folds stays
    # (re-choosing it needs inner folds, three more fits per round, for little change).
    return new_head(len(labels), seed).fit(features, labels, sample_weight=weights), threshold


def route_fold(labels, hit_index, share: float, rounds: int, measure: str | None, seed: int,
               predict, refit=None) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """One fold's routing: returns (hybrid labels, human mask per unit, HITs per round).

    ``predict()`` gives the current (probabilities, threshold); ``refit(human_rows)`` refits the
    judge with the human labels of those rows (None: the judge does not learn).  ``measure`` None
    routes at random.
    """
    labels = np.asarray(labels, dtype=bool)
    n_hits = int(hit_index.max()) + 1 if hit_index.size else 0
    budgets = routing.round_budgets(routing.hit_budget(n_hits, share), max(1, rounds))
    chosen = np.zeros(0, dtype=np.int64)
    probabilities, threshold = predict()
    per_round = []
    for number, budget in enumerate(budgets):
        if measure is None:
            picked = routing.random_choice(n_hits, budget, exclude=chosen, seed=seed + number)
        else:
            uncertainty = routing.hit_uncertainty(probabilities, threshold, hit_index, n_hits, measure)
            picked = routing.least_sure(uncertainty, budget, exclude=chosen, seed=seed + number)
        chosen = np.concatenate([chosen, picked])
        per_round.append(int(picked.size))
        if refit is not None and rounds > 1 and picked.size:
            refit(np.flatnonzero(np.isin(hit_index, chosen)))
            probabilities, threshold = predict()
    human = np.isin(hit_index, chosen)
    return routing.hybrid_labels(probabilities >= threshold, labels, human), human, per_round


def _fold_router(train_features, train_labels, test_features, test_labels, seed, base):
    """predict/refit closures over one fold's judge, starting from ``base`` = (head, threshold) fitted on the
    training folds; a refit adds the fold's human rows (weighted ``HUMAN_WEIGHT``) and keeps the threshold."""
    state = {"head": base[0], "threshold": base[1]}

    def predict():
        return state["head"].predict_proba(test_features)[:, 1], state["threshold"]

    def refit(rows):
        features = np.vstack([train_features, test_features[rows]])
        labels = np.concatenate([train_labels, test_labels[rows]])
        weights = np.concatenate([np.ones(len(train_labels)), np.full(len(rows), HUMAN_WEIGHT)])
        state["head"], _ = _fit(features, labels, None, seed, weights=weights, threshold=state["threshold"])

    return predict, refit


def _adapting_router(probabilities, threshold, pairs, labels):
    """predict/refit for an untrained registry judge: a refit fits the campaign adapter
    (``annotation.automation.judges.adapt``) on the human rows so far, as campaigns do between rounds."""
    from annotation.automation.judges.adapt import adapter_features, fit_adapter

    state = {"current": (np.asarray(probabilities, dtype=float), float(threshold))}
    cache = {}

    def predict():
        return state["current"]

    def refit(rows):
        if "features" not in cache:
            cache["features"] = adapter_features(pairs, probabilities)
        adapter = fit_adapter(cache["features"][rows], labels[rows])
        if adapter.fitted:
            state["current"] = (adapter.predict(cache["features"]), 0.5)

    return predict, refit


def evaluate_hybrid(data: PresenceDataset, folds: int = 5, share: float = 0.25, judge: str = "features",
                    rounds: int = 1, seed: int = 0, measure: str = "expected_errors", curve: bool = False,
                    test_data: PresenceDataset | None = None, features=None, test_features=None) -> dict:
    """The hybrid evaluation of the module docstring; ``features`` may be passed in when already computed."""
    from sklearn.model_selection import GroupKFold

    if not 0 <= share <= 1:
        raise ValueError("--human-share must be between 0 and 1")
    if rounds < 1:
        raise ValueError("--rounds must be at least 1")
    if folds < 2 or len(set(data.examples)) < folds:
        raise ValueError(f"{len(set(data.examples))} examples cannot be split into {folds} folds (at least 2)")
    if measure not in routing.MEASURES:
        raise ValueError(f"unknown measure {measure!r}; use one of {', '.join(routing.MEASURES)}")
    started = time.perf_counter()
    timings = {}
    labels = np.asarray(data.labels, dtype=bool)
    groups = np.asarray(data.examples)
    hit_index = presence_hit_index(data)
    fixed = None
    if judge in TRAINED_JUDGES:
        if features is None:
            features = _pair_features(data)
        timings["features"] = round(time.perf_counter() - started, 1)
    else:
        fixed = _registry_probabilities(judge, data)
    splits = list(GroupKFold(n_splits=folds).split(np.zeros(len(labels)), labels, groups))
    shares = sorted(set(CURVE_SHARES if curve else ()) | {share})
    runs = {}  # (share, measure or None) -> (pooled hybrid labels, pooled human mask, rounds)
    measures = list(dict.fromkeys([measure, *routing.MEASURES]))
    fit_started = time.perf_counter()
    for fold, (train, test) in enumerate(splits):
        local_hits = np.unique(hit_index[test], return_inverse=True)[1]
        if fixed is None:
            base = _fit(features[train], labels[train], groups[train], seed)
        for s in shares:
            for m in (measures if s == share else [measure]) + [None]:
                if fixed is None:
                    predict, refit = _fold_router(features[train], labels[train], features[test], labels[test], seed, base)
                    if s == 0 or rounds == 1:
                        refit = None
                else:
                    predict, refit = _adapting_router(fixed[0][test], fixed[1], [data.pairs[i] for i in test], labels[test])
                    if s == 0 or rounds == 1:
                        refit = None
                hybrid, human, per_round = route_fold(labels[test], local_hits, s, rounds, m, seed + fold, predict, refit)
                entry = runs.setdefault((s, m), (np.zeros(len(labels), bool), np.zeros(len(labels), bool), []))
                entry[0][test], entry[1][test] = hybrid, human
                entry[2].append(per_round)
    timings["routing"] = round(time.perf_counter() - fit_started, 1)

    def figures(s, m):
        hybrid, human, per_round = runs[(s, m)]
        result = {"human_share": s, **{k: v for k, v in score_figures(hybrid, data).items() if k in KEYS}}
        result["human_unit_share"] = round(float(human.mean()), 4)
        result["human_hits"] = int(sum(sum(r) for r in per_round))
        return result

    result = figures(share, measure)
    result.update(
        judge=judge, measure=measure, rounds=rounds, seed=seed, folds=folds, pairs=len(labels),
        presence_hits=int(hit_index.max()) + 1, units_per_hit=SCU_UNITS_PER_HIT,
        hits_per_round=[int(sum(r[i] for r in runs[(share, measure)][2])) for i in range(rounds)],
        random=figures(share, None),
        measures={m: figures(share, m) for m in routing.MEASURES},
        judge_alone=figures(0.0, None) if 0.0 in shares else None,
    )
    if result["judge_alone"] is None:
        result.pop("judge_alone")
    if curve:
        result["curve"] = [{"routed": figures(s, measure), "random": figures(s, None)} for s in CURVE_SHARES]
    if test_data is not None:
        result["zero_shot"] = zero_shot(data, test_data, share, judge, rounds, seed, measure, features, test_features)
    timings["total"] = round(time.perf_counter() - started, 1)
    result["seconds"] = timings
    return result


def zero_shot(data, test_data, share, judge, rounds, seed, measure, features=None, test_features=None) -> dict:
    """The judge trained on all of ``data`` routes ``test_data``'s HITs (refits add only test-set human labels)."""
    labels = np.asarray(data.labels, dtype=bool)
    test_labels = np.asarray(test_data.labels, dtype=bool)
    hit_index = presence_hit_index(test_data)
    out = {}
    if judge in TRAINED_JUDGES:
        features = _pair_features(data) if features is None else features
        test_features = _pair_features(test_data) if test_features is None else test_features
        base = _fit(features, labels, np.asarray(data.examples), seed)
    else:
        fixed = _registry_probabilities(judge, test_data)
    for m in (measure, None):
        if judge in TRAINED_JUDGES:
            predict, refit = _fold_router(features, labels, test_features, test_labels, seed, base)
            if share == 0 or rounds == 1:
                refit = None
        else:
            predict, refit = _adapting_router(fixed[0], fixed[1], test_data.pairs, test_labels)
            if share == 0 or rounds == 1:
                refit = None
        hybrid, human, _ = route_fold(test_labels, hit_index, share, rounds, m, seed, predict, refit)
        figures = {"human_share": share, **{k: v for k, v in score_figures(hybrid, test_data).items() if k in KEYS}}
        figures["human_unit_share"] = round(float(human.mean()), 4)
        out["random" if m is None else "routed"] = figures
    return {**out.pop("routed"), "random": out["random"], "pairs": len(test_data)}


def _pair_features(data: PresenceDataset) -> np.ndarray:
    from annotation.automation.judges.encoder import shared_encoder
    from annotation.automation.judges.features import pair_features

    return pair_features(data.pairs, shared_encoder())


def _registry_probabilities(judge: str, data: PresenceDataset) -> tuple[np.ndarray, float]:
    from annotation.automation.judges.registry import build_judge

    built = build_judge(judge)
    return np.asarray(built.predict(data.pairs), dtype=float), float(built.threshold)


def curves_directory():
    from pathlib import Path

    from django.conf import settings

    return Path(settings.MODELS_DIR) / "hybrid-curves"


def save_curve(result: dict, name: str) -> str:
    """Keep an ``evaluate_hybrid --curve`` result under ``MODELS_DIR/hybrid-curves/NAME.json`` for the judges page."""
    import json
    import re

    if "curve" not in result:
        raise ValueError("only a result with the curve (--curve) can be saved")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-") or "curve"
    directory = curves_directory()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{safe}.json"
    path.write_text(json.dumps({"name": safe, **result}, indent=2))
    return str(path)


def saved_curves() -> list[dict]:
    """The saved curves, by name (unreadable files are skipped: the page must not fail for one)."""
    import json

    directory = curves_directory()
    curves = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            data = json.loads(path.read_text())
            data["curve"][0]["routed"]["summary_pearson"]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        curves.append(data)
    return curves
