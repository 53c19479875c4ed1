"""Evaluating budgeted human presence judgments (SemiAutoQAPyramid with routing) on labelled data.

For each fold (folds split by example), the judge is trained on the other folds only; the
fold's presence HITs are ranked by the judge's uncertainty and the least sure ``share`` of them
take their gold labels (what people would have said), the rest keep the judge's labels.  With
``rounds`` > 1 (active rounds) the budget is spent in rounds and the judge learns from the human
labels after each round; the next round goes to the then least-sure HITs, and the judge as it is
after the last round labels what people did not see.

What the judge learns from in-fold human labels is the *unit prior*: for a unit of the reference,
what people said about the same unit in the other systems' summaries
(``annotation.scoring.routing.unit_prior``: the present share and the count).  The ``features``
judge takes it as two more inputs of its gradient-boosted head ; it learns to use them on the training folds, where each unit's labels in other summaries are
revealed at a random rate (5-50%), as a campaign's rounds would reveal them.  Before the first
human label, a plain head trained without the prior judges.  An untrained
registry judge (``lexical``, ``rouge1``, ...) keeps its probabilities and gets the campaigns' adapter
(``annotation.automation.judges.adapt``, with the same prior), fitted on the human labels so far.

A presence HIT of a labelled SCU folder is what an "scu" campaign would post: one summary's
units in reference order, ``SCU_UNITS_PER_HIT`` (4) per HIT.  The budget counts HITs (what is paid);
``human_unit_share`` says which share of the units that bought.

Figures (pooled over the held-out folds, as ``evaluation.score_figures``): accuracy of the
hybrid labels against the gold, summary- and system-level Pearson and Kendall of the hybrid
scores (share of a summary's units labelled present) against the gold scores; the
``*_probability`` keys score the judge's units by their probability instead of their label.
The same procedure with the HITs drawn at random (same seed, same rounds and learning) is the
baseline under ``random``.  ``combined_cost_share`` is the presence assignments people do against the
paper's protocol (3 judges on every HIT) when the routed HITs follow the adaptive rule (2 judges, a third
where they disagree): the routed HIT share x (2 + third judge rate) / 3.

``evaluate_seeds`` runs the whole evaluation for several seeds on features computed once, and reports the
median of every figure, its range (min, max) and each seed's run.
"""

from __future__ import annotations

import time

import numpy as np

from annotation.automation.judges.datasets import PresenceDataset
from annotation.automation.judges.evaluation import score_figures
from annotation.models.stages import SCU_UNITS_PER_HIT
from annotation.scoring import routing

KEYS = ("accuracy", "summary_pearson", "summary_kendall", "system_pearson", "system_kendall")
SOFT_KEYS = tuple(f"{k}_probability" for k in KEYS[1:])
CURVE_SHARES = tuple(round(0.1 * i, 1) for i in range(11))
TRAINED_JUDGES = ("features",)
DEFAULT_MEASURE = "expected_errors"
#: Training rows see the unit's other labels revealed at a rate drawn per unit from this range.
REVEAL_RATES = (0.05, 0.5)
#: Whether units nobody has judged keep the plain head's probability once the prior head is in use (measured:
#: no better for the correlations, worse for system-level tau; the prior head judges every unit then).
PLAIN_FOR_UNSEEN = False
#: The adaptive rule's expected share of presence HITs that need a third judge (issue 29: 27.8% in the authors'
#: released judgments; a campaign's ``third_judge_rate`` defaults to the same).
DEFAULT_THIRD_JUDGE_RATE = 0.278


def _indices(values) -> np.ndarray:
    codes: dict = {}
    return np.array([codes.setdefault(v, len(codes)) for v in values], dtype=np.int64)


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


def unit_index(data: PresenceDataset) -> np.ndarray:
    """The reference unit of every pair (the same unit judged in every system's summary)."""
    return _indices(zip(data.examples, (p.unit for p in data.pairs)))


def summary_sizes(data: PresenceDataset) -> np.ndarray:
    """Per pair, the number of units of its summary."""
    summaries = _indices(zip(data.examples, data.systems))
    return np.bincount(summaries)[summaries]


def with_prior(features: np.ndarray, units, labels, observed) -> np.ndarray:
    """The pair features with the unit prior (share present, count) appended."""
    share, seen = routing.unit_prior(units, labels, observed)
    return np.column_stack([features, share, seen])


def route_fold(labels, hit_index, sizes, share: float, rounds: int, measure: str | None, seed: int,
               predict, learn=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """One fold's routing: returns (hybrid labels, soft labels, human mask per unit, HITs per round).

    ``predict()`` gives the current (probabilities, threshold); ``learn(human_rows)`` lets the
    judge learn from the human labels of those rows (None: it does not).  ``measure`` None routes
    at random.
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
            uncertainty = routing.hit_uncertainty(probabilities, threshold, hit_index, n_hits, measure, sizes)
            picked = routing.least_sure(uncertainty, budget, exclude=chosen, seed=seed + number)
        chosen = np.concatenate([chosen, picked])
        per_round.append(int(picked.size))
        if learn is not None and picked.size:
            learn(np.flatnonzero(np.isin(hit_index, chosen)))
            probabilities, threshold = predict()
    human = np.isin(hit_index, chosen)
    hybrid = routing.hybrid_labels(probabilities >= threshold, labels, human)
    return hybrid, np.where(human, labels.astype(float), probabilities), human, per_round


def _features_judge(features, units, labels, groups, train, test, seed):
    """A fold's ``features`` judge: the head trained on the training folds (with simulated unit priors);
    returns a factory of predict/learn pairs for the test rows."""
    from annotation.automation.judges.heads import fit_head

    rng = np.random.default_rng(seed)
    rates = rng.uniform(*REVEAL_RATES, size=int(units.max()) + 1)[units]
    revealed = (rng.random(len(labels)) < rates) & np.isin(np.arange(len(labels)), train)
    augmented = with_prior(features, units, labels, revealed)
    head, threshold = fit_head(augmented[train], labels[train], groups[train], seed=seed)
    # Before any human label the plain head (trained without the prior) judges: better there than the
    # prior head reading "missing" everywhere.
    plain, plain_threshold = fit_head(features[train], labels[train], groups[train], seed=seed)
    test_units, test_labels, test_features = units[test], labels[test], features[test]
    plain_probabilities = plain.predict_proba(test_features)[:, 1]

    def router():
        observed = np.zeros(len(test), dtype=bool)

        def predict():
            if not observed.any() or not PLAIN_FOR_UNSEEN:
                if not observed.any():
                    return plain_probabilities, plain_threshold
                return head.predict_proba(with_prior(test_features, test_units, test_labels, observed))[:, 1], threshold
            with_labels = with_prior(test_features, test_units, test_labels, observed)
            known = with_labels[:, -1] > 0
            probabilities = np.where(known, head.predict_proba(with_labels)[:, 1], plain_probabilities)
            return probabilities, np.where(known, threshold, plain_threshold)

        def learn(rows, weights=None):
            # The head was trained on other folds; what it learns from labels here is the unit prior only, which
            # leaves each row's own label out: its probabilities are out of fold already (no cross-fit needed).
            observed[rows] = True

        return predict, learn, None

    return router


def _registry_judge(probabilities, threshold, pairs, units, labels, groups=None):
    """An untrained judge's predict/learn/cross-fit factory: between rounds, the campaigns' adapter on the human
    rows (weighted by ``weights``, 1/pi under the active rule); the cross-fit refits it per fold of examples
    (``groups``) without that fold's labels, for the rows people judged."""
    from annotation.automation.judges.adapt import adapter_features, fit_adapter, with_unit_prior

    cache = {}

    def router():
        state = {"current": (np.asarray(probabilities, dtype=float), float(threshold)), "weights": None}
        observed = np.zeros(len(labels), dtype=bool)

        def features_now():
            if "features" not in cache:
                cache["features"] = adapter_features(pairs, probabilities)
            return with_unit_prior(cache["features"], units, labels, observed)

        def predict():
            return state["current"]

        def learn(rows, weights=None):
            observed[rows] = True
            features = features_now()
            # Weights come from the active rule's draws, which (as a live campaign under that rule) learn from however
            # few labels (the shift of the judge's logit below the adapter's minimum).
            adapter = fit_adapter(features[rows], labels[rows], sample_weight=weights, few_labels=weights is not None)
            if adapter.fitted:
                state["current"] = (adapter.predict(features), 0.5)

        def cross_fit(rows, weights):
            from annotation.scoring.calibration import example_folds

            features = features_now()
            folds = example_folds(np.asarray(groups)[rows])
            result = np.asarray(probabilities, dtype=float)[rows].copy()
            for fold in np.unique(folds):
                held = folds == fold
                adapter = fit_adapter(features[rows[~held]], labels[rows[~held]], sample_weight=weights[~held],
                                      few_labels=True)
                if adapter.fitted:
                    result[held] = adapter.predict(features[rows[held]])
            return result

        return predict, learn, cross_fit

    return router


def evaluate_hybrid(data: PresenceDataset, folds: int = 5, share: float = 0.25, judge: str = "features",
                    rounds: int = 3, seed: int = 0, measure: str = DEFAULT_MEASURE, curve: bool = False,
                    test_data: PresenceDataset | None = None, features=None, test_features=None,
                    third_judge_rate: float = DEFAULT_THIRD_JUDGE_RATE, rule: str = "active") -> dict:
    """The hybrid evaluation of the module docstring; ``features`` may be passed in when already computed.

    Both routing rules run (``annotation.automation.judges.hybrid_active``): ``estimates`` holds each rule's
    per-system estimates and intervals against the full-human means, ``summary`` their figures; ``rule`` says
    whose figures the top-level keys are (the active rule's draws, or the uncertainty rule's ``measure`` run)."""
    from annotation.automation.judges import hybrid_active

    from sklearn.model_selection import GroupKFold
    from threadpoolctl import threadpool_limits

    _check_options(data, folds, share, rounds, measure, third_judge_rate, rule)
    started = time.perf_counter()
    timings = {}
    labels = np.asarray(data.labels, dtype=bool)
    groups = np.asarray(data.examples)
    hit_index = presence_hit_index(data)
    units = unit_index(data)
    sizes = summary_sizes(data)
    fixed = None
    if judge in TRAINED_JUDGES:
        if features is None:
            features = _pair_features(data)
        timings["features"] = round(time.perf_counter() - started, 1)
    else:
        fixed = _registry_probabilities(judge, data)
    n_hits = int(hit_index.max()) + 1
    splits = list(GroupKFold(n_splits=folds).split(np.zeros(len(labels)), labels, groups))
    shares = sorted(set(CURVE_SHARES if curve else ()) | {share})
    runs = {}  # (share, measure or None) -> (pooled hybrid labels, soft labels, human mask, HITs per round per fold)
    measures = list(dict.fromkeys([measure, *routing.MEASURES]))
    drawn = {"f": np.zeros(len(labels)), "human": np.zeros(len(labels), bool), "pi": np.ones(len(labels)),
             "stratum": np.zeros(len(labels), np.int64), "hit": np.zeros(len(labels), np.int64),
             "threshold": np.full(len(labels), 0.5), "per_round": []}
    hit_offset = 0
    fit_started = time.perf_counter()
    # One thread for the gradient-boosted heads: on a shared 2-core machine OpenMP's spinning threads
    # made the fits many times slower than one thread.
    with threadpool_limits(limits=1):
        for fold, (train, test) in enumerate(splits):
            local_hits = np.unique(hit_index[test], return_inverse=True)[1]
            if fixed is None:
                router = _features_judge(features, units, labels, groups, train, test, seed + fold)
            else:
                router = _registry_judge(fixed[0][test], fixed[1], [data.pairs[i] for i in test], units[test], labels[test],
                                         groups[test])
            # The active rule: the fold's examples in their order, a third of them per round.
            predict, learn, cross_fit = router()
            fold_examples = np.unique(groups[test], return_index=True)
            order = {name: rank for rank, name in enumerate(fold_examples[0][np.argsort(fold_examples[1])])}
            run = hybrid_active.route_fold_active(
                labels[test], local_hits, np.array([order[g] for g in groups[test]]), share, rounds, seed + fold,
                predict, learn if rounds > 1 else None, cross_fit)
            drawn["f"][test], drawn["human"][test], drawn["pi"][test] = run["f"], run["human"], run["pi"]
            drawn["stratum"][test] = fold * 10**6 + run["stratum"]
            drawn["hit"][test] = hit_offset + local_hits
            drawn["threshold"][test] = run["threshold"]
            drawn["per_round"].append(run["per_round"])
            hit_offset += int(local_hits.max()) + 1
            for s in shares:
                for m in (measures if s == share else [measure]) + [None]:
                    predict, learn, _ = router()
                    hybrid, soft, human, per_round = route_fold(
                        labels[test], local_hits, sizes[test], s, rounds, m, seed + fold, predict,
                        learn if rounds > 1 else None,
                    )
                    entry = runs.setdefault((s, m), (np.zeros(len(labels), bool), np.zeros(len(labels)), np.zeros(len(labels), bool), []))
                    entry[0][test], entry[1][test], entry[2][test] = hybrid, soft, human
                    entry[3].append(per_round)
    timings["routing"] = round(time.perf_counter() - fit_started, 1)

    def figures(s, m):
        hybrid, soft, human, per_round = runs[(s, m)]
        return _figures(s, hybrid, soft, human, data, int(sum(sum(r) for r in per_round)), n_hits, third_judge_rate)

    display = hybrid_active.display_probabilities(drawn["f"], drawn["human"], labels, 1.0 / drawn["pi"], groups)
    active_hybrid = routing.hybrid_labels(drawn["f"] >= drawn["threshold"], labels, drawn["human"])
    active_soft = np.where(drawn["human"], labels.astype(float), display)
    active_figures = _figures(share, active_hybrid, active_soft, drawn["human"], data,
                              int(sum(sum(r) for r in drawn["per_round"])), n_hits, third_judge_rate)
    estimates = {
        "active": hybrid_active.seed_figures(hybrid_active.active_estimates(
            data, labels, drawn["f"], drawn["human"], drawn["pi"], drawn["stratum"], drawn["hit"], display)),
        "uncertainty": hybrid_active.seed_figures(hybrid_active.uncertainty_estimates(
            data, labels, runs[(share, measure)][1], runs[(share, measure)][2], seed=seed)),
    }
    per_round_of = {"active": drawn["per_round"], "uncertainty": runs[(share, measure)][3]}[rule]
    result = dict(active_figures) if rule == "active" else figures(share, measure)
    result.update(
        rule=rule, judge=judge, measure=measure, rounds=rounds, seed=seed, folds=folds, pairs=len(labels),
        presence_hits=n_hits, units_per_hit=SCU_UNITS_PER_HIT, third_judge_rate=third_judge_rate,
        hits_per_round=[int(sum(r[i] for r in per_round_of)) for i in range(rounds)],
        rules={"active": active_figures, "uncertainty": figures(share, measure)},
        estimates=estimates,
        summary={name: hybrid_active.rule_summary([estimates[name]]) for name in hybrid_active.RULES},
        random=figures(share, None),
        measures={m: figures(share, m) for m in routing.MEASURES},
    )
    if 0.0 in shares:
        result["judge_alone"] = figures(0.0, None)
    if curve:
        result["curve"] = [{"routed": figures(s, measure), "random": figures(s, None)} for s in CURVE_SHARES]
    if test_data is not None:
        with threadpool_limits(limits=1):
            result["zero_shot"] = zero_shot(data, test_data, share, judge, rounds, seed, measure, features, test_features,
                                            third_judge_rate)
    timings["total"] = round(time.perf_counter() - started, 1)
    result["seconds"] = timings
    return result


def _check_options(data, folds, share, rounds, measure, third_judge_rate, rule="active") -> None:
    from annotation.automation.judges.hybrid_active import RULES

    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; use one of {', '.join(RULES)}")
    if not 0 <= share <= 1:
        raise ValueError("--human-share must be between 0 and 1")
    if rounds < 1:
        raise ValueError("--rounds must be at least 1")
    if folds < 2 or len(set(data.examples)) < folds:
        raise ValueError(f"{len(set(data.examples))} examples cannot be split into {folds} folds (at least 2)")
    if measure not in routing.MEASURES:
        raise ValueError(f"unknown measure {measure!r}; use one of {', '.join(routing.MEASURES)}")
    if not 0 <= third_judge_rate <= 1:
        raise ValueError(f"--third-judge-rate must be between 0 and 1 (got {third_judge_rate})")


#: Keys of a run that describe it rather than measure it: a multi-seed result takes them from the first seed
#: (``seed`` and ``seconds`` are its own) and gives them no range.
RUN_KEYS = ("rule", "judge", "measure", "rounds", "seed", "folds", "pairs", "presence_hits", "units_per_hit",
            "third_judge_rate", "hits_per_round", "seconds", "folder")


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> [0, 1, 2]; a clear ValueError for an empty list, a non-integer, a negative or a repeated seed."""
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise ValueError("--seeds is empty: give a comma-separated list such as 0,1,2,3,4")
    seeds = []
    for position, item in enumerate(items, start=1):
        if not item:
            raise ValueError(f"--seeds {text!r}: item {position} is empty")
        try:
            seed = int(item)
        except ValueError:
            raise ValueError(f"--seeds {text!r}: item {position} ({item!r}) is not a whole number") from None
        if seed < 0:
            raise ValueError(f"--seeds {text!r}: item {position} ({seed}) is negative; seeds are 0 or more")
        if seed in seeds:
            raise ValueError(f"--seeds {text!r}: seed {seed} is given twice")
        seeds.append(seed)
    return seeds


def evaluate_seeds(data: PresenceDataset, seeds, test_data: PresenceDataset | None = None, features=None,
                   test_features=None, progress=None, **options) -> dict:
    """``evaluate_hybrid`` once per seed, the pair features computed once.

    The result has the keys of a single run, each figure the median over the seeds (``seed`` None), plus
    ``seeds`` (each seed's whole run, with its ``seed``) and ``ranges`` ([min, max] of every figure, in the
    same structure as the figures).  ``seconds`` is the whole run's.
    """
    seeds = list(seeds)
    if not seeds:
        raise ValueError("--seeds needs at least one seed")
    if len(set(seeds)) != len(seeds) or any(int(s) < 0 for s in seeds):
        raise ValueError(f"--seeds must be distinct whole numbers of 0 or more (got {seeds})")
    _check_options(data, options.get("folds", 5), options.get("share", 0.25), options.get("rounds", 3),
                   options.get("measure", DEFAULT_MEASURE), options.get("third_judge_rate", DEFAULT_THIRD_JUDGE_RATE),
                   options.get("rule", "active"))
    started = time.perf_counter()
    if options.get("judge", "features") in TRAINED_JUDGES:
        features = _pair_features(data) if features is None else features
        if test_data is not None and test_features is None:
            test_features = _pair_features(test_data)
    feature_seconds = round(time.perf_counter() - started, 1)
    runs = []
    for seed in seeds:
        runs.append(evaluate_hybrid(data, seed=seed, test_data=test_data, features=features, test_features=test_features,
                                    **options))
        if progress is not None:
            progress(runs[-1])
    from annotation.automation.judges.hybrid_active import RULES, rule_summary

    # Per-seed estimates are kept in each seed's run; the summary pools them (a median of estimates means nothing).
    result = median_of_runs([{k: v for k, v in run.items() if k not in ("estimates", "summary")} for run in runs])
    result["summary"] = {name: rule_summary([run["estimates"][name] for run in runs]) for name in RULES}
    # Keys that describe the run (pairs, folds, ...) are the first seed's: a median of two counts is no count.
    result.update({k: runs[0][k] for k in RUN_KEYS if k in runs[0] and k not in ("seed", "seconds", "hits_per_round")})
    result["seed"] = None
    result["seconds"] = {"features": feature_seconds, "routing": round(sum(r["seconds"]["routing"] for r in runs), 1),
                         "total": round(time.perf_counter() - started, 1)}
    result["ranges"] = ranges_of_runs([{k: v for k, v in run.items() if k not in ("estimates", "summary")} for run in runs])
    result["seeds"] = runs
    return result


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _median(values: list):
    import statistics

    first = values[0]
    if isinstance(first, dict):
        return {key: _median([v.get(key) for v in values]) for key in first}
    if isinstance(first, list) and all(isinstance(v, list) and len(v) == len(first) for v in values):
        return [_median([v[i] for v in values]) for i in range(len(first))]
    if all(_number(v) for v in values):
        if any(isinstance(v, float) and v != v for v in values):  # NaN: no median
            return float("nan")
        middle = statistics.median(values)
        return round(middle, 6) if isinstance(middle, float) else middle
    return first


def _range(values: list):
    first = values[0]
    if isinstance(first, dict):
        out = {}
        for key in first:
            if key in RUN_KEYS:
                continue
            spread = _range([v.get(key) for v in values])
            if spread is not None:
                out[key] = spread
        return out
    if isinstance(first, list) and all(isinstance(v, list) and len(v) == len(first) for v in values):
        return [_range([v[i] for v in values]) for i in range(len(first))]
    if all(_number(v) for v in values):
        return [min(values), max(values)]
    return None


def median_of_runs(runs: list[dict]) -> dict:
    """Per key of a run, the median over the runs (lists element by element; descriptions from the first run)."""
    return _median(runs)


def ranges_of_runs(runs: list[dict]) -> dict:
    """[min, max] over the runs of every figure, in the runs' structure (descriptive keys left out)."""
    return _range(runs)


def combined_cost_share(human_hits: int, presence_hits: int, third_judge_rate: float = DEFAULT_THIRD_JUDGE_RATE) -> float:
    """Presence assignments against the paper's protocol: routed HIT share x (2 + third judge rate) / 3."""
    if presence_hits <= 0:
        return 0.0
    return round(human_hits / presence_hits * (2 + third_judge_rate) / 3, 4)


def _figures(share, hybrid, soft, human, data, human_hits, presence_hits, third_judge_rate) -> dict:
    scores = score_figures(hybrid, data, soft)
    result = {"human_share": share, **{k: scores[k] for k in KEYS}}
    result.update({k: scores[k] for k in SOFT_KEYS})
    result["human_unit_share"] = round(float(np.mean(human)), 4)
    result["human_hits"] = human_hits
    result["combined_cost_share"] = combined_cost_share(human_hits, presence_hits, third_judge_rate)
    return result


def zero_shot(data, test_data, share, judge, rounds, seed, measure, features=None, test_features=None,
              third_judge_rate: float = DEFAULT_THIRD_JUDGE_RATE) -> dict:
    """The judge trained on all of ``data`` routes ``test_data``'s HITs (it learns only the test set's human labels)."""
    labels = np.asarray(data.labels, dtype=bool)
    test_labels = np.asarray(test_data.labels, dtype=bool)
    hit_index = presence_hit_index(test_data)
    sizes = summary_sizes(test_data)
    test_units = unit_index(test_data)
    if judge in TRAINED_JUDGES:
        features = _pair_features(data) if features is None else features
        test_features = _pair_features(test_data) if test_features is None else test_features
        # One array holding both sets: the judge trains on the first part and judges the second.
        both_features = np.vstack([features, test_features])
        both_units = np.concatenate([unit_index(data), test_units + unit_index(data).max() + 1])
        both_labels = np.concatenate([labels, test_labels])
        both_groups = np.concatenate([np.asarray(data.examples), np.asarray(["test:" + e for e in test_data.examples])])
        train, test = np.arange(len(labels)), np.arange(len(labels), len(both_labels))
        router = _features_judge(both_features, both_units, both_labels, both_groups, train, test, seed)
    else:
        fixed = _registry_probabilities(judge, test_data)
        router = _registry_judge(fixed[0], fixed[1], test_data.pairs, test_units, test_labels)
    out = {}
    for m in (measure, None):
        predict, learn, _ = router()
        hybrid, soft, human, per_round = route_fold(test_labels, hit_index, sizes, share, rounds, m, seed, predict,
                                                    learn if rounds > 1 else None)
        out["random" if m is None else "routed"] = _figures(share, hybrid, soft, human, test_data, sum(per_round),
                                                            int(hit_index.max()) + 1, third_judge_rate)
    return {**out.pop("routed"), "random": out["random"], "pairs": len(test_data)}


def _pair_features(data: PresenceDataset) -> np.ndarray:
    from annotation.automation.judges.encoder import shared_encoder
    from annotation.automation.judges.features import pair_features

    return pair_features(data.pairs, shared_encoder())


def _registry_probabilities(judge: str, data: PresenceDataset) -> tuple[np.ndarray, float]:
    from annotation.automation.judges.registry import build_judge

    built = build_judge(judge)
    return np.asarray(built.predict(data.pairs), dtype=float), float(built.threshold)


CURVES = "hybrid-curves"


def save_curve(result: dict, name: str) -> str:
    """Keep an ``evaluate_hybrid --curve`` result as ``hybrid-curves/NAME.json`` of the models storage
    (``MODELS_DIR``, or the bucket) for the judges page; returns where it went."""
    import json
    import re

    from django.core.files.base import ContentFile

    from annotation.services import filestore

    if "curve" not in result:
        raise ValueError("only a result with the curve (--curve) can be saved")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip(".-") or "curve"
    stored = filestore.save(filestore.MODELS, f"{CURVES}/{safe}.json", ContentFile(json.dumps({"name": safe, **result}, indent=2)))
    if filestore.is_local(filestore.MODELS):
        return filestore.storage(filestore.MODELS).path(stored)
    return f"s3://{filestore.storage(filestore.MODELS).bucket_name}/{filestore.object_key(filestore.MODELS, stored)}"


def saved_curves() -> list[dict]:
    """The saved curves, by name (unreadable files are skipped: the page must not fail for one)."""
    import json

    from annotation.services import filestore

    curves = []
    for name in filestore.walk(filestore.MODELS, CURVES):
        if not name.endswith(".json"):
            continue
        try:
            with filestore.open_stream(filestore.MODELS, name) as stream:
                data = json.loads(stream.read())
            data["curve"][0]["routed"]["summary_pearson"]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        curves.append(data)
    return curves
