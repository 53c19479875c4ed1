"""Fixtures of the MTurk backend tests: stubbed boto3 clients and small batches of HITs."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import boto3
import pytest
from botocore.stub import Stubber
from django.utils import timezone

from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.mturk import client as mturk_client


@pytest.fixture
def stubbed(monkeypatch, settings):
    """A real boto3 mturk client with a Stubber; every MTurk call of the code under test goes to it.

    The test lists the exact calls it expects with ``stub.add_response`` /
    ``stub.add_client_error``; ``assert_no_pending_responses`` at the end
    proves every expected call was made, in order.
    """
    settings.MTURK_RETRY_BASE_SECONDS = 0.0
    boto = boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url=mturk_client.SANDBOX_ENDPOINT,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    monkeypatch.setattr(mturk_client, "client_factory", lambda sandbox: boto)
    with Stubber(boto) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture
def standin(monkeypatch, settings):
    """The local MTurk stand-in (hits.mturk.standin) on a free port, with the platform pointed at it: rehearsal
    credentials, plain-HTTP pages, no back-off waits.  A module needing more settings overrides this fixture and
    asks for it by the same name."""
    from hits.mturk.standin import StandIn

    server = StandIn(port=0).start()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "rehearsal")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "rehearsal")
    settings.MTURK_ENDPOINT_URL = server.url
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:8000"  # a rehearsal: the stand-in opens plain-HTTP pages
    settings.MTURK_RETRY_BASE_SECONDS = 0.0
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _follow_ups_in_process(eager_celery):
    """Follow-up tasks (publish, settle, mirror) run in-process here, also when CI configures a Redis broker."""
    yield


@pytest.fixture
def task_type(db):
    return TaskType.objects.create(
        slug="label", name="Label it", description="Label one thing.", keywords="label, test", assignment_duration=600
    )


@pytest.fixture
def mturk_batch(db):
    return Batch.objects.create(name="Test batch", reference="test:1", backend=Batch.Backend.MTURK_SANDBOX)


@pytest.fixture
def local_batch(db):
    return Batch.objects.create(name="Local batch", reference="test:2")


def make_hit(batch, task_type, **fields) -> HIT:
    values = dict(batch=batch, task_type=task_type, payload={"n": 1}, max_assignments=3, reward=Decimal("0.20"))
    values.update(fields)
    return HIT.objects.create(**values)


def with_test_of(batch, task_type) -> HIT:
    """Give ``batch`` a qualification test for ``task_type`` (a finished test item, so nothing more to publish):
    only then do its HITs of that type require the batch's MTurk qualification type."""
    return make_hit(batch, task_type, kind=HIT.Kind.QUALIFICATION, state=HIT.State.COMPLETED, max_assignments=32767,
                    reward=Decimal("0"))


def submitted_assignment(hit: HIT, worker: Worker, answers=None) -> Assignment:
    now = timezone.now()
    HIT.objects.filter(pk=hit.pk).update(n_taken=hit.n_taken + 1, n_submitted=hit.n_submitted + 1)
    hit.refresh_from_db()
    return Assignment.objects.create(
        hit=hit, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now - timedelta(minutes=3),
        expires_at=now + timedelta(minutes=7), submitted_at=now, answers=answers or {"ok": True}, work_seconds=180,
    )


def published_on_mturk(batch, task_type, hit_id: str, **fields):
    """A local HIT with its MTurk record (published as ``hit_id`` at $0.20)."""
    from hits.mturk.models import MTurkHIT
    from hits.mturk.publishing import request_token

    hit = make_hit(batch, task_type, **fields)
    return MTurkHIT.objects.create(
        hit=hit, sandbox=True, mturk_hit_id=hit_id, request_token=request_token(hit), max_assignments=hit.max_assignments,
        reward=Decimal("0.20"),
    )


def submitted_on_mturk(published, n: int, first: int = 1, prefix: str = "W") -> list[Assignment]:
    """``n`` workers (``<prefix>1``...) who submitted work on ``published`` through MTurk."""
    from hits.mturk.models import MTurkAssignment

    made = []
    for i in range(first, first + n):
        worker = Worker.objects.create(external_id=f"mturk:{prefix}{i}", mturk_worker_id=f"{prefix}{i}")
        assignment = submitted_assignment(published.hit, worker)
        MTurkAssignment.objects.create(
            mturk_assignment_id=f"A{i}", mturk_hit=published, assignment=assignment, mturk_worker_id=f"{prefix}{i}",
            submit_to="https://workersandbox.mturk.com",
        )
        made.append(assignment)
    return made


def assignments_listing(stub, hit_id: str, items):
    """The stubbed ListAssignmentsForHIT of ``hit_id``: ``items`` are (assignment, worker, status)."""
    stub.add_response("list_assignments_for_hit", {"NumResults": len(items), "Assignments": [
        {"AssignmentId": a, "WorkerId": w, "HITId": hit_id, "AssignmentStatus": s} for a, w, s in items
    ]}, {"HITId": hit_id, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
