"""The worker view (issue 40): one worker of a campaign on one page, its actions, who may open it, the links that
lead there, and a bounded number of queries however many HITs the worker did."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import GoldPresence, PresenceJudgment
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits import payments
from hits.models import HIT, Assignment, BatchBlock, LedgerEntry, QualificationEvent, TaskType, Worker

pytestmark = pytest.mark.django_db


def _done(hit, worker, state="submitted", answers=None, seconds=40, minutes_ago=0):
    now = timezone.now() - timedelta(minutes=minutes_ago)
    return Assignment.objects.create(
        hit=hit, worker=worker, state=state, accepted_at=now - timedelta(seconds=seconds), expires_at=now + timedelta(hours=1),
        submitted_at=now, work_seconds=seconds, answers=answers if answers is not None else {},
    )


@pytest.fixture
def running(draft):
    launch_campaign(draft)
    draft.refresh_from_db()
    return draft


@pytest.fixture
def ann(running):
    """ann: a generation HIT awaiting review, one approved with a bonus, and a gold check with one label of two right."""
    worker = Worker.objects.create(external_id="ann")
    hits = list(HIT.objects.filter(batch_id=running.batch_id, kind=HIT.Kind.REGULAR).order_by("pk"))
    waiting = _done(hits[0], worker, answers={"questions": [{"question": "Who opened something?", "answers": ["The mayor"]}]})
    approved = _done(hits[1], worker, minutes_ago=5)
    payments.approve_assignment(approved, message="thanks")
    payments.pay_bonus(Assignment.objects.get(pk=approved.pk), Decimal("0.25"), "careful work")
    gold = HIT.objects.create(
        batch_id=running.batch_id, task_type=TaskType.objects.get(slug="presence"), kind=HIT.Kind.GOLD,
        payload={"summary": 1, "units": [5, 6]}, answer_key={"labels": {"5": True, "6": False}}, reward=Decimal("0.20"),
    )
    _done(gold, worker, answers={"labels": [{"unit": 5, "present": True}, {"unit": 6, "present": True}]}, minutes_ago=10)
    return {"worker": worker, "waiting": waiting, "approved": approved}


def _url(campaign, worker):
    return f"/campaigns/{campaign.slug}/workers/{worker.pk}/"


def test_the_page_shows_the_workers_hits_answers_checks_and_money(client_rita, running, ann):
    page = client_rita.get(_url(running, ann["worker"])).content.decode()
    assert "worker ann" in page
    assert "HITs (3)" in page
    assert f'data-assignment="{ann["waiting"].pk}"' in page and f'data-assignment="{ann["approved"].pk}"' in page
    assert "Who opened something? → The mayor" in page  # the answers, in words
    assert "<strong>1 of 2</strong> right" in page  # the gold check against its key
    reward = ann["approved"].hit.reward
    owed = reward + Decimal("0.25")
    assert f'data-field="owed">${owed}' in page
    assert f'data-field="bonuses">$0.25' in page
    assert "careful work" in page  # the bonus, with its reason
    assert 'data-field="awaiting">2 (' in page  # the generation HIT and the gold check
    # A message to ann alone, through the messages page's form.
    assert 'action="/campaigns/%s/messages/"' % running.slug in page and '<input type="hidden" name="workers" value="ann">' in page


def test_agreement_with_the_majority_per_presence_hit(client_rita, running):
    """A presence HIT says how many of its labels agree with the crowd's majority label."""
    from annotation.models import ContentUnit, Predicate, SystemSummary

    worker = Worker.objects.create(external_id="bob")
    predicate = Predicate.objects.filter(example__campaign=running).first()
    summary = SystemSummary.objects.filter(example=predicate.example).first()
    units = [
        ContentUnit.objects.create(example=predicate.example, predicate=predicate, kind="qa", index=i, question=f"Who {i}?",
                                   answers=["x"], text=f"Who {i}? x", state="kept")
        for i in range(2)
    ]
    hit = HIT.objects.create(batch_id=running.batch_id, task_type=TaskType.objects.get(slug="presence"),
                             payload={"summary": summary.pk, "units": [u.pk for u in units]})
    assignment = _done(hit, worker, answers={"labels": [{"unit": u.pk, "present": True} for u in units]})
    for unit, majority in zip(units, (True, False)):
        PresenceJudgment.objects.create(unit=unit, summary=summary, worker=worker, assignment=assignment, present=True)
        GoldPresence.objects.create(unit=unit, summary=summary, present=majority, n_judgments=3, n_present=2 if majority else 1)
    page = client_rita.get(_url(running, worker)).content.decode()
    assert "1 of 2 agree with the majority" in page
    assert "“Who 0? x”: present" in page  # each label with the text of the QA pair it is about


def test_another_researcher_and_other_workers_get_404(running, ann, django_user_model, client_rita, tmp_path):
    mallory = django_user_model.objects.create_user("mallory", password="a-long-test-password")
    make_researcher(mallory)
    other = Client()
    other.force_login(mallory)
    assert other.get(_url(running, ann["worker"])).status_code == 404
    # A worker who never worked here, and an id nobody has, look the same.
    stranger = Worker.objects.create(external_id="stranger")
    assert client_rita.get(_url(running, stranger)).status_code == 404
    assert client_rita.get(f"/campaigns/{running.slug}/workers/999999/").status_code == 404
    # The crowd worker themself sees nothing of the researcher's page.
    ann["worker"].user = django_user_model.objects.create_user("ann-user")
    ann["worker"].save()
    own = Client()
    own.force_login(ann["worker"].user)
    assert own.get(_url(running, ann["worker"])).status_code == 404


def test_approve_and_bonus_from_the_page_come_back_to_it_and_are_logged(client_rita, rita, running, ann):
    url = _url(running, ann["worker"])
    waiting = ann["waiting"]
    response = client_rita.post(
        f"/campaigns/{running.slug}/review/assignments/{waiting.pk}/",
        {"action": "approve", "message": "good questions", "amount": "0.40", "next": url + "?page=1"},
    )
    assert response.status_code == 302 and response["Location"] == url + "?page=1"
    waiting.refresh_from_db()
    assert waiting.state == "approved" and waiting.bonus == Decimal("0.40")
    entries = LedgerEntry.objects.filter(assignment=waiting).exclude(kind="fee")
    assert {(e.kind, e.created_by_id) for e in entries} == {("reward", rita.pk), ("bonus", rita.pk)}
    # A "next" leading off the campaign's pages is not followed.
    response = client_rita.post(
        f"/campaigns/{running.slug}/review/assignments/{waiting.pk}/",
        {"action": "bonus", "amount": "0.10", "message": "again", "confirm_second_bonus": "1", "next": "//evil.example/x"},
    )
    assert response["Location"] == f"/campaigns/{running.slug}/review/"


def test_block_from_the_page_comes_back_and_is_logged(client_rita, rita, running, ann):
    url = _url(running, ann["worker"])
    before = client_rita.get(url).content.decode()
    assert 'id="blocked-here"' not in before and '<option value="block">' in before
    action = f"/campaigns/{running.slug}/workers/action/"
    response = client_rita.post(action, {"worker": "ann", "action": "block", "reason": "copy-paste answers", "next": url})
    assert response.status_code == 302 and response["Location"] == url
    assert BatchBlock.objects.filter(worker=ann["worker"], batch_id=running.batch_id).exists()
    event = QualificationEvent.objects.get(worker=ann["worker"], action="block")
    assert event.decided_by == rita and event.reason == "copy-paste answers"
    page = client_rita.get(url).content.decode()
    assert 'id="blocked-here"' in page and "copy-paste answers" in page
    assert '<option value="unblock">' in page and '<option value="block">' not in page
    # Without a "next" (the workers list), the list is where the researcher comes back to.
    response = client_rita.post(action, {"worker": "ann", "action": "unblock"})
    assert response["Location"] == f"/campaigns/{running.slug}/workers/"


def test_every_page_naming_the_worker_links_to_the_view(client_rita, running, ann):
    link = f'href="{_url(running, ann["worker"])}"'
    for path in ("workers/", "workers/status/", "payouts/"):
        page = client_rita.get(f"/campaigns/{running.slug}/{path}").content.decode()
        assert link in page, path
    bulk = client_rita.post(f"/campaigns/{running.slug}/review/bulk/", {"action": "approve", "worker": "ann"}).content.decode()
    assert link in bulk


def test_the_review_page_links_authors_verifiers_and_judges(client_rita, running, ann):
    from annotation.models import ContentUnit, Predicate, SystemSummary, Verification

    predicate = Predicate.objects.filter(example__campaign=running).first()
    bob = Worker.objects.create(external_id="bob")
    unit = ContentUnit.objects.create(example=predicate.example, predicate=predicate, kind="qa", index=0, question="Who?",
                                      answers=["x"], text="Who? x", state="kept", author=ann["worker"])
    Verification.objects.create(unit=unit, worker=bob, valid=True, answers=["x"])
    summary = SystemSummary.objects.filter(example=predicate.example).first()
    PresenceJudgment.objects.create(unit=unit, summary=summary, worker=bob, present=True)
    page = client_rita.get(f"/campaigns/{running.slug}/review/{predicate.example_id}/").content.decode()
    assert f'href="{_url(running, ann["worker"])}"' in page
    assert page.count(f'href="{_url(running, bob)}"') >= 2  # the verdict and the judgment
    # bob took no HIT, but his work is here: his view opens, without the decisions that need a HIT.
    bob_page = client_rita.get(_url(running, bob)).content.decode()
    assert "took no HIT of this campaign" in bob_page and 'id="worker-action"' not in bob_page


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_page_runs_in_the_same_number_of_queries_for_6_and_60_hits(client_rita, running):
    """Ten times the HITs (more than a page of them) costs no query more."""
    presence = TaskType.objects.get(slug="presence")
    counts = []
    for name, n in (("few", 6), ("many", 60)):
        worker = Worker.objects.create(external_id=name)
        for i in range(n):
            kind = HIT.Kind.GOLD if i % 3 == 0 else HIT.Kind.REGULAR
            hit = HIT.objects.create(batch_id=running.batch_id, task_type=presence, kind=kind, payload={"summary": 1, "units": [1]},
                                     answer_key={"labels": {"1": True}} if kind == HIT.Kind.GOLD else None)
            _done(hit, worker, state="approved" if i % 2 else "submitted", answers={"labels": [{"unit": 1, "present": True}]})
        counts.append(_queries(client_rita, _url(running, worker)))
    assert counts[0] == counts[1], counts
