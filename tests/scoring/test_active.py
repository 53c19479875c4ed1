"""The active rule's pure functions: sampling with known probabilities, the AIPW estimate and its interval."""

import numpy as np
import pytest

from annotation.scoring import active
from annotation.scoring.intervals import wilson_interval


def population(seed=0, n_summaries=120, units_per_hit=4, hits_per_summary=3):
    """A synthetic campaign of one system: true labels, and a judge that is biased (it says present too often) and
    unsure where it is most often wrong."""
    rng = np.random.default_rng(seed)
    n_hits = n_summaries * hits_per_summary
    hit = np.repeat(np.arange(n_hits), units_per_hit)
    summary = hit // hits_per_summary
    truth_p = rng.beta(2, 3, size=hit.size)
    y = (rng.random(hit.size) < truth_p).astype(float)
    f = np.clip(truth_p + 0.25, 0.01, 0.99)  # a judge that overshoots: counting f alone is biased
    sizes = np.bincount(summary)[summary]
    weights = 1.0 / (n_summaries * sizes)
    return dict(hit=hit, summary=summary, y=y, f=f, weights=weights, n_hits=n_hits,
                truth=float(np.sum(weights * y)))


def expected_errors(f, hit, n_hits):
    return np.bincount(hit, weights=np.minimum(f, 1 - f), minlength=n_hits)


def run_design(pop, share, seed, strata=3, mix=active.DEFAULT_MIX):
    """The HITs split into strata (rounds), each sampling its share with the mixed probabilities; returns the
    estimate, its design variance and the HITs drawn."""
    rng = np.random.default_rng(seed)
    stratum = rng.integers(0, strata, size=pop["n_hits"])
    u = expected_errors(pop["f"], pop["hit"], pop["n_hits"])
    pi = np.zeros(pop["n_hits"])
    sampled = np.zeros(pop["n_hits"], dtype=bool)
    for s in range(strata):
        rows = stratum == s
        budget = int(share * rows.sum())
        pi_s = active.inclusion_probabilities(np.where(rows, u, -np.inf), budget, mix)
        pi[rows] = pi_s[rows]
        sampled |= active.fixed_size_sample(pi_s, seed=seed * 100 + s)
    estimate = active.aipw_estimate(pop["weights"], pop["f"], pop["y"], pop["hit"], pi, sampled)
    residuals = active.hit_residuals(pop["weights"], pop["f"], pop["y"], pop["hit"], sampled, pop["n_hits"])
    return estimate, active.design_variance(residuals, pi, sampled, stratum), sampled, pi


def test_fixed_size_sampling_spends_the_budget_exactly_with_the_stated_probabilities():
    rng = np.random.default_rng(1)
    u = rng.gamma(1.0, size=50)
    u[:3] = 40.0  # far more unsure than the rest: their share passes 1 and is capped
    pi = active.inclusion_probabilities(u, 12, mix=0.6)
    assert pi.sum() == pytest.approx(12)
    assert pi.max() <= 1.0 and np.all(pi[:3] == 1.0)
    counts = np.zeros(50)
    for seed in range(4000):
        mask = active.fixed_size_sample(pi, seed=seed)
        assert mask.sum() == 12
        counts += mask
    # The empirical inclusion frequencies match pi (4,000 draws: a few standard errors of 0.008 at most).
    assert np.max(np.abs(counts / 4000 - pi)) < 0.035


def test_a_drawable_hit_never_gets_probability_zero_and_an_excluded_one_always_does():
    u = np.array([0.0, 0.0, 0.5, 3.0, -np.inf, np.nan, 1.0])
    for mix in (0.0, 0.5, 0.9):
        pi = active.inclusion_probabilities(u, 3, mix)
        assert np.all(pi[[0, 1, 2, 3, 6]] > 0)
        assert pi[4] == 0 and pi[5] == 0
        assert pi.sum() == pytest.approx(3)
    with pytest.raises(ValueError):
        active.inclusion_probabilities(u, 3, 1.5)


def test_a_budget_of_every_drawable_hit_takes_them_all():
    pi = active.inclusion_probabilities(np.array([0.1, 0.2, -np.inf]), 5)
    assert pi.tolist() == [1.0, 1.0, 0.0]
    assert active.fixed_size_sample(pi).tolist() == [True, True, False]


def test_the_estimate_is_unbiased_with_a_biased_judge_where_the_judge_alone_is_not():
    pop = population()
    judge_alone = float(np.sum(pop["weights"] * pop["f"]))
    assert judge_alone - pop["truth"] > 0.15  # the judge overshoots by far
    estimates = [run_design(pop, 0.25, seed)[0] for seed in range(600)]
    # Mean over 600 draws within 3 standard errors of the truth.
    error = np.mean(estimates) - pop["truth"]
    assert abs(error) < 3 * np.std(estimates) / np.sqrt(len(estimates)) + 1e-4


@pytest.mark.parametrize("share", [0.1, 0.25, 0.4])
def test_the_design_interval_covers_the_full_human_score_95_percent_of_the_time(share):
    pop = population(seed=3)
    covered = 0
    runs = 500
    for seed in range(runs):
        estimate, variance, sampled, _ = run_design(pop, share, seed)
        low, high = wilson_interval(estimate, variance, int(sampled[pop["hit"]].sum()))
        covered += low <= pop["truth"] <= high
    assert 0.92 <= covered / runs <= 0.98


def test_uncertainty_sampling_narrows_the_interval_when_the_judge_knows_where_it_errs():
    pop = population(seed=5)
    # A judge that is sure and right on most units and unsure (0.5) on the rest: sampling the unsure pays.
    rng = np.random.default_rng(0)
    unsure = rng.random(pop["y"].size) < 0.3
    pop["f"] = np.where(unsure, 0.5, np.where(pop["y"] > 0, 0.97, 0.03))
    uniform = [run_design(pop, 0.2, s, mix=0.0)[1] for s in range(60)]
    mixed = [run_design(pop, 0.2, s, mix=0.8)[1] for s in range(60)]
    assert np.mean(mixed) < 0.8 * np.mean(uniform)


def test_the_mixing_weight_follows_the_labels():
    rng = np.random.default_rng(0)
    u = rng.uniform(0, 2, size=200)
    pi = np.full(200, 0.25)
    # Residuals that grow with the judge's uncertainty: lean on it.
    mix, why = active.choose_mix(u, 0.5 * u, pi, rng.uniform(0, 2, size=400), 100)
    assert mix >= 0.5 and "chosen from 200 HITs" in why
    # Residuals that have nothing to do with it: stay near uniform.
    mix, _ = active.choose_mix(u, np.full(200, 0.4), pi, rng.uniform(0, 2, size=400), 100)
    assert mix <= 0.2
    # Too few labels: the stated default.
    mix, why = active.choose_mix(u[:5], u[:5], pi[:5], u, 50)
    assert mix == active.DEFAULT_MIX and "default" in why


def test_the_example_interval_is_wider_than_the_design_interval():
    pop = population(seed=7)
    estimate, variance, sampled, pi = run_design(pop, 0.25, 1)
    known = sampled[pop["hit"]]
    pseudo_units = pop["f"] + np.where(known, (pop["y"] - pop["f"]) / pi[pop["hit"]], 0.0)
    summaries = np.bincount(pop["summary"], weights=pseudo_units) / np.bincount(pop["summary"])
    mean, spread, n_examples = active.example_spread(summaries, np.arange(summaries.size))
    assert mean == pytest.approx(estimate)
    low, high = wilson_interval(mean, spread, n_examples)
    design_low, design_high = wilson_interval(estimate, variance, int(known.sum()))
    assert high - low > design_high - design_low
