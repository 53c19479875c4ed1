"""Every submission status Prolific documents (ACTIVE, AWAITING REVIEW, APPROVED, REJECTED, RETURNED, TIMED-OUT) and
the late moves between them, against the stand-in: each submission is decided once, by the platform, and its HITs
are paid once (k approved HITs = k rewards: the submission's reward, then bonuses; none twice).

Prolific's words (researcher help, "Setting the maximum allowed time"): a timed-out participant "can still complete
their submission ... if they are still active on the study and are not replaced by another participant"; and
(participant help) a submission awaiting review can still be returned ("Return and cancel reward")."""

from __future__ import annotations

import pytest

from hits.models import Assignment
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificSession
from hits.prolific.review import REJECT
from tests.prolific.pd_world import (  # noqa: F401 - world: a fixture
    approve_all, do_hits, finished_session, paid_to, run_sync, start, submission, world,
)

pytestmark = pytest.mark.django_db

MESSAGE = "The answers were given at random: every pair was marked present in a fraction of the time it takes to read them. " * 2


def _settle(standin, batch):
    """The stand-in's clock past its settle delay (paid bonuses land), then a sync."""
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    return run_sync(batch)


def _leave(standin, session, how):
    standin.control("POST", f"/__control/submissions/{session.session_id}/{how}/")


def _complete_on_prolific(standin, session):
    """The participant enters the study's completion code on Prolific (the stand-in), whatever the session here."""
    standin.control("POST", f"/__control/submissions/{session.session_id}/complete/", {"code": session.study.completion_code})


def _state(session):
    return ProlificSession.objects.get(pk=session.pk)


def test_active_then_awaiting_review_is_approved_here_and_pays_its_hits_once(world):
    standin, batch, study = world
    session = start(standin, study)
    work = do_hits(session, 3)
    run_sync(batch)
    assert submission(standin, session.session_id)["status"] == "ACTIVE" and _state(session).market_status == "ACTIVE"
    _complete_on_prolific(standin, session)
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    _settle(standin, batch)
    assert submission(standin, session.session_id)["status"] == "APPROVED" and _state(session).decision == "APPROVE"
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 100}


def test_awaiting_review_rejected_here_pays_nothing(world):
    from hits import payments

    standin, batch, study = world
    session, work = finished_session(standin, study, 2)
    run_sync(batch)
    for assignment in Assignment.objects.filter(pk__in=[a.pk for a in work]):
        payments.reject_assignment(assignment, MESSAGE, settle=False)
    ProlificSession.objects.filter(pk=session.pk).update(rejection_category="LOW_EFFORT")
    run_sync(batch)
    _settle(standin, batch)
    assert submission(standin, session.session_id)["status"] == "REJECTED" and _state(session).decision == REJECT
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 0}


@pytest.mark.parametrize("how, status, state", [("return", "RETURNED", "returned"), ("timeout", "TIMED-OUT", "timed_out")])
def test_active_then_returned_or_timed_out_pays_the_finished_hits_as_bonuses(world, how, status, state):
    standin, batch, study = world
    session = start(standin, study)
    work = do_hits(session, 2)
    _leave(standin, session, how)
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    _settle(standin, batch)
    assert submission(standin, session.session_id)["status"] == status and _state(session).state == state
    assert _state(session).decision == "" and paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 100}


def test_awaiting_review_then_returned_late_is_not_decided_and_pays_the_hits_as_bonuses_once(world):
    standin, batch, study = world
    session, work = finished_session(standin, study, 2)
    run_sync(batch)
    _leave(standin, session, "return")  # "Return and cancel reward" after submitting, before any review
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    _settle(standin, batch)
    assert submission(standin, session.session_id)["status"] == "RETURNED" and _state(session).state == "returned"
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 100}


def test_timed_out_then_completed_is_decided_here_and_its_hits_paid_once(world):
    standin, batch, study = world
    session = start(standin, study)
    work = do_hits(session, 3)
    _leave(standin, session, "timeout")
    run_sync(batch)
    assert _state(session).state == "timed_out"
    _complete_on_prolific(standin, session)  # still active on the study, and nobody took the place
    assert submission(standin, session.session_id)["status"] == "AWAITING REVIEW"
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    _settle(standin, batch)
    assert submission(standin, session.session_id)["status"] == "APPROVED" and _state(session).decision == "APPROVE"
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 100}  # 3 HITs, each once
    _settle(standin, batch)
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 100}


def test_timed_out_paid_as_bonuses_then_completed_is_not_approved_again_and_is_flagged(world):
    standin, batch, study = world
    session = start(standin, study)
    work = do_hits(session, 2)
    _leave(standin, session, "timeout")
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    _settle(standin, batch)
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 100}
    _complete_on_prolific(standin, session)
    report = run_sync(batch)
    assert submission(standin, session.session_id)["status"] == "AWAITING REVIEW"  # not approved: it would pay again
    assert any("PAID ALREADY" in e and session.session_id in e for e in report.errors)
    assert _state(session).last_error.startswith("PAID ALREADY")
    _settle(standin, batch)
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 100}


def test_awaiting_review_approved_by_prolific_on_its_own_is_booked_once(world):
    standin, batch, study = world
    session, work = finished_session(standin, study, 2)
    run_sync(batch)
    with Prolific() as client:  # Prolific approves a submission left unreviewed 21 days
        client.request("POST", f"/submissions/{session.session_id}/transition/", json={"action": "APPROVE"}, safe=True)
    run_sync(batch)
    _settle(standin, batch)
    assert _state(session).decision == "APPROVE"
    assert set(Assignment.objects.filter(pk__in=[a.pk for a in work]).values_list("state", flat=True)) == {"approved"}
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 50}


def test_awaiting_review_rejected_on_prolifics_site_is_recorded_and_nothing_approved_here(world):
    standin, batch, study = world
    session, _ = finished_session(standin, study, 2)
    run_sync(batch)
    with Prolific() as client:
        client.request("POST", f"/submissions/{session.session_id}/transition/", safe=True,
                       json={"action": "REJECT", "message": MESSAGE, "rejection_category": "LOW_EFFORT"})
    run_sync(batch)
    _settle(standin, batch)
    assert _state(session).decision == REJECT and submission(standin, session.session_id)["status"] == "REJECTED"
    assert paid_to(standin, session.participant_id) == {"rewards": 0, "bonuses": 0}
