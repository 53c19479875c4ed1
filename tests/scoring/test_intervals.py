"""Intervals that respect the scale (issue 49): every interval of a score lies in [0, 1] (a difference's in [-1, 1]),
holds its score, has width while anything is unknown, and covers what it claims where a plain normal interval
clipped to [0, 1] does not (a proportion near 0 from few observations)."""

import math

import numpy as np
import pytest

from annotation.scoring import active
from annotation.scoring.correlation import bootstrap_score_ci
from annotation.scoring.intervals import Z95, wilson_interval


def design(y, f, pi, sampled, stratum=None, units_per_hit=2, systems=None):
    """A campaign of one HIT per summary (``units_per_hit`` units each), one example per summary of a system."""
    y, f = np.asarray(y, dtype=float), np.asarray(f, dtype=float)
    n_hits = len(pi)
    unit_hit = np.repeat(np.arange(n_hits), units_per_hit)
    systems = np.zeros(n_hits, int) if systems is None else np.asarray(systems)
    examples = np.array([np.sum(systems[:h] == systems[h]) for h in range(n_hits)])
    stratum = np.ones(n_hits) if stratum is None else np.asarray(stratum, dtype=float)
    return active.Design(unit_hit, f, y, unit_hit, np.asarray(pi, dtype=float), np.asarray(sampled, bool), stratum,
                         systems, examples)


def check(estimate, score_key="score", lower=0.0, upper=1.0, examples=2):
    """The interval lies in the range, holds the score and is not a point (the example interval needs two
    examples: with one it is NaN)."""
    for key in ("ci95", "ci95_examples"):
        low, high = estimate[key]
        if key == "ci95_examples" and examples < 2:
            assert math.isnan(low) and math.isnan(high)
            continue
        assert lower <= low <= estimate[score_key] <= high <= upper, (key, low, estimate[score_key], high)
        assert high - low > 0, key


@pytest.mark.parametrize("case", ["all present", "none present", "judge certain and right", "tiny"])
def test_system_intervals_stay_in_0_1_hold_the_score_and_have_width_at_the_extremes(case):
    n = 6
    pi, sampled = [0.5] * n, [True, True, False, True, True, False]
    if case == "all present":  # every label 1 where the judge said 0.9: corrections push the estimate past 1
        y, f = [1.0] * 2 * n, [0.9] * 2 * n
    elif case == "none present":  # every label 0 where the judge said 0.2: the estimate falls below 0
        y, f = [0.0] * 2 * n, [0.2] * 2 * n
    elif case == "judge certain and right":  # every residual 0: the design variance is 0
        y, f = [0.0] * 2 * n, [0.0] * 2 * n
    else:  # two HITs, one drawn, one unit labelled
        pi, sampled, y, f = [0.5, 0.5], [True, False], [1.0, np.nan, 0.0, 0.0], [0.3] * 4
    estimate = design(y, f, pi, sampled).system_estimate(0)
    if case in ("all present", "none present"):
        assert not 0 <= estimate["estimate"] <= 1  # the AIPW estimate as computed leaves the scale ...
        assert estimate["score"] == (1.0 if case == "all present" else 0.0)  # ... the reported score does not
    check(estimate)


def test_a_system_no_person_judged_has_no_interval_and_says_why():
    # Its only drawn HIT is still with people (no label), the others were not drawn: the score is the judge's alone.
    d = design([np.nan] * 4 + [1.0, 0.0], [0.6] * 6, [0.5, 0.5, 0.5], [True, False, True], systems=[0, 0, 1])
    fair = d.system_estimate(0)
    assert fair["score"] == pytest.approx(0.6)
    assert all(math.isnan(v) for v in (*fair["ci95"], *fair["ci95_examples"]))
    assert fair["no_interval_reason"] == active.NO_LABEL_REASON and fair["labelled"] == 0
    pair = d.difference(1, 0)
    assert all(math.isnan(v) for v in pair["ci95"]) and pair["no_interval_reason"] == active.NO_PAIR_LABEL_REASON
    assert d.system_estimate(1)["no_interval_reason"] is None


def test_undecided_units_widen_the_interval_instead_of_counting_as_known():
    # Four HITs decided and two drawn; two more HITs no draw has reached yet (stratum NaN).
    y = [1, 0, np.nan, np.nan, 1, 1, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan]
    f = [0.7] * 12
    pi = [0.5, 0.5, 0.5, 0.5, np.nan, np.nan]
    sampled = [True, False, True, False, False, False]
    stratum = [1, 1, 1, 1, np.nan, np.nan]
    estimate = design(y, f, pi, sampled, stratum=stratum).system_estimate(0)
    assert estimate["undecided"] == pytest.approx(1 / 3)
    check(estimate)
    # Whatever the undecided third turns out to be (all absent ... all present), the interval allows it.
    decided = design(y[:8], f[:8], pi[:4], sampled[:4]).system_estimate(0)
    assert estimate["ci95"][0] <= 2 / 3 * decided["ci95"][0] + 1e-12
    assert estimate["ci95"][1] >= 2 / 3 * decided["ci95"][1] + 1 / 3 - 1e-12


def test_random_designs_every_interval_in_range_around_its_score():
    rng = np.random.default_rng(49)
    for trial in range(150):
        n = int(rng.integers(2, 12))
        units = int(rng.integers(1, 4))
        truth = rng.random() ** 3  # often near 0
        y = (rng.random(n * units) < truth).astype(float)
        f = np.clip(truth + rng.normal(0, 0.3, n * units), 0, 1)
        pi = rng.uniform(0.1, 1.0, n)
        sampled = rng.random(n) < pi
        sampled[0] = True
        y[rng.random(n * units) < 0.1] = np.nan  # a tie here and there
        y[:units] = rng.integers(0, 2, units)  # the first HIT's labels are in
        systems = rng.integers(0, 2, n)
        systems[:2] = [0, 1]
        d = design(y, f, pi, sampled, units_per_hit=units, systems=systems)
        for k in (0, 1):
            e = d.system_estimate(k)
            if e["no_interval_reason"] is None:
                check(e, examples=int(np.sum(systems == k)))
        pair = d.difference(0, 1)
        if pair["no_interval_reason"] is None:
            check(pair, "difference", -1.0, 1.0, examples=int(min(np.sum(systems == 0), np.sum(systems == 1))))


def test_the_gold_bootstrap_interval_holds_the_mean_and_has_width_at_the_extremes():
    # System 0 scores 1 everywhere, system 1 is one example only, system 2 scores 0 but on one summary of five.
    scores = [1.0, 1.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, np.nan]
    examples = [0, 1, 2, 0, 0, 1, 2, 3, 4]
    systems = [0, 0, 0, 1, 2, 2, 2, 2, 2]
    ci = bootstrap_score_ci(scores, examples, systems, n_boot=200, seed=1)
    means = [1.0, 0.5, 0.0]
    for (low, high), mean in zip(ci, means):
        assert 0 <= low <= mean <= high <= 1 and high - low > 0
    # Three examples that all score 1 cannot pin the mean at 1: Wilson's 3 out of 3.
    assert ci[0] == pytest.approx(wilson_interval(1.0, 0.0, 3))
    # The same seed gives the same interval.
    assert np.array_equal(ci, bootstrap_score_ci(scores, examples, systems, n_boot=200, seed=1))


def test_wilson_interval_refuses_an_empty_range_and_gives_none_without_information():
    with pytest.raises(ValueError, match="lower < upper"):
        wilson_interval(0.5, 0.01, 10, 1.0, 1.0)
    assert all(math.isnan(v) for v in wilson_interval(0.5, 0.0, 0))
    assert all(math.isnan(v) for v in wilson_interval(float("nan"), 0.01, 10))


def clipped_wald(estimate, variance):
    half = Z95 * math.sqrt(max(variance, 0.0))
    return max(0.0, estimate - half), min(1.0, estimate + half)


def test_coverage_of_a_rare_proportion_from_few_observations():
    # 20 observations of a share between 0.01 and 0.15: the interval holds the truth about 95% of the time;
    # estimate +- 1.96 sd clipped to [0, 1] collapses to [0, 0] whenever nothing is seen and holds it ~60%.
    rng = np.random.default_rng(7)
    n, trials = 20, 4000
    p = rng.uniform(0.01, 0.15, trials)
    x = rng.binomial(n, p)
    covered = wald = 0
    for truth, seen in zip(p, x):
        share = seen / n
        low, high = wilson_interval(share, share * (1 - share) / n, n)
        covered += low <= truth <= high
        low, high = clipped_wald(share, share * (1 - share) / n)
        wald += low <= truth <= high
    assert 0.93 <= covered / trials <= 0.99
    assert wald / trials < 0.8  # what this test would say of the plain construction


def test_coverage_of_the_design_interval_for_a_rare_presence_and_a_small_design():
    # One system of 30 summaries (2 HITs x 4 units each), presence about 1%, a judge a little high; two draws of
    # 15% each.  The design interval covers the full-human score at least 93% of 400 draws; the clipped normal
    # interval, often [0, 0] or nearly, does not.
    rng = np.random.default_rng(11)
    n_summaries, hits_per, units = 30, 2, 4
    n_hits = n_summaries * hits_per
    hit = np.repeat(np.arange(n_hits), units)
    truth_p = rng.beta(0.2, 10, size=hit.size)
    y = (rng.random(hit.size) < truth_p).astype(float)
    f = np.clip(truth_p + 0.02, 0.01, 0.99)
    truth = y.mean()
    u = np.bincount(hit, weights=np.minimum(f, 1 - f), minlength=n_hits)
    covered = wald = 0
    trials = 400
    for seed in range(trials):
        stratum = np.random.default_rng(seed).integers(0, 2, size=n_hits)
        pi = np.zeros(n_hits)
        sampled = np.zeros(n_hits, dtype=bool)
        for s in range(2):
            rows = stratum == s
            p = active.inclusion_probabilities(np.where(rows, u, -np.inf), int(0.15 * rows.sum()), 0.5)
            pi[rows] = p[rows]
            sampled |= active.fixed_size_sample(p, seed=seed * 10 + s)
        d = active.Design(hit // hits_per, f, y, hit, pi, sampled, stratum, np.zeros(n_summaries, int), np.arange(n_summaries))
        e = d.system_estimate(0)
        low, high = e["ci95"]
        covered += low <= truth <= high
        low, high = clipped_wald(e["estimate"], e["variance"])
        wald += low <= truth <= high
    assert covered / trials >= 0.93
    assert wald / trials < 0.8


def test_an_estimate_past_the_bound_keeps_the_reach_its_noise_gives():
    # An AIPW estimate of -0.034 with sd 0.072 (PyrXSum at 10%): reported at 0; 200 labels alone would say
    # [0, 0.019], but the estimate's own noise reaches 0.107.
    low, high = wilson_interval(-0.034, 0.072**2, 200)
    assert low == 0 and high == pytest.approx(-0.034 + Z95 * 0.072)
    # Past 1 with sd 0.03: reported at 1, reaching down at least as far as the plain interval (0.991) and as far as
    # 200 labels all present allow (0.981).
    low, high = wilson_interval(1.05, 0.03**2, 200)
    assert high == 1 and low == pytest.approx(min(wilson_interval(1.0, 0.0, 200)[0], 1.05 - Z95 * 0.03))
    assert low < 1.05 - Z95 * 0.03


def test_rounding_noise_in_a_variance_gives_no_point_interval():
    # Every example of a system scores 1/3: the bootstrap's replicate means differ only in their last bits.

    low, high = bootstrap_score_ci([1 / 3] * 6, list(range(6)), [0] * 6, n_boot=200, seed=3)[0]
    assert low < 1 / 3 < high and high - low > 0.1  # the width six examples allow, not [0.33333333333333, 0.33333333333334]
    assert (low, high) == pytest.approx(wilson_interval(1 / 3, 0.0, 6))
