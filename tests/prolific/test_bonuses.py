"""Bulk bonuses on Prolific: k approved HITs are k rewards to the cent (one base reward plus bonuses); the pay
call recorded before it is sent and never sent twice, also after a lost reply; one failing set not stopping
another."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from hits.models import HIT, LedgerEntry
from hits.prolific.bonuses import flagged
from hits.prolific.models import ProlificBonus, ProlificSession
from tests.prolific.pd_world import (  # noqa: F401 - world: a fixture
    REWARD, approve_all, complete, do_hits, finished_session, paid_to, publish_study, run_sync, start, world,
)

pytestmark = pytest.mark.django_db


def _approved_session(standin, batch, study, n):
    session, work = finished_session(standin, study, n)
    run_sync(batch)
    approve_all(work)
    return session, work


def _pay_calls(standin):
    return sum(len(b["pay_calls"]) for b in standin.state()["bonuses"])


def test_k_approved_hits_are_k_rewards_to_the_cent(world):
    standin, batch, study = world
    session, work = _approved_session(standin, batch, study, 3)
    report = run_sync(batch)
    bonus = ProlificBonus.objects.get()
    assert report.bonuses == 1 and bonus.state == ProlificBonus.State.PAID and bonus.pay_recorded_at is not None
    assert bonus.csv_bonuses == f"{session.participant_id},{2 * REWARD:.2f}" and bonus.entries.count() == 2
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 100}
    entries = LedgerEntry.objects.filter(assignment__in=work)
    assert all(e.state == LedgerEntry.State.PAID for e in entries)
    paid = sum(e.amount for e in entries if e.kind == LedgerEntry.Kind.REWARD)
    assert paid == 3 * REWARD
    run_sync(batch)
    assert ProlificBonus.objects.count() == 1 and _pay_calls(standin) == 1  # nothing due twice


def test_a_returned_sessions_finished_hits_are_all_paid_as_bonuses(world):
    standin, batch, study = world
    session = start(standin, study)
    work = do_hits(session, 2)
    standin.control("POST", f"/__control/submissions/{session.session_id}/return/")
    run_sync(batch)
    assert ProlificSession.objects.get(pk=session.pk).state == ProlificSession.State.RETURNED
    approve_all(work)
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 100}


def test_a_lost_pay_reply_is_never_paid_again_and_is_marked_paid_from_the_records(world, settings):
    standin, batch, study = world
    session, _ = _approved_session(standin, batch, study, 2)
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "bulk-bonus-payments/.*/pay", "kind": "lost_reply", "times": 1})
    report = run_sync(batch)
    bonus = ProlificBonus.objects.get()
    assert bonus.state == ProlificBonus.State.UNKNOWN and report.failed >= 1 and _pay_calls(standin) == 1
    run_sync(batch)  # Prolific has not settled it yet: still unknown, and no second pay call
    bonus.refresh_from_db()
    assert bonus.state == ProlificBonus.State.UNKNOWN and _pay_calls(standin) == 1
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    run_sync(batch)
    bonus.refresh_from_db()
    assert bonus.state == ProlificBonus.State.PAID and _pay_calls(standin) == 1
    assert paid_to(standin, session.participant_id)["bonuses"] == 50  # once
    assert all(e.state == LedgerEntry.State.PAID for e in bonus.entries.all())


def test_a_lost_pay_reply_is_settled_from_each_submissions_own_record_and_the_money_booked_once(world):
    """Prolific documents ``bonus_payments`` on the single submission, not in the study's list: the records read
    after a lost reply are the submissions' own, and the bonus is booked paid once Prolific paid it."""
    standin, batch, study = world
    (first, one), (second, two) = finished_session(standin, study, 3), finished_session(standin, study, 2)
    run_sync(batch)
    approve_all(one + two)
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "bulk-bonus-payments/.*/pay", "kind": "lost_reply", "times": 1})
    run_sync(batch)
    bonus = ProlificBonus.objects.get()
    assert bonus.state == ProlificBonus.State.UNKNOWN and bonus.csv_bonuses.count("\n") == 1
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    listed = next(s for s in standin.state()["submissions"] if s["id"] == first.session_id)
    assert listed["bonus_payments"] == [100]  # Prolific paid it: its records show it
    run_sync(batch)
    bonus.refresh_from_db()
    assert bonus.state == ProlificBonus.State.PAID and _pay_calls(standin) == 1
    assert paid_to(standin, first.participant_id)["bonuses"] == 100 and paid_to(standin, second.participant_id)["bonuses"] == 50
    booked = LedgerEntry.objects.filter(batch=batch, kind=LedgerEntry.Kind.REWARD, state=LedgerEntry.State.PAID)
    assert sum(e.amount for e in booked) == 5 * REWARD and not flagged(batch)


def test_a_lost_reply_still_unpaid_after_long_is_flagged_with_the_facts(world, settings):
    standin, batch, study = world
    _approved_session(standin, batch, study, 2)
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "bulk-bonus-payments/.*/pay", "kind": "error", "status": 503, "times": 1})
    run_sync(batch)  # a 503: Prolific may or may not have paid; here it did not
    assert ProlificBonus.objects.get().state == ProlificBonus.State.UNKNOWN
    run_sync(batch, now=timezone.now() + timedelta(hours=settings.PROLIFIC_BONUS_FLAG_HOURS + 1))
    (bonus,) = flagged(batch)
    assert "will not send it again" in bonus.last_error and _pay_calls(standin) == 0


def test_a_failing_bonus_set_of_one_study_does_not_stop_another(world):
    from hits.prolific.models import ProlificStudy

    standin, batch, study = world
    other = publish_study(standin, batch, kind=ProlificStudy.Kind.SCREENING)
    session, _ = _approved_session(standin, batch, study, 2)
    # The screening study's participant: a qualification HIT session.
    screened = start(standin, other)
    tests = do_hits(screened, 2, kind=HIT.Kind.QUALIFICATION)
    complete(standin, screened)
    run_sync(batch)
    approve_all(tests)
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "bonus-payments/$", "kind": "error", "status": 503, "times": 1})
    report = run_sync(batch)
    states = sorted(ProlificBonus.objects.values_list("state", flat=True))
    assert states == [ProlificBonus.State.PAID, ProlificBonus.State.RECORDED] and report.failed == 1
    run_sync(batch)  # the create that got no clear answer is made again (creating pays nothing), then paid once
    assert set(ProlificBonus.objects.values_list("state", flat=True)) == {ProlificBonus.State.PAID}
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, session.participant_id)["bonuses"] == 50
    assert paid_to(standin, screened.participant_id)["bonuses"] == 50


def test_a_hit_approved_after_its_submission_was_rejected_is_paid_as_a_bonus(world):
    from hits import payments
    from hits.models import Assignment
    from hits.prolific.review import note_rejection_category

    standin, batch, study = world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    (assignment,) = Assignment.objects.filter(pk=work[0].pk)
    payments.reject_assignment(assignment, "Every answer repeats the example given in the instructions word for word. " * 2, settle=False)
    note_rejection_category(assignment, "FAILED_INSTRUCTIONS")
    run_sync(batch)
    assert ProlificSession.objects.get(pk=session.pk).decision == "REJECT"
    payments.approve_assignment(Assignment.objects.get(pk=assignment.pk), settle=False)  # the researcher changes their mind
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 50}


def test_a_researchers_bonus_over_the_budget_cap_is_refused(world):
    from decimal import Decimal

    from hits import payments
    from hits.models import Assignment, Batch
    from hits.prolific.fees import committed

    standin, batch, study = world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    assignment = Assignment.objects.get(pk=work[0].pk)
    Batch.objects.filter(pk=batch.pk).update(budget_cap=committed(batch) + Decimal("1.00"))
    payments.pay_bonus(assignment, Decimal("0.75"), "Careful work")  # $0.75 + $0.25 fee: exactly the cap
    with pytest.raises(payments.BudgetExceeded, match="over its budget cap"):
        payments.pay_bonus(assignment, Decimal("0.01"), "More")
