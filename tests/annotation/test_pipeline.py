"""The three-stage pipeline driven by submissions: generation, verification (with redo), presence, gold."""

from __future__ import annotations

import pytest

from annotation.models import Campaign, ContentUnit, GoldPresence, Predicate, PresenceJudgment, Verification
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import LaunchError, launch_campaign
from hits.handlers import AnswerErrors
from hits.models import HIT, TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.conftest import launched_scu_campaign, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_predicate_campaign(tmp_path):
    """One example whose reference has exactly one predicate ("blamed"), and two systems."""
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {"id": "e1", "system": "good", "summary": "Police blamed the driver."},
            {"id": "e1", "system": "bad", "summary": "It rained."},
        ],
    )
    campaign = import_campaign(name="One", references=refs, summaries=sums).campaign
    assert list(Predicate.objects.values_list("text", flat=True)) == ["blamed"]
    return campaign


def W(name):
    return Worker.objects.get_or_create(external_id=name)[0]


def T(slug):
    return TaskType.objects.get(slug=slug)


def write(worker, data):
    assignment = accept_next(worker, T("generation"))
    assert assignment is not None
    return submit_assignment(worker, assignment.pk, data)


def verify(worker, verdicts):
    """verdicts: list of (valid, answer) in the order of the HIT's questions."""
    assignment = accept_next(worker, T("verification"))
    assert assignment is not None
    data = {}
    for unit_id, (valid, answer) in zip(assignment.hit.payload["units"], verdicts):
        data[f"v_{unit_id}"] = "valid" if valid else "invalid"
        if valid:
            data[f"v_{unit_id}_a1"] = answer
    return submit_assignment(worker, assignment.pk, data)


GOOD_QUESTIONS = {"q1": "Who blamed someone?", "q1_a1": "Police", "q2": "Who did someone blame?", "q2_a1": "the driver",
                  "q3": "What did someone blame someone for?", "q3_a1": "the crash"}


def test_launch_creates_one_generation_hit_per_predicate(one_predicate_campaign):
    assert launch_campaign(one_predicate_campaign) == 1
    hit = HIT.objects.get()
    assert hit.task_type.slug == "generation" and hit.max_assignments == 1 and str(hit.reward) == "0.32"
    assert Campaign.objects.get().state == "running"
    with pytest.raises(LaunchError, match="not a draft"):
        launch_campaign(one_predicate_campaign)


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({}, "__all__", "Write at least one question"),
        ({"q1": "Who blamed someone", "q1_a1": "Police"}, "q1", 'ends with "?"'),
        ({"q1": "Who blamed someone?", "q1_a1": "Police officers"}, "q1_a1", "copied from the sentence"),
        ({"q1": "Who blamed someone?"}, "q1_a1", "at least one answer"),
        ({"q2_a1": "Police"}, "q2_a1", "Write the question for this answer"),
        ({"q1": "Who blamed someone?", "q1_a1": "Police", "q2": "who blamed  someone?", "q2_a1": "Police"}, "q2", "Same as question 1"),
        ({"q1": "Who?", "q1_a1": "Police"}, "q1", "Write a whole question"),
        ({"q1": "Who blamed someone?" + "x" * 300 + "?", "q1_a1": "Police"}, "q1", "under 200 characters"),
    ],
)
def test_generation_validation_names_the_field(one_predicate_campaign, data, field, message):
    launch_campaign(one_predicate_campaign)
    worker = W("writer")
    assignment = accept_next(worker, T("generation"))
    with pytest.raises(AnswerErrors) as info:
        submit_assignment(worker, assignment.pk, data)
    assert any(message in m for m in info.value.errors[field]), info.value.errors
    assert ContentUnit.objects.count() == 0
    assignment.refresh_from_db()
    assert assignment.state == "assigned"


def test_answers_are_matched_ignoring_extra_spaces(one_predicate_campaign):
    launch_campaign(one_predicate_campaign)
    write(W("writer"), {"q1": "Who did someone blame?", "q1_a1": "  the   driver "})
    assert ContentUnit.objects.get().answers == ["the driver"]


def test_full_pipeline_to_gold_labels(one_predicate_campaign, eager_celery):
    # Under the embedded default a completed HIT's follow-ups (gold labels, the campaign's end) run in
    # its submission's transaction; with a Redis broker a worker runs them (tests/reliability/test_coalesce.py).
    launch_campaign(one_predicate_campaign)
    writer = W("writer")
    write(writer, GOOD_QUESTIONS)
    units = list(ContentUnit.objects.order_by("index"))
    assert [u.question for u in units] == ["Who blamed someone?", "Who did someone blame?", "What did someone blame someone for?"]
    assert all(u.author == writer and u.state == "proposed" for u in units)
    verification_hit = HIT.objects.get(task_type__slug="verification")
    assert verification_hit.max_assignments == 2
    # The writer never verifies their own questions.
    assert accept_next(writer, T("verification")) is None
    verify(W("v1"), [(True, "Police"), (True, "the driver"), (True, "the crash")])
    assert not HIT.objects.filter(task_type__slug="presence").exists()
    verify(W("v2"), [(True, "Police"), (True, "the driver"), (False, "")])
    states = dict(ContentUnit.objects.values_list("question", "state"))
    assert states == {"Who blamed someone?": "kept", "Who did someone blame?": "kept", "What did someone blame someone for?": "rejected"}
    assert Verification.objects.count() == 6
    predicate = Predicate.objects.get()
    assert predicate.settled and not predicate.flagged
    presence_hits = HIT.objects.filter(task_type__slug="presence")
    assert presence_hits.count() == 2  # two summaries x one predicate
    assert all(h.max_assignments == 3 and len(h.payload["units"]) == 2 for h in presence_hits)
    kept = {u.question: u.pk for u in ContentUnit.objects.filter(state="kept")}
    # Three judges: the good summary contains both pairs for two judges, the bad one for none.
    for judge, says in (("j1", "1"), ("j2", "1"), ("j3", "0")):
        for _ in range(2):
            assignment = accept_next(W(judge), T("presence"))
            summary_good = assignment.hit.payload["summary"] == one_predicate_campaign.systems.get(name="good").summaries.get().pk
            data = {f"p_{k}": (says if summary_good else "0") for k, _ in enumerate(assignment.hit.payload["units"], start=1)}
            submit_assignment(W(judge), assignment.pk, data)
    assert PresenceJudgment.objects.count() == 3 * 2 * 2
    gold = {(g.summary.system.name, g.unit.question): (g.present, g.n_present, g.n_judgments) for g in GoldPresence.objects.select_related("summary__system", "unit")}
    assert gold[("good", "Who blamed someone?")] == (True, 2, 3)
    assert gold[("bad", "Who did someone blame?")] == (False, 0, 3)
    assert Campaign.objects.get().state == "finished"


def test_predicate_with_too_few_kept_pairs_is_redone_then_flagged(one_predicate_campaign):
    one_predicate_campaign.max_redo_rounds = 1
    one_predicate_campaign.save()
    launch_campaign(one_predicate_campaign)
    write(W("writer1"), {"q1": "Who blamed someone?", "q1_a1": "Police", "q2": "Who did someone blame?", "q2_a1": "the driver"})
    verify(W("v1"), [(True, "Police"), (False, "")])
    verify(W("v2"), [(True, "Police"), (True, "the driver")])
    redo = HIT.objects.get(task_type__slug="generation", state="open")
    assert redo.payload["round"] == 2 and redo.priority == -2
    # The second writer sees the kept pair and adds another that fails again.
    write(W("writer2"), {"q1": "What did someone blame someone for?", "q1_a1": "the crash"})
    verify(W("v1"), [(False, "")])
    verify(W("v3"), [(False, "")])
    predicate = Predicate.objects.get()
    assert predicate.flagged and predicate.settled and predicate.rounds == 2
    assert "only 1 QA pair kept after 2 rounds" in predicate.flag_reason
    assert not HIT.objects.filter(task_type__slug="generation", state="open").exists()
    # Presence still runs for the pair that was kept.
    assert HIT.objects.filter(task_type__slug="presence").count() == 2


def test_scu_campaign_goes_straight_to_presence(tmp_path):
    folder = tmp_path / "ds"
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("e1\n")
    (folder / "references.txt").write_text("A cat sat . It was happy .\n")
    (folder / "summaries" / "s1.summary").write_text("A cat sat .\n")
    (folder / "SCUs.txt").write_text("\t".join(f"unit {i}" for i in range(6)) + "\n")
    campaign = import_campaign(name="SCU", folder=folder).campaign
    assert launch_campaign(campaign) == 2  # six units in HITs of four
    hits = list(HIT.objects.order_by("pk"))
    assert [len(h.payload["units"]) for h in hits] == [4, 2]
    assert all(h.task_type.slug == "presence" and h.payload["predicate"] is None for h in hits)


def _scu_campaign(tmp_path, name, n_examples):
    rows = [(f"{name}{i}", "A cat sat .", "A cat sat .", ["unit one", "unit two"]) for i in range(n_examples)]
    return launched_scu_campaign(tmp_path / name, name, rows)


def test_a_paused_campaign_sets_its_hits_aside_and_work_in_progress_still_counts(tmp_path):
    from annotation.selectors.campaigns import campaign_progress
    from annotation.services.pipeline import cancel_campaign, pause_campaign, resume_campaign

    from hits.models import BatchChoice
    from hits.services import record_choice

    first = _scu_campaign(tmp_path, "first", 3)
    second = _scu_campaign(tmp_path, "second", 2)
    busy = W("busy")
    # Campaigns share a worker at random unless they chose one ("Start here"): these two chose the first.
    record_choice(busy, first.batch, BatchChoice.How.START)
    in_progress = accept_next(busy, T("presence"))
    assert in_progress.hit.batch_id == first.batch_id
    before = campaign_progress(first)["stages"]["presence"]
    pause_campaign(first)
    states = dict(HIT.objects.filter(batch_id=first.batch_id).values_list("pk", "state"))
    # Every HIT of the paused campaign is set aside, the one a worker holds too; the progress is unchanged.
    assert set(states.values()) == {"paused"}
    assert campaign_progress(first)["stages"]["presence"] == before
    # Other workers get the other campaign's HITs only.
    got = [accept_next(W(f"w{i}"), T("presence")) for i in range(3)]
    assert [a.hit.batch_id for a in got] == [second.batch_id] * 3
    # The worker who held a HIT of the paused campaign can still submit it; the campaign does not finish.
    submit_assignment(busy, in_progress.pk, {f"p_{k}": "1" for k, _ in enumerate(in_progress.hit.payload["units"], start=1)})
    assert Campaign.objects.get(pk=first.pk).state == "paused"
    resume_campaign(first)
    assert set(HIT.objects.filter(batch_id=first.batch_id).values_list("state", flat=True)) == {"open"}
    after = W("after")
    record_choice(after, first.batch, BatchChoice.How.START)
    assert accept_next(after, T("presence")).hit.batch_id == first.batch_id
    pause_campaign(first)
    cancel_campaign(first)
    assert set(HIT.objects.filter(batch_id=first.batch_id).values_list("state", flat=True)) == {"cancelled"}
