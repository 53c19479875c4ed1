"""Review through the API: approve, reject and bonus assignments, correct QA pairs (logged), add systems.

Every role for each endpoint is in tests/api/test_permissions.py (ENDPOINTS); the multipart system upload
is checked for every role here.  These tests check what a researcher's script would notice: states,
ledger entries, 409s for repeated reviews, 400s that change nothing.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from annotation.models import QAPairCorrection
from annotation.models import Campaign, Example, System, SystemSummary
from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, LedgerEntry, TaskType, Worker
from hits.services import accept_next
from tests.api.conftest import ROLES, client_for, submitted_assignment
from tests.api.test_permissions import ALLOWED, DENIED, _with_data

pytestmark = pytest.mark.django_db


def _url(assignment, action=""):
    return f"/api/campaigns/parks/assignments/{assignment.pk}/" + (f"{action}/" if action else "")


def _entries(assignment, kind=None):
    rows = LedgerEntry.objects.filter(assignment=assignment)
    return list(rows.filter(kind=kind) if kind else rows)


# --- approve / reject ------------------------------------------------------------------------


def test_approve_pays_the_reward_once_and_a_second_approve_is_409(api_world):
    assignment = submitted_assignment(api_world)
    client = client_for(api_world, "owner")

    response = client.post(_url(assignment, "approve"), {"message": "Good questions"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "approved" and response.json()["review_message"] == "Good questions"
    assignment.refresh_from_db()
    assert assignment.state == Assignment.State.APPROVED and assignment.reviewed_at is not None
    rewards = _entries(assignment, LedgerEntry.Kind.REWARD)
    assert len(rewards) == 1 and rewards[0].amount == assignment.hit.reward
    assert rewards[0].state == LedgerEntry.State.OWED  # a local batch: paid outside the platform

    again = client_for(api_world, "admin").post(_url(assignment, "approve"), {}, format="json")
    assert again.status_code == 409
    assert "already approved" in again.json()["detail"]
    assert len(_entries(assignment, LedgerEntry.Kind.REWARD)) == 1


def test_reject_needs_a_message_and_pays_nothing(api_world):
    assignment = submitted_assignment(api_world)
    client = client_for(api_world, "shared")

    for body in ({}, {"message": "   "}):
        response = client.post(_url(assignment, "reject"), body, format="json")
        assert response.status_code == 400 and "message" in response.json()
        assignment.refresh_from_db()
        assert assignment.state == Assignment.State.SUBMITTED

    response = client.post(_url(assignment, "reject"), {"message": "The answers are not in the sentence."}, format="json")
    assert response.status_code == 200 and response.json()["state"] == "rejected"
    assignment.refresh_from_db()
    assert assignment.review_message == "The answers are not in the sentence."
    assert _entries(assignment) == []
    assert client.post(_url(assignment, "reject"), {"message": "again"}, format="json").status_code == 409

    # A rejection can be overturned (MTurk's OverrideRejection): the reward is then paid.
    assert client.post(_url(assignment, "approve"), {}, format="json").status_code == 200
    assert len(_entries(assignment, LedgerEntry.Kind.REWARD)) == 1


def test_work_still_in_progress_cannot_be_reviewed(api_world):
    launch_campaign(api_world["campaign"])
    worker = Worker.objects.get(external_id="crowd1")
    assignment = accept_next(worker, TaskType.objects.get(slug="generation"))
    client = client_for(api_world, "owner")
    for action, body in (("approve", {}), ("reject", {"message": "no"}), ("bonus", {"amount": "1.00", "reason": "x"})):
        response = client.post(_url(assignment, action), body, format="json")
        assert response.status_code == 409, (action, response.content)
        assert "assigned" in response.json()["detail"]
    assignment.refresh_from_db()
    assert assignment.state == Assignment.State.ASSIGNED and _entries(assignment) == []


# --- bonus -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, field",
    [
        ({"amount": "0", "reason": "thanks"}, "amount"),
        ({"amount": "-1.00", "reason": "thanks"}, "amount"),
        ({"amount": "2.01", "reason": "thanks"}, "amount"),  # MAX_BONUS is 2.00 here
        ({"amount": "0.505", "reason": "thanks"}, "amount"),
        ({"amount": "lots", "reason": "thanks"}, "amount"),
        ({"amount": "NaN", "reason": "thanks"}, "amount"),
        ({"amount": "1.00"}, "reason"),
        ({"amount": "1.00", "reason": "  "}, "reason"),
    ],
)
def test_bad_bonus_is_400_and_pays_nothing(api_world, settings, body, field):
    settings.MAX_BONUS = "2.00"
    assignment = submitted_assignment(api_world)
    response = client_for(api_world, "owner").post(_url(assignment, "bonus"), body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content
    assignment.refresh_from_db()
    assert assignment.bonus == Decimal("0.00") and _entries(assignment) == []


def test_bonus_is_recorded_in_the_ledger(api_world, settings):
    settings.MAX_BONUS = "2.00"
    assignment = submitted_assignment(api_world)
    client = client_for(api_world, "owner")
    response = client.post(_url(assignment, "bonus"), {"amount": "1.75", "reason": "Very careful work"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["kind"] == "bonus" and Decimal(response.json()["amount"]) == Decimal("1.75")
    assert client.post(_url(assignment, "bonus"), {"amount": "0.25", "reason": "And more"}, format="json").status_code == 201
    # MAX_BONUS bounds the assignment's bonuses together, not each call.
    over = client.post(_url(assignment, "bonus"), {"amount": "0.01", "reason": "One cent more"}, format="json")
    detail = over.json()["detail"]
    assert over.status_code == 409 and "at most $2.00 (the platform's limit per assignment), so at most $0.00 more" in detail
    assert "MAX_BONUS" not in detail
    # One bonus over the limit alone is refused in the same words: the limit is on the bonuses together.
    alone = client.post(_url(submitted_assignment(api_world, "crowd2"), "bonus"), {"amount": "2.01", "reason": "Too much"}, format="json")
    assert alone.status_code == 400 and "limit per assignment, on all its bonuses together" in str(alone.json()["amount"])
    assignment.refresh_from_db()
    assert assignment.bonus == Decimal("2.00")
    bonuses = _entries(assignment, LedgerEntry.Kind.BONUS)
    assert sorted(e.amount for e in bonuses) == [Decimal("0.25"), Decimal("1.75")]
    assert {e.created_by.username for e in bonuses} == {"owner1"}
    assert client.get(_url(assignment)).json()["bonus"] == "2.00"


# --- scoping and filters ---------------------------------------------------------------------


def test_assignments_of_another_campaign_are_unreachable_through_mine(api_world):
    other = api_world["other"]
    launch_campaign(other)  # launched first: the only HITs to hand out are the other campaign's
    theirs = accept_next(Worker.objects.create(external_id="crowd2"), TaskType.objects.get(slug="generation"))
    assert theirs.hit.batch_id == Campaign.objects.get(pk=other.pk).batch_id
    mine = submitted_assignment(api_world)
    Assignment.objects.filter(pk=theirs.pk).update(state=Assignment.State.SUBMITTED, submitted_at=timezone.now())
    client = client_for(api_world, "owner")
    assert client.get(_url(theirs)).status_code == 404
    for action, body in (("approve", {}), ("reject", {"message": "no"}), ("bonus", {"amount": "1.00", "reason": "x"})):
        assert client.post(_url(theirs, action), body, format="json").status_code == 404
    theirs.refresh_from_db()
    assert theirs.state == Assignment.State.SUBMITTED and _entries(theirs) == []
    listed = [row["id"] for row in client.get("/api/campaigns/parks/assignments/").json()["results"]]
    assert listed == [mine.pk]
    # The other campaign's researcher does not learn that "parks" exists.
    assert client_for(api_world, "other_researcher").get(_url(mine)).status_code == 404


def test_assignment_list_filters(api_world):
    first = submitted_assignment(api_world, "crowd1")
    second = submitted_assignment(api_world, "crowd9")
    Assignment.objects.filter(pk=second.pk).update(state=Assignment.State.APPROVED)
    client = client_for(api_world, "owner")

    def ids(query):
        response = client.get(f"/api/campaigns/parks/assignments/?{query}")
        assert response.status_code == 200, response.content
        return sorted(row["id"] for row in response.json()["results"])

    assert ids("") == sorted([first.pk, second.pk])
    assert ids("state=submitted") == [first.pk]
    assert ids("worker=crowd9") == [second.pk]
    assert ids("task_type=generation") == sorted([first.pk, second.pk])
    assert ids("task_type=presence") == []
    for example in Example.objects.filter(campaign=api_world["campaign"]):
        expected = sorted(a.pk for a in (first, second) if _example_of(a) == example)
        assert ids(f"example={example.external_id}") == expected
    assert ids("example=nowhere") == []
    system = System.objects.get(campaign=api_world["campaign"], name="alpha")
    assert ids(f"system={system.pk}") == []  # no presence assignment on its summaries yet
    assert client.get("/api/campaigns/parks/assignments/?state=bogus").status_code == 400


def _example_of(assignment):
    from annotation.models import Predicate

    return Predicate.objects.get(pk=assignment.hit.payload["predicate"]).example


# --- QA pair corrections ---------------------------------------------------------------------


def test_correction_changes_the_pair_and_is_logged(api_world):
    unit = _with_data(api_world)["unit"]
    client = client_for(api_world, "owner")
    response = client.post(
        f"/api/campaigns/parks/units/{unit.pk}/correct/",
        {"question": "Who opened the new park?", "answers": ["The mayor"], "reason": "more specific"},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["old_question"] == "Who opened something?" and body["new_question"] == "Who opened the new park?"
    assert body["changed_by"] == "owner1" and body["reason"] == "more specific"
    unit.refresh_from_db()
    assert unit.question == "Who opened the new park?" and unit.text == "Who opened the new park? The mayor"

    log = client.get("/api/campaigns/parks/units/corrections/").json()
    assert [row["unit_id"] for row in log["results"]] == [unit.pk]
    assert client.get(f"/api/campaigns/parks/units/corrections/?unit={unit.pk + 1000}").json()["results"] == []
    assert client.get("/api/campaigns/parks/units/corrections/?unit=abc").status_code == 400
    # The other campaign's researcher sees neither the log nor the pair.
    assert client_for(api_world, "other_researcher").get("/api/campaigns/parks/units/corrections/").status_code == 404


@pytest.mark.parametrize(
    "body, field",
    [
        ({"question": "Who opened the park?", "answers": ["The governor"]}, "detail"),  # not in the sentence
        ({"question": "Who opened something?", "answers": ["The mayor"]}, "detail"),  # nothing changed
        ({"question": "", "answers": ["The mayor"]}, "question"),
        ({"question": "Who?", "answers": []}, "answers"),
        ({"question": "Who?", "answers": ["The", "mayor", "opened", "park"]}, "answers"),
    ],
)
def test_bad_correction_is_400_and_changes_nothing(api_world, body, field):
    unit = _with_data(api_world)["unit"]
    response = client_for(api_world, "owner").post(f"/api/campaigns/parks/units/{unit.pk}/correct/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content
    unit.refresh_from_db()
    assert unit.question == "Who opened something?" and unit.answers == ["The mayor"]
    assert not QAPairCorrection.objects.exists()


# --- new systems -----------------------------------------------------------------------------


def _jsonl(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _upload(client, path):
    with path.open("rb") as handle:
        return client.post("/api/campaigns/parks/systems/", {"summaries": handle}, format="multipart")


GOOD = [
    {"id": "a", "system": "gamma", "summary": "The mayor opened a park."},
    {"id": "b", "system": "gamma", "summary": "Storms closed the airport."},
]


def test_system_upload_for_every_role(api_world, tmp_path):
    path = _jsonl(tmp_path, "new.jsonl", GOOD)
    wrong = []
    for role in ROLES:
        with transaction.atomic():
            response = _upload(client_for(api_world, role), path)
            transaction.set_rollback(True)
        want = 201 if role in ALLOWED else DENIED[role]
        if response.status_code != want:
            wrong.append((role, response.status_code, want))
    assert not wrong, wrong
    assert not System.objects.filter(campaign=api_world["campaign"], name="gamma").exists()


def test_new_system_gets_only_its_presence_hits(api_world, tmp_path):
    campaign = api_world["campaign"]
    _with_data(api_world)  # one kept QA pair on example "a"
    launch_campaign(campaign)
    Example.objects.filter(campaign=campaign, external_id="a").update(presence_started=True)
    before = set(HIT.objects.filter(batch__campaign=campaign).values_list("pk", flat=True))

    response = _upload(client_for(api_world, "owner"), _jsonl(tmp_path, "gamma.jsonl", GOOD))
    assert response.status_code == 201, response.content
    assert response.json() == {"systems": ["gamma"], "n_summaries": 2, "n_hits": 1, "n_routed_candidates": 0}
    new = HIT.objects.filter(batch__campaign=campaign).exclude(pk__in=before)
    assert [h.task_type.slug for h in new] == ["presence"]
    gamma_a = SystemSummary.objects.get(system__campaign=campaign, system__name="gamma", example__external_id="a")
    assert new.get().payload["summary"] == gamma_a.pk
    # Listed with the others.
    names = [row["name"] for row in client_for(api_world, "shared").get("/api/campaigns/parks/systems/").json()["results"]]
    assert names == ["alpha", "beta", "gamma"]


def test_bad_summaries_file_lists_every_problem_and_writes_nothing(api_world, tmp_path):
    path = _jsonl(
        tmp_path,
        "bad.jsonl",
        [
            {"id": "a", "system": "alpha", "summary": "Already here."},  # line 1: system exists
            {"id": "zzz", "system": "gamma", "summary": "Unknown example."},  # line 2: unknown example
            "{not json",  # line 3
            {"id": "b", "system": "gamma"},  # line 4: no summary
        ],
    )
    n_systems, n_summaries = System.objects.count(), SystemSummary.objects.count()
    response = _upload(client_for(api_world, "owner"), path)
    assert response.status_code == 400, response.content
    problems = response.json()["problems"]
    assert {p["file"] for p in problems} == {"bad.jsonl"}
    lines = {p["line"] for p in problems}
    assert {1, 2, 3, 4} <= lines, problems
    assert any(p["line"] == 1 and p["field"] == "system" for p in problems)
    assert any(p["line"] == 2 and p["field"] == "id" for p in problems)
    assert (System.objects.count(), SystemSummary.objects.count()) == (n_systems, n_summaries)


def test_system_upload_needs_a_file(api_world):
    response = client_for(api_world, "owner").post("/api/campaigns/parks/systems/", {}, format="multipart")
    assert response.status_code == 400 and "summaries" in response.json()


def test_excluding_on_mturk_past_the_budget_cap_is_refused_and_changes_nothing(api_world):
    """The replacement places of an exclusion would pass the MTurk budget cap: the API says so (400) and
    nothing is excluded, on the web page too."""
    from annotation.models import PresenceJudgment
    from annotation.services.pipeline import task_type as stage_task_type
    from hits.models import Batch
    from hits.mturk import fees
    from hits.mturk.models import MTurkHIT

    campaign = api_world["campaign"]
    data = _with_data(api_world)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    hit = HIT.objects.create(
        batch=campaign.batch, task_type=stage_task_type("presence"), max_assignments=3, reward=Decimal("0.20"),
        payload={"summary": data["summary"].pk, "predicate": data["predicate"].pk, "units": [data["unit"].pk]},
    )
    crowd = Worker.objects.get(external_id="crowd1")
    now = timezone.now()
    assignment = Assignment.objects.create(
        hit=hit, worker=crowd, state=Assignment.State.SUBMITTED, accepted_at=now, expires_at=now, submitted_at=now,
    )
    HIT.objects.filter(pk=hit.pk).update(n_taken=1, n_submitted=1)
    PresenceJudgment.objects.filter(worker=crowd).update(assignment=assignment)
    MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token="t-1", max_assignments=3, reward=Decimal("0.20"))
    Batch.objects.filter(pk=campaign.batch_id).update(backend=Batch.Backend.MTURK_SANDBOX)
    Batch.objects.filter(pk=campaign.batch_id).update(budget_cap=fees.committed(campaign.batch) + Decimal("0.10"))

    response = client_for(api_world, "owner").post(f"/api/campaigns/{campaign.slug}/workers/exclude/", {"worker": "crowd1"}, format="json")
    assert response.status_code == 400 and "budget cap" in response.json()["detail"]
    assert not PresenceJudgment.objects.filter(excluded=True).exists()
    assert HIT.objects.get(pk=hit.pk).max_assignments == 3
    from django.test import Client

    browser = Client()
    browser.force_login(api_world["users"]["owner"])
    page = browser.post(f"/campaigns/{campaign.slug}/workers/action/", {"worker": "crowd1", "action": "exclude"}, follow=True)
    assert "Nothing was excluded" in page.content.decode()
    assert not PresenceJudgment.objects.filter(excluded=True).exists()
