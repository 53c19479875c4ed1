"""Routing presence HITs between people and the judge: least-sure first, never over the share."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.scoring import routing


def test_budget_never_exceeds_the_share():
    for n in (0, 1, 3, 7, 10, 101, 7700):
        for share in np.linspace(0, 1, 41):
            budget = routing.hit_budget(n, float(share))
            assert 0 <= budget <= n
            assert budget <= share * n + 1e-9
            assert budget > share * n - 1 - 1e-9  # and wastes less than one HIT of it
    assert routing.hit_budget(10, 0.3) == 3  # 0.3 x 10 is 2.9999999999999996 in floating point
    with pytest.raises(ValueError):
        routing.hit_budget(10, 1.5)


def test_round_budgets_add_up():
    assert routing.round_budgets(10, 3) == [4, 3, 3]
    assert sum(routing.round_budgets(1925, 4)) == 1925
    assert routing.round_budgets(0, 2) == [0, 0]


def test_margin_picks_the_hit_with_a_unit_nearest_the_threshold():
    # HIT 0: all certain; HIT 1: one unit right on the threshold; HIT 2: fairly sure.
    p = [0.99, 0.01, 0.95, 0.41, 0.90, 0.10]
    hits = [0, 0, 1, 1, 2, 2]
    u = routing.hit_uncertainty(p, 0.4, hits, measure="margin")
    assert list(routing.least_sure(u, 1)) == [1]
    assert list(routing.least_sure(u, 2)) == [1, 2]


def test_margin_is_scaled_to_the_room_on_each_side_of_the_threshold():
    # Threshold 0.2: 0.1 below is halfway to certain-absent, 0.1 above is one eighth of the way to certain-present.
    margins = routing.unit_margins([0.1, 0.3], 0.2)
    assert margins == pytest.approx([0.5, 0.125])


def test_expected_errors_counts_every_unsure_unit():
    # HIT 0 has one coin flip; HIT 1 has three fairly unsure units: more wrong labels expected overall.
    p = [0.5, 0.99, 0.99, 0.3, 0.7, 0.3]
    hits = [0, 0, 0, 1, 1, 1]
    errors = routing.hit_uncertainty(p, 0.5, hits, measure="expected_errors")
    assert errors == pytest.approx([0.52, 0.9])
    assert list(routing.least_sure(errors, 1)) == [1]
    margin = routing.hit_uncertainty(p, 0.5, hits, measure="margin")
    assert list(routing.least_sure(margin, 1)) == [0]
    rate = routing.hit_uncertainty([0.4, 0.4, 0.45], 0.5, [0, 0, 1], measure="expected_error_rate")
    assert rate == pytest.approx([0.4, 0.45])


def test_least_sure_takes_exactly_the_most_uncertain_and_skips_what_was_routed():
    rng = np.random.default_rng(3)
    p = rng.random(400)
    hits = np.repeat(np.arange(100), 4)
    u = routing.hit_uncertainty(p, 0.5, hits, measure="expected_errors")
    chosen = routing.least_sure(u, 25)
    assert len(chosen) == 25 and len(set(chosen)) == 25
    assert u[chosen].min() >= np.sort(u)[-25]
    later = routing.least_sure(u, 25, exclude=chosen)
    assert not set(later) & set(chosen)
    assert u[later].max() <= u[chosen].min()
    # a budget larger than what is left gives what is left
    assert len(routing.least_sure(u, 500, exclude=chosen)) == 75


def test_hits_without_units_are_never_routed():
    u = routing.hit_uncertainty([0.5, 0.5], 0.5, [0, 2], n_hits=3)
    assert np.isneginf(u[1])
    assert sorted(routing.least_sure(u, 3)) == [0, 2]


def test_ties_are_broken_by_the_seed_not_by_position():
    u = np.zeros(50)
    first = {int(routing.least_sure(u, 1, seed=s)[0]) for s in range(30)}
    assert len(first) > 5
    assert list(routing.least_sure(u, 5, seed=7)) == list(routing.least_sure(u, 5, seed=7))


def test_random_choice_is_reproducible_and_within_budget():
    a = routing.random_choice(100, 25, seed=1)
    assert len(a) == 25 and len(set(a)) == 25
    assert list(a) == list(routing.random_choice(100, 25, seed=1))
    assert list(a) != list(routing.random_choice(100, 25, seed=2))
    b = routing.random_choice(100, 80, exclude=a, seed=1)
    assert len(b) == 75 and not set(a) & set(b)


def test_hybrid_labels_take_the_human_label_where_people_judged():
    merged = routing.hybrid_labels([1, 1, 0, 0], [0, 1, 1, 0], [True, False, True, False])
    assert list(merged) == [False, True, True, False]


def test_unknown_measure_is_refused():
    with pytest.raises(ValueError, match="unknown uncertainty measure"):
        routing.hit_uncertainty([0.5], 0.5, [0], measure="vibes")


def test_expected_score_error_weighs_errors_by_the_summary_size():
    # Same unsure unit; HIT 0's summary has 2 units, HIT 1's has 10: correcting HIT 0 moves its score more.
    u = routing.hit_uncertainty([0.5, 0.5], 0.5, [0, 1], measure="expected_score_error", summary_sizes=[2, 10])
    assert u == pytest.approx([0.25, 0.05])
    with pytest.raises(ValueError):
        routing.hit_uncertainty([0.5], 0.5, [0], measure="expected_score_error")


def test_unit_prior_reads_only_other_human_labelled_rows_of_the_same_unit():
    units = [0, 0, 0, 1, 1]
    labels = [1, 0, 1, 1, 0]
    observed = [True, True, False, False, True]
    share, seen = routing.unit_prior(units, labels, observed)
    assert list(seen) == [1, 1, 2, 1, 0]
    assert share[0] == 0.0 and share[1] == 1.0 and share[2] == 0.5  # never its own label
    assert share[3] == 0.0 and np.isnan(share[4])
