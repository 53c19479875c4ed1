"""Qualifications and blocks on MTurk, mirroring the platform's own decisions.

One MTurk qualification type per campaign: per (batch, task type) and
requester account (sandbox or live), created on the batch's first publish and
reused (found again by name if MTurk already has it; the name carries the
batch's random key, so two campaigns never share one).  The batch's HITs
require that type, so what happens in one campaign never changes which HITs
of another campaign a worker may take on MTurk.  The platform stays the
judge: when ``hits.qualifications`` qualifies a worker in a batch, the batch's
type is granted (AssociateQualificationWithWorker, value 1), also on the
types of the batches of its qualification group that accept it; when it
revokes one, only that batch's type is taken away with the reason
(DisassociateQualificationFromWorker).  A researcher's block in one campaign
(``BatchBlock``) takes that batch's types away too (and gives back those the
worker still holds when unblocked); only an admin's platform-wide block
becomes CreateWorkerBlock (DeleteWorkerBlock when lifted).  The calls happen
after the commit, in a Celery task; repeating them is harmless.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Min

from hits.models import Batch, BatchBlock, Qualification, TaskType, Worker
from hits.mturk.text import mturk_safe_text
from hits.mturk.client import QUALIFICATION_TYPE_ALREADY_EXISTS, MTurk, MTurkError
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkQualificationType
from hits.outbox import send_after_commit

log = logging.getLogger(__name__)

MTURK_BACKENDS = (Batch.Backend.MTURK_SANDBOX, Batch.Backend.MTURK_LIVE)


def qualification_type_name(task_type: TaskType, batch: Batch) -> str:
    """Unique on the account: the batch's random key tells two campaigns of one task type apart."""
    suffix = f" ({task_type.slug}, campaign {batch.key})"
    return f"{settings.MTURK_TOKEN_PREFIX} {task_type.name}"[: 200 - len(suffix)] + suffix


def ensure_qualification_type(mturk: MTurk, task_type: TaskType, batch: Batch) -> MTurkQualificationType:
    """The batch's MTurk qualification type for a task type on this account, created on first use."""
    known = MTurkQualificationType.objects.filter(batch=batch, task_type=task_type, sandbox=mturk.sandbox).first()
    if known is not None:
        return known
    name = qualification_type_name(task_type, batch)
    try:
        created = mturk.call(
            "CreateQualificationType",
            Name=name,
            Keywords=task_type.keywords[:1000] or task_type.slug,
            Description=f"Passed the qualification test for '{task_type.name}' HITs of one campaign."[:2000],
            QualificationTypeStatus="Active",
        )["QualificationType"]
    except MTurkError as exc:
        # Created before (an interrupted publish, or a lost record): MTurk's code says so (its message is
        # never read); find it by name.
        if exc.turk_code != QUALIFICATION_TYPE_ALREADY_EXISTS:
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
            record = MTurkQualificationType.objects.create(
                batch=batch, task_type=task_type, sandbox=mturk.sandbox,
                qualification_type_id=created["QualificationTypeId"], name=name,
            )
    except IntegrityError:
        return MTurkQualificationType.objects.get(batch=batch, task_type=task_type, sandbox=mturk.sandbox)
    if batch.accepts_group_qualifications and batch.qualification_group:
        # Workers qualified in another campaign of the group may skip this one's test: give them its type.
        for worker_id, other_batch_id in (
            Qualification.objects.filter(
                task_type=task_type, state=Qualification.State.QUALIFIED,
                batch__qualification_group=batch.qualification_group, worker__mturk_worker_id__gt="",
            )
            .exclude(batch=batch)
            .values_list("worker_id", "batch_id")
        ):
            send_after_commit("hits.mturk.mirror_qualification", worker_id, task_type.pk, True, "qualified in the group", other_batch_id)
    return record


def _held_in(worker: Worker, task_type_id: int, batch: Batch) -> bool:
    """Whether the worker may do the batch's regular HITs of the type as far as qualification goes."""
    if BatchBlock.objects.filter(worker=worker, batch=batch).exists():
        return False
    own = Qualification.objects.filter(worker=worker, task_type_id=task_type_id, batch=batch).values_list("state", flat=True).first()
    if own is not None:
        return own == Qualification.State.QUALIFIED
    return bool(
        batch.accepts_group_qualifications
        and batch.qualification_group
        and Qualification.objects.filter(
            worker=worker, task_type_id=task_type_id, state=Qualification.State.QUALIFIED,
            batch__qualification_group=batch.qualification_group,
        ).exclude(batch=batch).exists()
    )


def _legacy_types(batch: Batch, task_type_id: int):
    """Per-task-type types (made before 0009) that HITs of this batch still require: those published on an
    account before the batch had its own type there."""
    own = dict(
        MTurkQualificationType.objects.filter(batch=batch, task_type_id=task_type_id).values_list("sandbox", "created_at")
    )
    first_published = dict(
        MTurkHIT.objects.filter(hit__batch=batch, hit__task_type_id=task_type_id)
        .values("sandbox").annotate(first=Min("published_at")).values_list("sandbox", "first")
    )
    return [
        legacy
        for legacy in MTurkQualificationType.objects.filter(batch__isnull=True, task_type_id=task_type_id)
        if legacy.sandbox in first_published and (legacy.sandbox not in own or first_published[legacy.sandbox] < own[legacy.sandbox])
    ]


def _call(clients, qualification_type: MTurkQualificationType, worker: Worker, granted: bool, reason: str) -> None:
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
            Reason=mturk_safe_text(reason or "qualification revoked", 1000) or "qualification revoked",
        )


def mirror_qualification(
    worker_id: int, task_type_id: int, granted: bool, reason: str, batch_id: int | None = None, clients=None
) -> int:
    """Grant (``granted``) or revoke the worker's qualification type of one batch (a campaign) on every account
    that has one; returns calls made.

    A grant also reaches the types of the group's batches that accept it (where the worker holds no verdict of
    their own and is not blocked), and the old per-task-type type while HITs of the batch still require it; a
    revocation reaches only the batch's own type.  ``batch_id`` None (a task queued before 0009) mirrors the old
    per-task-type types.
    """
    worker = Worker.objects.get(pk=worker_id)
    if not worker.mturk_worker_id:
        return 0
    if batch_id is None:
        targets = list(MTurkQualificationType.objects.filter(batch__isnull=True, task_type_id=task_type_id))
    else:
        batch = Batch.objects.get(pk=batch_id)
        targets = list(MTurkQualificationType.objects.filter(batch=batch, task_type_id=task_type_id))
        if granted:
            if BatchBlock.objects.filter(worker=worker, batch=batch).exists():
                targets = []  # blocked in this campaign: the type comes back only with the unblock
            targets += _legacy_types(batch, task_type_id)
            if batch.qualification_group:
                for other in Batch.objects.filter(
                    qualification_group=batch.qualification_group, accepts_group_qualifications=True, backend__in=MTURK_BACKENDS
                ).exclude(pk=batch.pk):
                    if _held_in(worker, task_type_id, other):
                        targets += MTurkQualificationType.objects.filter(batch=other, task_type_id=task_type_id)
    calls = 0
    for qualification_type in sorted(targets, key=lambda item: item.pk):
        _call(clients, qualification_type, worker, granted, reason)
        calls += 1
    return calls


def mirror_batch_block(worker_id: int, batch_id: int, blocked: bool, reason: str, clients=None) -> int:
    """A researcher's block in one campaign: take the batch's qualification types away (never an account-wide
    CreateWorkerBlock); lifted, give back those the worker still holds there.  Returns calls made."""
    worker = Worker.objects.get(pk=worker_id)
    if not worker.mturk_worker_id:
        return 0
    batch = Batch.objects.get(pk=batch_id)
    calls = 0
    for qualification_type in MTurkQualificationType.objects.filter(batch=batch).order_by("pk"):
        if blocked:
            _call(clients, qualification_type, worker, False, reason or "blocked from this campaign")
        elif _held_in(worker, qualification_type.task_type_id, batch):
            _call(clients, qualification_type, worker, True, reason)
        else:
            continue
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
        mturk.call(operation, WorkerId=worker.mturk_worker_id, Reason=mturk_safe_text(reason or ("blocked" if blocked else "unblocked"), 1000) or "blocked")
        calls += 1
    return calls


# What the core's signals ask of MTurk (``hits.markets.registry`` routes them here through ``market.MTurkMarket``).


def on_qualification_changed(worker, task_type, state, reason, batch=None) -> None:
    """A qualification decided or revoked: mirror it to the MTurk qualification type, after the commit."""
    if not worker.mturk_worker_id:
        return
    if state not in (Qualification.State.QUALIFIED, Qualification.State.REVOKED):
        return
    granted = state == Qualification.State.QUALIFIED
    # A local campaign's verdict reaches MTurk only as a grant through its qualification group.
    if batch is not None and batch.backend not in MTURK_BACKENDS and not (granted and batch.qualification_group):
        return
    if not MTurkQualificationType.objects.filter(task_type=task_type).exists():
        return
    send_after_commit(
        "hits.mturk.mirror_qualification", worker.pk, task_type.pk, granted, reason,
        batch.pk if batch is not None else None,
    )


def on_batch_block_changed(worker, batch, blocked, reason) -> None:
    """A block in one batch: mirrored as that batch's qualification, after the commit."""
    if worker.mturk_worker_id and MTurkQualificationType.objects.filter(batch=batch).exists():
        send_after_commit("hits.mturk.mirror_batch_block", worker.pk, batch.pk, blocked, reason)


def on_worker_blocked(worker, blocked, reason) -> None:
    """A block everywhere: mirrored as an MTurk worker block, after the commit."""
    if worker.mturk_worker_id and MTurkAssignment.objects.filter(assignment__worker=worker).exists():
        send_after_commit("hits.mturk.mirror_block", worker.pk, blocked, reason)
