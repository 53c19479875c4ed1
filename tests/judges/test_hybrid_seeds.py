"""``evaluate_hybrid --seeds``: one run per seed on features computed once, every figure as the median and the
range over the seeds, each seed's run kept whole; the combined cost of routing with the adaptive third judge."""

from __future__ import annotations

import json
import re
import statistics

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from tests.judges.test_hybrid_campaign import write_folder

pytestmark = pytest.mark.django_db


def _run(capsys, **options) -> dict:
    call_command("evaluate_hybrid", format="json", **options)
    return json.loads(capsys.readouterr().out)


def _figure_paths(result: dict):
    """(label, getter) of figures a reader of the table looks at: routed, random, a measure, the curve, zero-shot."""
    yield "routed r", lambda r: r["summary_pearson"]
    yield "routed r by probability", lambda r: r["summary_pearson_probability"]
    yield "routed accuracy", lambda r: r["accuracy"]
    yield "routed system tau", lambda r: r["system_kendall"]
    yield "random r", lambda r: r["random"]["summary_pearson"]
    yield "random accuracy", lambda r: r["random"]["accuracy"]
    yield "margin measure r", lambda r: r["measures"]["margin"]["summary_pearson"]
    for i in range(len(result["curve"])):
        yield f"curve {i} random r", lambda r, i=i: r["curve"][i]["random"]["summary_pearson"]
        yield f"curve {i} routed accuracy", lambda r, i=i: r["curve"][i]["routed"]["accuracy"]
    yield "zero-shot r", lambda r: r["zero_shot"]["summary_pearson"]
    yield "zero-shot random r", lambda r: r["zero_shot"]["random"]["summary_pearson"]


def test_seeds_give_each_run_and_the_median_and_range_of_every_figure(tmp_path, capsys):
    folder = write_folder(tmp_path / "data", n_examples=10)
    other = write_folder(tmp_path / "other", n_examples=6, seed=9)
    common = dict(folder=str(folder), folds=5, human_share=0.25, judge="lexical", curve=True, test_folder=str(other))
    result = _run(capsys, seeds="0,1,2", **common)
    single = _run(capsys, seed=1, **common)

    assert [run["seed"] for run in result["seeds"]] == [0, 1, 2]
    for run in result["seeds"]:
        assert set(run) == set(single)  # exactly the keys of a single run
    seed_one = {k: v for k, v in result["seeds"][1].items() if k != "seconds"}
    assert seed_one == {k: v for k, v in single.items() if k != "seconds"}  # the same run as --seed 1 alone
    # The top level keeps a single run's keys for existing consumers; per-system estimates are each seed's own (in
    # ``seeds``), pooled over the seeds into ``summary``.
    assert set(single) - {"estimates"} <= set(result)
    assert set(result["summary"]) == {"active", "uncertainty"} and result["summary"]["active"]["seeds"] == 3
    assert result["seed"] is None

    differing = 0
    for label, get in _figure_paths(result):
        values = [get(run) for run in result["seeds"]]
        assert get(result) == pytest.approx(statistics.median(values), abs=1e-6), label
        assert get(result["ranges"]) == [min(values), max(values)], label
        differing += min(values) != max(values)
    assert differing >= 3  # the seeds really differ (random baseline, tie breaks): the medians mean something
    assert result["ranges"]["human_hits"] == [20, 20]
    assert "seed" not in result["ranges"] and "seconds" not in result["ranges"]


def test_seeds_table_shows_median_and_range(tmp_path, capsys):
    folder = write_folder(tmp_path / "data", n_examples=10)
    call_command("evaluate_hybrid", folder=str(folder), folds=5, judge="lexical", seeds="0,1,2", format="table")
    out = capsys.readouterr()
    result_lines = out.out.splitlines()
    routed = next(line for line in result_lines if line.startswith("routed"))
    random_row = next(line for line in result_lines if line.startswith("random"))
    assert "combined_cost_share" in result_lines[0] and "summary_pearson_probability" in result_lines[0]
    # Every cell: median (min-max); the combined cost at 25% with the adaptive rule's 2.278 of 3 judges.
    cell = re.compile(r"\d\.\d{3} \(\d\.\d{3}-\d\.\d{3}\)")
    assert len(cell.findall(routed)) == 7 and "0.190 (0.190-0.190)" in routed
    assert len(cell.findall(random_row)) == 7
    assert "medians (min-max) over 3 seeds: 0, 1, 2" in out.out
    assert out.err.count("done: summary r") == 3  # progress per seed


def test_combined_cost_is_routed_share_times_the_adaptive_rules_assignments(tmp_path, capsys):
    folder = write_folder(tmp_path / "data", n_examples=10)
    result = _run(capsys, folder=str(folder), folds=5, human_share=0.25, judge="lexical")
    assert result["human_hits"] == 20 and result["presence_hits"] == 80
    assert result["third_judge_rate"] == 0.278
    assert result["combined_cost_share"] == round(0.25 * 2.278 / 3, 4) == 0.1898  # ~19% of the paper's assignments
    assert result["random"]["combined_cost_share"] == 0.1898
    fixed = _run(capsys, folder=str(folder), folds=5, human_share=0.25, judge="lexical", third_judge_rate=1.0)
    assert fixed["combined_cost_share"] == 0.25  # a third judge everywhere: the routed share itself
    assert fixed["summary_pearson"] == result["summary_pearson"]  # the rate changes the cost, not the figures


def test_one_seed_keeps_the_single_run_output(tmp_path, capsys):
    from annotation.automation.judges.datasets import dataset_from_folder
    from annotation.automation.judges.hybrid import evaluate_hybrid

    folder = write_folder(tmp_path / "data", n_examples=10)
    result = _run(capsys, folder=str(folder), folds=5, judge="lexical", seed=2)
    assert "seeds" not in result and "ranges" not in result and result["seed"] == 2
    direct = evaluate_hybrid(dataset_from_folder(folder), folds=5, judge="lexical", seed=2)
    assert {k: v for k, v in result.items() if k != "seconds"} == {k: v for k, v in direct.items() if k != "seconds"}
    default = _run(capsys, folder=str(folder), folds=5, judge="lexical")
    assert default["seed"] == 0 and "seeds" not in default


def test_pair_features_are_computed_once_for_all_seeds(tmp_path, capsys, monkeypatch):
    from annotation.automation.judges import hybrid

    calls = []

    def fake_features(data):  # what the encoder would give, cheaply: a noisy view of the label
        calls.append(len(data))
        labels = np.asarray(data.labels, dtype=float)
        rng = np.random.default_rng(len(data))
        return np.column_stack([labels + rng.normal(0, 0.8, len(labels)), rng.normal(size=len(labels))])

    monkeypatch.setattr(hybrid, "_pair_features", fake_features)
    folder = write_folder(tmp_path / "data", n_examples=10)
    other = write_folder(tmp_path / "other", n_examples=6, seed=9)
    result = _run(capsys, folder=str(folder), folds=5, judge="features", rounds=2, seeds="3,5", test_folder=str(other))
    assert len(calls) == 2  # REALSumm-like folder once, the test folder once, not once per seed
    assert [run["seed"] for run in result["seeds"]] == [3, 5]
    assert "zero_shot" in result["seeds"][0] and "zero_shot" in result


@pytest.mark.parametrize(("options", "message"), [
    ({"seeds": "a,b"}, r"item 1 \('a'\) is not a whole number"),
    ({"seeds": ""}, "--seeds is empty"),
    ({"seeds": " , "}, "--seeds is empty"),
    ({"seeds": "0,,1"}, "item 2 is empty"),
    ({"seeds": "0,-1"}, r"item 2 \(-1\) is negative"),
    ({"seeds": "0,1,0"}, "seed 0 is given twice"),
    ({"seeds": "0,1", "seed": 3}, "not both"),
    ({"seed": -2}, "negative"),
    ({"third_judge_rate": 1.5}, "--third-judge-rate must be between 0 and 1"),
])
def test_bad_seeds_are_refused_clearly(tmp_path, options, message):
    folder = write_folder(tmp_path / "data")
    with pytest.raises(CommandError, match=message):
        call_command("evaluate_hybrid", folder=str(folder), judge="lexical", **options)
