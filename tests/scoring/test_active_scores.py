"""Per-system AIPW scores, their two intervals and pairwise differences (annotation.scoring.active), on a case
small enough to compute by hand, and the difference's design interval against a simulation."""

import math

import numpy as np
import pytest

from annotation.scoring import active
from annotation.scoring.intervals import Z95, wilson_interval

Z = Z95

# Two systems (A = 0, B = 1) on two examples: summaries s0 = A/e0, s1 = A/e1, s2 = B/e0, s3 = B/e1, one HIT of two
# units each (HIT h = summary s), all four decided in one draw of 2 with pi = (0.8, 0.2, 0.4, 0.6); h0 and h3 drawn.
# People said s0: (1, 0); s3: (tie, 1) -- the tie counts as the judge's f.
SMALL = dict(
    unit_summary=[0, 0, 1, 1, 2, 2, 3, 3],
    f=[0.9, 0.9, 0.8, 0.2, 0.4, 0.6, 0.1, 0.3],
    y=[1, 0, np.nan, np.nan, np.nan, np.nan, np.nan, 1],
    unit_hit=[0, 0, 1, 1, 2, 2, 3, 3],
    pi=[0.8, 0.2, 0.4, 0.6],
    sampled=[True, False, False, True],
    stratum=[1, 1, 1, 1],
)
SYSTEMS = [0, 0, 1, 1]
EXAMPLES = [0, 1, 0, 1]


def deville(expanded, pi):
    """Deville's estimator for one stratum, written out: n/(n-1) sum c (x - A)^2, c = 1 - pi, A = sum c x / sum c."""
    expanded, c = np.asarray(expanded), 1 - np.asarray(pi)
    centre = np.sum(c * expanded) / np.sum(c)
    n = len(expanded)
    return n / (n - 1) * np.sum(c * (expanded - centre) ** 2)


def test_pseudo_values_by_hand():
    pseudo = active.summary_pseudo_values(SMALL["unit_summary"], SMALL["f"], SMALL["y"], SMALL["unit_hit"], SMALL["pi"],
                                          SMALL["sampled"], 4)
    # s0: (0.9 + 0.9 + (1 - 0.9)/0.8 + (0 - 0.9)/0.8) / 2 = 0.4; s1, s2: the judge alone; s3: (0.1 + 0.3 + 0.7/0.6) / 2.
    assert pseudo == pytest.approx([0.4, 0.5, 0.5, (0.4 + 0.7 / 0.6) / 2])


def test_system_scores_and_both_intervals_by_hand():
    a, b = active.system_estimates(**SMALL, summary_system=SYSTEMS, summary_example=EXAMPLES, n_systems=2)
    s3 = (0.4 + 0.7 / 0.6) / 2
    assert a["score"] == pytest.approx((0.4 + 0.5) / 2)
    assert b["score"] == pytest.approx((0.5 + s3) / 2)
    # Design variance: w_u = 1/2 (summaries) x 1/2 (units); r_h0 = 0.25 (0.1 - 0.9) = -0.2 for A, r_h3 = 0.25 x 0.7 for
    # B; every drawn HIT of the draw counts (the other system's at 0).
    var_a = deville([-0.2 / 0.8, 0.0], [0.8, 0.6])
    var_b = deville([0.0, 0.175 / 0.6], [0.8, 0.6])
    assert var_a == pytest.approx(2 * (0.2 * (0.25 - 0.25 / 3) ** 2 + 0.4 * (0.25 / 3) ** 2))  # = 1/60
    assert a["variance"] == pytest.approx(var_a) and b["variance"] == pytest.approx(var_b)
    # The Wilson interval at the effective size 0.45 x 0.55 / var_a, written out (A rests on s0's 2 human labels).
    n = 0.45 * 0.55 / var_a
    k = Z**2 / n
    centre, half = (0.45 + k / 2) / (1 + k), Z * math.sqrt(0.45 * 0.55 / n + k / (4 * n)) / (1 + k)
    assert a["ci95"] == pytest.approx((centre - half, centre + half))
    assert a["labelled"] == 2 and b["labelled"] == 1
    # The example interval: the spread of the pseudo-values over the two examples, the same construction.
    assert a["ci95_examples"] == pytest.approx(wilson_interval(0.45, np.var([0.4, 0.5], ddof=1) / 2, 2))
    assert list(a["pseudo_values"]) == pytest.approx([0.4, 0.5])


def test_the_difference_comes_from_the_same_design_by_hand():
    d = active.difference_estimate(0, 1, **SMALL, summary_system=SYSTEMS, summary_example=EXAMPLES)
    s3 = (0.4 + 0.7 / 0.6) / 2
    assert d["difference"] == pytest.approx(0.45 - (0.5 + s3) / 2)
    # r^A - r^B on the drawn HITs h0, h3 of the one draw: not the sum of the two variances (the draw's fixed size ties them).
    var = deville([-0.2 / 0.8, -0.175 / 0.6], [0.8, 0.6])
    assert d["variance"] == pytest.approx(var)
    a, b = active.system_estimates(**SMALL, summary_system=SYSTEMS, summary_example=EXAMPLES, n_systems=2)
    assert d["variance"] < a["variance"] + b["variance"]
    # Paired by example: d_e0 = 0.4 - 0.5, d_e1 = 0.5 - s3.
    diffs = [0.4 - 0.5, 0.5 - s3]
    assert d["ci95_examples"] == pytest.approx(wilson_interval(np.mean(diffs), np.var(diffs, ddof=1) / 2, 1, -1.0, 1.0))
    # The design interval of the difference lies on [-1, 1] and holds the difference of the two scores.
    assert d["difference"] == pytest.approx(a["score"] - b["score"])
    assert -1 <= d["ci95"][0] <= d["difference"] <= d["ci95"][1] <= 1


def test_undecided_hits_count_as_the_judge_and_never_enter_the_variance():
    # h1 (s1) not decided yet: pi NaN, not sampled, no stratum; the score is the judge's there.
    data = dict(SMALL, pi=[0.8, np.nan, 0.4, 0.6], stratum=[1, np.nan, 1, 1])
    a, _ = active.system_estimates(**data, summary_system=SYSTEMS, summary_example=EXAMPLES, n_systems=2)
    assert a["score"] == pytest.approx(0.45) and np.isfinite(a["variance"])
    # Half of A's units (s1) await their draw: the interval holds whatever their labels turn out to be, so it
    # reaches at least their weight above the decided part's score (0.4 / 2) and is never a point.
    assert a["undecided"] == pytest.approx(0.5)
    low, high = a["ci95"]
    assert 0 <= low <= 0.2 and high >= 0.2 + 0.5 and high <= 1
    assert low <= a["score"] <= high


def test_the_difference_interval_covers_the_true_difference_in_simulation():
    # Two systems of 60 summaries (one per example), 2 HITs x 3 units each; a judge biased towards "present";
    # three draws of 25% each.  The design interval of A - B covers the full-human difference about 95% of the time.
    rng = np.random.default_rng(3)
    n_ex, hits_per, units_per = 60, 2, 3
    n_summaries = 2 * n_ex
    n_hits = n_summaries * hits_per
    unit_hit = np.repeat(np.arange(n_hits), units_per)
    unit_summary = unit_hit // hits_per
    summary_system = np.r_[np.zeros(n_ex, int), np.ones(n_ex, int)]
    summary_example = np.r_[np.arange(n_ex), np.arange(n_ex)]
    truth_p = rng.beta(2, 3, unit_hit.size) + 0.1 * (summary_system[unit_summary] == 0)
    y = (rng.random(unit_hit.size) < np.clip(truth_p, 0, 1)).astype(float)
    f = np.clip(truth_p + 0.2, 0.02, 0.98)
    stratum = rng.integers(1, 4, n_hits)
    u = np.bincount(unit_hit, weights=np.minimum(f, 1 - f), minlength=n_hits)
    sizes = np.bincount(unit_summary)
    truth = np.mean((np.bincount(unit_summary, weights=y) / sizes)[:n_ex]) - np.mean((np.bincount(unit_summary, weights=y) / sizes)[n_ex:])
    covered = 0
    trials = 400
    for seed in range(trials):
        pi = np.zeros(n_hits)
        sampled = np.zeros(n_hits, dtype=bool)
        for s in (1, 2, 3):
            rows = stratum == s
            p = active.inclusion_probabilities(np.where(rows, u, -np.inf), int(0.25 * rows.sum()), 0.5)
            pi[rows] = p[rows]
            sampled |= active.fixed_size_sample(p, seed=seed * 10 + s)
        d = active.difference_estimate(0, 1, unit_summary, f, y, unit_hit, pi, sampled, stratum, summary_system, summary_example)
        covered += d["ci95"][0] <= truth <= d["ci95"][1]
    assert 0.92 <= covered / trials <= 0.98
