"""Issue 40, the pilot: N real HITs per task type before launch, their median time per HIT, and the rewards that
meet the campaign's hourly floor, which the researcher accepts before launch."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from annotation.models import Campaign, ContentUnit, Predicate, PresenceJudgment, Verification
from annotation.services import pilot
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.services import accept_next, submit_assignment
from hits.worktime import typical_seconds
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db

GOOD_QUESTIONS = {"q1": "Who blamed someone?", "q1_a1": "Police", "q2": "Who did someone blame?", "q2_a1": "the driver"}


@pytest.fixture
def owner(django_user_model):
    user = django_user_model.objects.create_user(username="pilar", password="a-long-test-password")
    make_researcher(user)
    return user


@pytest.fixture
def campaign(tmp_path, owner):
    """A draft with one predicate ("blamed") and two systems; hourly floor $12."""
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [
        {"id": "e1", "system": "good", "summary": "Police blamed the driver."},
        {"id": "e1", "system": "bad", "summary": "It rained."},
    ])
    campaign = import_campaign(name="Pilot study", owner=owner, references=refs, summaries=sums).campaign
    assert list(Predicate.objects.filter(example__campaign=campaign).values_list("text", flat=True)) == ["blamed"]
    Campaign.objects.filter(pk=campaign.pk).update(hourly_pay_floor=Decimal("12.00"))
    campaign.refresh_from_db()
    return campaign


@pytest.fixture
def browser(owner):
    client = Client()
    client.force_login(owner)
    return client


def W(name):
    return Worker.objects.get_or_create(external_id=name)[0]


def do(worker, slug, data, seconds):
    """Take the worker's next HIT of ``slug``, submit ``data`` (a callable of the assignment, or a dict), and record
    ``seconds`` as its work time."""
    assignment = accept_next(worker, TaskType.objects.get(slug=slug))
    assert assignment is not None, f"no {slug} HIT for {worker}"
    submit_assignment(worker, assignment.pk, data(assignment) if callable(data) else data)
    Assignment.objects.filter(pk=assignment.pk).update(work_seconds=seconds)
    return assignment


def verify_all(assignment):
    questions = assignment.hit.payload["inline"]["questions"]
    answers = {"Who blamed someone?": "Police", "Who did someone blame?": "the driver"}
    data = {}
    for q in questions:
        data[f"v_{q['id']}"] = "valid"
        data[f"v_{q['id']}_a1"] = answers[q["question"]]
    return data


def judge_all(assignment):
    return {f"p_{k}": "1" for k in range(1, len(assignment.hit.payload["inline"]["pairs"]) + 1)}


def data_rows():
    return (ContentUnit.objects.count(), Verification.objects.count(), PresenceJudgment.objects.count(),
            Predicate.objects.filter(settled=True).count())


def test_pilot_measures_times_proposes_rewards_and_keeps_no_data(campaign, browser):
    before = data_rows()
    response = browser.post(f"/campaigns/{campaign.slug}/pilot/action/", {"action": "start", "size": "2"}, follow=True)
    assert "Pilot started: 1 generation HITs, 0 verification HITs, 0 presence HITs." in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.state == Campaign.State.DRAFT and campaign.pilot_running
    assert Batch.objects.get(pk=campaign.batch_id).state == Batch.State.ACTIVE

    writer = W("writer")
    do(writer, "generation", GOOD_QUESTIONS, 90)
    # The writer's pairs open a pilot verification and presence HIT; the writer may not verify them.
    verification = HIT.objects.get(batch=campaign.batch, task_type__slug="verification")
    assert verification.payload["pilot"] and [q["question"] for q in verification.payload["inline"]["questions"]] == [
        "Who blamed someone?", "Who did someone blame?"]
    assert accept_next(writer, TaskType.objects.get(slug="verification")) is None
    presence = HIT.objects.get(batch=campaign.batch, task_type__slug="presence")
    assert presence.payload["inline"]["candidate"] in ("Police blamed the driver.", "It rained.")
    do(W("verifier"), "verification", verify_all, 30)
    do(W("judge"), "presence", judge_all, 61)

    # Paid and recorded, counted in the typical times, and no data of the campaign's.
    assert Assignment.objects.filter(hit__batch=campaign.batch, state="submitted").count() == 3
    assert typical_seconds(TaskType.objects.get(slug="generation")) == 90
    assert data_rows() == before

    page = browser.get(f"/campaigns/{campaign.slug}/pilot/").content.decode()
    assert "Pilot answers are not kept as data" in page
    # ceil(12 $/h x 90 s) = $0.30; x 30 s = $0.10; x 61 s = $0.2033.. -> $0.21 (up to the cent).
    assert 'data-proposed="0.30"' in page and 'data-proposed="0.10"' in page and 'data-proposed="0.21"' in page
    assert 'data-median="90.0"' in page

    stale = browser.post(f"/campaigns/{campaign.slug}/pilot/action/", {
        "action": "accept", "reward_generation": "0.25", "reward_verification": "0.10", "reward_presence": "0.21"}, follow=True)
    assert "figures changed" in stale.content.decode()
    campaign.refresh_from_db()
    assert campaign.reward_generation == Decimal("0.32")

    browser.post(f"/campaigns/{campaign.slug}/pilot/action/", {
        "action": "accept", "reward_generation": "0.30", "reward_verification": "0.10", "reward_presence": "0.21"})
    campaign.refresh_from_db()
    assert (campaign.reward_generation, campaign.reward_verification, campaign.reward_presence) == (
        Decimal("0.30"), Decimal("0.10"), Decimal("0.21"))


def test_only_n_pilot_hits_per_task_type(campaign):
    pilot.start_pilot(campaign, 1)
    do(W("w1"), "generation", GOOD_QUESTIONS, 50)
    campaign.refresh_from_db()
    # A second writer (a pilot HIT opened again, as a returned one would be) opens no second verification HIT.
    hit = HIT.objects.get(batch=campaign.batch, task_type__slug="generation")
    HIT.objects.filter(pk=hit.pk).update(max_assignments=2, state="open")
    do(W("w2"), "generation", GOOD_QUESTIONS, 50)
    assert HIT.objects.filter(batch=campaign.batch, task_type__slug="verification").count() == 1
    assert HIT.objects.filter(batch=campaign.batch, task_type__slug="presence").count() == 1


def test_launch_ends_the_pilot_and_its_hits_are_not_the_campaigns_work(campaign, browser):
    pilot.start_pilot(campaign, 3)
    do(W("writer"), "generation", GOOD_QUESTIONS, 40)
    campaign.refresh_from_db()
    launch_campaign(campaign)
    campaign.refresh_from_db()
    assert campaign.state == Campaign.State.RUNNING and not campaign.pilot_running
    assert set(HIT.objects.filter(batch=campaign.batch, payload__has_key="pilot", task_type__slug__in=["verification", "presence"])
               .values_list("state", flat=True)) == {"cancelled"}
    # The launch's own generation HIT for the predicate, as without a pilot.
    real = HIT.objects.filter(batch=campaign.batch, task_type__slug="generation").exclude(payload__has_key="pilot")
    assert [h.payload["predicate"] for h in real] == [Predicate.objects.get(example__campaign=campaign).pk]
    page = browser.get(f"/campaigns/{campaign.slug}/progress/")
    assert page.status_code == 200
    stage = page.context["progress"]["stages"]["generation"]
    assert stage["total"] == 1 and stage["submitted"] == 0


def test_stop_withdraws_untaken_hits_and_keeps_work_in_progress(campaign):
    pilot.start_pilot(campaign, 1)
    do(W("writer"), "generation", GOOD_QUESTIONS, 40)
    campaign.refresh_from_db()
    in_progress = accept_next(W("verifier"), TaskType.objects.get(slug="verification"))
    pilot.stop_pilot(campaign)
    campaign.refresh_from_db()
    assert not campaign.pilot_running and campaign.state == Campaign.State.DRAFT
    assert Batch.objects.get(pk=campaign.batch_id).state == Batch.State.PAUSED
    assert HIT.objects.get(batch=campaign.batch, task_type__slug="presence").state == "cancelled"
    assert accept_next(W("other"), TaskType.objects.get(slug="presence")) is None
    submit_assignment(W("verifier"), in_progress.pk, verify_all(in_progress))
    assert Assignment.objects.get(pk=in_progress.pk).state == "submitted"


@pytest.mark.parametrize("size, message", [("0", "between 1 and 50"), ("51", "between 1 and 50"), ("many", "whole number")])
def test_bad_pilot_sizes_are_refused_and_change_nothing(campaign, browser, size, message):
    response = browser.post(f"/campaigns/{campaign.slug}/pilot/action/", {"action": "start", "size": size}, follow=True)
    assert message in response.content.decode() and "Nothing was changed" in response.content.decode()
    campaign.refresh_from_db()
    assert not campaign.pilot_running and not HIT.objects.exists()


def test_no_pilot_after_launch_and_no_second_pilot_at_once(campaign):
    pilot.start_pilot(campaign, 1)
    with pytest.raises(pilot.PilotError, match="already running"):
        pilot.start_pilot(campaign, 1)
    launch_campaign(campaign)
    with pytest.raises(pilot.PilotError, match="before launch"):
        pilot.start_pilot(campaign, 1)


@pytest.mark.parametrize("floor, seconds, expected", [
    ("12.00", 90, "0.30"), ("12.00", 61, "0.21"), ("12.00", 1, "0.01"), ("8.00", 45.5, "0.11"), ("0.00", 90, None),
])
def test_proposed_reward_is_the_floor_over_the_median_rounded_up_to_the_cent(floor, seconds, expected):
    proposed = pilot.proposed_reward(Decimal(floor), seconds)
    assert proposed == (Decimal(expected) if expected else None)


def test_another_researcher_cannot_run_the_pilot(campaign, django_user_model):
    stranger = django_user_model.objects.create_user(username="stranger", password="a-long-test-password")
    make_researcher(stranger)
    client = Client()
    client.force_login(stranger)
    assert client.post(f"/campaigns/{campaign.slug}/pilot/action/", {"action": "start", "size": "2"}).status_code in (403, 404)
    assert not HIT.objects.exists()
