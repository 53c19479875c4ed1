"""Sync: assignments listed page by page, reviews and bonuses settled once, HITs expired; all with exact MTurk calls."""

from __future__ import annotations

from datetime import datetime, timezone as dt_timezone
from decimal import Decimal

import pytest
from django.db.models import Value
from django.db.models.functions import Concat

from hits import qualifications
from hits.models import HIT, Assignment, Batch, LedgerEntry, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkQualificationType, MTurkUnknownSubmission
from hits.mturk.publishing import request_token
from hits.mturk.sync import UNKNOWN_SUBMISSION_FEEDBACK, expire_batch, notify_workers, past_expiry, sync_batch
from hits.payments import pay_bonus, reject_assignment
from tests.mturk.conftest import make_hit, submitted_assignment

pytestmark = pytest.mark.django_db

STATUSES = ["Submitted", "Approved", "Rejected"]


@pytest.fixture
def published(mturk_batch, task_type, settings):
    settings.MTURK_APPROVE_AFTER_HOURS = 0
    hit = make_hit(mturk_batch, task_type)
    return MTurkHIT.objects.create(
        hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token=request_token(hit), max_assignments=3, reward=Decimal("0.20")
    )


def mturk_work(published, n: int) -> list[Assignment]:
    assignments = []
    for i in range(1, n + 1):
        worker = Worker.objects.create(external_id=f"mturk:W{i}", mturk_worker_id=f"W{i}")
        assignment = submitted_assignment(published.hit, worker)
        MTurkAssignment.objects.create(
            mturk_assignment_id=f"A{i}", mturk_hit=published, assignment=assignment, mturk_worker_id=f"W{i}",
            submit_to="https://workersandbox.mturk.com",
        )
        assignments.append(assignment)
    return assignments


def listing(stub, *pages):
    """ListAssignmentsForHIT of HIT1, one response per page, NextToken chaining them."""
    for number, items in enumerate(pages):
        response = {"NumResults": len(items), "Assignments": [
            {"AssignmentId": a, "WorkerId": w, "HITId": "HIT1", "AssignmentStatus": s} for a, w, s in items
        ]}
        if number < len(pages) - 1:
            response["NextToken"] = f"t{number + 1}"
        params = {"HITId": "HIT1", "AssignmentStatuses": STATUSES, "MaxResults": 100}
        if number:
            params["NextToken"] = f"t{number}"
        stub.add_response("list_assignments_for_hit", response, params)


def test_sync_reviews_pays_and_is_idempotent(stubbed, published, mturk_batch):
    a1, a2, a3 = mturk_work(published, 3)
    reject_assignment(a2, "Answers copied from the question.")
    bonus = pay_bonus(a1, Decimal("0.50"), "Careful work")
    listing(
        stubbed,
        [("A1", "W1", "Submitted"), ("A2", "W2", "Submitted")],
        [("A3", "W3", "Approved"), ("STRANGER", "W9", "Submitted")],  # A3 auto-approved by MTurk; STRANGER unknown
    )
    stubbed.add_response("approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Thank you for your work."})
    stubbed.add_response("reject_assignment", {}, {"AssignmentId": "A2", "RequesterFeedback": "Answers copied from the question."})
    stubbed.add_response("send_bonus", {}, {
        "WorkerId": "W1", "BonusAmount": "0.50", "AssignmentId": "A1", "Reason": "Careful work", "UniqueRequestToken": bonus.request_token,
    })
    # The submission our page never stored is rejected, with the reason, before MTurk's automatic approval pays it.
    stubbed.add_response("reject_assignment", {}, {"AssignmentId": "STRANGER", "RequesterFeedback": UNKNOWN_SUBMISSION_FEEDBACK})
    report = sync_batch(mturk_batch)
    assert (report.listed, report.unknown, report.approved, report.rejected, report.bonuses) == (4, 1, 1, 1, 1)
    assert report.unknown_rejected == 1
    stranger = MTurkUnknownSubmission.objects.get()
    assert (stranger.mturk_assignment_id, stranger.mturk_worker_id, stranger.status) == ("STRANGER", "W9", "Rejected")
    states = dict(Assignment.objects.values_list("pk", "state"))
    assert states == {a1.pk: "approved", a2.pk: "rejected", a3.pk: "approved"}
    assert set(LedgerEntry.objects.values_list("state", flat=True)) == {"paid"}
    # Rewards of A1 and A3, their fees, the bonus and its fee: nothing for the rejected A2.
    assert LedgerEntry.objects.filter(kind="reward").count() == 2 and LedgerEntry.objects.filter(kind="fee").count() == 3
    assert Assignment.objects.filter(paid=True).count() == 2

    # A second sync lists again and changes nothing: no approve, reject or bonus call is made twice.
    listing(stubbed, [("A1", "W1", "Approved"), ("A2", "W2", "Rejected")], [("A3", "W3", "Approved"), ("STRANGER", "W9", "Rejected")])
    before = list(LedgerEntry.objects.values_list("pk", "state", "amount"))
    again = sync_batch(mturk_batch)
    assert (again.approved, again.rejected, again.bonuses, again.status_changes, again.unknown_rejected) == (0, 0, 0, 0, 0)
    assert list(LedgerEntry.objects.values_list("pk", "state", "amount")) == before


def test_a_refused_approval_stays_pending_until_a_later_sync(stubbed, published, mturk_batch):
    """The worker's browser had not told MTurk yet: the call fails, the reward stays pending, the next sync pays."""
    [a1] = mturk_work(published, 1)
    listing(stubbed, [])
    stubbed.add_client_error(
        "approve_assignment", service_error_code="RequestError", service_message="This operation can be called with a status of: Submitted",
        http_status_code=400, expected_params={"AssignmentId": "A1", "RequesterFeedback": "Thank you for your work."},
    )
    report = sync_batch(mturk_batch)
    assert report.failed == 1
    reward = LedgerEntry.objects.get(kind="reward")
    assert reward.state == "pending" and "status of: Submitted" in reward.error
    listing(stubbed, [("A1", "W1", "Submitted")])
    stubbed.add_response("approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Thank you for your work."})
    sync_batch(mturk_batch)
    assert LedgerEntry.objects.get(kind="reward").state == "paid"


def _bonus_sent_before(bonus) -> None:
    """As a sync killed after its SendBonus left it: the call recorded as sent once (reply never seen)."""
    from django.utils import timezone

    from hits.mturk.models import MTurkRequest

    MTurkRequest.objects.create(key=bonus.request_token, operation="SendBonus", token=bonus.request_token, sends=1, first_sent_at=timezone.now())


def test_a_refused_resend_of_a_bonus_is_settled_by_mturks_records(stubbed, published, mturk_batch, settings):
    """A token sent before is refused with a RequestError of any wording and no TurkErrorCode: MTurk's bonus
    payments on the assignment show the bonus, so it is booked as paid and never sent a third time."""
    settings.MTURK_APPROVE_AFTER_HOURS = 1000  # leave the review to a researcher
    [a1] = mturk_work(published, 1)
    bonus = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    _bonus_sent_before(bonus)
    listing(stubbed, [("A1", "W1", "Submitted")])
    stubbed.add_client_error(
        "send_bonus", service_error_code="RequestError", service_message="Something about request 41c2-99 (no code)",
        http_status_code=400,
        expected_params={"WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "A1", "Reason": "Extra effort", "UniqueRequestToken": bonus.request_token},
    )
    stubbed.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "A1", "Reason": "Extra effort"},
    ]}, {"AssignmentId": "A1", "MaxResults": 100})
    assert sync_batch(mturk_batch).bonuses == 1
    assert LedgerEntry.objects.get(pk=bonus.pk).state == "paid"
    assert Assignment.objects.get(pk=a1.pk).state == "submitted"
    listing(stubbed, [("A1", "W1", "Submitted")])
    assert sync_batch(mturk_batch).bonuses == 0  # nothing pending: no SendBonus (the Stubber would fail)


def test_a_refused_resend_not_in_mturks_records_stays_pending(stubbed, published, mturk_batch, settings):
    """The same refusal, but MTurk lists no such bonus (an earlier bonus of another amount does not count): the
    entry stays pending with the error, nothing is booked as paid."""
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    [a1] = mturk_work(published, 1)
    bonus = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    _bonus_sent_before(bonus)
    listing(stubbed, [("A1", "W1", "Submitted")])
    stubbed.add_client_error("send_bonus", service_error_code="RequestError", service_message="refused", http_status_code=400)
    stubbed.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "W1", "BonusAmount": "0.50", "AssignmentId": "A1", "Reason": "Extra effort"},
    ]}, {"AssignmentId": "A1", "MaxResults": 100})
    report = sync_batch(mturk_batch)
    assert report.bonuses == 0 and report.failed == 1
    entry = LedgerEntry.objects.get(pk=bonus.pk)
    assert entry.state == "pending" and "refused" in entry.error


def test_finished_batch_hits_are_expired_then_deleted(stubbed, published, mturk_batch):
    [a1] = mturk_work(published, 1)
    mturk_batch.state = Batch.State.FINISHED
    mturk_batch.save()
    listing(stubbed, [("A1", "W1", "Submitted")])
    stubbed.add_response("approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Thank you for your work."})
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": past_expiry(1)})
    stubbed.add_response("delete_hit", {}, {"HITId": "HIT1"})
    report = sync_batch(mturk_batch)
    assert (report.expired, report.deleted) == (1, 1)
    assert MTurkHIT.objects.get().deleted_at is not None
    # Deleted HITs are left alone afterwards.
    assert expire_batch(mturk_batch).expired == 0


def test_hit_with_unreviewed_work_is_expired_but_not_deleted(stubbed, published, mturk_batch, settings):
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    mturk_work(published, 1)
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": past_expiry(1)})
    report = expire_batch(mturk_batch)
    assert (report.expired, report.deleted) == (1, 0)


def test_notify_workers_in_one_call(stubbed, published, mturk_batch):
    first, second, forged = mturk_work(published, 3)
    MTurkAssignment.objects.filter(assignment__in=[first, second]).update(mturk_worker_id=Concat(Value("A"), "mturk_worker_id"))
    # A made-up id (a forged page's) would make MTurk refuse the whole call: only ids MTurk could issue are sent.
    stubbed.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []}, {
        "Subject": "New HITs", "MessageText": "More HITs are up.", "WorkerIds": ["AW1", "AW2"],
    })
    assert notify_workers(mturk_batch, "New HITs", "More HITs are up.").reached == 2
    with pytest.raises(ValueError):
        notify_workers(mturk_batch, "", "x")


def test_qualification_grant_revoke_and_block_are_mirrored(stubbed, published, task_type, django_capture_on_commit_callbacks):
    MTurkQualificationType.objects.create(
        batch=published.hit.batch, task_type=task_type, sandbox=True, qualification_type_id="QUAL1", name="q"
    )
    [a1] = mturk_work(published, 1)
    worker = a1.worker
    stubbed.add_response("disassociate_qualification_from_worker", {}, {
        "WorkerId": "W1", "QualificationTypeId": "QUAL1", "Reason": "agreement 0.61 under 0.85",
    })
    stubbed.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": "QUAL1", "WorkerId": "W1", "IntegerValue": 1, "SendNotification": False,
    })
    stubbed.add_response("create_worker_block", {}, {"WorkerId": "W1", "Reason": "spam answers"})
    stubbed.add_response("delete_worker_block", {}, {"WorkerId": "W1", "Reason": "appeal accepted"})
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.revoke(worker, task_type, published.hit.batch, "agreement 0.61 under 0.85")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, published.hit.batch, "reviewed")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.set_blocked(worker, True, "spam answers")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.set_blocked(worker, False, "appeal accepted")


def test_local_workers_qualifications_make_no_mturk_call(stubbed, task_type, local_batch, django_capture_on_commit_callbacks):
    MTurkQualificationType.objects.create(task_type=task_type, sandbox=True, qualification_type_id="QUAL1", name="q")
    worker = Worker.objects.create(external_id="local")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        qualifications.revoke(worker, task_type, local_batch, "x")
        qualifications.set_blocked(worker, True, "y")
    assert callbacks == []  # and the Stubber saw no call


def test_beat_syncs_mturk_batches_only_while_there_is_something_to_do(stubbed, published, mturk_batch, local_batch, task_type):
    from hits.mturk.tasks import sync_all_task

    make_hit(local_batch, task_type)  # a local batch: never synced
    listing(stubbed, [])
    assert list(sync_all_task.delay().get()) == [mturk_batch.pk]
    # Once its HITs are deleted and the batch is finished, the batch is left alone (no call at all).
    MTurkHIT.objects.update(deleted_at=published.published_at)
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.FINISHED)
    assert sync_all_task.delay().get() == {}


def test_pausing_expires_the_hits_and_resuming_reopens_them(stubbed, published, mturk_batch):
    from datetime import timedelta

    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.PAUSED)
    listing(stubbed, [])
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": past_expiry(1)})
    report = sync_batch(mturk_batch)
    assert (report.expired, report.deleted) == (1, 0)
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.ACTIVE)
    now = datetime(2030, 5, 1, 12, 0, tzinfo=dt_timezone.utc)
    listing(stubbed, [])
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": now + timedelta(days=7)})
    assert sync_batch(mturk_batch, now=now).reopened == 1
    assert MTurkHIT.objects.get().expired_at is None


def test_a_finished_hit_is_listed_until_everything_on_it_is_decided(stubbed, published, mturk_batch):
    from django.utils import timezone

    a1, a2, a3 = mturk_work(published, 3)
    HIT.objects.filter(pk=published.hit_id).update(state="completed", completed_at=timezone.now())
    listing(stubbed, [("A1", "W1", "Submitted"), ("A2", "W2", "Submitted"), ("A3", "W3", "Submitted")])
    for a in ("A1", "A2", "A3"):
        stubbed.add_response("approve_assignment", {}, {"AssignmentId": a, "RequesterFeedback": "Thank you for your work."})
    assert sync_batch(mturk_batch).approved == 3
    # Complete, listed after completion, every assignment decided: later syncs make no call for it.
    assert sync_batch(mturk_batch).listed == 0


def test_a_finished_hit_with_undecided_work_is_listed_again(stubbed, published, mturk_batch, settings):
    from django.utils import timezone

    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    mturk_work(published, 1)
    HIT.objects.filter(pk=published.hit_id).update(state="completed", completed_at=timezone.now())
    listing(stubbed, [("A1", "W1", "Submitted")])
    sync_batch(mturk_batch)
    listing(stubbed, [("A1", "W1", "Approved")])  # MTurk auto-approved it meanwhile
    assert sync_batch(mturk_batch).status_changes == 1
    assert Assignment.objects.get().state == "approved"
