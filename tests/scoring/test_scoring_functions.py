"""Hand-computed cases and invariants of the pure scoring functions."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from annotation.scoring import (
    bootstrap_alpha_ci,
    bootstrap_score_ci,
    calibrate_length_alpha,
    correlation,
    correlations_by_subgroup,
    krippendorff_alpha_nominal,
    length_penalty,
    majority_vote,
    nqapyramid,
    percent_agreement,
    predicate_level_scores,
    qapyramid_scores,
    repetition_penalty,
    repetition_rate,
    summary_level_correlation,
    system_level_correlation,
    system_scores,
)
from annotation.scoring.agreement import alpha_from_coincidences, coincidences, value_counts
from tests.conftest import SHARED_DATA


def test_majority_vote_with_each_tie_rule():
    # unit 0: 2 of 3 present; unit 1: 1 of 3; unit 2: a 2–2 tie; unit 3: a single judge; unit 4: none.
    units = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3]
    labels = [1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1]
    assert majority_vote(units, labels, n_units=5).tolist() == [1, 0, 0, 1, -1]
    assert majority_vote(units, labels, n_units=5, tie="present").tolist() == [1, 0, 1, 1, -1]
    assert majority_vote(units, labels, n_units=5, tie="exclude").tolist() == [1, 0, -1, 1, -1]
    with pytest.raises(ValueError):
        majority_vote(units, labels, tie="coin")
    with pytest.raises(ValueError, match="0 .* or 1"):
        majority_vote([0], [2])


def test_alpha_by_hand():
    # Three units, three judges: (1,1,1), (1,1,0), (0,0,0).
    # Coincidences: unit 1 gives o11 = 6/2 = 3; unit 2 gives o11 = 2/2 = 1, o10 = o01 = 2/2 = 1;
    # unit 3 gives o00 = 3.  So o = [[3, 1], [1, 4]], n0 = 4, n1 = 5, n = 9.
    # alpha = 1 - (n - 1) * (o01 + o10) / (2 * n0 * n1) = 1 - 8 * 2 / 40 = 0.6.
    units = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    labels = [1, 1, 1, 1, 1, 0, 0, 0, 0]
    assert krippendorff_alpha_nominal(units, labels) == pytest.approx(0.6)
    # Pairwise agreement: units 1 and 3 agree on all 6 ordered pairs, unit 2 on 2 of 6: 14 / 18.
    assert percent_agreement(units, labels) == pytest.approx(14 / 18)


def test_alpha_is_undefined_not_a_crash():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(krippendorff_alpha_nominal([0, 0, 1, 1], [1, 1, 1, 1]))  # all labels equal
        assert math.isnan(krippendorff_alpha_nominal([0, 1, 2], [1, 0, 1]))  # single judge per unit
        assert math.isnan(percent_agreement([0, 1], [1, 0]))
        assert all(math.isnan(x) for x in bootstrap_alpha_ci([0, 0], [1, 1], [0, 0], n_boot=20))


def test_fast_coincidence_alpha_matches_the_package():
    rng = np.random.default_rng(1)
    for _ in range(5):
        n_units = 300
        units = np.repeat(np.arange(n_units), rng.integers(1, 5, n_units))
        labels = rng.integers(0, 3, units.size)
        counts, _ = value_counts(units, labels)
        ours = float(alpha_from_coincidences(coincidences(counts).sum(axis=0)))
        assert ours == pytest.approx(krippendorff_alpha_nominal(units, labels), abs=1e-9)


def test_bootstrap_interval_contains_the_estimate():
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 2, 400)
    units = np.repeat(np.arange(400), 3)
    labels = np.where(rng.random(1200) < 0.85, truth[units], 1 - truth[units])
    groups = units // 8
    lo, hi = bootstrap_alpha_ci(units, labels, groups, n_boot=500, seed=1)
    alpha = krippendorff_alpha_nominal(units, labels)
    assert lo < alpha < hi and hi - lo < 0.2


def test_qapyramid_and_predicate_level_by_hand():
    # Summary 0: predicate A has 3 pairs (1 present), predicate B has 1 pair (present); summary 1: one tie left out.
    summaries = [0, 0, 0, 0, 1, 1]
    predicates = [0, 0, 0, 1, 0, 0]
    present = [1, 0, 0, 1, 1, -1]
    assert qapyramid_scores(summaries, present).tolist() == [0.5, 1.0]
    # Predicate level: summary 0 = (1/3 + 1) / 2.
    assert predicate_level_scores(summaries, predicates, present) == pytest.approx([2 / 3, 1.0])
    assert system_scores([0, 0, 1], [0.5, np.nan, 0.25]).tolist() == [0.5, 0.25]
    assert math.isnan(qapyramid_scores([0], [-1])[0])


def test_repetition_on_degenerate_text():
    assert repetition_rate("the cat sat" + " on the mat" * 6) == pytest.approx(15 / 21)
    assert repetition_rate("a b c d e f g") == 0.0
    assert repetition_rate("go go go") == 0.0
    assert repetition_rate("go go go end") == 0.0  # three times is not "more than 3 times"
    assert repetition_rate("go go go go") == pytest.approx(3 / 4)
    assert repetition_rate("") == 0.0
    long = " ".join(["the same words again"] * 500)  # 2,000 degenerate words stay fast
    assert repetition_rate(long) == pytest.approx(1996 / 2000)
    assert repetition_penalty(0.25) == pytest.approx(0.75)


def test_length_penalty_and_nqapyramid_by_hand():
    # Shorter than the reference: no penalty.  Twice as long with alpha 6: exp((1 - 2) / 6).
    assert length_penalty(20, 40, 1.0, 6) == 1.0
    assert length_penalty(80, 40, 1.0, 6) == pytest.approx(math.exp(-1 / 6))
    # Repetition shortens the effective length: 80 words with p_r = 0.5 are 40 effective words.
    assert length_penalty(80, 40, 0.5, 6) == 1.0
    assert nqapyramid(0.6, 80, 40, 1.0, 6) == pytest.approx(0.6 * math.exp(-1 / 6))
    with pytest.raises(ValueError):
        length_penalty(1, 1, 1, 0)


def test_calibration_picks_the_least_correlated_alpha():
    rng = np.random.default_rng(3)
    ref = np.full(200, 50.0)
    summary = rng.uniform(20, 150, 200)
    # Longer summaries recall more: QAPyramid grows with length; a strong penalty undoes it.
    qapyramid = np.clip(summary / 150 + rng.normal(0, 0.02, 200), 0, 1)
    best, r = calibrate_length_alpha(qapyramid, summary, ref, np.ones(200))
    assert set(r) == set(range(1, 11))
    assert best == min(r, key=lambda a: (abs(r[a]), a))
    assert abs(r[best]) < abs(r[10])


def test_correlations_by_hand():
    # Two examples x three systems.
    metric = [0.1, 0.2, 0.3, 0.3, 0.2, 0.1]
    gold = [0.1, 0.2, 0.3, 0.1, 0.2, 0.3]
    examples = [0, 0, 0, 1, 1, 1]
    systems = [0, 1, 2, 0, 1, 2]
    mean, n, undefined = summary_level_correlation(metric, gold, examples, systems, "kendall")
    assert (mean, n, undefined) == (0.0, 2, 0)  # +1 and -1
    assert math.isnan(system_level_correlation(metric, gold, systems))  # every system mean is 0.2: constant
    assert correlation([1, 2, 3, 4], [1, 3, 2, 4], "kendall") == pytest.approx(stats.kendalltau([1, 2, 3, 4], [1, 3, 2, 4]).statistic)
    assert correlation([1, 2, 3], [2, 4, 7], "pearson") == pytest.approx(stats.pearsonr([1, 2, 3], [2, 4, 7])[0])
    # The authors' rule: an example where all systems tie has an undefined tau that counts as 0 in
    # the mean over all examples (skipping it would give 1.0 here), and it is reported.
    mean, n, undefined = summary_level_correlation([0.1, 0.2, 0.5, 0.5], [0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], [0, 1, 0, 1])
    assert (mean, n, undefined) == (0.5, 2, 1)
    # Tied on the gold side, or a single scored summary, is undefined too; an example with no score at all is not counted.
    mean, n, undefined = summary_level_correlation(
        [0.1, 0.9, 0.3, 0.4, 0.7, 0.2, np.nan, np.nan], [0.5, 0.5, 0.1, 0.3, 0.2, np.nan, np.nan, 0.1],
        [0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1, 0, 1],
    )
    assert (mean, n, undefined) == (pytest.approx(1 / 3), 3, 2)
    groups = correlations_by_subgroup(metric, gold, examples, systems, {"pair": [0, 1]}, methods=("kendall",))
    assert set(groups) == {"all", "pair"} and groups["pair"]["kendall"]["summary"] == 0.0
    assert groups["all"]["kendall"]["n_undefined"] == 0 and groups["all"]["kendall"]["n_examples"] == 2


def test_bootstrap_score_interval():
    rng = np.random.default_rng(4)
    scores = np.concatenate([rng.uniform(0.2, 0.4, 100), rng.uniform(0.6, 0.8, 100)])
    systems = np.repeat([0, 1], 100)
    examples = np.tile(np.arange(100), 2)
    ci = bootstrap_score_ci(scores, examples, systems, n_boot=300)
    assert ci.shape == (2, 2)
    assert ci[0, 0] < scores[:100].mean() < ci[0, 1] < ci[1, 0] < scores[100:].mean() < ci[1, 1]


labels_strategy = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 1)), min_size=1, max_size=80)


@settings(max_examples=60, deadline=None)
@given(labels_strategy)
def test_majority_vote_is_invariant_under_permutation(rows):
    units, labels = np.array(rows).T
    order = np.random.default_rng(len(rows)).permutation(len(rows))
    assert (majority_vote(units, labels, 13) == majority_vote(units[order], labels[order], 13)).all()


@settings(max_examples=60, deadline=None)
@given(labels_strategy)
def test_alpha_at_most_one_and_interval_ordered(rows):
    units, labels = np.array(rows).T
    alpha = krippendorff_alpha_nominal(units, labels)
    assert math.isnan(alpha) or alpha <= 1 + 1e-12
    lo, hi = bootstrap_alpha_ci(units, labels, units // 3, n_boot=50)
    assert (math.isnan(lo) and math.isnan(hi)) or lo <= hi


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(-1, 1), min_size=1, max_size=40),
    st.integers(1, 400),
    st.integers(1, 200),
    st.floats(0, 0.99),
    st.integers(1, 10),
)
def test_scores_in_unit_interval_and_penalties_never_raise(present, s_len, r_len, rp, alpha):
    scores = qapyramid_scores(np.zeros(len(present), int), present)
    q = scores[0]
    assert math.isnan(q) or 0.0 <= q <= 1.0
    if not math.isnan(q):
        n = nqapyramid(q, s_len, r_len, repetition_penalty(rp), alpha)
        assert 0.0 <= n <= q + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=60))
def test_repetition_rate_in_unit_interval(words):
    rp = repetition_rate(words)
    assert 0.0 <= rp < 1.0


QA_PRESENCE = SHARED_DATA / "qapyramid" / "QA_presence.json"


@pytest.mark.skipif(not QA_PRESENCE.exists(), reason="shared QAPyramid raw judgments not present")
def test_pooled_alpha_of_the_released_judgments():
    data = json.loads(QA_PRESENCE.read_text())
    index, units, labels = {}, [], []
    for system, examples in data.items():
        for example, predicates in examples.items():
            for predicate, pairs in predicates.items():
                for key, judgments in pairs.items():
                    u = index.setdefault((system, example, predicate, key), len(index))
                    for _, label in judgments:
                        units.append(u)
                        labels.append(label)
    assert len(index) == 8910
    alpha = krippendorff_alpha_nominal(units, labels)
    assert 0.6 < alpha < 0.7  # the data gives about 0.65 (the paper's "average" 0.74 is another computation)
