"""Every pair of systems: the paired t-test over examples, the design test of the active rule, Holm's adjustment."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from annotation.scoring import pairs as pair_tests


def test_holm_by_hand():
    # m = 4 tested: sorted 0.01, 0.02, 0.03, 0.2 -> x4, x3, x2, x1 = 0.04, 0.06, 0.06 (running max), 0.2.
    adjusted = pair_tests.holm([0.03, 0.01, np.nan, 0.2, 0.02])
    assert adjusted[:2] == pytest.approx([0.06, 0.04]) and math.isnan(adjusted[2])
    assert adjusted[3:] == pytest.approx([0.2, 0.06])
    # Capped at 1, and a lone p-value is its own adjustment.
    assert pair_tests.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert pair_tests.holm([0.03]) == pytest.approx([0.03])
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        pair_tests.holm([1.2])


def test_paired_t_agrees_with_scipy():
    rng = np.random.default_rng(3)
    d = rng.normal(0.05, 0.2, size=40)
    mean, low, high, p = pair_tests.paired_t(d)
    assert mean == pytest.approx(d.mean())
    assert p == pytest.approx(stats.ttest_1samp(d, 0.0).pvalue)
    half = stats.t.ppf(0.975, 39) * d.std(ddof=1) / math.sqrt(40)
    assert (low, high) == pytest.approx((d.mean() - half, d.mean() + half))
    # Equal differences: a zero-width interval, p 1 at 0 and 0 elsewhere; fewer than two: no test.
    assert pair_tests.paired_t([0.0, 0.0, 0.0]) == (0.0, 0.0, 0.0, 1.0)
    assert pair_tests.paired_t([0.1, 0.1])[3] == 0.0
    assert math.isnan(pair_tests.paired_t([0.1, np.nan])[3])


def _scores(rng, means, n_examples=60, noise=0.1):
    """Per-example summary scores: an example difficulty shared by every system plus each system's own noise."""
    difficulty = rng.uniform(0.2, 0.8, size=(n_examples, 1))
    return np.clip(difficulty + np.asarray(means) + rng.normal(0, noise, size=(n_examples, len(means))), 0, 1)


def test_a_known_separated_pair_and_a_known_tied_pair():
    rng = np.random.default_rng(11)
    scores = _scores(rng, [0.15, 0.0, 0.0])
    # C is B give or take 0.05, up as often as down: a tie by construction.
    scores[:, 2] = scores[:, 1] + np.tile([0.05, -0.05], 30)
    result = pair_tests.paired_example_comparisons(["A", "B", "C"], scores)
    by_pair = {frozenset((p["higher"], p["lower"])): p for p in result}
    ab, bc = by_pair[frozenset("AB")], by_pair[frozenset("BC")]
    assert ab["higher"] == "A" and ab["separated"] and ab["ci95"][0] > 0 and ab["n_examples"] == 60
    assert ab["difference"] == pytest.approx(np.mean(scores[:, 0] - scores[:, 1]))
    assert not bc["separated"] and bc["ci95"][0] < 0 < bc["ci95"][1] and bc["difference"] == pytest.approx(0, abs=1e-12)
    assert bc["p_value"] == pytest.approx(1.0) and bc["p_holm"] == pytest.approx(1.0)
    # Oriented so that the difference is never negative; the interval turns with it.
    for p in result:
        assert p["difference"] >= 0 and p["ci95"][0] <= p["difference"] <= p["ci95"][1] and p["no_comparison"] is None


def test_the_adjustment_can_withhold_a_verdict_the_pair_alone_would_give():
    # Ten systems: 45 pairs.  One pair's own p-value is below 0.05 but not below 0.05 / 45: not separated.
    rng = np.random.default_rng(5)
    names = [f"s{i}" for i in range(10)]
    scores = _scores(rng, [0.0] * 10, n_examples=200, noise=0.05)
    result = pair_tests.paired_example_comparisons(names, scores)
    assert len(result) == 45 == len(names) * (len(names) - 1) // 2
    assert len({frozenset((p["higher"], p["lower"])) for p in result}) == 45
    raw = np.array([p["p_value"] for p in result])
    assert np.array([p["p_holm"] for p in result]) == pytest.approx(pair_tests.holm(raw))
    assert [p["separated"] for p in result] == [p["p_holm"] < 0.05 for p in result]
    # Make one pair nominally significant (0.001 < p < 0.05): its Holm p is at least 45 p_min, above 0.05.
    scores[:, 1] = scores[:, 0] - 0.02 + rng.normal(0, 0.06, size=200)
    result = pair_tests.paired_example_comparisons(names, scores)
    pair = next(p for p in result if {p["higher"], p["lower"]} == {"s0", "s1"})
    assert pair["p_value"] < 0.05 and pair["ci95"][0] > 0
    assert pair["p_holm"] >= min(1.0, 45 * min(p["p_value"] for p in result))
    if pair["p_value"] > 0.05 / 45:
        assert not pair["separated"]


def test_determinism_and_missing_examples():
    rng = np.random.default_rng(2)
    scores = _scores(rng, [0.1, 0.0, 0.05, 0.0], n_examples=30)
    scores[:5, 2] = np.nan
    first = pair_tests.paired_example_comparisons(list("ABCD"), scores)
    assert first == pair_tests.paired_example_comparisons(list("ABCD"), scores.copy())
    assert len(first) == 6
    ac = next(p for p in first if {p["higher"], p["lower"]} == {"A", "C"})
    assert ac["n_examples"] == 25
    # A system without any score, or fewer than two shared examples: no figures, the reason, out of the adjustment.
    scores[:, 3] = np.nan
    scores[1:, 2] = np.nan
    scores[0, 2] = 0.5
    result = pair_tests.paired_example_comparisons(list("ABCD"), scores)
    untested = {frozenset((p["higher"], p["lower"])): p["no_comparison"] for p in result if p["no_comparison"]}
    assert untested[frozenset("AD")] == pair_tests.NO_SCORE and untested[frozenset("AC")] == pair_tests.NO_SHARED_EXAMPLES
    for p in result:
        if p["no_comparison"]:
            assert p["difference"] is None and p["ci95"] == [None, None] and p["p_holm"] is None and p["separated"] is False
    ab = next(p for p in result if {p["higher"], p["lower"]} == {"A", "B"})
    assert ab["p_holm"] == pytest.approx(ab["p_value"])  # the only tested pair: m = 1


def test_design_comparisons_test_the_difference_against_its_design_variance():
    differences = [
        {"higher": "good", "lower": "fair", "difference": 0.2, "variance": 0.05 ** 2, "ci95": [0.102, 0.298],
         "ci95_examples": [0.05, 0.35]},
        {"higher": "fair", "lower": "poor", "difference": 0.05, "variance": 0.04 ** 2, "ci95": [-0.028, 0.128],
         "ci95_examples": [-0.1, 0.2]},
        {"higher": "good", "lower": "poor", "difference": 0.25, "variance": 0.0, "ci95": [0.25, 0.25],
         "ci95_examples": [0.1, 0.4]},
    ]
    result = pair_tests.design_comparisons(differences)
    assert result[0]["p_value"] == pytest.approx(2 * stats.norm.sf(0.2 / 0.05))
    assert result[1]["p_value"] == pytest.approx(2 * stats.norm.sf(0.05 / 0.04))
    # Two tested pairs: Holm doubles the smaller p, the larger keeps its own (or the running maximum).
    assert result[0]["p_holm"] == pytest.approx(2 * result[0]["p_value"]) and result[0]["separated"]
    assert result[1]["p_holm"] == pytest.approx(result[1]["p_value"]) and not result[1]["separated"]
    assert result[0]["ci95_examples"] == [0.05, 0.35]
    # A zero-width design interval rests on the judge alone: no verdict, the reason instead.
    assert result[2]["no_comparison"] == pair_tests.ZERO_WIDTH and result[2]["difference"] is None
    assert result[2]["separated"] is False and result[2]["ci95_examples"] == [0.1, 0.4]


def test_a_paired_interval_stays_on_the_differences_range():
    from annotation.scoring.pairs import paired_t

    # Differences near +1 with some spread: mean +- t * se would pass 1 on three examples.
    mean, low, high, p = paired_t([1.0, 1.0, 0.9])
    assert mean == pytest.approx(29 / 30)
    assert low < mean <= high == 1.0
    mean, low, high, p = paired_t([-1.0, -0.95, -1.0])
    assert low == -1.0 and low <= mean < high
