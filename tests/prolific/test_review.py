"""A researcher's review of a participant's HITs mapped to their Prolific submission: approve (bulk where
several), reject with a category and a long enough message, nothing sent before the review is complete."""

from __future__ import annotations

import pytest

from hits import payments
from hits.models import LedgerEntry
from hits.prolific import fees as prolific_fees
from hits.prolific.models import ProlificSession
from hits.prolific.review import ReviewRefused, check_rejection, note_rejection_category
from tests.prolific.pd_world import approve_all, finished_session, run_sync, submission, world  # noqa: F401 - world: a fixture

pytestmark = pytest.mark.django_db

WHY = "The answers do not follow the instructions: every question was left as the example. " * 2


def test_nothing_is_sent_until_every_hit_of_the_session_is_reviewed(world):
    standin, batch, study = world
    session, work = finished_session(standin, study, 2)
    run_sync(batch)  # confirmed
    payments.approve_assignment(work[0].__class__.objects.get(pk=work[0].pk), settle=False)
    run_sync(batch)
    assert submission(standin, session.session_id)["status"] == "AWAITING REVIEW"


def test_approved_sessions_are_approved_in_one_bulk_call_and_the_base_reward_is_booked(world):
    standin, batch, study = world
    sessions = [finished_session(standin, study, 2) for _ in range(2)]
    run_sync(batch)
    for _, work in sessions:
        approve_all(work)
    report = run_sync(batch)
    assert report.approved == 2
    for session, work in sessions:
        assert submission(standin, session.session_id)["status"] == "APPROVED"
        session.refresh_from_db()
        assert session.decision == "APPROVE"
        first = LedgerEntry.objects.get(assignment=work[0], kind=LedgerEntry.Kind.REWARD)
        assert first.state == LedgerEntry.State.PAID and first.fee.state == LedgerEntry.State.PAID
        assert first.fee.amount == prolific_fees.fee(first.amount, prolific_fees.fee_rate(batch))
    assert run_sync(batch).approved == 0  # decided once


def test_a_session_with_every_hit_rejected_is_rejected_with_category_and_message(world):
    standin, batch, study = world
    session, work = finished_session(standin, study, 2)
    run_sync(batch)
    for assignment in work:
        assignment.refresh_from_db()
        payments.reject_assignment(assignment, WHY, settle=False)
        note_rejection_category(assignment, "FAILED_INSTRUCTIONS")
    report = run_sync(batch)
    sub = submission(standin, session.session_id)
    assert report.rejected == 1 and sub["status"] == "REJECTED"
    assert not LedgerEntry.objects.filter(assignment__in=work).exists()


def test_a_rejection_without_category_is_not_sent_and_says_why(world):
    standin, batch, study = world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    payments.reject_assignment(work[0].__class__.objects.get(pk=work[0].pk), WHY, settle=False)
    report = run_sync(batch)
    session.refresh_from_db()
    assert submission(standin, session.session_id)["status"] == "AWAITING REVIEW"
    assert "rejection category" in session.last_error and any("not rejected" in e for e in report.errors)


@pytest.mark.parametrize("message,category,complaint", [
    (WHY, "", "needs a rejection category"),
    (WHY, "BORED", "'BORED' is not one of Prolific's rejection categories"),
    ("Too short.", "LOW_EFFORT", "at least 100 characters"),
])
def test_bad_rejections_are_refused_naming_what_is_wrong(message, category, complaint, settings):
    settings.PROLIFIC_REJECT_MESSAGE_MIN = 100
    with pytest.raises(ReviewRefused, match=complaint):
        check_rejection(message, category)


def test_unreviewed_hits_are_approved_after_the_delay_and_the_submission_with_them(world, settings):
    standin, batch, study = world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    settings.PROLIFIC_APPROVE_AFTER_HOURS = 0
    report = run_sync(batch)
    assert report.approved == 1 and submission(standin, session.session_id)["status"] == "APPROVED"
    assert ProlificSession.objects.get(pk=session.pk).decision == "APPROVE"
