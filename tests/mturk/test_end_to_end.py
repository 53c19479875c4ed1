"""A whole campaign on (stubbed) MTurk: publish, MTurk workers on the framed page, sync into gold data, approve, pay.

MTurk is a botocore Stubber on the real boto3 client; each step queues the
exact calls it must make.  Workers open the framed HIT page as MTurk would
load it, and submit the answers the simulated crowd would give.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Campaign, GoldPresence, PresenceJudgment, SystemSummary
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.management.simulation import Answerer
from hits.models import HIT, Assignment, LedgerEntry
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch, request_token
from hits.mturk.sync import needs_listing, past_expiry, sync_batch
from hits.payments import pay_bonus

pytestmark = pytest.mark.django_db

SUBMIT_TO = "https://workersandbox.mturk.com"
QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
    "<ExternalURL>https://studio.example.org/work/mturk/hit/</ExternalURL><FrameHeight>900</FrameHeight></ExternalQuestion>"
)
STAGES = {
    "generation": ("Write questions and answers", "0.32", 1200),
    "verification": ("Check questions and answers", "0.17", 900),
    "presence": ("Is it in the summary?", "0.20", 900),
}
KEYWORDS = {
    "generation": "writing, questions, language, summarization",
    "verification": "checking, questions, language, summarization",
    "presence": "reading, judging, summarization",
}


@pytest.fixture(autouse=True)
def mturk_settings(settings):
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_FRAME_HEIGHT = 900
    settings.MTURK_LOCALES = []
    settings.MTURK_MIN_APPROVAL_RATE = 0
    settings.MTURK_APPROVE_AFTER_HOURS = 0
    settings.SUBMIT_RATE_LIMIT = "0/60"


def expect_publish(stub, batch) -> list[HIT]:
    """Queue GetAccountBalance and one exact CreateHIT per unpublished open HIT; returns those HITs."""
    hits = list(HIT.objects.filter(batch=batch, state="open", mturk__isnull=True).select_related("task_type").order_by("pk"))
    if not hits:
        return hits
    stub.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})
    for hit in hits:
        title, reward, duration = STAGES[hit.task_type.slug]
        stub.add_response("create_hit", {"HIT": {"HITId": f"H{hit.pk}", "HITTypeId": f"T{hit.task_type.slug}"}}, {
            "Title": title, "Description": hit.task_type.description, "Keywords": KEYWORDS[hit.task_type.slug],
            "Reward": reward, "MaxAssignments": hit.max_assignments, "AssignmentDurationInSeconds": duration,
            "LifetimeInSeconds": 604800, "AutoApprovalDelayInSeconds": 259200, "Question": QUESTION,
            "RequesterAnnotation": request_token(hit), "UniqueRequestToken": request_token(hit),
        })
    return hits


def work_on(client, hit: HIT, answerer: Answerer, counter: list[int]) -> None:
    """MTurk workers accept the HIT until it is complete; each loads the framed page, then submits."""
    published = hit.mturk
    url = reverse("mturk-hit")
    for n in range(1, 9):
        hit.refresh_from_db()
        if hit.state != "open" or hit.n_taken >= hit.max_assignments:  # every place taken (pending until MTurk lists it)
            return
        worker_id, assignment_id = f"W{n}", f"A{counter[0]}"
        page = client.get(url, {"assignmentId": assignment_id, "hitId": published.mturk_hit_id, "workerId": worker_id, "turkSubmitTo": SUBMIT_TO})
        if page.status_code == 403:  # e.g. the writer may not verify their own questions: the next worker tries
            continue
        assert page.status_code == 200, page.content[:300]
        counter[0] += 1
        answers = getattr(answerer, hit.task_type.slug)(hit, worker_id, careless=False)
        record = MTurkAssignment.objects.get(mturk_assignment_id=assignment_id)
        done = client.post(url, {**answers, "hitId": published.mturk_hit_id, "assignmentId": assignment_id, "workerId": worker_id, "token": str(record.assignment.token)})
        assert done.status_code == 200, done.content[:500]
        assert f'action="{SUBMIT_TO}/mturk/externalSubmit"' in done.content.decode()
    raise AssertionError(f"HIT {hit.pk} could not be completed")


def confirm_by_sync(stub, batch) -> None:
    """The sync lists every HIT that may change; MTurk shows each submission as its own worker's, so the
    pending submissions are confirmed and count from now on (the next stage's HITs appear)."""
    for item in needs_listing(batch):
        mine = list(MTurkAssignment.objects.filter(mturk_hit=item).order_by("pk"))
        stub.add_response("list_assignments_for_hit", {"NumResults": len(mine), "Assignments": [
            {"AssignmentId": r.mturk_assignment_id, "WorkerId": r.mturk_worker_id, "HITId": item.mturk_hit_id, "AssignmentStatus": "Submitted"}
            for r in mine
        ]}, {"HITId": item.mturk_hit_id, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
    pending = Assignment.objects.filter(hit__batch=batch, state="pending").count()
    report = sync_batch(batch)
    assert report.confirmed == pending and report.discarded == 0 and report.failed == 0, report


def test_campaign_runs_on_mturk_from_publish_to_payment(stubbed, small_files, client, django_capture_on_commit_callbacks, settings):
    refs, sums = small_files
    campaign = import_campaign(name="On MTurk", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend="mturk-sandbox")
    campaign.refresh_from_db()
    # Launch: the generation HITs are published after the commit, through the Celery task (eager here).
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        launch_campaign(campaign)
    campaign.refresh_from_db()
    batch = campaign.batch
    assert batch.backend == "mturk-sandbox"
    generation = expect_publish(stubbed, batch)
    assert generation and {h.task_type.slug for h in generation} == {"generation"}
    for callback in callbacks:
        callback()
    assert MTurkHIT.objects.count() == len(generation)

    answerer = Answerer(random.Random(5), accuracy=1.0)
    counter = [1]
    settings.MTURK_APPROVE_AFTER_HOURS = 1000  # reviews wait for the end
    for _ in range(12):  # stages (and any redo round) until nothing is open
        open_hits = list(HIT.objects.filter(batch=batch, state="open", mturk__isnull=False).order_by("pk"))
        if not open_hits:
            break
        for hit in open_hits:
            work_on(client, hit, answerer, counter)
        # Nothing a worker submitted counts before MTurk confirms it: no QA pair, judgment or new HIT yet.
        assert not HIT.objects.filter(batch=batch, state="open", mturk__isnull=True).exists()
        confirm_by_sync(stubbed, batch)
        expect_publish(stubbed, batch)
        publish_batch(batch)
    settings.MTURK_APPROVE_AFTER_HOURS = 0
    campaign.refresh_from_db()
    assert campaign.state == "finished"
    # Gold data comes from the answers our page stored: three judgments per unit and summary, and a crowd label.
    for summary in SystemSummary.objects.filter(system__campaign=campaign):
        units = GoldPresence.objects.filter(summary=summary).count()
        assert units > 0 and PresenceJudgment.objects.filter(summary=summary).count() == 3 * units

    records = list(MTurkAssignment.objects.select_related("mturk_hit", "assignment").order_by("pk"))
    bonus = pay_bonus(records[0].assignment, Decimal("0.25"), "Thorough questions")
    # The sync: every HIT's assignments (one page each), approvals, the bonus, then expiry and deletion.
    published = list(MTurkHIT.objects.order_by("pk"))
    for item in published:
        mine = [r for r in records if r.mturk_hit_id == item.pk]
        stubbed.add_response("list_assignments_for_hit", {"NumResults": len(mine), "Assignments": [
            {"AssignmentId": r.mturk_assignment_id, "WorkerId": r.mturk_worker_id, "HITId": item.mturk_hit_id, "AssignmentStatus": "Submitted"}
            for r in mine
        ]}, {"HITId": item.mturk_hit_id, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
    for r in records:
        stubbed.add_response("approve_assignment", {}, {"AssignmentId": r.mturk_assignment_id, "RequesterFeedback": "Thank you for your work."})
    stubbed.add_response("send_bonus", {}, {
        "WorkerId": records[0].mturk_worker_id, "BonusAmount": "0.25", "AssignmentId": records[0].mturk_assignment_id,
        "Reason": "Thorough questions", "UniqueRequestToken": bonus.request_token,
    })
    for item in published:
        stubbed.add_response("update_expiration_for_hit", {}, {"HITId": item.mturk_hit_id, "ExpireAt": past_expiry(1)})
        stubbed.add_response("delete_hit", {}, {"HITId": item.mturk_hit_id})
    report = sync_batch(batch)
    assert (report.approved, report.bonuses, report.deleted, report.unknown) == (len(records), 1, len(published), 0), report

    assert not Assignment.objects.exclude(state="approved").filter(hit__batch=batch).exists()
    assert set(LedgerEntry.objects.values_list("state", flat=True)) == {"paid"}
    rewards = LedgerEntry.objects.filter(kind="reward")
    assert rewards.count() == len(records) == Assignment.objects.filter(hit__batch=batch).count()
    expected = sum(Decimal(STAGES[r.assignment.hit.task_type.slug][1]) for r in records)
    assert sum(rewards.values_list("amount", flat=True)) == expected
    # One MTurk HIT per local HIT, never two.
    assert MTurkHIT.objects.count() == HIT.objects.filter(batch=batch).count()
