"""Issue 38, item 9: a bonus MTurk can never pay does not stay pending forever.

On the stand-in over HTTP: a campaign's HIT is worked, approved and, the campaign finished, deleted on MTurk.
A bonus given afterwards is refused by MTurk (the assignment no longer exists).  Once MTurk's records
(ListBonusPayments) show it unpaid, it leaves the pending list and is shown on the payout page with MTurk's
reason; no sync sends it again.  While those records cannot be read, it stays pending (never settled blind).
"""

from __future__ import annotations

import json
import urllib.request
from decimal import Decimal

import pytest
from django.utils import timezone

from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch
from hits.mturk.sync import sync_batch
from hits.payments import approve_assignment, pay_bonus
from tests.mturk.conftest import make_hit
from tests.mturk.test_misbehaving_market import mturk_campaign  # noqa: F401 - the researcher's MTurk campaign

pytestmark = pytest.mark.django_db

WORKER = "AWORKER1"


def _post(url: str, body: bytes, content_type: str) -> bytes:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def _state(server) -> dict:
    with urllib.request.urlopen(f"{server.url}/_standin/state", timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture
def worked_and_deleted(standin, mturk_campaign, settings):  # noqa: F811
    """One HIT published on the stand-in, done by one MTurk worker (accepted and submitted there, the answers
    stored as the HIT page stores them), approved, and deleted on MTurk once the campaign finished."""
    settings.MTURK_MAX_RETRIES = 0
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    campaign, batch, client = mturk_campaign
    kind = TaskType.objects.create(slug="t", name="Label it", description="Label one thing.", keywords="label", assignment_duration=600)
    hit = make_hit(batch, kind, max_assignments=1)
    assert publish_batch(batch).published == 1
    published = MTurkHIT.objects.get(hit=hit)
    accepted = json.loads(_post(f"{standin.url}/_standin/worker/accept",
                                json.dumps({"HITId": published.mturk_hit_id, "WorkerId": WORKER}).encode(), "application/json"))
    _post(f"{standin.url}/mturk/externalSubmit", f"assignmentId={accepted['AssignmentId']}&answer=x".encode(),
          "application/x-www-form-urlencoded")
    worker = Worker.objects.create(external_id=f"mturk:{WORKER}", mturk_worker_id=WORKER)
    now = timezone.now()
    HIT.objects.filter(pk=hit.pk).update(n_taken=1, n_submitted=1, state=HIT.State.COMPLETED)
    work = Assignment.objects.create(hit=hit, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now, expires_at=now,
                                     submitted_at=now, answers={"ok": True}, work_seconds=60)
    MTurkAssignment.objects.create(mturk_assignment_id=accepted["AssignmentId"], mturk_hit=published, assignment=work,
                                   mturk_worker_id=WORKER, submit_to=standin.url)
    approve_assignment(work, "Thanks.", settle=False)
    Batch.objects.filter(pk=batch.pk).update(state=Batch.State.FINISHED)
    report = sync_batch(batch)
    assert (report.approved, report.deleted) == (1, 1), report.errors
    return campaign, batch, client, work


def _send_bonus_requests(server) -> int:
    return _state(server)["requests"].get("SendBonus", 0)


def test_a_bonus_after_the_hit_is_deleted_leaves_the_pending_list_with_mturks_reason(standin, worked_and_deleted):
    campaign, batch, client, work = worked_and_deleted
    bonus = pay_bonus(work, Decimal("0.50"), "Careful work")
    sync_batch(batch)
    bonus.refresh_from_db()
    assert bonus.state == "refused" and "does not exist" in bonus.error
    assert _state(standin)["bonuses"] == []  # nothing was paid

    page = client.get(f"/campaigns/{campaign.slug}/payouts/").content.decode()
    assert "Bonuses MTurk can no longer pay (1)" in page
    assert "Careful work" in page and "MTurk can no longer pay this bonus" in page and "does not exist" in page
    assert '<strong id="total-owed">$0.00</strong>' in page  # the reward is paid; the refused bonus is not owed
    progress = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "bonus $0.50" not in progress  # no longer "not done yet (the next sync tries again)"
    work.refresh_from_db()
    assert work.bonus == Decimal("0.00")

    sent = _send_bonus_requests(standin)
    sync_batch(batch)
    assert _send_bonus_requests(standin) == sent  # never sent again


def test_the_bonus_stays_pending_while_mturks_records_cannot_be_read(standin, worked_and_deleted):
    campaign, batch, client, work = worked_and_deleted
    standin.inject("ListBonusPayments", "service_fault", count=None)
    bonus = pay_bonus(work, Decimal("0.50"), "Careful work")
    sync_batch(batch)
    bonus.refresh_from_db()
    assert bonus.state == "pending" and "does not exist" in bonus.error
    page = client.get(f"/campaigns/{campaign.slug}/payouts/").content.decode()
    assert "can no longer pay" not in page and '<strong id="total-owed">$0.50</strong>' in page

    standin.clear_faults()
    sync_batch(batch)
    bonus.refresh_from_db()
    assert bonus.state == "refused"
    assert "Bonuses MTurk can no longer pay (1)" in client.get(f"/campaigns/{campaign.slug}/payouts/").content.decode()
