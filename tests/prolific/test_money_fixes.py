"""Money defects found in review: overlapping syncs never pay one bulk bonus twice; HITs done after a session's
first confirmation are paid; screening rewards are booked; a refused set does not block the others; rewards
Prolific pays on its own are booked; the base entry is what Prolific pays; lost-reply sets are settled from
Prolific's records only when they prove it; one failing step does not stop the rest; the automatic approval
never approves a HIT the researcher rejected."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import LedgerEntry
from hits.prolific import bonuses, review
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificBonus
from hits.prolific.sync import SyncReport
from tests.prolific.pd_world import (  # noqa: F401 - world: a fixture
    REWARD, approve_all, finished_session, paid_to, run_sync, world,
)

pytestmark = pytest.mark.django_db


def _pay_calls(standin):
    return sum(len(b["pay_calls"]) for b in standin.state()["bonuses"])


def _approved_session(standin, batch, study, n):
    session, work = finished_session(standin, study, n)
    run_sync(batch)
    approve_all(work)
    with Prolific() as client:
        review.send_decisions(batch, client, SyncReport())  # the submission approved: its other HITs are bonuses
    return session, work


def test_a_second_sync_running_while_the_first_creates_the_bonus_never_pays_it_twice(world, monkeypatch):
    standin, batch, study = world
    session, _ = _approved_session(standin, batch, study, 3)
    real = Prolific.request
    overlapped = []

    def request(self, method, path, **kwargs):
        if path == "/submissions/bonus-payments/" and not overlapped:
            overlapped.append(True)  # B runs while A's create call is on its way (after A's claim)
            bonuses.pay_bonuses(batch, self, SyncReport())
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(Prolific, "request", request)
    with Prolific() as client:
        bonuses.pay_bonuses(batch, client, SyncReport())
    monkeypatch.setattr(Prolific, "request", real)
    assert overlapped and len(standin.state()["bonuses"]) == 1 and _pay_calls(standin) == 1
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 100}
    assert ProlificBonus.objects.get().state == ProlificBonus.State.PAID


def test_a_second_sync_after_the_create_answered_does_not_pay_again(world, monkeypatch):
    standin, batch, study = world
    _approved_session(standin, batch, study, 2)
    real = Prolific.request
    overlapped = []

    def request(self, method, path, **kwargs):
        if path.endswith("/pay/") and not overlapped:
            overlapped.append(True)  # B runs when A has the id and is about to pay
            bonuses.pay_bonuses(batch, self, SyncReport())
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(Prolific, "request", request)
    with Prolific() as client:
        bonuses.pay_bonuses(batch, client, SyncReport())
    assert overlapped and len(standin.state()["bonuses"]) == 1 and _pay_calls(standin) == 1


def test_hits_done_after_the_first_confirmation_are_confirmed_reviewed_and_paid(world):
    from hits.models import Assignment
    from hits.prolific.models import ProlificSession
    from tests.prolific.pd_world import complete, do_hits, start

    standin, batch, study = world
    session = start(standin, study)
    first = do_hits(session, 1)
    assert run_sync(batch).confirmed == 1  # Prolific lists the session while the participant works
    later = do_hits(session, 2)
    complete(standin, session)
    run_sync(batch)
    work = first + later
    assert set(Assignment.objects.filter(pk__in=[a.pk for a in work]).values_list("state", flat=True)) == {Assignment.State.SUBMITTED}
    approve_all(work)
    run_sync(batch)
    assert ProlificSession.objects.get(pk=session.pk).decision == "APPROVE"
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 100}
    assert set(LedgerEntry.objects.filter(assignment__in=work, kind=LedgerEntry.Kind.REWARD).values_list("state", flat=True)) == {LedgerEntry.State.PAID}


def _ledger_paid(batch, kinds=(LedgerEntry.Kind.REWARD, LedgerEntry.Kind.BONUS)):
    entries = LedgerEntry.objects.filter(batch=batch, kind__in=kinds, state=LedgerEntry.State.PAID)
    return int(sum(e.amount for e in entries) * 100)


def test_an_approved_screening_session_books_the_reward_prolific_pays(world):
    from hits.models import HIT
    from hits.prolific.models import ProlificStudy
    from tests.prolific.pd_world import complete, do_hits, publish_study, start

    standin, batch, _ = world
    screening = publish_study(standin, batch, kind=ProlificStudy.Kind.SCREENING)  # reward 0.50 for the whole test
    ProlificStudy.objects.filter(pk=screening.pk).update(hits_per_submission=2)  # the test's two items
    session = start(standin, screening)
    tests = do_hits(session, 2, kind=HIT.Kind.QUALIFICATION)
    HIT.objects.filter(assignments__in=tests).update(reward=0)  # test items pay nothing of their own
    complete(standin, session)
    run_sync(batch)
    approve_all(tests)
    run_sync(batch)
    run_sync(batch)
    paid = paid_to(standin, session.participant_id)
    assert paid == {"rewards": 50, "bonuses": 0} and _ledger_paid(batch) == 50
    assert not ProlificBonus.objects.exists() and not LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PENDING).exists()


def test_the_base_entry_is_the_studys_reward_when_the_hits_reward_was_changed(world):
    from hits.models import HIT

    standin, batch, study = world
    session, work = finished_session(standin, study, 3)
    HIT.objects.filter(assignments__in=work).update(reward=Decimal("0.60"))  # edited after the study was created
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    paid = paid_to(standin, session.participant_id)
    assert paid["rewards"] == 50 and paid["rewards"] + paid["bonuses"] == 180  # every HIT's 0.60, to the cent
    assert _ledger_paid(batch) == 180
    assert not LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PENDING).exists()


def test_a_refused_line_is_flagged_not_resent_and_does_not_block_the_others(world, monkeypatch):
    from hits.prolific.client import ProlificError

    standin, batch, study = world
    refused, refused_work = finished_session(standin, study, 2)
    other, other_work = finished_session(standin, study, 2)
    run_sync(batch)
    approve_all(refused_work + other_work)
    real = Prolific.request
    tried = []

    def request(self, method, path, **kwargs):
        if path == "/submissions/bonus-payments/" and refused.participant_id in kwargs["json"]["csv_bonuses"]:
            tried.append(kwargs["json"]["csv_bonuses"])
            raise ProlificError("refused", status=400, detail={"csv_bonuses": ["participant not eligible"]})
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(Prolific, "request", request)
    for _ in range(3):
        run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, other.participant_id)["bonuses"] == 50
    assert len(tried) == 2 and tried[1] == f"{refused.participant_id},0.50"  # once with the others, once alone
    (flag,) = bonuses.flagged(batch)
    assert flag.csv_bonuses == tried[1] and "not eligible" in flag.last_error and "by hand" in flag.last_error


def test_a_reward_prolific_pays_on_its_own_is_booked_and_flagged(world):
    from hits import payments
    from hits.models import Assignment
    from hits.payouts import paid_by_mturk
    from hits.prolific.models import ProlificSession

    standin, batch, study = world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    payments.reject_assignment(Assignment.objects.get(pk=work[0].pk), "No answer given.", settle=False)  # no category: not sent
    with Prolific() as client:  # Prolific approves the submission itself (e.g. 21 days unreviewed)
        client.request("POST", f"/submissions/{session.session_id}/transition/", json={"action": "APPROVE"}, safe=True)
    run_sync(batch)
    run_sync(batch)
    assert paid_to(standin, session.participant_id) == {"rewards": 50, "bonuses": 0}
    assert _ledger_paid(batch) == 50 and LedgerEntry.objects.filter(batch=batch, kind=LedgerEntry.Kind.FEE, state=LedgerEntry.State.PAID).count() == 1
    (row,) = paid_by_mturk(batch)  # the payout page's "paid by the market on its own" list
    assert row["reward"] == Decimal("0.50") and "Prolific approved" in row["reason"]
    assert ProlificSession.objects.get(pk=session.pk).last_error.startswith("PAID BY PROLIFIC")


def test_two_lost_reply_sets_of_one_participant_are_not_settled_on_one_payment(world):
    from hits import payments
    from hits.models import Assignment

    standin, batch, study = world
    session, work = _approved_session(standin, batch, study, 2)
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "bulk-bonus-payments/.*/pay", "kind": "error", "status": 503, "times": 1})
    run_sync(batch)  # set 1: a 503, Prolific did not pay it
    payments.pay_bonus(Assignment.objects.get(pk=work[0].pk), Decimal("0.50"), "Careful work")
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "bulk-bonus-payments/.*/pay", "kind": "lost_reply", "times": 1})
    run_sync(batch)  # set 2: paid, reply lost
    first, second = ProlificBonus.objects.order_by("pk")
    assert first.state == second.state == ProlificBonus.State.UNKNOWN
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    run_sync(batch)
    assert paid_to(standin, session.participant_id)["bonuses"] == 50  # one of the two was paid
    assert not ProlificBonus.objects.filter(state=ProlificBonus.State.PAID).exists()  # the records prove neither alone
    assert _pay_calls(standin) == 1  # the 503 one was never performed, and neither was sent again


def test_an_unexpected_error_on_one_submission_does_not_stop_the_others(world, monkeypatch):
    from hits.prolific.models import ProlificSession

    standin, batch, study = world
    broken, broken_work = finished_session(standin, study, 1)
    fine, fine_work = finished_session(standin, study, 2)
    run_sync(batch)
    approve_all(broken_work + fine_work)
    real = review.outcome

    def outcome(session):
        if session.pk == broken.pk:
            raise RuntimeError("a bug reading this session")
        return real(session)

    monkeypatch.setattr(review, "outcome", outcome)
    report = run_sync(batch)
    assert ProlificSession.objects.get(pk=fine.pk).decision == "APPROVE"
    assert "a bug reading this session" in ProlificSession.objects.get(pk=broken.pk).last_error and report.failed >= 1
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    assert paid_to(standin, fine.participant_id) == {"rewards": 50, "bonuses": 50}  # its bonuses paid too


def test_the_automatic_approval_never_approves_a_hit_the_researcher_rejects_meanwhile(world, monkeypatch, settings):
    from hits import payments
    from hits.models import Assignment

    standin, batch, study = world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    settings.PROLIFIC_APPROVE_AFTER_HOURS = 0
    real = payments._locked

    def locked(assignment):  # the researcher's rejection commits just before the automatic approval locks the row
        Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.REJECTED, review_message="Copied answers.")
        return real(assignment)

    monkeypatch.setattr(payments, "_locked", locked)
    assert review.approve_due(batch) == 0
    assert Assignment.objects.get(pk=work[0].pk).state == Assignment.State.REJECTED
    assert not LedgerEntry.objects.filter(assignment=work[0]).exists()


@pytest.mark.django_db(transaction=True)
def test_a_sync_of_a_batch_another_process_is_settling_does_nothing(world):
    """PostgreSQL only (SQLite runs one process): the per-batch lock another connection holds."""
    from django.db import connection

    from hits.prolific.sync import BUSY, SETTLE_LOCK

    if connection.vendor != "postgresql":
        pytest.skip("the per-batch lock is PostgreSQL's advisory lock")
    import psycopg

    standin, batch, study = world
    _approved_session(standin, batch, study, 2)
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", [SETTLE_LOCK, batch.pk])
        report = run_sync(batch)
        assert BUSY in report.errors and not ProlificBonus.objects.exists() and _pay_calls(standin) == 0
    report = run_sync(batch)
    assert BUSY not in report.errors and _pay_calls(standin) == 1


def test_a_returned_submission_approved_on_prolific_after_its_bonuses_books_the_extra_reward(world):
    from hits.payouts import paid_by_mturk
    from hits.prolific.models import ProlificSession
    from tests.prolific.pd_world import do_hits, start

    standin, batch, study = world
    session = start(standin, study)
    work = do_hits(session, 2)
    standin.control("POST", f"/__control/submissions/{session.session_id}/return/")
    run_sync(batch)
    approve_all(work)
    run_sync(batch)  # both HITs paid as bonuses (Prolific pays no reward for a returned submission)
    assert _ledger_paid(batch) == 100
    # Prolific approves it later all the same (k+1 rewards paid): the sync mirrors its status
    review.mirror_market_approval(ProlificSession.objects.get(pk=session.pk))
    assert _ledger_paid(batch) == 150 and [r["reward"] for r in paid_by_mturk(batch)] == [Decimal("0.50")]
