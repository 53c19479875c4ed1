"""Issue 9: an MTurk call failing half-way leaves a state that the next sync repairs, without duplicates.

Each fault kills the work at the worst moment: MTurk has done the call, the
platform has not recorded it (a Celery worker killed, a lost connection).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import Assignment, LedgerEntry, Worker
from hits.mturk import publishing, sync
from hits.mturk.publishing import request_token
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.sync import sync_batch
from hits.payments import approve_assignment, pay_bonus
from tests.mturk.conftest import make_hit, submitted_assignment
from tests.mturk.test_publishing import created, expected_create, public_url  # noqa: F401 - same settings
from tests.mturk.test_sync import listing

pytestmark = pytest.mark.django_db


class WorkerKilled(BaseException):
    """Stands for the process dying: not an Exception, so no handler in the code under test catches it."""


def die_once(monkeypatch, module, name):
    real = getattr(module, name)
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise WorkerKilled(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, dying)


def test_publish_killed_after_create_hit_is_repaired_by_the_sync(stubbed, monkeypatch, mturk_batch, task_type, settings):
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    hits = [make_hit(mturk_batch, task_type) for _ in range(2)]
    die_once(monkeypatch, publishing, "record_published")
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA1"), expected_create(hits[0]))
    with pytest.raises(WorkerKilled):
        publishing.publish_batch(mturk_batch)
    assert not MTurkHIT.objects.exists()  # MTurk has AAA1; we do not know it yet

    # The next sync publishes what is unpublished: the first HIT is found by its token, the second created.
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message=f"UniqueRequestToken {request_token(hits[0])} was already used",
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"},
        expected_params=expected_create(hits[0]),
    )
    stubbed.add_response("list_hits", {"NumResults": 1, "HITs": [{"HITId": "AAA1", "RequesterAnnotation": request_token(hits[0])}]}, {"MaxResults": 100})
    stubbed.add_response("create_hit", created("AAA2"), expected_create(hits[1]))
    for hit_id in ("AAA1", "AAA2"):
        stubbed.add_response("list_assignments_for_hit", {"NumResults": 0, "Assignments": []}, {
            "HITId": hit_id, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100,
        })
    report = sync_batch(mturk_batch)
    assert report.published == 2
    assert sorted(MTurkHIT.objects.values_list("hit_id", "mturk_hit_id")) == [(hits[0].pk, "AAA1"), (hits[1].pk, "AAA2")]


@pytest.fixture
def one_submission(mturk_batch, task_type):
    hit = make_hit(mturk_batch, task_type)
    published = MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token="t", max_assignments=3, reward=Decimal("0.20"))
    worker = Worker.objects.create(external_id="mturk:W1", mturk_worker_id="W1")
    assignment = submitted_assignment(hit, worker)
    MTurkAssignment.objects.create(mturk_assignment_id="A1", mturk_hit=published, assignment=assignment, mturk_worker_id="W1", submit_to="https://workersandbox.mturk.com")
    return assignment


def test_settle_killed_after_approve_assignment_pays_once(stubbed, monkeypatch, mturk_batch, one_submission, settings):
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    approve_assignment(one_submission, "Good")
    die_once(monkeypatch, sync, "_mark_paid")
    stubbed.add_response("approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Good"})
    with pytest.raises(WorkerKilled):
        sync.settle_batch(mturk_batch)
    assert LedgerEntry.objects.get(kind="reward").state == "pending"
    # MTurk shows the assignment approved: no second ApproveAssignment, and the ledger is brought up to date.
    listing(stubbed, [("A1", "W1", "Approved")])
    report = sync_batch(mturk_batch)
    assert report.approved == 0
    assert list(LedgerEntry.objects.values_list("kind", "state")) == [("reward", "paid"), ("fee", "paid")]
    assert Assignment.objects.get(pk=one_submission.pk).paid


def test_bonus_killed_after_send_bonus_is_not_paid_twice(stubbed, monkeypatch, mturk_batch, one_submission, settings):
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    bonus = pay_bonus(one_submission, Decimal("0.40"), "Great")
    die_once(monkeypatch, sync, "_mark_paid")
    params = {"WorkerId": "W1", "BonusAmount": "0.40", "AssignmentId": "A1", "Reason": "Great", "UniqueRequestToken": bonus.request_token}
    stubbed.add_response("send_bonus", {}, params)
    with pytest.raises(WorkerKilled):
        sync.settle_batch(mturk_batch)
    # The retry carries the same token: MTurk refuses it (any wording, no code); the token was sent before, so
    # the refusal is settled by MTurk's records (ListBonusPayments), which show the bonus: recorded as paid.
    listing(stubbed, [("A1", "W1", "Submitted")])
    stubbed.add_client_error(
        "send_bonus", service_error_code="RequestError", http_status_code=400,
        service_message="The idempotency token has already been processed. (1700000000000)", expected_params=params,
    )
    stubbed.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "W1", "BonusAmount": "0.40", "AssignmentId": "A1", "Reason": "Great"},
    ]}, {"AssignmentId": "A1", "MaxResults": 100})
    assert sync_batch(mturk_batch).bonuses == 1
    assert LedgerEntry.objects.get(pk=bonus.pk).state == "paid"
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1
