"""The autoscore worker: runs, chunks, resumption after a crash, the cache, and the gold comparison."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.automation.judges import registry
from annotation.automation.judges.base import JudgeError, PresenceJudge
from annotation.automation.judges.cache import cached_predict
from annotation.automation.judges.comparison import presence_agreement
from annotation.models import (
    AutoPresence,
    AutoscoreChunk,
    AutoscoreRun,
    AutoSummaryScore,
    GeneratedUnit,
    JudgeCacheEntry,
)
from annotation.automation import autoscore
from annotation.automation.autoscore import compare_judges, resume_autoscore_run, run_chunk, start_autoscore_run

pytestmark = pytest.mark.django_db


class ListJudge(PresenceJudge):
    """Present iff the unit text is in ``present``; counts the pairs it is asked about."""

    name = "listed"

    def __init__(self, present, version="listed-1"):
        self.present = set(present)
        self.version = version
        self.asked = 0

    def predict(self, pairs):
        self.asked += len(pairs)
        return np.array([1.0 if p.unit in self.present else 0.0 for p in pairs])


class GoldLikeJudge(PresenceJudge):
    """Reproduces the fixture's gold labels (by summary text) but misses "Hundreds of flights..." in "poor"."""

    name = "goldlike"
    version = "goldlike-1"

    def predict(self, pairs):
        from annotation.text.predicates import strip_sentence_tags
        from tests.judges.conftest import SUMMARIES, UNITS, _labels

        table = {}
        for system, lines in SUMMARIES.items():
            for example, line in enumerate(lines):
                for unit, label in zip(UNITS[example], _labels(system)[example]):
                    table[(strip_sentence_tags(line)[0], unit)] = label
        table[(strip_sentence_tags(SUMMARIES["poor"][1])[0], "Hundreds of flights were cancelled")] = 0
        return np.array([float(table[(p.summary, p.unit)]) for p in pairs])


@pytest.fixture
def goldlike():
    registry.register("goldlike")(lambda argument, **options: GoldLikeJudge())
    registry.forget_judges()
    yield
    registry._FACTORIES.pop("goldlike", None)
    registry.forget_judges()


@pytest.fixture
def small_chunks(settings):
    settings.AUTOSCORE_CHUNK_SIZE = 2


def test_a_run_scores_every_unit_of_every_summary_once_and_compares_with_gold(
    gold_campaign, goldlike, small_chunks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "goldlike")
    run.refresh_from_db()
    assert run.state == "finished" and run.n_chunks == 5 and run.n_done == 5  # 9 summaries in chunks of 2
    assert AutoPresence.objects.filter(run=run).count() == 27  # 3 systems x (4 + 3 + 2) units
    assert run.judge_version == "goldlike-1"
    presence = run.results["presence"]
    # Hand count: 13 gold-present pairs, the judge misses one: TP 12, FN 1, FP 0, TN 14.
    assert (presence["tp"], presence["fn"], presence["fp"], presence["tn"]) == (12, 1, 0, 14)
    assert presence["accuracy"] == pytest.approx(26 / 27, abs=1e-6)
    assert presence["f1_present"] == pytest.approx(24 / 25, abs=1e-6)
    tau = run.results["correlation"]["all"]["kendall"]
    assert tau["system"] == pytest.approx(1.0)
    # Example 1: gold (good, fair, poor) = (1, 1/3, 1/3), judge (1, 1/3, 0): tau-b = 2/sqrt(6); others 1.
    assert tau["summary"] == pytest.approx((2 + 2 / math.sqrt(6)) / 3, abs=1e-5)
    scores = {s["system"]: s for s in run.results["system_scores"]}
    assert scores["poor"]["gold"] == pytest.approx(1 / 9, abs=1e-6) and scores["poor"]["auto"] == 0.0
    assert set(run.results["rouge"]) == {"rouge1", "rouge2", "rougeL"}


def test_a_redelivered_chunk_adds_nothing(gold_campaign, goldlike, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "goldlike")
    chunk = run.chunks.get()
    assert run_chunk(chunk.pk) == {"chunk": 0, "skipped": True}
    assert AutoPresence.objects.filter(run=run).count() == 27
    assert AutoSummaryScore.objects.filter(run=run).count() == 9


def test_a_chunk_that_crashes_before_commit_leaves_nothing_and_resumes_cleanly(
    gold_campaign, goldlike, small_chunks, monkeypatch, django_capture_on_commit_callbacks
):
    original = AutoSummaryScore.objects.bulk_create
    crashes = {"left": 1}

    def crash_once(*args, **kwargs):
        if crashes["left"]:
            crashes["left"] -= 1
            raise RuntimeError("worker lost mid-write")
        return original(*args, **kwargs)

    monkeypatch.setattr(AutoSummaryScore.objects, "bulk_create", crash_once)
    run = start_autoscore_run(gold_campaign, "goldlike")
    first = run.chunks.order_by("index").first()
    with pytest.raises(RuntimeError):
        run_chunk(first.pk)
    first.refresh_from_db()
    assert not first.done and first.attempts == 1
    assert not AutoPresence.objects.filter(run=run).exists()  # the half-written chunk was rolled back
    with django_capture_on_commit_callbacks(execute=True):
        assert resume_autoscore_run(run) == run.n_chunks
    run.refresh_from_db()
    assert run.state == "finished" and run.n_done == run.n_chunks
    assert AutoPresence.objects.filter(run=run).count() == 27
    assert AutoscoreChunk.objects.get(pk=first.pk).attempts == 2


def test_bad_requests_are_refused_and_create_nothing(gold_campaign, other_researcher):
    from annotation.models import Campaign, System

    other = Campaign.objects.create(name="Other", slug="other")
    foreign = System.objects.create(campaign=other, name="alien")
    with pytest.raises(JudgeError, match="unknown judge"):
        start_autoscore_run(gold_campaign, "oracle")
    with pytest.raises(ValueError, match="alien"):
        start_autoscore_run(gold_campaign, "lexical", systems=[foreign])
    with pytest.raises(ValueError, match="nobody"):
        start_autoscore_run(gold_campaign, "lexical", systems=["nobody"])
    with pytest.raises(JudgeError, match="train_presence_judge"):
        start_autoscore_run(gold_campaign, "trained:never-trained")
    with pytest.raises(ValueError, match="no system summaries"):
        start_autoscore_run(other, "lexical")
    assert not AutoscoreRun.objects.exists()


def test_scoring_one_system_only(gold_campaign, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "lexical", systems=["good"])
    run.refresh_from_db()
    assert run.state == "finished"
    assert set(AutoSummaryScore.objects.filter(run=run).values_list("summary__system__name", flat=True)) == {"good"}
    assert AutoPresence.objects.filter(run=run).count() == 9


def test_the_cache_answers_repeated_pairs_without_asking_the_judge(gold_campaign):
    from annotation.automation.judges.base import PresencePair

    judge = ListJudge({"b"})
    pairs = [PresencePair("s", "a"), PresencePair("s", "b"), PresencePair("s", "a")]
    probabilities, cached = cached_predict(judge, pairs)
    assert probabilities.tolist() == [0.0, 1.0, 0.0] and cached == 0
    assert judge.asked == 2  # the repeated pair was asked once
    probabilities, cached = cached_predict(judge, pairs)
    assert probabilities.tolist() == [0.0, 1.0, 0.0] and cached == 3 and judge.asked == 2
    newer = ListJudge({"a"}, version="listed-2")  # another version never reuses the old answers
    assert cached_predict(newer, pairs)[0].tolist() == [1.0, 0.0, 1.0]
    assert JudgeCacheEntry.objects.count() == 4


def test_a_second_run_is_served_from_the_cache(gold_campaign, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        start_autoscore_run(gold_campaign, "lexical")
        second = start_autoscore_run(gold_campaign, "lexical")
    second.refresh_from_db()
    assert second.timings["cached_pairs"] == second.timings["pairs"] == 27


def test_auto_qapyramid_generates_units_once_per_example(gold_campaign, small_chunks, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "lexical", generate_qas=True)
    run.refresh_from_db()
    assert run.state == "finished"
    generated = GeneratedUnit.objects.filter(run=run)
    questions = set(generated.values_list("question", flat=True))
    assert "Who opened something?" in questions and "What did something close?" in questions
    per_example = {e: generated.filter(example_id=e).count() for e in generated.values_list("example_id", flat=True)}
    assert AutoPresence.objects.filter(run=run).count() == 3 * sum(per_example.values())
    assert not AutoPresence.objects.filter(run=run, unit__isnull=False).exists()
    chunk = run.chunks.first()
    AutoscoreChunk.objects.filter(pk=chunk.pk).update(done=False)
    run_chunk(chunk.pk)  # done again: the same generated units, no new ones
    assert GeneratedUnit.objects.filter(run=run).count() == sum(per_example.values())


def test_presence_agreement_by_hand():
    result = presence_agreement([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert (result["tp"], result["fp"], result["fn"], result["tn"]) == (2, 1, 1, 1)
    assert result["accuracy"] == pytest.approx(3 / 5)
    assert result["f1_present"] == pytest.approx(4 / 6)


@pytest.mark.django_db(transaction=True)  # the command waits for the chunks queued on commit
def test_commands_run_and_compare(gold_campaign, goldlike, capsys):
    call_command("autoscore", "--campaign", gold_campaign.slug, "--judge", "goldlike")
    out = capsys.readouterr()
    assert "chunks 1/1 (100%) finished" in out.err
    assert "accuracy 0.963, F1 of 'present' 0.960" in out.out
    call_command("compare_judges", "--campaign", gold_campaign.slug)
    table = capsys.readouterr().out
    assert "F1 pres" in table and "micro" not in table.split("\n")[0].lower()
    assert "0/3" in table  # no example of the goldlike run is undefined
    call_command("compare_judges", "--campaign", gold_campaign.slug, "--format", "json", "--subgroup", "top=good,fair")
    result = json.loads(capsys.readouterr().out)
    (entry,) = result["runs"]
    assert entry["judge"] == "goldlike" and entry["mode"] == "SemiAutoQAPyramid"
    assert entry["correlation"]["top"]["kendall"]["system"] == pytest.approx(1.0)
    assert entry["presence"]["accuracy"] == pytest.approx(26 / 27, abs=1e-6)
    assert result["rouge"]["rouge1"]["all"]["kendall"]["system"] is not None
    with pytest.raises(CommandError, match="nobody"):
        call_command("compare_judges", "--campaign", gold_campaign.slug, "--subgroup", "x=nobody")
    with pytest.raises(CommandError, match="unknown judge"):
        call_command("autoscore", "--campaign", gold_campaign.slug, "--judge", "oracle")
    with pytest.raises(CommandError, match="no campaign"):
        call_command("compare_judges", "--campaign", "missing")


def test_the_judge_is_loaded_once_per_process():
    registry.forget_judges()
    assert registry.get_judge("rouge2") is registry.get_judge("rouge2")
    with pytest.raises(JudgeError, match="unknown judge"):
        registry.get_judge("nope")


class AllPresentJudge(PresenceJudge):
    """Finds every unit present: every system scores 1 on every example, so no example ranks them."""

    name = "allpresent"
    version = "allpresent-1"

    def predict(self, pairs):
        return np.ones(len(pairs))


def test_a_judge_that_ties_every_system_gets_summary_tau_zero_with_every_example_undefined(
    gold_campaign, django_capture_on_commit_callbacks
):
    registry.register("allpresent")(lambda argument, **options: AllPresentJudge())
    registry.forget_judges()
    try:
        with django_capture_on_commit_callbacks(execute=True):
            run = start_autoscore_run(gold_campaign, "allpresent")
    finally:
        registry._FACTORIES.pop("allpresent", None)
        registry.forget_judges()
    run.refresh_from_db()
    tau = run.results["correlation"]["all"]["kendall"]
    # Undefined counts as 0 in the mean over all examples (skipping them would leave no mean at all).
    assert (tau["summary"], tau["n_examples"], tau["n_undefined"]) == (0.0, 3, 3)
    presence = run.results["presence"]
    assert presence["accuracy"] == pytest.approx(13 / 27, abs=1e-6)
    assert presence["f1_present"] == pytest.approx(26 / 40, abs=1e-6)


def test_runs_stored_under_the_old_rules_are_recomputed_when_shown(
    gold_campaign, goldlike, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = start_autoscore_run(gold_campaign, "goldlike")
    run.refresh_from_db()
    old = json.loads(json.dumps(run.results))
    old["presence"]["f1"] = old["presence"].pop("f1_present")
    del old["correlation"]["all"]["kendall"]["n_undefined"]
    old["correlation"]["all"]["kendall"]["summary"] = 0.123
    AutoscoreRun.objects.filter(pk=run.pk).update(results=old)
    (entry,) = compare_judges(gold_campaign)["runs"]
    assert entry["presence"]["f1_present"] == pytest.approx(24 / 25, abs=1e-6) and "f1" not in entry["presence"]
    assert entry["correlation"]["all"]["kendall"]["summary"] == pytest.approx((2 + 2 / math.sqrt(6)) / 3, abs=1e-5)
