"""Messages to MTurk workers over HTTP against the stand-in (issue 40): NotifyWorkers 100 workers a call, MTurk's
per-worker failures kept per worker, a lost answer "unknown", and a worker who did not come from MTurk failed
without a call."""

from __future__ import annotations

import json
import urllib.request
from decimal import Decimal

import pytest

from hits import messaging
from hits.models import MessageRecipient, Worker
from hits.mturk.client import MTurk
from tests.mturk.conftest import make_hit, submitted_assignment

pytestmark = pytest.mark.django_db
QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
    "<ExternalURL>https://studio.example.org/work/mturk/hit/</ExternalURL><FrameHeight>900</FrameHeight></ExternalQuestion>"
)


def _control(standin, method, path, body=None) -> dict:
    request = urllib.request.Request(f"{standin.url}/_standin{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _crowd(standin, batch, task_type, reviewed: int, unreviewed: int = 0) -> list[Worker]:
    """Workers who did a HIT of the batch here and on the stand-in: ``reviewed`` of them approved there (MTurk
    notifies only workers whose work the requester reviewed), ``unreviewed`` only submitted."""
    mturk = MTurk(sandbox=True)
    hit_id = mturk.call("CreateHIT", Title="Label it", Description="Label one thing.", Reward="0.01",
                        MaxAssignments=reviewed + unreviewed, LifetimeInSeconds=86400, AssignmentDurationInSeconds=600,
                        AutoApprovalDelayInSeconds=86400, Question=QUESTION)["HIT"]["HITId"]
    hit = make_hit(batch, task_type, max_assignments=reviewed + unreviewed, reward=Decimal("0.01"))
    workers = []
    for i in range(reviewed + unreviewed):
        worker_id = f"AW{i:04d}"
        assignment_id = standin.accept(hit_id, worker_id)["AssignmentId"]
        standin.submit(assignment_id, [("label", "yes")])
        if i < reviewed:
            standin.call("ApproveAssignment", {"AssignmentId": assignment_id})
        worker = Worker.objects.create(external_id=f"mturk:{worker_id}", mturk_worker_id=worker_id)
        submitted_assignment(hit, worker)
        workers.append(worker)
    return workers


def _statuses(message) -> dict:
    return dict(MessageRecipient.objects.filter(message=message).values_list("worker__external_id", "status"))


def test_more_than_100_workers_go_in_calls_of_100_and_refusals_stay_per_worker(standin, mturk_batch, task_type, researcher,
                                                                               eager_celery, django_capture_on_commit_callbacks):
    _crowd(standin, mturk_batch, task_type, reviewed=149, unreviewed=1)
    stranger = Worker.objects.create(external_id="local-ann")  # in the batch, but not an MTurk worker
    submitted_assignment(make_hit(mturk_batch, task_type), stranger)
    workers = messaging.batch_workers(mturk_batch)
    # 151 workers: recorded now, sent by the background job after the commit (run here in-process).
    with django_capture_on_commit_callbacks(execute=True):
        message = messaging.send_message(mturk_batch, researcher, "New HITs", "More work is up.", workers)

    state = _control(standin, "GET", "/state")
    assert state["requests"]["NotifyWorkers"] == 2
    calls = state["notifications"]
    assert [len(c["delivered"]) + len(c["failed"]) for c in calls] == [100, 50]
    assert {(c["Subject"], c["MessageText"]) for c in calls} == {("New HITs", "More work is up.")}
    statuses = _statuses(message)
    assert statuses.pop("mturk:AW0149") == "failed" and statuses.pop("local-ann") == "failed"
    assert set(statuses.values()) == {"sent"} and len(statuses) == 149
    refused = MessageRecipient.objects.get(message=message, worker__external_id="mturk:AW0149")
    assert refused.code == "HardFailure" and "approved or rejected" in refused.detail
    assert MessageRecipient.objects.get(message=message, worker=stranger).code == "no-mturk-id"


def test_a_lost_answer_leaves_its_workers_unknown_and_the_others_sent(standin, mturk_batch, task_type, researcher, settings):
    settings.MTURK_MAX_RETRIES = 0
    workers = _crowd(standin, mturk_batch, task_type, reviewed=3)
    # Both tries of the call lose their answer: MTurk may well have notified them.
    _control(standin, "POST", "/faults", {"operation": "NotifyWorkers", "kind": "lost_reply", "count": 2})
    message = messaging.send_message(mturk_batch, researcher, "Hi", "Hello.", workers[:2])
    assert set(_statuses(message).values()) == {"unknown"}
    assert len(_control(standin, "GET", "/state")["notifications"]) == 2  # done twice, answers lost
    messaging.resend(message)
    assert set(_statuses(message).values()) == {"sent"}


def test_the_subject_and_message_are_held_to_mturks_limits_before_anything_is_recorded(mturk_batch, researcher):
    for subject, body in [("x" * 201, "ok"), ("ok", "x" * 4097), ("", "ok")]:
        with pytest.raises(messaging.MessageRefused):
            messaging.send_message(mturk_batch, researcher, subject, body, [Worker(external_id="w")])
    assert not MessageRecipient.objects.exists()
