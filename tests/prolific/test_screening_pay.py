"""A screening submission's reward pays the whole test: every approved item is booked at the type's HIT reward
and paid by the one submission reward (no bonus), its fee as Prolific charges it on the whole reward (to the
cent, where per-item rounding would differ); the screening study grows for new participants when every qualified
one already had a session of the main study (Prolific's one submission per study)."""

from __future__ import annotations

import json
import secrets
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from hits.models import HIT, LedgerEntry, Qualification
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificSession, ProlificStudy
from hits.prolific.publishing import screening_places
from tests.prolific.pd_world import approve_all, complete, do_hits, run_sync, start, submission, world  # noqa: F401 - world: a fixture

pytestmark = pytest.mark.django_db


def _screening(batch, reward: Decimal, items: int) -> ProlificStudy:
    code = secrets.token_hex(4).upper()
    with Prolific() as client:
        created = client.request("POST", "/studies/", json={
            "name": "Test", "internal_name": f"qapyr-{batch.key}-screening", "description": "The test.",
            "external_study_url": "https://platform.example/prolific/start/", "estimated_completion_time": 4,
            "reward": int(reward * 100), "total_available_places": 3,
            "completion_codes": [{"code": code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        })
        client.request("POST", f"/studies/{created['id']}/transition/", json={"action": "PUBLISH"}, safe=True)
    return ProlificStudy.objects.create(
        batch=batch, task_type=batch.task_type, kind=ProlificStudy.Kind.SCREENING, internal_name=f"qapyr-{batch.key}-screening",
        prolific_id=created["id"], completion_code=code, status="ACTIVE", reward=reward, places=3, hits_per_submission=items,
    )


def test_an_approved_screening_submission_pays_every_item_and_its_fee_as_prolific_charges_it(world, capsys):
    standin, batch, _ = world
    study = _screening(batch, Decimal("0.64"), 2)  # two items at $0.32: 33.33% of $0.64 is $0.21, of $0.32 $0.11
    session = start(standin, study)
    work = do_hits(session, 2, kind=HIT.Kind.QUALIFICATION)
    complete(standin, session)
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    assert submission(standin, session.session_id)["status"] == "APPROVED"
    rewards = LedgerEntry.objects.filter(assignment__in=work, kind=LedgerEntry.Kind.REWARD)
    assert sorted(e.amount for e in rewards) == [Decimal("0.32")] * 2 and {e.state for e in rewards} == {"paid"}
    fees = LedgerEntry.objects.filter(assignment__in=work, kind=LedgerEntry.Kind.FEE)
    assert sum(e.amount for e in fees) == Decimal("0.21") and {e.state for e in fees} == {"paid"}
    assert standin.state()["totals"] == {"rewards": 64, "bonuses": 0, "fees": 21, "vat": 0, "spent": 85}
    Campaign.objects.create(name="S", slug="screen-pay", batch=batch, backend=Campaign.Backend.PROLIFIC)
    with pytest.raises(SystemExit) as ended:
        call_command("prolific_reconcile", "--campaign", "screen-pay", "--format", "json")
        raise SystemExit(0)
    result = json.loads(capsys.readouterr().out)
    assert ended.value.code == 0 and result == {"ledger_total": "0.85", "market_total": "0.85", "currency": "USD", "differences": []}


def test_the_screening_study_grows_for_new_participants_when_qualified_ones_used_their_main_session(world):
    standin, batch, main = world
    screening = _screening(batch, Decimal("1.00"), 2)
    # Two participants passed the test; one already did a session of the main study, one has not yet.
    done, waiting = start(standin, screening), start(standin, screening)
    for session in (done, waiting):
        ProlificSession.objects.filter(pk=session.pk).update(state=ProlificSession.State.COMPLETED)
        Qualification.objects.create(worker=session.worker, task_type=batch.task_type, batch=batch,
                                     state=Qualification.State.QUALIFIED)
    ProlificSession.objects.create(study=main, participant_id=done.participant_id, session_id=secrets.token_hex(12),
                                   worker=done.worker, state=ProlificSession.State.COMPLETED)
    # The main study has 3 places: one taken; the waiting participant can take one; one needs a new participant,
    # who must pass the test first: 2 screening places for it (a test is not passed by everyone).
    assert screening_places(batch, batch.task_type, main, screening, 3) == 2 + 2


def test_a_screening_submission_with_an_item_given_back_is_rejected_and_pays_only_the_items_done(world):
    """3 of 4 items done, the last given back, the submission sent to Prolific anyway: approving it would pay the
    whole test's reward ($1.28) for 3 items; it is rejected (NO_CODE) and the 3 items are paid as bonuses."""
    from hits.models import Assignment

    standin, batch, _ = world
    study = _screening(batch, Decimal("1.28"), 4)
    session = start(standin, study)
    work = do_hits(session, 3, kind=HIT.Kind.QUALIFICATION)
    (back,) = do_hits(session, 1, kind=HIT.Kind.QUALIFICATION)
    Assignment.objects.filter(pk=back.pk).update(state=Assignment.State.RETURNED, submitted_at=None, answers=None)
    HIT.objects.filter(assignments__in=work).update(reward=Decimal("0.32"))
    complete(standin, session)
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    run_sync(batch)
    on_prolific = submission(standin, session.session_id)
    assert on_prolific["status"] == "REJECTED" and on_prolific["rejection_category"] == "NO_CODE"
    assert standin.state()["paid"][session.participant_id] == {"rewards": 0, "bonuses": 96}
    paid = LedgerEntry.objects.filter(assignment__in=work, kind=LedgerEntry.Kind.REWARD, state=LedgerEntry.State.PAID)
    assert sum(e.amount for e in paid) == Decimal("0.96")
