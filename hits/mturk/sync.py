"""Keeping MTurk and the platform in step: assignments, reviews, bonuses, expiry, notifications.

The database is the source of truth for the *work* (answers are stored by
our own HIT page before the worker's browser tells MTurk); MTurk is the
source of truth for what it has *paid*.  ``sync_batch`` therefore:

1. publishes HITs still unpublished (a publish that failed half-way is
   finished here);
2. lists every published HIT's assignments (ListAssignmentsForHIT, all pages)
   and records MTurk's status of each (idempotent: a second run changes
   nothing);
3. mirrors MTurk's own decisions (an assignment MTurk auto-approved is
   approved locally, and its reward recorded);
4. approves submitted work older than ``MTURK_APPROVE_AFTER_HOURS`` that no
   researcher rejected (``hits.payments.approve_assignment``);
5. settles: makes the ApproveAssignment / RejectAssignment / SendBonus calls
   the ledger still has pending (``settle_batch``);
6. expires and deletes the MTurk HITs of a finished or cancelled batch;
   expires those of a paused batch, and gives them a new lifetime on resume.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone as dt_timezone

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from hits.models import HIT, Assignment, Batch, LedgerEntry
from hits.mturk.client import MTurk, MTurkError, for_batch, token_already_used
from hits.mturk.models import MTurkAssignment, MTurkHIT

log = logging.getLogger(__name__)

# UpdateExpirationForHIT with a time in the past expires a HIT at once.
EXPIRE_NOW = datetime(2015, 1, 1, tzinfo=dt_timezone.utc)


@dataclass
class SyncReport:
    published: int = 0
    listed: int = 0
    status_changes: int = 0
    unknown: int = 0
    approved: int = 0
    rejected: int = 0
    bonuses: int = 0
    failed: int = 0
    expired: int = 0
    deleted: int = 0
    reopened: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def sync_batch(batch: Batch, mturk: MTurk | None = None, now=None) -> SyncReport:
    """Bring a batch and its MTurk HITs in step (steps 1-6 above); safe to run any number of times."""
    from hits.mturk.publishing import PublishRefused, publish_batch

    batch.refresh_from_db()  # its state may have changed since the caller loaded it (e.g. finished by a submission)
    mturk = mturk or for_batch(batch)
    now = now or timezone.now()
    report = SyncReport()
    if batch.state == Batch.State.ACTIVE:
        try:
            report.published = publish_batch(batch, mturk=mturk).published
        except PublishRefused as exc:
            log.warning("batch %s: not publishing: %s", batch.pk, exc)
    for published in needs_listing(batch):
        _list_assignments(mturk, published, report, now)
    _approve_due(batch, now, report)
    settle_batch(batch, mturk, report)
    if batch.state in (Batch.State.FINISHED, Batch.State.CANCELLED):
        expire_batch(batch, mturk, report=report)
    elif batch.state == Batch.State.PAUSED:
        # Paused: MTurk stops showing the HITs (nothing is deleted), so workers do not accept what we would refuse.
        expire_batch(batch, mturk, delete=False, report=report)
    else:
        _reopen_expired(batch, mturk, now, report)
    return report


def _reopen_expired(batch: Batch, mturk: MTurk, now, report: SyncReport) -> None:
    """After a pause: give the open HITs MTurk expired a fresh lifetime (UpdateExpirationForHIT in the future)."""
    paused = MTurkHIT.objects.filter(
        hit__batch=batch, hit__state=HIT.State.OPEN, expired_at__isnull=False, deleted_at__isnull=True
    ).order_by("pk")
    for published in paused:
        mturk.call(
            "UpdateExpirationForHIT", HITId=published.mturk_hit_id,
            ExpireAt=now + timedelta(seconds=settings.MTURK_HIT_LIFETIME),
        )
        MTurkHIT.objects.filter(pk=published.pk).update(expired_at=None)
        report.reopened += 1


def needs_listing(batch: Batch):
    """Published HITs whose assignments may still change on MTurk.

    A HIT is left out once it is complete locally, was listed after it
    completed, and every assignment MTurk showed is approved or rejected:
    nothing can change there any more, and big campaigns would otherwise
    spend MTurk's request rate on them every sync.
    """
    undecided = MTurkAssignment.objects.filter(
        mturk_hit=OuterRef("pk"), status__in=[MTurkAssignment.Status.UNKNOWN, MTurkAssignment.Status.SUBMITTED]
    )
    return (
        MTurkHIT.objects.filter(hit__batch=batch, deleted_at__isnull=True)
        .filter(
            Q(hit__state=HIT.State.OPEN)
            | Q(last_synced_at__isnull=True)
            | Q(hit__completed_at__isnull=True)
            | Q(last_synced_at__lt=F("hit__completed_at"))
            | Exists(undecided)
        )
        .order_by("pk")
    )


def _list_assignments(mturk: MTurk, published: MTurkHIT, report: SyncReport, now) -> None:
    for item in mturk.pages(
        "ListAssignmentsForHIT", "Assignments",
        HITId=published.mturk_hit_id, AssignmentStatuses=["Submitted", "Approved", "Rejected"], MaxResults=100,
    ):
        report.listed += 1
        record = MTurkAssignment.objects.select_related("assignment").filter(mturk_assignment_id=item["AssignmentId"]).first()
        if record is None:
            # Submitted on MTurk without our page storing the work first (e.g. a forged submit): nothing to pay for
            # automatically; it is left to a researcher (MTurk auto-approves after its delay otherwise).
            report.unknown += 1
            log.warning("MTurk assignment %s of HIT %s is unknown locally", item["AssignmentId"], published.mturk_hit_id)
            continue
        status = item["AssignmentStatus"]
        if record.status != status:
            MTurkAssignment.objects.filter(pk=record.pk).update(status=status, synced_at=now)
            record.status = status
            report.status_changes += 1
        _mirror_mturk_decision(record)
    MTurkHIT.objects.filter(pk=published.pk).update(last_synced_at=now)


def _mirror_mturk_decision(record: MTurkAssignment) -> None:
    """MTurk decided on its own (auto-approval after the delay, or in its requester UI): record it locally."""
    from hits.payments import approve_assignment, reject_assignment

    assignment = record.assignment
    if record.status == MTurkAssignment.Status.APPROVED:
        if assignment.state in (Assignment.State.SUBMITTED, Assignment.State.REJECTED):
            # MTurk paid (auto-approval, possibly before a local rejection reached it): the ledger must say so.
            approve_assignment(assignment, "approved on MTurk (automatic approval)", settle=False)
        # Also repairs a settle that died between MTurk's approval and our record of it.
        _mark_paid(assignment, LedgerEntry.Kind.REWARD)
    elif record.status == MTurkAssignment.Status.REJECTED and assignment.state == Assignment.State.SUBMITTED:
        reject_assignment(assignment, "rejected on MTurk", settle=False)


def _approve_due(batch: Batch, now, report: SyncReport) -> None:
    from hits.payments import approve_assignment

    due = now - timedelta(hours=settings.MTURK_APPROVE_AFTER_HOURS)
    for assignment in Assignment.objects.filter(
        hit__batch=batch, state=Assignment.State.SUBMITTED, submitted_at__lte=due, mturk__isnull=False
    ):
        approve_assignment(assignment, "Thank you for your work.", settle=False)


def _mark_paid(assignment: Assignment, kind: str, entry: LedgerEntry | None = None) -> None:
    """Ledger entries (and their fees) that MTurk has now paid."""
    with transaction.atomic():
        entries = [entry] if entry is not None else list(
            LedgerEntry.objects.filter(assignment=assignment, kind=kind, state=LedgerEntry.State.PENDING)
        )
        ids = [e.pk for e in entries]
        LedgerEntry.objects.filter(pk__in=ids).update(state=LedgerEntry.State.PAID, settled_at=timezone.now(), error="")
        LedgerEntry.objects.filter(fee_for_id__in=ids).update(state=LedgerEntry.State.PAID, settled_at=timezone.now())
        if kind == LedgerEntry.Kind.REWARD:
            Assignment.objects.filter(pk=assignment.pk).update(paid=True)


def _note_error(assignment: Assignment, kind: str, exc: MTurkError, entry: LedgerEntry | None = None) -> None:
    query = LedgerEntry.objects.filter(pk=entry.pk) if entry else LedgerEntry.objects.filter(assignment=assignment, kind=kind, state=LedgerEntry.State.PENDING)
    query.update(error=str(exc)[:500])


def settle_batch(batch: Batch, mturk: MTurk | None = None, report: SyncReport | None = None) -> SyncReport:
    """Make the MTurk calls that local reviews and bonuses still need.

    - approved locally, not on MTurk: ApproveAssignment (OverrideRejection when MTurk had it rejected);
    - rejected locally, not on MTurk: RejectAssignment with the review message;
    - pending bonus entries: SendBonus with the entry's UniqueRequestToken ("already used" = paid before).

    A call MTurk refuses (e.g. the worker's browser has not told MTurk of the
    submission yet) leaves the entry pending with the error noted; the next
    sync tries again.
    """
    mturk = mturk or for_batch(batch)
    report = report or SyncReport()
    records = MTurkAssignment.objects.filter(mturk_hit__hit__batch=batch).select_related("assignment")
    for record in records.filter(assignment__state=Assignment.State.APPROVED).exclude(status=MTurkAssignment.Status.APPROVED).order_by("pk"):
        params = {"AssignmentId": record.mturk_assignment_id}
        if record.assignment.review_message:
            params["RequesterFeedback"] = record.assignment.review_message[:1024]
        if record.status == MTurkAssignment.Status.REJECTED:
            params["OverrideRejection"] = True
        try:
            mturk.call("ApproveAssignment", **params)
        except MTurkError as exc:
            report.failed += 1
            _note_error(record.assignment, LedgerEntry.Kind.REWARD, exc)
            continue
        MTurkAssignment.objects.filter(pk=record.pk).update(status=MTurkAssignment.Status.APPROVED, synced_at=timezone.now())
        _mark_paid(record.assignment, LedgerEntry.Kind.REWARD)
        report.approved += 1
    rejected = records.filter(assignment__state=Assignment.State.REJECTED).exclude(status=MTurkAssignment.Status.REJECTED).order_by("pk")
    for record in rejected:
        try:
            mturk.call(
                "RejectAssignment", AssignmentId=record.mturk_assignment_id,
                RequesterFeedback=(record.assignment.review_message or "Rejected after review.")[:1024],
            )
        except MTurkError as exc:
            report.failed += 1
            log.warning("RejectAssignment %s: %s", record.mturk_assignment_id, exc)
            continue
        MTurkAssignment.objects.filter(pk=record.pk).update(status=MTurkAssignment.Status.REJECTED, synced_at=timezone.now())
        report.rejected += 1
    bonuses = LedgerEntry.objects.filter(
        batch=batch, kind=LedgerEntry.Kind.BONUS, state=LedgerEntry.State.PENDING, assignment__mturk__isnull=False
    ).select_related("assignment__mturk").order_by("pk")
    for entry in bonuses:
        record = entry.assignment.mturk
        try:
            mturk.call(
                "SendBonus", WorkerId=record.mturk_worker_id, BonusAmount=str(entry.amount),
                AssignmentId=record.mturk_assignment_id, Reason=entry.reason[:1000] or "Bonus",
                UniqueRequestToken=entry.request_token,
            )
        except MTurkError as exc:
            if not token_already_used(exc):
                report.failed += 1
                _note_error(entry.assignment, LedgerEntry.Kind.BONUS, exc, entry)
                continue
        _mark_paid(entry.assignment, LedgerEntry.Kind.BONUS, entry)
        report.bonuses += 1
    return report


def expire_batch(batch: Batch, mturk: MTurk | None = None, delete: bool = True, report: SyncReport | None = None) -> SyncReport:
    """Expire the batch's MTurk HITs at once, and delete those whose every assignment is reviewed.

    DeleteHIT only succeeds for a HIT with no assignment awaiting review; the
    others stay expired (no new workers) and are deleted by a later run.
    """
    mturk = mturk or for_batch(batch)
    report = report or SyncReport()
    now = timezone.now()
    for published in MTurkHIT.objects.filter(hit__batch=batch, deleted_at__isnull=True).order_by("pk"):
        if published.expired_at is None:
            mturk.call("UpdateExpirationForHIT", HITId=published.mturk_hit_id, ExpireAt=EXPIRE_NOW)
            MTurkHIT.objects.filter(pk=published.pk).update(expired_at=now)
            report.expired += 1
        awaiting = published.assignments.exclude(
            status__in=[MTurkAssignment.Status.APPROVED, MTurkAssignment.Status.REJECTED]
        ).filter(assignment__state__in=Assignment.DONE_STATES)
        if not delete or awaiting.exists():
            continue
        try:
            mturk.call("DeleteHIT", HITId=published.mturk_hit_id)
        except MTurkError as exc:
            log.info("HIT %s not deleted yet: %s", published.mturk_hit_id, exc)
            continue
        MTurkHIT.objects.filter(pk=published.pk).update(deleted_at=now)
        report.deleted += 1
    return report


def notify_workers(batch: Batch, subject: str, message: str, mturk: MTurk | None = None) -> int:
    """Send a message to every MTurk worker of the batch (NotifyWorkers, 100 workers a call); returns how many."""
    subject, message = subject.strip(), message.strip()
    if not subject or not message:
        raise ValueError("a notification needs a subject and a message")
    mturk = mturk or for_batch(batch)
    worker_ids = sorted(
        set(MTurkAssignment.objects.filter(mturk_hit__hit__batch=batch).values_list("mturk_worker_id", flat=True))
    )
    for start in range(0, len(worker_ids), 100):
        mturk.call("NotifyWorkers", Subject=subject[:200], MessageText=message[:4096], WorkerIds=worker_ids[start : start + 100])
    return len(worker_ids)
