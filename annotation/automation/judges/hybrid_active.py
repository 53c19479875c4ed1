"""``evaluate_hybrid``'s two rules, measured against the full-human system scores of the same examples.

**active** (the default for new campaigns, ``annotation.scoring.active``): in each fold the HITs are decided in
``rounds`` draws, round t taking the HITs of the next examples (t/R of them, in the fold's order), as a campaign's
rounds take its examples.  A draw spends ``hit_budget(decided so far, share) - drawn so far`` HITs, drawn at random
with known probabilities that mix uniform and the judge's expected errors (the mix chosen from the labels so far;
0.5 in the first round).  Between rounds the judge learns from the human labels so far, each weighted by 1/pi.
The judge after the last round gives f, cross-fitted where people judged the unit (an untrained judge's adapter is
refitted per fold of examples without that fold's labels; the ``features`` judge never trains on the labels it
reads, and its unit prior leaves a unit's own label out).  Each system's score is the AIPW estimate with its design
interval (target: the full-human score on these examples) and its example interval.  The *display* score of a
summary: the human label where people judged a unit, elsewhere f calibrated by a Platt fit weighted by 1/pi (kept
only when it lowers the weighted calibration error, measured out of fold).

**uncertainty** (today's rule, the ``measure`` run of ``route_fold``): the least-sure HITs go to people and a unit
the judge scores counts as its probability (the judge is refitted on the routed labels).  Its interval is the
percentile bootstrap the leaderboard used to show (examples resampled, judge units drawn from their probability):
the platform no longer shows it, because it does not cover what it claims; it is measured here to say by how much.

``rule_summary`` pools one rule's estimates over seeds into the figures of the issue: ``coverage`` (share of
(system, seed) pairs whose 95% interval contains the full-human mean), ``mean_bias``, ``mean_abs_bias`` (mean over
systems of |error averaged over seeds|), ``mae``, ``ci_width`` (mean full width), ``system_tau`` (Kendall tau of
the systems' estimates against the full-human means, mean over seeds), ``system_tau_display`` (the same with the
mean display score) and ``summary_pearson_display`` (summary-level Pearson of display scores, mean over seeds).
"""

from __future__ import annotations

import math

import numpy as np

from annotation.scoring import active, calibration, routing
from annotation.scoring.correlation import bootstrap_hybrid_score_ci, correlation, summary_level_correlation

RULES = ("active", "uncertainty")

N_BOOT = 1000


def route_fold_active(labels, hit_index, examples, share: float, rounds: int, seed: int, predict, learn=None,
                      cross_fit=None) -> dict:
    """One fold under the active rule (module docstring).  ``examples[i]``: the example code (0..E-1, in the order
    the rounds take them) of row i; ``learn(rows, weights)`` refits the judge on those rows' labels;
    ``cross_fit(rows, weights)`` gives the final judge's probabilities of the human rows without their own labels
    (None: the final probabilities are already out of fold).  Returns per row ``f`` (cross-fitted), ``human``, ``pi``
    and ``stratum`` (its round), and ``per_round`` (HITs drawn)."""
    labels = np.asarray(labels, dtype=bool)
    hit_index = np.asarray(hit_index, dtype=np.int64)
    n_hits = int(hit_index.max()) + 1 if hit_index.size else 0
    hit_example = np.zeros(n_hits, dtype=np.int64)
    hit_example[hit_index] = np.asarray(examples, dtype=np.int64)
    n_examples = int(hit_example.max()) + 1 if n_hits else 0
    decided = np.zeros(n_hits, dtype=bool)
    drawn = np.zeros(n_hits, dtype=bool)
    pi = np.zeros(n_hits)
    stratum = np.zeros(n_hits, dtype=np.int64)
    uncertainty_at = np.zeros(n_hits)
    per_round, mixes = [], []
    probabilities, threshold = predict()
    for number in range(1, max(1, rounds) + 1):
        needed = n_examples if number >= rounds else math.ceil(number * n_examples / rounds)
        draw = ~decided & (hit_example < needed)
        if not draw.any():
            per_round.append(0)
            continue
        budget = routing.hit_budget(int(decided.sum() + draw.sum()), share) - int(drawn.sum())
        budget = max(0, min(budget, int(draw.sum())))
        u = routing.hit_uncertainty(probabilities, threshold, hit_index, n_hits, "expected_errors")
        u_draw = np.where(draw, u, -np.inf)
        residual = np.bincount(hit_index, weights=np.where(drawn[hit_index], labels - probabilities, 0.0), minlength=n_hits)
        mix, _ = active.choose_mix(uncertainty_at[drawn], residual[drawn] ** 2, pi[drawn], u_draw, budget)
        mixes.append(mix)
        p = active.inclusion_probabilities(u_draw, budget, mix)
        picked = active.fixed_size_sample(p, seed=seed * 1000 + number) & draw
        pi[draw], stratum[draw], uncertainty_at[draw] = p[draw], number, u[draw]
        decided |= draw
        drawn |= picked
        per_round.append(int(picked.sum()))
        if learn is not None and picked.any():
            rows = np.flatnonzero(drawn[hit_index])
            learn(rows, 1.0 / pi[hit_index[rows]])
            probabilities, threshold = predict()
    human = drawn[hit_index]
    f = np.asarray(probabilities, dtype=float).copy()
    rows = np.flatnonzero(human)
    if cross_fit is not None and rows.size:
        f[rows] = cross_fit(rows, 1.0 / pi[hit_index[rows]])
    return {"f": f, "threshold": threshold, "human": human, "pi": pi[hit_index], "stratum": stratum[hit_index],
            "per_round": per_round, "mixes": mixes}


def display_probabilities(f, human, labels, weights, groups) -> np.ndarray:
    """f calibrated by a Platt fit on the human rows weighted by 1/pi (``weights``), or f itself when the fit does
    not lower the weighted calibration error measured out of fold (folds by example, ``groups``)."""
    f = np.asarray(f, dtype=float)
    rows = np.flatnonzero(human)
    if rows.size < calibration.MIN_LABELS:
        return f
    y = np.asarray(labels, dtype=int)[rows]
    w = np.asarray(weights, dtype=float)[rows]
    if min(y.sum(), (1 - y).sum()) < calibration.MIN_PER_CLASS:
        return f
    folds = calibration.example_folds(np.asarray(groups)[rows])
    held_out = np.empty(rows.size)
    for fold in np.unique(folds):
        train = folds != fold
        if len(np.unique(y[train])) < 2:
            held_out[~train] = f[rows][~train]
            continue
        held_out[~train] = calibration.platt_apply(f[rows][~train], calibration.platt_fit(f[rows][train], y[train], weights=w[train]))
    before = calibration.expected_calibration_error(f[rows], y, weights=w)
    after = calibration.expected_calibration_error(held_out, y, weights=w)
    if not after < before:
        return f
    return calibration.platt_apply(f, calibration.platt_fit(f[rows], y, weights=w))


def _summaries(examples, systems):
    keys = list(zip(examples, systems))
    codes = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    index = np.array([codes[k] for k in keys], dtype=np.int64)
    example_names = {e: i for i, e in enumerate(dict.fromkeys(examples))}
    system_names = list(dict.fromkeys(systems))
    system_code = {s: i for i, s in enumerate(system_names)}
    summary_example = np.array([example_names[e] for e, _ in codes], dtype=np.int64)
    summary_system = np.array([system_code[s] for _, s in codes], dtype=np.int64)
    return index, summary_example, summary_system, system_names


def active_estimates(data, labels, f, human, pi, stratum, hit, display) -> dict:
    """Per system: the AIPW score, the design and example intervals and the full-human mean; with the per-summary
    display and full-human scores (for the display correlations).  Rows pooled over folds: ``hit`` and ``stratum``
    are unique across folds."""
    labels = np.asarray(labels, dtype=float)
    index, summary_example, summary_system, names = _summaries(data.examples, data.systems)
    n_summaries = index.max() + 1
    sizes = np.bincount(index, minlength=n_summaries)
    gold_summary = np.bincount(index, weights=labels, minlength=n_summaries) / sizes
    display_summary = np.bincount(index, weights=np.where(human, labels, display), minlength=n_summaries) / sizes
    n_hits = int(hit.max()) + 1
    hit_pi = np.zeros(n_hits)
    hit_pi[hit] = pi
    hit_sampled = np.zeros(n_hits, dtype=bool)
    hit_sampled[hit] = human
    hit_stratum = np.zeros(n_hits, dtype=np.int64)
    hit_stratum[hit] = stratum
    # The campaign's estimator itself (``annotation.scoring.active.Design``): a system is the contrast 1/n_s over its
    # summaries, so w_u = 1 / (n_s |U_s|).
    design = active.Design(index, f, labels, hit, hit_pi, hit_sampled, hit_stratum, summary_system, summary_example)
    systems = {}
    for s, name in enumerate(names):
        estimate = design.system_estimate(s)
        mine = summary_system == s
        low, high = estimate["ci95"]
        # ``estimate`` and ``sd``: the AIPW estimate as computed and its design standard deviation (the plain normal
        # interval estimate +- 1.96 sd can be rebuilt from them, to compare constructions).
        systems[name] = {"score": estimate["score"], "ci_low": low, "ci_high": high,
                         "ci_examples": list(estimate["ci95_examples"]),
                         "estimate": estimate["estimate"], "sd": math.sqrt(estimate["variance"]),
                         "full_human": float(gold_summary[mine].mean()), "display": float(display_summary[mine].mean())}
    return {"systems": systems, "summary_display": display_summary, "summary_gold": gold_summary,
            "summary_example": summary_example, "summary_system": summary_system}


def uncertainty_estimates(data, labels, soft, human, seed: int = 0, n_boot: int = N_BOOT) -> dict:
    """Per system under today's rule: the mean of its summaries' scores (human labels, the judge's probability
    elsewhere) with the bootstrap interval the leaderboard used to show, and the full-human mean."""
    labels = np.asarray(labels, dtype=float)
    index, summary_example, summary_system, names = _summaries(data.examples, data.systems)
    n_summaries = index.max() + 1
    sizes = np.bincount(index, minlength=n_summaries)
    gold_summary = np.bincount(index, weights=labels, minlength=n_summaries) / sizes
    score_summary = np.bincount(index, weights=soft, minlength=n_summaries) / sizes
    fixed = np.bincount(index, weights=np.where(human, labels, 0.0), minlength=n_summaries)
    judge_rows = np.flatnonzero(~np.asarray(human, dtype=bool))
    ci = bootstrap_hybrid_score_ci(fixed, sizes, index[judge_rows], np.asarray(soft)[judge_rows], summary_example,
                                   summary_system, n_boot=n_boot, seed=seed)
    systems = {}
    for s, name in enumerate(names):
        mine = summary_system == s
        score = float(score_summary[mine].mean())
        systems[name] = {"score": score, "ci_low": float(ci[s, 0]), "ci_high": float(ci[s, 1]),
                         "full_human": float(gold_summary[mine].mean()), "display": score}
    return {"systems": systems, "summary_display": score_summary, "summary_gold": gold_summary,
            "summary_example": summary_example, "summary_system": summary_system}


def seed_figures(estimates: dict) -> dict:
    """One seed's figures of one rule (JSON-ready): per system its estimate, interval and error, and the taus."""
    systems = estimates["systems"]
    names = list(systems)
    score = np.array([systems[n]["score"] for n in names])
    gold = np.array([systems[n]["full_human"] for n in names])
    display = np.array([systems[n]["display"] for n in names])
    summary_pearson = summary_level_correlation(estimates["summary_display"], estimates["summary_gold"],
                                                estimates["summary_example"], estimates["summary_system"], "pearson")[0]
    return {
        "systems": {n: {k: (round(v, 6) if isinstance(v, float) else [round(x, 6) for x in v] if isinstance(v, list) else v)
                        for k, v in systems[n].items()} for n in names},
        "system_tau": round(float(correlation(score, gold, "kendall")), 4),
        "system_tau_display": round(float(correlation(display, gold, "kendall")), 4),
        "summary_pearson_display": round(float(summary_pearson), 4),
    }


def rule_summary(seed_runs: list[dict]) -> dict:
    """The issue's figures of one rule over seeds (module docstring) from ``seed_figures`` results."""
    names = list(seed_runs[0]["systems"])
    error = np.array([[run["systems"][n]["score"] - run["systems"][n]["full_human"] for n in names] for run in seed_runs])
    covered = np.array([[run["systems"][n]["ci_low"] <= run["systems"][n]["full_human"] <= run["systems"][n]["ci_high"]
                         for n in names] for run in seed_runs])
    width = np.array([[run["systems"][n]["ci_high"] - run["systems"][n]["ci_low"] for n in names] for run in seed_runs])
    return {
        "seeds": len(seed_runs),
        "coverage": round(float(covered.mean()), 4),
        "mean_bias": round(float(error.mean()), 5),
        "mean_abs_bias": round(float(np.abs(error.mean(axis=0)).mean()), 5),
        "mae": round(float(np.abs(error).mean()), 5),
        "ci_width": round(float(width.mean()), 4),
        "system_tau": round(float(np.mean([run["system_tau"] for run in seed_runs])), 4),
        "system_tau_display": round(float(np.mean([run["system_tau_display"] for run in seed_runs])), 4),
        "summary_pearson_display": round(float(np.mean([run["summary_pearson_display"] for run in seed_runs])), 4),
    }
