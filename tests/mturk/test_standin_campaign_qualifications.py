"""Qualification per campaign on the MTurk stand-in, through the platform's own publish and mirror: a worker whose
qualification is revoked in campaign A (or whom A's researcher blocks) is refused A's HIT on MTurk but can still
accept campaign B's HIT of the same task type."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from hits import qualifications
from hits.models import Batch, Worker
from hits.mturk.models import MTurkHIT, MTurkQualificationType
from hits.mturk.publishing import publish_batch
from tests.mturk.conftest import make_hit, with_test_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def standin(standin, settings):
    settings.MTURK_LOCALES = []
    settings.MTURK_MIN_APPROVAL_RATE = 0
    return standin


def accept(server, hit_id: str, worker_id: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{server.url}/_standin/worker/accept", json.dumps({"HITId": hit_id, "WorkerId": worker_id}).encode(),
        {"Content-Type": "application/json"}, method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_revoked_or_blocked_in_one_campaign_still_accepts_the_other_campaigns_hit(
    standin, mturk_batch, task_type, django_capture_on_commit_callbacks
):
    task_type.requires_qualification = True
    task_type.save()
    campaign_a = mturk_batch
    campaign_b = Batch.objects.create(name="Campaign B", reference="test:b", backend=Batch.Backend.MTURK_SANDBOX)
    hit_ids = {}
    for batch in (campaign_a, campaign_b):
        with_test_of(batch, task_type)
        hit = make_hit(batch, task_type, max_assignments=3)
        publish_batch(batch)
        hit_ids[batch.pk] = MTurkHIT.objects.get(hit=hit).mturk_hit_id
    assert MTurkQualificationType.objects.filter(batch__isnull=False).values("qualification_type_id").distinct().count() == 2
    revoked = Worker.objects.create(external_id="mturk:AW1", mturk_worker_id="AW1")
    blocked = Worker.objects.create(external_id="mturk:AW2", mturk_worker_id="AW2")
    for worker in (revoked, blocked):
        for batch in (campaign_a, campaign_b):
            with django_capture_on_commit_callbacks(execute=True):
                qualifications.reinstate(worker, task_type, batch, "passed the test")

    with django_capture_on_commit_callbacks(execute=True):
        qualifications.revoke(revoked, task_type, campaign_a, "agreement under the threshold")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.set_batch_blocked(blocked, campaign_a, True, "copied answers")

    for worker_id in ("AW1", "AW2"):
        status, body = accept(standin, hit_ids[campaign_a.pk], worker_id)
        assert (status, body.get("reason")) == (403, "qualification"), body
        status, body = accept(standin, hit_ids[campaign_b.pk], worker_id)
        assert status == 200 and body["AssignmentId"], body
    # A researcher's campaign block is no account-wide block on MTurk.
    with urllib.request.urlopen(f"{standin.url}/_standin/state", timeout=10) as response:
        assert json.loads(response.read())["blocks"] == []

    # Reinstated in A: A's HIT takes them again.
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(revoked, task_type, campaign_a, "appeal accepted")
    status, body = accept(standin, hit_ids[campaign_a.pk], "AW1")
    assert status == 200, body
