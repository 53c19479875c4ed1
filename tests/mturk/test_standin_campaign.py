"""A whole campaign on the MTurk stand-in, over HTTP with the real boto3 client: published, worked by simulated
MTurk workers through the framed pages and MTurk's externalSubmit, synced, reviewed (one rejection, one bonus),
expired and finished.  At the end the stand-in's charges equal the platform's ledger to the cent, nothing is
paid twice, a submission made straight to MTurk is rejected before MTurk pays it, and no forged page reached
gold."""

from __future__ import annotations

import json
import urllib.request
from decimal import Decimal

import pytest

from annotation.management.simulation import simulate_mturk_crowd
from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, Verification
from annotation.services.campaign_import import import_campaign
from annotation.selectors.campaigns import campaign_progress
from annotation.services.costs import campaign_cost_preview
from annotation.services.pipeline import launch_campaign
from hits.models import Assignment, LedgerEntry
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkUnknownSubmission
from hits.mturk.reconcile import reconcile_batch
from hits.mturk.sync import sync_batch
from hits import payments
from hits.payments import pay_bonus, reject_assignment


@pytest.fixture
def standin(standin, settings):
    settings.MTURK_CONFIRM_GRACE = 0  # what MTurk does not have is discarded at the next sync
    settings.MTURK_APPROVE_AFTER_HOURS = 1000  # reviews wait until the work is done
    return standin


def _state(server) -> dict:
    with urllib.request.urlopen(f"{server.url}/_standin/state", timeout=30) as response:
        return json.loads(response.read())


def _assignments(state: dict) -> dict:
    return {a["AssignmentId"]: a for a in state["assignments"]}


def _straight_to_mturk(server, hit_id: str, worker_id: str) -> str:
    """A worker accepts on MTurk and posts externalSubmit without ever using our page."""
    request = urllib.request.Request(
        f"{server.url}/_standin/worker/accept", data=json.dumps({"HITId": hit_id, "WorkerId": worker_id}).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assignment_id = json.loads(response.read())["AssignmentId"]
    submit = urllib.request.Request(
        f"{server.url}/mturk/externalSubmit", data=f"assignmentId={assignment_id}&answer=anything".encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"}, method="POST",
    )
    with urllib.request.urlopen(submit, timeout=30):
        pass
    return assignment_id


@pytest.mark.django_db(transaction=True)
def test_a_campaign_runs_on_the_standin_and_the_money_reconciles(standin, small_files, eager_celery, settings):
    refs, sums = small_files
    campaign = import_campaign(name="Rehearsal", references=refs, summaries=sums).campaign
    # The fixed rule (3 judges on every presence HIT): the preview's figures are then exact counts.
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX, presence_judges="fixed")
    campaign.refresh_from_db()
    preview = campaign_cost_preview(campaign)
    launch_campaign(campaign)  # the generation HITs are published on the stand-in after the commit
    campaign.refresh_from_db()
    assert MTurkHIT.objects.filter(hit__batch=campaign.batch).exists()
    first_hit = MTurkHIT.objects.filter(hit__batch=campaign.batch).order_by("pk").first().mturk_hit_id

    stranger = _straight_to_mturk(standin, first_hit, "ASTRANGER1")
    report = simulate_mturk_crowd(campaign, 6, standin_url=standin.url, seed=3, forged=2, max_seconds=600)
    assert report.campaign_state == "finished", report.lines()
    assert report.mturk.forged >= 1 and report.mturk.submitted > 0

    # The submission made straight to MTurk is rejected, with the reason, before MTurk could pay it.
    unknown = MTurkUnknownSubmission.objects.get(mturk_assignment_id=stranger)
    assert unknown.rejected_at is not None
    assert _assignments(_state(standin))[stranger]["AssignmentStatus"] == "Rejected"

    # No forged page reached gold: its work was discarded, and nothing of it is a QA pair, verdict or label.
    forged = Assignment.objects.filter(worker__external_id__startswith="mturk:FAKE")
    assert forged.exists() and set(forged.values_list("state", flat=True)) == {"discarded"}
    fakes = list(forged.values_list("worker_id", flat=True))
    assert not ContentUnit.objects.filter(author_id__in=fakes).exists()
    assert not Verification.objects.filter(worker_id__in=fakes).exists()
    assert not PresenceJudgment.objects.filter(worker_id__in=fakes).exists()
    assert GoldPresence.objects.filter(summary__system__campaign=campaign).exists()

    # Review: one rejection and one bonus; the rest is approved by the sync.
    records = list(MTurkAssignment.objects.filter(mturk_hit__hit__batch=campaign.batch, assignment__state="submitted").order_by("pk"))
    reject_assignment(records[0].assignment, "Answers do not match the sentence.")
    bonus = pay_bonus(records[1].assignment, Decimal("0.25"), "Careful work")
    settings.MTURK_APPROVE_AFTER_HOURS = 0
    final = sync_batch(campaign.batch)
    assert final.failed == 0, final.errors
    assert sync_batch(campaign.batch).failed == 0  # a second sync pays nothing again

    state = _state(standin)
    statuses = {a: item["AssignmentStatus"] for a, item in _assignments(state).items()}
    assert statuses[records[0].mturk_assignment_id] == "Rejected"
    assert all(statuses[r.mturk_assignment_id] == "Approved" for r in records[1:])
    # The stand-in's charges equal the platform's ledger, to the cent.
    paid = LedgerEntry.objects.filter(batch=campaign.batch, state=LedgerEntry.State.PAID)
    assert Decimal(state["total_charged"]) == sum(paid.values_list("amount", flat=True)) > 0
    assert not LedgerEntry.objects.filter(batch=campaign.batch, state=LedgerEntry.State.PENDING).exists()
    # The cost preview lands within 2% of what MTurk charged for the work: the researcher's bonus aside and the
    # rejected assignment counted as paid (review decisions the preview cannot know).  Before launch it assumes
    # 10% of predicates go round again; the crowd's redo share is known only once work is in, so the same
    # preview is asked again at the redo share observed (as the progress page's updated estimate does).
    rejected = records[0].assignment
    work = (Decimal(state["total_charged"]) - bonus.amount - bonus.fee.amount
            + payments.reward_of(rejected) + payments.reward_fee(rejected))
    progress = campaign_progress(campaign)
    observed = progress["stages"]["generation"]["redo"] / progress["settled"]
    assert preview.total < work or observed <= 0.10
    updated = campaign_cost_preview(campaign, redo_share=observed)
    assert abs(updated.total - work) / work <= Decimal("0.02"), (updated.as_dict(), work)
    # Nothing paid twice: one reward per assignment on both sides, and the bonus once.
    rewards = [entry["AssignmentId"] for entry in state["ledger"] if entry["kind"] == "reward"]
    assert len(rewards) == len(set(rewards)) == len(records) - 1
    assert [entry["amount"] for entry in state["ledger"] if entry["kind"] == "bonus"] == [str(bonus.amount)]
    # Finished: every HIT is expired on MTurk (and deleted where all its work is reviewed).
    assert not MTurkHIT.objects.filter(hit__batch=campaign.batch, expired_at__isnull=True, deleted_at__isnull=True).exists()
    # mturk_reconcile finds no difference, deleted HITs read from the records kept.
    reconciled = reconcile_batch(campaign.batch)
    assert reconciled.differences == [], reconciled.differences
    assert reconciled.ledger_total == reconciled.market_total == Decimal(state["total_charged"])


@pytest.mark.django_db(transaction=True)
def test_simulate_crowd_rehearses_an_mturk_campaign_on_the_standin(standin, small_files, eager_celery, capsys):
    from django.core.management import call_command

    refs, sums = small_files
    campaign = import_campaign(name="Command", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX)
    call_command("simulate_crowd", campaign=campaign.slug, workers=5, backend="mturk", forged=1, seed=1, max_seconds=300)
    out = capsys.readouterr().out
    assert "on the MTurk stand-in:" in out and "campaign finished" in out
    assert json.loads(urllib.request.urlopen(f"{standin.url}/_standin/state", timeout=30).read())["hits"]


@pytest.mark.django_db
def test_simulate_crowd_on_mturk_says_what_it_needs(small_files, settings):
    from django.core.management import CommandError, call_command

    refs, sums = small_files
    campaign = import_campaign(name="Needs", references=refs, summaries=sums).campaign
    settings.MTURK_ENDPOINT_URL = ""
    with pytest.raises(CommandError, match="MTURK_ENDPOINT_URL"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="mturk")
    settings.MTURK_ENDPOINT_URL = "http://127.0.0.1:9"
    with pytest.raises(CommandError, match="local workers"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="mturk")
