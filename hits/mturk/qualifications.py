"""Qualifications and blocks on MTurk, mirroring the platform's own decisions.

One MTurk qualification type per task type and requester account (sandbox or
live), created once and reused (found again by name if MTurk already has it).
The platform stays the judge: when ``hits.qualifications`` qualifies a worker
the type is granted (AssociateQualificationWithWorker, value 1); when it
revokes one the type is taken away with the reason
(DisassociateQualificationFromWorker); a block becomes CreateWorkerBlock,
an unblock DeleteWorkerBlock.  The calls happen after the commit, in a
Celery task; repeating them is harmless.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.dispatch import receiver

from hits.models import Qualification, TaskType, Worker
from hits.mturk.client import MTurk, MTurkError
from hits.mturk.models import MTurkAssignment, MTurkQualificationType
from hits.outbox import send_after_commit
from hits.signals import qualification_changed, worker_blocked

log = logging.getLogger(__name__)


def qualification_type_name(task_type: TaskType) -> str:
    return f"{settings.MTURK_TOKEN_PREFIX} {task_type.name} ({task_type.slug})"[:200]


def ensure_qualification_type(mturk: MTurk, task_type: TaskType) -> MTurkQualificationType:
    """The task type's MTurk qualification type on this account, created on first use."""
    known = MTurkQualificationType.objects.filter(task_type=task_type, sandbox=mturk.sandbox).first()
    if known is not None:
        return known
    name = qualification_type_name(task_type)
    try:
        created = mturk.call(
            "CreateQualificationType",
            Name=name,
            Keywords=task_type.keywords[:1000] or task_type.slug,
            Description=f"Passed the qualification test for '{task_type.name}' HITs."[:2000],
            QualificationTypeStatus="Active",
        )["QualificationType"]
    except MTurkError as exc:
        # Created before (another installation with the same prefix, or a lost record): find it by name.
        if "already" not in exc.message.lower():
            raise
        created = next(
            (
                item
                for item in mturk.pages(
                    "ListQualificationTypes", "QualificationTypes",
                    Query=name, MustBeRequestable=False, MustBeOwnedByCaller=True, MaxResults=100,
                )
                if item.get("Name") == name
            ),
            None,
        )
        if created is None:
            raise
    try:
        with transaction.atomic():
            return MTurkQualificationType.objects.create(
                task_type=task_type, sandbox=mturk.sandbox, qualification_type_id=created["QualificationTypeId"], name=name
            )
    except IntegrityError:
        return MTurkQualificationType.objects.get(task_type=task_type, sandbox=mturk.sandbox)


def mirror_qualification(worker_id: int, task_type_id: int, granted: bool, reason: str, clients=None) -> int:
    """Grant (``granted``) or revoke the worker's qualification type on every account that has one; returns calls made."""
    worker = Worker.objects.get(pk=worker_id)
    if not worker.mturk_worker_id:
        return 0
    calls = 0
    for qualification_type in MTurkQualificationType.objects.filter(task_type_id=task_type_id):
        mturk = (clients or {}).get(qualification_type.sandbox) or MTurk(sandbox=qualification_type.sandbox)
        if granted:
            mturk.call(
                "AssociateQualificationWithWorker",
                QualificationTypeId=qualification_type.qualification_type_id,
                WorkerId=worker.mturk_worker_id,
                IntegerValue=1,
                SendNotification=False,
            )
        else:
            mturk.call(
                "DisassociateQualificationFromWorker",
                WorkerId=worker.mturk_worker_id,
                QualificationTypeId=qualification_type.qualification_type_id,
                Reason=(reason or "qualification revoked")[:1000],
            )
        calls += 1
    return calls


def mirror_block(worker_id: int, blocked: bool, reason: str, clients=None) -> int:
    """Block or unblock the worker on every account they worked through; returns calls made."""
    worker = Worker.objects.get(pk=worker_id)
    if not worker.mturk_worker_id:
        return 0
    accounts = set(
        MTurkAssignment.objects.filter(assignment__worker=worker).values_list("mturk_hit__sandbox", flat=True)
    )
    calls = 0
    for sandbox in sorted(accounts):
        mturk = (clients or {}).get(sandbox) or MTurk(sandbox=sandbox)
        operation = "CreateWorkerBlock" if blocked else "DeleteWorkerBlock"
        mturk.call(operation, WorkerId=worker.mturk_worker_id, Reason=(reason or ("blocked" if blocked else "unblocked"))[:1000])
        calls += 1
    return calls


@receiver(qualification_changed, dispatch_uid="mturk-mirror-qualification")
def _on_qualification_changed(sender, worker, task_type, state, reason, **kwargs):
    if not worker.mturk_worker_id:
        return
    if state not in (Qualification.State.QUALIFIED, Qualification.State.REVOKED):
        return
    if not MTurkQualificationType.objects.filter(task_type=task_type).exists():
        return
    send_after_commit(
        "hits.mturk.mirror_qualification", worker.pk, task_type.pk, state == Qualification.State.QUALIFIED, reason
    )


@receiver(worker_blocked, dispatch_uid="mturk-mirror-block")
def _on_worker_blocked(sender, worker, blocked, reason, **kwargs):
    if worker.mturk_worker_id and MTurkAssignment.objects.filter(assignment__worker=worker).exists():
        send_after_commit("hits.mturk.mirror_block", worker.pk, blocked, reason)
