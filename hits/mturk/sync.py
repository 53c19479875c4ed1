"""Keeping MTurk and the platform in step: assignments, reviews, bonuses, expiry, notifications.

The database is the source of truth for the *work* (answers are stored by
our own HIT page before the worker's browser tells MTurk); MTurk is the
source of truth for what it has *paid*.  ``sync_batch`` therefore:

1. records the HITId of HITs MTurk said it created (``HitAlreadyExists``)
   that its records had not shown yet (ListHITs, whatever the batch's state:
   such a HIT is live with money on hold), then publishes HITs still
   unpublished (a publish that failed half-way is finished here);
2. lists every published HIT's assignments (ListAssignmentsForHIT, all pages)
   and records MTurk's status of each (idempotent: a second run changes
   nothing).  A submission our page stored is "pending" until then: listed as
   submitted by the same worker, it is confirmed and counts from now on
   (``hits.services.confirm_submission``); listed for another worker, or
   still unknown to MTurk ``MTURK_CONFIRM_GRACE`` seconds after it was made
   (GetAssignment), it is discarded and its place freed; once one is confirmed, the
   same worker's other assignments of the HIT (other MTurk ids opened in their
   name, ``Assignment.overbook``) are discarded: only the one MTurk lists counts;
3. mirrors MTurk's own decisions (an assignment MTurk auto-approved is
   approved locally, and its reward recorded);
4. approves submitted work older than ``MTURK_APPROVE_AFTER_HOURS`` that no
   researcher rejected (``hits.payments.approve_assignment``);
5. settles: makes the ApproveAssignment / RejectAssignment / SendBonus calls
   the ledger still has pending (``settle_batch``);
6. expires and deletes the MTurk HITs of a finished or cancelled batch;
   expires those of a paused batch, and gives them a new lifetime on resume;
   expires the gold HITs of a task type with no open regular HIT left in
   the batch (no gold without regular work), reopened if regular work returns;
7. rejects submissions MTurk lists that our HIT page never stored (a worker
   posting straight to MTurk's ``externalSubmit``) before MTurk's automatic
   approval pays them, and keeps them for the researcher to see.

Places held here by assignments returned or abandoned on MTurk are not freed from MTurk's count of work in
progress (GetHIT): made-up ids inflate the places held here, so a count cannot tell which holder is gone, and
freeing the longest-held ones could take the place of a worker still working.  None is needed: a HIT on MTurk
never refuses an arrival for want of a place (``HIT.overbook``), and such places run out with their time.

One failing MTurk call never stops the rest: each HIT's listing, each money
call and each expiry is tried on its own; a failure is recorded (on the HIT,
on the ledger entry, in the report) and tried again by the next sync.  A HIT
MTurk no longer has (deleted, e.g. 120 days after its creation) is marked
gone and left alone from then on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone as dt_timezone
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from hits.models import HIT, Assignment, Batch, LedgerEntry, Worker
from hits.mturk import fees
from hits.mturk import tokens
from hits.mturk.client import MTurk, MTurkError, does_not_exist, for_batch
from hits.mturk.messages import MTURK_WORKER_ID, NOTIFY_BATCH, Notified, notify_workers  # noqa: F401 - callers' names
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkUnknownSubmission
from hits.mturk.text import mturk_safe_text
from hits.reports import SyncErrors
from hits.services import confirm_submission, discard_other_places, discard_submission

log = logging.getLogger(__name__)


# UpdateExpirationForHIT with a time in the past expires a HIT at once.  MTurk refuses the same (HIT,
# ExpireAt) twice, so the n-th such call for a HIT uses this time plus n seconds (``past_expiry``).
EXPIRE_IN_THE_PAST = datetime(2015, 1, 1, tzinfo=dt_timezone.utc)
UNKNOWN_SUBMISSION_FEEDBACK = (
    "This submission did not come through the HIT's own page, so no answers were recorded and it cannot be "
    "paid. If you did the work, please accept the HIT again and submit it from its page."
)


@dataclass
class SyncReport(SyncErrors):
    market = "MTurk"

    published: int = 0
    found: int = 0  # HITs MTurk said it created, now found in ListHITs and recorded
    not_publishing: str = ""  # why open HITs wait unpublished (balance, budget cap, no HTTPS base URL), if they do
    refused: int = 0  # HITs whose CreateHIT MTurk refused for good (kept on the HIT, retried by the researcher)
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
    unknown_rejected: int = 0
    confirmed: int = 0
    discarded: int = 0
    gone: int = 0
    errors: list = field(default_factory=list)


def sync_batch(batch: Batch, mturk: MTurk | None = None, now=None) -> SyncReport:
    """Bring a batch and its MTurk HITs in step (steps 1-6 above); safe to run any number of times."""
    from hits.mturk.publishing import PublishRefused, publish_batch, settle_made

    batch.refresh_from_db()  # its state may have changed since the caller loaded it (e.g. finished by a submission)
    mturk = mturk or for_batch(batch)
    now = now or timezone.now()
    report = SyncReport()
    try:
        report.found = settle_made(batch, mturk)
    except MTurkError as exc:
        report.error("reading ListHITs for HITs MTurk created", exc)
    if batch.state == Batch.State.ACTIVE:
        try:
            published = publish_batch(batch, mturk=mturk)
            report.published, report.refused = published.published, len(published.refused)
            report.not_publishing = published.stopped if published.remaining else ""
            for refusal in published.refused:  # kept on its HIT until the researcher retries (progress page)
                report.failed += 1
                report.errors.append(f"publishing HIT {refusal['hit']}: {refusal['error']}"[:300])
        except PublishRefused as exc:
            log.warning("batch %s: not publishing: %s", batch.pk, exc)
            report.not_publishing = str(exc)
        except MTurkError as exc:
            # What was created is recorded; the rest waits for the next sync.  Reviews and expiry go on.
            report.error("publishing", exc)
    for published in needs_listing(batch):
        _list_assignments(mturk, published, report, now)
    settle_unconfirmed(batch, mturk, report, now)
    _approve_due(batch, now, report)
    settle_batch(batch, mturk, report)
    reject_unknown_submissions(batch, mturk, report, now)
    if batch.state in (Batch.State.FINISHED, Batch.State.CANCELLED):
        expire_batch(batch, mturk, report=report)
    elif batch.state == Batch.State.PAUSED:
        # Paused: MTurk stops showing the HITs (nothing is deleted), so workers do not accept what we would refuse.
        expire_batch(batch, mturk, delete=False, report=report)
    else:
        idle = _expire_idle_gold(batch, mturk, now, report)
        _reopen_expired(batch, mturk, now, report, idle)
    return report


def _idle_gold(batch: Batch, idle_types: set[int]):
    return MTurkHIT.objects.filter(
        hit__batch=batch, hit__kind=HIT.Kind.GOLD, hit__task_type_id__in=idle_types, deleted_at__isnull=True, gone_at__isnull=True
    )


def _expire_idle_gold(batch: Batch, mturk: MTurk, now, report: SyncReport) -> set[int]:
    """No gold without regular work (issue 27): the gold HITs on MTurk of a task type with no open regular HIT in
    the batch are expired (UpdateExpirationForHIT, as for a paused batch); they get a new lifetime if regular work
    of the type comes back.  Returns those task types."""
    from hits.mturk.publishing import idle_gold_types

    idle = idle_gold_types(batch)
    for published in _idle_gold(batch, idle).filter(expired_at__isnull=True).order_by("pk"):
        if _expire(mturk, published, report, now):
            report.expired += 1
    return idle


def _hit_failed(published: MTurkHIT, what: str, exc: MTurkError, report: SyncReport, now) -> None:
    """Record a failed call about one HIT; a HIT MTurk no longer has is marked gone (never asked about again)."""
    if does_not_exist(exc):
        MTurkHIT.objects.filter(pk=published.pk).update(gone_at=now, last_error=str(exc)[:1000])
        report.gone += 1
        log.warning("MTurk HIT %s no longer exists on MTurk: %s", published.mturk_hit_id, exc)
        return
    MTurkHIT.objects.filter(pk=published.pk).update(last_error=f"{what}: {exc}"[:1000], failures=F("failures") + 1)
    report.error(f"{what} of HIT {published.mturk_hit_id}", exc)


def _hit_ok(published: MTurkHIT) -> None:
    if published.failures or published.last_error:
        MTurkHIT.objects.filter(pk=published.pk).update(last_error="", failures=0)
        published.failures, published.last_error = 0, ""


def _reopen_expired(batch: Batch, mturk: MTurk, now, report: SyncReport, idle_gold_types: set[int] = frozenset()) -> None:
    """After a pause: give the open HITs MTurk expired a fresh lifetime (UpdateExpirationForHIT in the future),
    except gold HITs of a task type with no open regular HIT (``idle_gold_types``)."""
    paused = MTurkHIT.objects.filter(
        hit__batch=batch, hit__state=HIT.State.OPEN, expired_at__isnull=False, deleted_at__isnull=True, gone_at__isnull=True
    ).exclude(pk__in=_idle_gold(batch, idle_gold_types).values("pk")).order_by("pk")
    for published in paused:
        try:
            mturk.call(
                "UpdateExpirationForHIT", HITId=published.mturk_hit_id,
                ExpireAt=now + timedelta(seconds=batch.mturk_hit_lifetime or settings.MTURK_HIT_LIFETIME),
            )
        except MTurkError as exc:
            if does_not_exist(exc) or not _expiry_set(mturk, published, now, expired=False):  # a refusal as a repeat: is it open?
                _hit_failed(published, "UpdateExpirationForHIT (reopen)", exc, report, now)
                continue
        MTurkHIT.objects.filter(pk=published.pk).update(expired_at=None)
        _hit_ok(published)
        report.reopened += 1


def unknown_undecided():
    """Unknown submissions (posted to MTurk without a page of ours) neither rejected nor booked as paid yet; filter
    by ``mturk_hit`` (an ``OuterRef`` or a HIT)."""
    return MTurkUnknownSubmission.objects.filter(rejected_at__isnull=True, paid__isnull=True)


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
        MTurkHIT.objects.filter(hit__batch=batch, deleted_at__isnull=True, gone_at__isnull=True)
        .filter(
            Q(hit__state=HIT.State.OPEN)
            | Q(last_synced_at__isnull=True)
            | Q(hit__completed_at__isnull=True)
            | Q(last_synced_at__lt=F("hit__completed_at"))
            | Exists(undecided)
            # Work posted straight to MTurk that is neither rejected nor booked yet: MTurk may still approve it
            # on its own, and then it must be booked (``book_unknown_paid``).
            | Exists(unknown_undecided().filter(mturk_hit=OuterRef("pk")))
        )
        .order_by("pk")
    )


def _list_assignments(mturk: MTurk, published: MTurkHIT, report: SyncReport, now) -> None:
    try:
        items = list(mturk.pages(
            "ListAssignmentsForHIT", "Assignments",
            HITId=published.mturk_hit_id, AssignmentStatuses=["Submitted", "Approved", "Rejected"], MaxResults=100,
        ))
    except MTurkError as exc:
        _hit_failed(published, "ListAssignmentsForHIT", exc, report, now)
        return
    _hit_ok(published)
    for item in items:
        report.listed += 1
        try:
            with transaction.atomic():
                _take_listed(published, item, report, now)
        except Exception as exc:  # noqa: BLE001 - one assignment's trouble must not stop the rest of the sync
            report.error(f"assignment {item.get('AssignmentId')} of HIT {published.mturk_hit_id}", exc)
            log.exception("MTurk sync: assignment %s", item.get("AssignmentId"))
    MTurkHIT.objects.filter(pk=published.pk).update(last_synced_at=now)


def _take_listed(published: MTurkHIT, item: dict, report: SyncReport, now) -> None:
    """One assignment MTurk lists (submitted, approved or rejected) brought in step with our records."""
    record = MTurkAssignment.objects.select_related("assignment__worker").filter(mturk_assignment_id=item["AssignmentId"]).first()
    if record is None:
        # Submitted on MTurk without our page storing the work first (a worker posting straight to
        # externalSubmit, or a forged page): rejected by ``reject_unknown_submissions`` before MTurk pays it.
        _note_unknown(published, item)
        report.unknown += 1
        if item["AssignmentStatus"] == MTurkAssignment.Status.APPROVED:
            book_unknown_paid(published, item)  # too late: MTurk paid it, so the ledger says so
        return
    state = record.assignment.state
    if state == Assignment.State.PENDING and not _confirm_or_discard(record, item, report):
        return
    if state not in (Assignment.State.PENDING, *Assignment.DONE_STATES):
        # The worker opened our page but MTurk has work our page never stored (posted straight to MTurk,
        # or after the place here was returned, expired or discarded): an unknown submission like any other.
        _submitted_elsewhere(record, published, item, report)
        return
    status = item["AssignmentStatus"]
    if record.status != status:
        MTurkAssignment.objects.filter(pk=record.pk).update(status=status, synced_at=now)
        record.status = status
        report.status_changes += 1
    _mirror_mturk_decision(record)


def _submitted_elsewhere(record: MTurkAssignment, published: MTurkHIT, item: dict, report: SyncReport) -> None:
    from hits.payments import record_paid_by_mturk
    from hits.services import return_assignment

    assignment = record.assignment
    if assignment.state == Assignment.State.ASSIGNED:
        # MTurk will never let this assignment be submitted again: its place here is free.
        return_assignment(assignment.worker, assignment.pk)
    _note_unknown(published, item)
    report.unknown += 1
    if item["AssignmentStatus"] == MTurkAssignment.Status.APPROVED:
        # MTurk already paid it (automatic approval): the ledger must say so.
        record_paid_by_mturk(assignment, MTurkHIT.objects.get(pk=published.pk).max_assignments)


UNKNOWN_PAID_NOTE = "paid by MTurk on its own: submitted on MTurk, never through the HIT page (no answers recorded)"


def book_unknown_paid(published: MTurkHIT, item: dict) -> bool:
    """A submission our page never stored that MTurk approved on its own (its automatic approval came before our
    rejection): MTurk charged its reward and fee, so the ledger books them as paid, flagged for the researcher.

    The ledger books money on an assignment and a worker: the MTurk worker (created if new) is given a discarded
    assignment of the HIT (it holds no place and counts as no work) bound to MTurk's assignment id, so a later
    sync finds it known and books nothing twice (``record_paid_by_mturk`` books once per assignment)."""
    from hits.payments import record_paid_by_mturk

    worker_id = item.get("WorkerId") or ""
    if not worker_id:
        return False
    with transaction.atomic():
        record = MTurkAssignment.objects.filter(mturk_assignment_id=item["AssignmentId"]).select_related("assignment").first()
        if record is None:
            worker = _mturk_worker(worker_id)
            submitted = item.get("SubmitTime") if isinstance(item.get("SubmitTime"), datetime) else timezone.now()
            assignment = Assignment.objects.create(
                hit_id=published.hit_id, worker=worker, state=Assignment.State.DISCARDED, accepted_at=submitted,
                expires_at=submitted, submitted_at=submitted, review_message=UNKNOWN_PAID_NOTE[:1000],
            )
            record = MTurkAssignment.objects.create(
                mturk_assignment_id=item["AssignmentId"], mturk_hit=published, assignment=assignment,
                mturk_worker_id=worker_id, submit_to="", status=MTurkAssignment.Status.APPROVED, synced_at=timezone.now(),
            )
        return record_paid_by_mturk(record.assignment, published.max_assignments)


def _mturk_worker(mturk_worker_id: str) -> Worker:
    """The platform worker of an MTurk worker id, created (as the HIT page would) when MTurk paid one never seen."""
    worker = Worker.objects.filter(mturk_worker_id=mturk_worker_id).first()
    if worker is not None:
        return worker
    for suffix in ("", "-2", "-3"):
        if not Worker.objects.filter(external_id=f"mturk:{mturk_worker_id}{suffix}").exists():
            return Worker.objects.create(external_id=f"mturk:{mturk_worker_id}{suffix}", mturk_worker_id=mturk_worker_id)
    raise ValueError(f"no free platform id for MTurk worker {mturk_worker_id}")


def _confirm_or_discard(record: MTurkAssignment, item: dict, report: SyncReport) -> bool:
    """A pending submission MTurk has: confirmed when MTurk's worker is the one our page served, else discarded.
    Returns whether it now counts."""
    if item.get("WorkerId") != record.mturk_worker_id:
        discard_submission(
            record.assignment_id,
            f"MTurk lists assignment {record.mturk_assignment_id} as worker {item.get('WorkerId')}'s, "
            f"not {record.mturk_worker_id}'s who submitted it on our page",
        )
        report.discarded += 1
        return False
    if confirm_submission(record.assignment_id):
        report.confirmed += 1
    # The worker's other assignments of this HIT (other MTurk ids opened in their name): MTurk never gives a
    # worker two of one HIT, so they are made up; discarded, they are never confirmed nor paid.
    report.discarded += discard_other_places(
        record.assignment_id, f"MTurk lists assignment {record.mturk_assignment_id} as this worker's assignment of this HIT"
    )
    record.assignment.refresh_from_db()
    return True


def settle_unconfirmed(batch: Batch, mturk: MTurk, report: SyncReport, now=None) -> None:
    """Pending submissions MTurk's listings still lack ``MTURK_CONFIRM_GRACE`` seconds after they were made:
    asked about one by one (GetAssignment); one MTurk does not have, or has for another worker, is discarded."""
    now = now or timezone.now()
    due = now - timedelta(seconds=settings.MTURK_CONFIRM_GRACE)
    for record in MTurkAssignment.objects.filter(
        mturk_hit__hit__batch=batch, assignment__state=Assignment.State.PENDING, assignment__submitted_at__lte=due
    ).select_related("assignment", "mturk_hit").order_by("pk"):
        try:
            found = mturk.call("GetAssignment", AssignmentId=record.mturk_assignment_id)["Assignment"]
        except MTurkError as exc:
            if does_not_exist(exc):
                discard_submission(record.assignment_id, f"MTurk has no assignment {record.mturk_assignment_id}: {exc.message}"[:900])
                report.discarded += 1
            else:
                report.error(f"GetAssignment {record.mturk_assignment_id}", exc)
            continue
        if found.get("AssignmentStatus") in ("Submitted", "Approved", "Rejected") or found.get("WorkerId") != record.mturk_worker_id:
            _confirm_or_discard(record, found, report)


def _note_unknown(published: MTurkHIT, item: dict) -> None:
    submitted = item.get("SubmitTime")
    unknown, created = MTurkUnknownSubmission.objects.get_or_create(
        mturk_assignment_id=item["AssignmentId"],
        defaults={
            "mturk_hit": published, "mturk_worker_id": item.get("WorkerId", ""), "status": item["AssignmentStatus"],
            "submitted_at": submitted if isinstance(submitted, datetime) else None,
        },
    )
    if not created and unknown.status != item["AssignmentStatus"]:
        MTurkUnknownSubmission.objects.filter(pk=unknown.pk).update(status=item["AssignmentStatus"])
    if item["AssignmentStatus"] == MTurkAssignment.Status.APPROVED and unknown.paid is None:
        # MTurk paid it before a rejection reached it: what it cost is kept (no local assignment to book it on).
        reward = published.reward
        MTurkUnknownSubmission.objects.filter(pk=unknown.pk).update(paid=reward + fees.mturk_fee(reward, published.max_assignments))
    if created:
        log.warning("MTurk assignment %s of HIT %s was not submitted through our page", item["AssignmentId"], published.mturk_hit_id)


def reject_unknown_submissions(batch: Batch, mturk: MTurk, report: SyncReport, now=None) -> None:
    """Reject (RejectAssignment, with a message saying why) every submission MTurk lists as Submitted that our
    page never stored, before MTurk's automatic approval would pay it.  Each is tried on its own."""
    now = now or timezone.now()
    for unknown in MTurkUnknownSubmission.objects.filter(
        mturk_hit__hit__batch=batch, status=MTurkAssignment.Status.SUBMITTED, rejected_at__isnull=True
    ).order_by("pk"):
        try:
            mturk.call("RejectAssignment", AssignmentId=unknown.mturk_assignment_id, RequesterFeedback=UNKNOWN_SUBMISSION_FEEDBACK)
        except MTurkError as exc:
            MTurkUnknownSubmission.objects.filter(pk=unknown.pk).update(error=str(exc)[:1000])
            report.error(f"RejectAssignment of unknown submission {unknown.mturk_assignment_id}", exc)
            continue
        MTurkUnknownSubmission.objects.filter(pk=unknown.pk).update(
            rejected_at=now, status=MTurkAssignment.Status.REJECTED, error=""
        )
        # The submission used one of the HIT's places on MTurk for good: the next publish adds one back.
        MTurkHIT.objects.filter(pk=unknown.mturk_hit_id).update(lost_places=F("lost_places") + 1)
        report.unknown_rejected += 1


def _mirror_mturk_decision(record: MTurkAssignment) -> None:
    """MTurk decided on its own (auto-approval after the delay, or in its requester UI): record it locally."""
    from hits.payments import approve_assignment, reject_assignment

    assignment = record.assignment
    if record.status == MTurkAssignment.Status.APPROVED:
        if assignment.state in (Assignment.State.SUBMITTED, Assignment.State.REJECTED):
            # MTurk paid (auto-approval, possibly before a local rejection reached it): the ledger must say so,
            # whatever the age of the rejection (the 30-day override window binds researchers, not MTurk).
            approve_assignment(assignment, "approved on MTurk (automatic approval)", settle=False, by_mturk=True)
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
    - pending bonus entries: SendBonus with the entry's UniqueRequestToken, never re-sent blind
      (``hits.mturk.tokens``: an ambiguous answer, or a resend once MTurk may have forgotten the token, is
      settled by ListBonusPayments on the assignment).

    A call MTurk refuses (e.g. the worker's browser has not told MTurk of the
    submission yet) leaves the entry pending with the error noted; the next
    sync tries again.
    """
    mturk = mturk or for_batch(batch)
    report = report or SyncReport()
    records = MTurkAssignment.objects.filter(mturk_hit__hit__batch=batch).select_related("assignment")
    for record in records.filter(assignment__state=Assignment.State.APPROVED).exclude(status=MTurkAssignment.Status.APPROVED).order_by("pk"):
        params = {"AssignmentId": record.mturk_assignment_id}
        feedback = mturk_safe_text(record.assignment.review_message, 1024).strip()
        if feedback:
            params["RequesterFeedback"] = feedback
        if record.status == MTurkAssignment.Status.REJECTED:
            params["OverrideRejection"] = True
            if _override_withdrawn(record, report):
                continue
        try:
            mturk.call("ApproveAssignment", **params)
        except MTurkError as exc:
            if params.get("OverrideRejection") and does_not_exist(exc):
                # MTurk had the assignment rejected and no longer has it: its HIT was deleted.
                _override_withdrawn(record, report, gone=True)
                continue
            report.error(f"ApproveAssignment {record.mturk_assignment_id}", exc)
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
                RequesterFeedback=mturk_safe_text(record.assignment.review_message, 1024).strip() or "Rejected after review.",
            )
        except MTurkError as exc:
            report.error(f"RejectAssignment {record.mturk_assignment_id}", exc)
            continue
        MTurkAssignment.objects.filter(pk=record.pk).update(status=MTurkAssignment.Status.REJECTED, synced_at=timezone.now())
        report.rejected += 1
    bonuses = LedgerEntry.objects.filter(
        batch=batch, kind=LedgerEntry.Kind.BONUS, state=LedgerEntry.State.PENDING, assignment__mturk__isnull=False
    ).select_related("assignment__mturk").order_by("pk")
    for entry in bonuses:
        record = entry.assignment.mturk
        try:
            tokens.call(
                "SendBonus", mturk=mturk, key=entry.request_token,
                params={"WorkerId": record.mturk_worker_id, "BonusAmount": str(entry.amount),
                        "AssignmentId": record.mturk_assignment_id, "Reason": bonus_reason(entry)},
                went_through=lambda: bonus_on_mturk(mturk, entry, record),
            )
        except MTurkError as exc:
            if does_not_exist(exc) and _bonus_impossible(mturk, entry, record, exc, report):
                continue
            report.error(f"SendBonus {entry.request_token}", exc)
            _note_error(entry.assignment, LedgerEntry.Kind.BONUS, exc, entry)
            continue
        _mark_paid(entry.assignment, LedgerEntry.Kind.BONUS, entry)
        report.bonuses += 1
    return report


def _bonus_impossible(mturk: MTurk, entry: LedgerEntry, record: MTurkAssignment, exc: MTurkError, report: SyncReport) -> bool:
    """SendBonus refused because MTurk no longer has the assignment (or its HIT, e.g. deleted once the campaign
    finished): it can never be sent.  MTurk's records are read first (ListBonusPayments): a bonus they show was
    paid is booked paid; one they show unpaid leaves the pending list, refused, with MTurk's answer for the
    researcher (payout page).  False when the records cannot be read: the entry stays pending."""
    from hits.payments import bonus_refused

    try:
        paid = bonus_on_mturk(mturk, entry, record)
    except MTurkError:
        return False
    if paid is not None:
        _mark_paid(entry.assignment, LedgerEntry.Kind.BONUS, entry)
        report.bonuses += 1
        return True
    if bonus_refused(entry, f"MTurk can no longer pay this bonus: {exc.message}"):
        report.errors.append(f"bonus {entry.request_token} refused for good: {exc.message}"[:300])
    return True


def bonus_reason(entry: LedgerEntry) -> str:
    """The Reason a bonus entry is sent to MTurk with."""
    return mturk_safe_text(entry.reason, 1000) or "Bonus"


def bonus_on_mturk(mturk: MTurk, entry: LedgerEntry, record: MTurkAssignment) -> dict | None:
    """A bonus MTurk paid for ``entry`` (ListBonusPayments on its assignment), else None.

    MTurk's listing carries no request token: a payment matches on worker, amount and reason, and the entry
    counts as paid when MTurk lists more such payments than the ledger has paid entries like it."""
    def same(worker: str, amount, reason: str) -> bool:
        return (worker, Decimal(str(amount)), reason.strip()) == (record.mturk_worker_id, entry.amount, bonus_reason(entry).strip())

    listed = [
        item for item in mturk.pages("ListBonusPayments", "BonusPayments", AssignmentId=record.mturk_assignment_id, MaxResults=100)
        if same(item.get("WorkerId", ""), item.get("BonusAmount", "0"), item.get("Reason", ""))
    ]
    booked = [
        other for other in LedgerEntry.objects.filter(
            assignment_id=entry.assignment_id, kind=LedgerEntry.Kind.BONUS, state=LedgerEntry.State.PAID, amount=entry.amount
        ).exclude(pk=entry.pk)
        if bonus_reason(other).strip() == bonus_reason(entry).strip()
    ]
    return listed[len(booked)] if len(listed) > len(booked) else None


def _override_withdrawn(record: MTurkAssignment, report: SyncReport, gone: bool = False) -> bool:
    """An override waiting for a HIT MTurk deleted (``gone``: MTurk says so) can never be made: withdrawn (rejected
    again, nothing pending).  Returns whether the override cannot be made."""
    from hits.payments import override_impossible, withdraw_override

    assignment = Assignment.objects.select_related("hit__mturk").get(pk=record.assignment_id)
    if not gone and not override_impossible(assignment):
        return False
    if withdraw_override(assignment, "MTurk no longer has the HIT"):
        report.errors.append(f"override of {record.mturk_assignment_id} withdrawn: MTurk no longer has its HIT")
    return True


def expire_batch(batch: Batch, mturk: MTurk | None = None, delete: bool = True, report: SyncReport | None = None) -> SyncReport:
    """Expire the batch's MTurk HITs at once, and delete those whose every assignment is reviewed.

    DeleteHIT only succeeds for a HIT with no assignment awaiting review; the
    others stay expired (no new workers) and are deleted by a later run.
    """
    mturk = mturk or for_batch(batch)
    report = report or SyncReport()
    now = timezone.now()
    done = (HIT.State.COMPLETED, HIT.State.CANCELLED)
    # Read again: a replacement may have re-opened a finished batch since the caller loaded it.
    batch.refresh_from_db(fields=["state"])
    for published in (
        MTurkHIT.objects.filter(hit__batch=batch, deleted_at__isnull=True, gone_at__isnull=True).select_related("hit").order_by("pk")
    ):
        if published.expired_at is None:
            if not _expire(mturk, published, report, now):
                continue
            report.expired += 1
        if not delete or (batch.state not in (Batch.State.FINISHED, Batch.State.CANCELLED) and published.hit.state not in done):
            # A HIT of a running or paused batch with places still open locally stays (expired) on MTurk:
            # deleted, it could never be completed after a resume.
            continue
        awaiting = published.assignments.exclude(
            status__in=[MTurkAssignment.Status.APPROVED, MTurkAssignment.Status.REJECTED]
        ).filter(assignment__state__in=Assignment.DONE_STATES)
        if awaiting.exists() or overridable_until(published, now) is not None:
            continue
        if unknown_undecided().filter(mturk_hit=published).exists():
            continue  # deleted, it could no longer be listed: MTurk's own approval of that work would go unbooked
        try:
            mturk.call("DeleteHIT", HITId=published.mturk_hit_id)
        except MTurkError as exc:
            if does_not_exist(exc):
                _hit_failed(published, "DeleteHIT", exc, report, now)
            else:
                log.info("HIT %s not deleted yet: %s", published.mturk_hit_id, exc)
            continue
        MTurkHIT.objects.filter(pk=published.pk).update(deleted_at=now)
        report.deleted += 1
    return report


def overridable_until(published: MTurkHIT, now) -> datetime | None:
    """Until when a researcher may still override a rejection on this HIT (MTurk: only for work submitted within
    the last 30 days, and only while the HIT exists), or None when no rejection on it can be overridden any more.
    Such a HIT is expired but not deleted before then."""
    from django.db.models import Max

    from hits.payments import OVERRIDE_REJECTION_WINDOW

    latest = published.assignments.filter(status=MTurkAssignment.Status.REJECTED).aggregate(
        last=Max("assignment__submitted_at")
    )["last"]
    if latest is None or latest + OVERRIDE_REJECTION_WINDOW <= now:
        return None
    return latest + OVERRIDE_REJECTION_WINDOW


def past_expiry(n: int) -> datetime:
    """The ExpireAt of the n-th "expire now" call for a HIT: in the past, and never the same twice."""
    return EXPIRE_IN_THE_PAST + timedelta(seconds=n)


def _expire(mturk: MTurk, published: MTurkHIT, report: SyncReport, now) -> bool:
    """Expire one HIT on MTurk now (its own past time, see ``past_expiry``); whether it is expired."""
    MTurkHIT.objects.filter(pk=published.pk).update(expiry_calls=F("expiry_calls") + 1)
    published.refresh_from_db(fields=["expiry_calls"])
    try:
        mturk.call("UpdateExpirationForHIT", HITId=published.mturk_hit_id, ExpireAt=past_expiry(published.expiry_calls))
    except MTurkError as exc:
        if does_not_exist(exc) or not _expiry_set(mturk, published, now, expired=True):  # a refusal as a repeat: is it expired?
            _hit_failed(published, "UpdateExpirationForHIT", exc, report, now)
            return False
    MTurkHIT.objects.filter(pk=published.pk).update(expired_at=now)
    _hit_ok(published)
    return True


# How far MTurk's clock may be from ours when telling whether a HIT's expiration is past.
CLOCK_SKEW = timedelta(minutes=5)


def _expiry_set(mturk: MTurk, published: MTurkHIT, now, expired: bool) -> bool:
    """After a refused UpdateExpirationForHIT (MTurk refuses a repeat, with no documented code): whether the HIT
    is already as asked, read from GetHIT's Expiration (``expired``: past; else: in the future)."""
    try:
        expiration = mturk.call("GetHIT", HITId=published.mturk_hit_id)["HIT"].get("Expiration")
    except MTurkError:
        return False
    if expiration is None:
        return False
    if isinstance(expiration, (int, float)):
        expiration = datetime.fromtimestamp(expiration, tz=dt_timezone.utc)
    return expiration <= now + CLOCK_SKEW if expired else expiration > now
