"""Sessions priced as Prolific prices them (issue 38, finding 1 and item 1): a main study's ``reward`` and
``estimated_completion_time`` describe the whole session, so Prolific's reward per hour (reward over completion
time, bonuses apart) meets its minimum; the ledger books the reward over the session's HITs to the cent, and a
session the platform cut short is paid its whole reward, the unused share a line of its own."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.services.task_types import task_type
from hits.handlers import task_handler
from hits.models import Assignment, LedgerEntry
from hits.prolific import fees, pricing
from hits.prolific.client import Prolific
from hits.prolific.reconcile import reconcile_batch
from tests.prolific.pd_world import REWARD, approve_all, finished_session, make_batch, paid_to, publish_study, run_sync

pytestmark = pytest.mark.django_db

SIZE = 3


def test_an_imported_campaigns_dry_run_pays_the_minimum_per_hour_for_the_whole_session(small_files, capsys, settings):
    """Finding 1: the study's reward over its estimated time is Prolific's reward per hour, and a submission is a
    whole session: on the old code the body said 27 cents for 2 minutes for a session of 6 presence HITs
    (12 minutes), $1.35 an hour."""
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.PROLIFIC_API_TOKEN = ""
    refs, sums = small_files
    call_command("import_campaign", name="Pro", references=str(refs), summaries=str(sums), market="prolific")
    capsys.readouterr()
    call_command("prolific_publish", campaign="pro", dry_run=True, format="json")  # refused by nothing
    dry = json.loads(capsys.readouterr().out)
    bodies = [r["body"] for r in dry["requests"] if r["path"] == "/api/v1/studies/"]
    assert bodies
    assert dry["currency"] == "USD"  # no token: the default, said; with one, the workspace's (test_currency_and_fees)
    minimum = Decimal(str(settings.PROLIFIC_MIN_HOURLY_USD))
    for body in bodies:
        slug = body["internal_name"].split("-")[-2]
        size = pricing.hits_per_submission(task_type(slug))
        hit_minutes = task_handler(slug).protocol_minutes  # the protocol's figure: no work measured yet
        session_minutes = size * hit_minutes
        # The estimate is the whole session's, and the reward over it meets the minimum.
        assert body["estimated_completion_time"] >= session_minutes, body["internal_name"]
        assert Decimal(body["reward"]) / 100 * 60 >= minimum * body["estimated_completion_time"], body["internal_name"]
        assert Decimal(body["reward"]) / 100 * 60 >= minimum * Decimal(str(session_minutes))
        # Prolific's least maximum for the estimate X (2 + X + 2 sqrt(X)), and room for each HIT at its own limit.
        estimate = body["estimated_completion_time"]
        assert body["maximum_allowed_time"] >= 2 + estimate + 2 * math.sqrt(estimate)
        assert body["maximum_allowed_time"] >= size * math.ceil(task_type(slug).assignment_duration / 60)
    for rate in dry["hourly"]:  # every stage, as its session
        size = pricing.hits_per_submission(task_type(rate["task_type"]))
        assert rate["passes"] and rate["minutes"] >= size * task_handler(rate["task_type"]).protocol_minutes
        assert Decimal(rate["session_reward"]) == Decimal(rate["reward"]) * size


@pytest.fixture
def sized(prolific_standin, settings):
    """A study whose session is SIZE HITs of REWARD: its reward is SIZE x REWARD (as the publish prices it)."""
    settings.PROLIFIC_APPROVE_AFTER_HOURS = 1000
    batch = make_batch("pd-session")
    study = publish_study(prolific_standin, batch, reward=REWARD * SIZE, hits_per_submission=SIZE)
    return prolific_standin, batch, study


def _paid_entries(session):
    return list(LedgerEntry.objects.filter(assignment__worker=session.worker, state=LedgerEntry.State.PAID).order_by("pk"))


def _reviewed(standin, batch, study, done, approve=None):
    session, work = finished_session(standin, study, done)
    run_sync(batch)  # confirmed
    from hits import payments

    approve_all(work[:approve] if approve is not None else work)
    for assignment in Assignment.objects.filter(pk__in=[a.pk for a in work[approve:]] if approve is not None else []):
        payments.reject_assignment(assignment, "Not done as the instructions say.", settle=False)
    report = run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    return session, work, report


def test_a_full_session_is_paid_by_its_reward_alone_each_hit_its_share(sized):
    standin, batch, study = sized
    session, work, report = _reviewed(standin, batch, study, SIZE)
    assert report.approved == 1 and report.bonuses == 0  # no bulk bonus: the reward pays the session
    entries = _paid_entries(session)
    rewards = [e for e in entries if e.kind == LedgerEntry.Kind.REWARD]
    assert [e.amount for e in rewards] == [REWARD] * SIZE
    assert sum(e.amount for e in entries if e.kind != LedgerEntry.Kind.FEE) == study.reward
    # Prolific's fee on the reward, once, spread over the HITs to the cent.
    assert sum(e.amount for e in entries if e.kind == LedgerEntry.Kind.FEE) == fees.fee(study.reward, fees.fee_rate(batch))
    assert paid_to(standin, session.participant_id) == {"rewards": 150, "bonuses": 0}
    result = reconcile_batch(batch, save=False)
    assert result.differences == [] and result.ledger_total == result.market_total == Decimal("2.00")


def test_a_session_cut_short_by_the_platform_is_paid_its_whole_reward_the_rest_booked_as_such(sized):
    standin, batch, study = sized
    session, work, _ = _reviewed(standin, batch, study, 1)  # the platform had one HIT for it
    entries = _paid_entries(session)
    unused = [e for e in entries if e.reason.startswith(pricing.UNUSED_SHARE)]
    assert [e.amount for e in unused] == [REWARD * (SIZE - 1)]
    assert unused[0].kind == LedgerEntry.Kind.BONUS and unused[0].fee.state == LedgerEntry.State.PAID
    # The HIT's share and the unused share add up to the reward Prolific paid, fees to Prolific's fee on it.
    assert sum(e.amount for e in entries if e.kind != LedgerEntry.Kind.FEE) == study.reward == Decimal("1.50")
    assert sum(e.amount for e in entries if e.kind == LedgerEntry.Kind.FEE) == fees.fee(study.reward, fees.fee_rate(batch))
    assert paid_to(standin, session.participant_id) == {"rewards": 150, "bonuses": 0}
    result = reconcile_batch(batch, save=False)
    assert result.differences == [] and result.ledger_total == result.market_total == Decimal("2.00")
    # Nothing more is sent as a bonus, and the budget cap does not count the line twice (the study's place has it).
    run_sync(batch)
    assert paid_to(standin, session.participant_id)["bonuses"] == 0
    assert fees.committed(batch) == study.places * (study.reward + fees.fee(study.reward, fees.fee_rate(batch))) == Decimal("10.00")


def test_hits_rejected_in_an_approved_submission_are_paid_by_its_reward_and_said_so(sized):
    standin, batch, study = sized
    session, work, _ = _reviewed(standin, batch, study, SIZE, approve=2)
    entries = _paid_entries(session)
    line = [e for e in entries if e.reason.startswith(pricing.REJECTED_SHARE)]
    assert [e.amount for e in line] == [REWARD]
    assert sum(e.amount for e in entries if e.kind != LedgerEntry.Kind.FEE) == study.reward
    assert reconcile_batch(batch, save=False).differences == []


def test_hits_beyond_the_sessions_reward_are_paid_as_bonuses(sized):
    standin, batch, study = sized
    session, work, report = _reviewed(standin, batch, study, SIZE + 1)
    assert paid_to(standin, session.participant_id) == {"rewards": 150, "bonuses": 50}
    entries = _paid_entries(session)
    assert not [e for e in entries if e.reason.startswith((pricing.UNUSED_SHARE, pricing.REJECTED_SHARE))]
    assert reconcile_batch(batch, save=False).differences == []


def test_the_standin_shows_pay_per_hour_as_prolific_computes_it_and_sets_the_least_maximum(prolific_standin):
    """The study object's reward per hour: its reward over the estimate, then over the median completion time;
    with no ``maximum_allowed_time`` given, Prolific's least for the estimate (2 + X + 2 sqrt(X))."""
    with Prolific() as client:
        created = client.request("POST", "/studies/", json={
            "name": "Label things", "internal_name": "rates", "description": "Label things.",
            "external_study_url": "https://platform.example/prolific/start/", "estimated_completion_time": 12,
            "reward": 192, "total_available_places": 3,
            "completion_codes": [{"code": "C0DE", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        })
        assert created["maximum_allowed_time"] == 21 and created["estimated_reward_per_hour"] == 960
        assert "average_reward_per_hour" not in created
        client.request("POST", f"/studies/{created['id']}/transition/", json={"action": "PUBLISH"}, safe=True)
        for minutes in (10, 16, 30):  # the median, 16 minutes, is what Prolific divides by
            started = prolific_standin.control("POST", "/__control/participants/", {"study_id": created["id"]})
            prolific_standin.control("POST", "/__control/clock/", {"advance_seconds": minutes * 60})
            prolific_standin.control("POST", f"/__control/submissions/{started['session_id']}/complete/", {"code": "C0DE"})
        shown = client.get(f"/studies/{created['id']}/")
    assert shown["average_completion_time"] == 16 and shown["average_reward_per_hour"] == 720  # $7.20/h: underpaying


def test_the_sync_flags_a_study_prolific_shows_paying_under_its_minimum(sized):
    """Participants slower than the estimate: Prolific's average reward per hour (the reward over the median
    completion time) falls under its minimum, and the sync says so on the study and in its report."""
    from tests.prolific.pd_world import complete, start

    standin, batch, study = sized  # $1.50 for 6 minutes: $15.00/h as estimated
    session = start(standin, study)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 16 * 60})  # 16 minutes: 562 cents an hour
    complete(standin, session)
    report = run_sync(batch)
    study.refresh_from_db()
    assert study.last_error.startswith("UNDERPAYING: Prolific shows study") and "$5.62/h" in study.last_error
    assert any("under its minimum of $8.00/h" in error for error in report.errors)
    assert not any("UNDERPAYING" in error for error in run_sync(batch).errors)  # said once; kept on the study
    study.refresh_from_db()
    assert study.last_error.startswith("UNDERPAYING")
