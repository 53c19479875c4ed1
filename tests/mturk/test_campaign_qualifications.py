"""Qualification per campaign on MTurk: each batch's own qualification type is granted, revoked and taken away by a
researcher's block in that batch only; every call checked with botocore's Stubber against the exact parameters."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from hits import qualifications
from hits.models import Batch, Worker
from hits.mturk.models import MTurkHIT, MTurkQualificationType
from hits.mturk.publishing import request_token
from tests.mturk.conftest import make_hit, with_test_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaigns(mturk_batch, task_type):
    """Two MTurk campaigns of one task type, each with its own qualification type (QUALA, QUALB)."""
    task_type.requires_qualification = True
    task_type.save()
    other = Batch.objects.create(name="Campaign B", reference="test:b", backend=Batch.Backend.MTURK_SANDBOX)
    for batch, type_id in ((mturk_batch, "QUALA"), (other, "QUALB")):
        MTurkQualificationType.objects.create(batch=batch, task_type=task_type, sandbox=True, qualification_type_id=type_id, name=type_id)
    return mturk_batch, other


@pytest.fixture
def worker(db):
    return Worker.objects.create(external_id="mturk:W1", mturk_worker_id="W1")


def revoke_call(stub, type_id, reason):
    stub.add_response("disassociate_qualification_from_worker", {}, {"WorkerId": "W1", "QualificationTypeId": type_id, "Reason": reason})


def grant_call(stub, type_id):
    stub.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": type_id, "WorkerId": "W1", "IntegerValue": 1, "SendNotification": False,
    })


def test_revocation_and_reinstatement_reach_only_that_campaigns_type(stubbed, campaigns, task_type, worker, django_capture_on_commit_callbacks):
    a, b = campaigns
    grant_call(stubbed, "QUALA")
    grant_call(stubbed, "QUALB")
    revoke_call(stubbed, "QUALA", "agreement 0.61 under 0.85")
    grant_call(stubbed, "QUALA")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, a, "passed on review")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, b, "passed on review")
    # Revoked in A: QUALA only, B's type (QUALB) is left alone: no call for it.
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.revoke(worker, task_type, a, "agreement 0.61 under 0.85")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, a, "appeal accepted")


def test_campaign_block_takes_that_campaigns_type_away_never_a_worker_block(stubbed, campaigns, task_type, worker, django_capture_on_commit_callbacks):
    a, b = campaigns
    grant_call(stubbed, "QUALA")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, a, "passed on review")
    # Blocked from A by its researcher: A's type is taken away, no CreateWorkerBlock, nothing about B.
    revoke_call(stubbed, "QUALA", "copied answers")
    with django_capture_on_commit_callbacks(execute=True):
        assert qualifications.set_batch_blocked(worker, a, True, "copied answers")
    # Reinstated while still blocked there: nothing to give on MTurk yet.
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, a, "second look")
    # Unblocked: the type comes back, since they are qualified in A.
    grant_call(stubbed, "QUALA")
    with django_capture_on_commit_callbacks(execute=True):
        assert qualifications.set_batch_blocked(worker, a, False, "appeal accepted")
    # Blocking in B where they hold nothing: B's type is taken away; lifting it gives nothing back.
    revoke_call(stubbed, "QUALB", "blocked from this campaign")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.set_batch_blocked(worker, b, True, "")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.set_batch_blocked(worker, b, False, "")
    assert worker.qualification_events.filter(batch=b).count() == 2


def test_admin_platform_wide_block_stays_a_worker_block(stubbed, campaigns, task_type, worker, django_capture_on_commit_callbacks):
    a, _ = campaigns
    hit = make_hit(a, task_type)
    published = MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token=request_token(hit), max_assignments=3, reward=Decimal("0.20"))
    from tests.mturk.conftest import submitted_assignment
    from hits.mturk.models import MTurkAssignment

    MTurkAssignment.objects.create(
        mturk_assignment_id="A1", mturk_hit=published, assignment=submitted_assignment(hit, worker), mturk_worker_id="W1",
        submit_to="https://workersandbox.mturk.com",
    )
    stubbed.add_response("create_worker_block", {}, {"WorkerId": "W1", "Reason": "spam answers"})
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.set_blocked(worker, True, "spam answers")


def test_group_qualification_grants_the_accepting_campaigns_type(stubbed, campaigns, task_type, worker, django_capture_on_commit_callbacks):
    """B accepts qualifications of A's group: qualifying in A gives B's type too (B would show no test), and a later
    revocation in A stays in A."""
    a, b = campaigns
    Batch.objects.filter(pk__in=[a.pk, b.pk]).update(qualification_group="team:1")
    Batch.objects.filter(pk=b.pk).update(accepts_group_qualifications=True)
    a.refresh_from_db()
    grant_call(stubbed, "QUALA")
    grant_call(stubbed, "QUALB")
    revoke_call(stubbed, "QUALA", "drifted")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, a, "passed")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.revoke(worker, task_type, a, "drifted")


def test_old_per_type_type_is_granted_while_old_hits_need_it_never_revoked(stubbed, mturk_batch, task_type, worker, django_capture_on_commit_callbacks):
    """A type from before the per-campaign types (batch None, kept by migration 0009) that HITs of the batch
    published then still require: a grant reaches it (new qualified workers can take those HITs), a revocation
    does not (it would close every campaign of the type; the HIT page refuses the revoked worker anyway)."""
    task_type.requires_qualification = True
    task_type.save()
    MTurkQualificationType.objects.create(task_type=task_type, sandbox=True, qualification_type_id="OLD", name="old")
    hit = make_hit(mturk_batch, task_type)
    MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token=request_token(hit), max_assignments=3, reward=Decimal("0.20"))
    own = MTurkQualificationType.objects.create(batch=mturk_batch, task_type=task_type, sandbox=True, qualification_type_id="QUALA", name="a")
    MTurkQualificationType.objects.filter(pk=own.pk).update(created_at=timezone.now() + timedelta(minutes=1))
    grant_call(stubbed, "OLD")
    grant_call(stubbed, "QUALA")
    revoke_call(stubbed, "QUALA", "drifted")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.reinstate(worker, task_type, mturk_batch, "passed")
    with django_capture_on_commit_callbacks(execute=True):
        qualifications.revoke(worker, task_type, mturk_batch, "drifted")


def test_a_mirror_queued_before_the_upgrade_still_runs(stubbed, task_type, worker):
    """A mirror task queued with the old arguments (no batch) updates the old per-type type, as it did."""
    from hits.mturk.tasks import mirror_qualification_task

    MTurkQualificationType.objects.create(task_type=task_type, sandbox=True, qualification_type_id="OLD", name="old")
    grant_call(stubbed, "OLD")
    assert mirror_qualification_task.apply(args=[worker.pk, task_type.pk, True, "passed"]).get() == 1
