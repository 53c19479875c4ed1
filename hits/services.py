"""Workflow steps of the crowdsourcing machinery: accept, submit, return, expire.

Each step is one transaction.  The hand-out (the next HIT, the worker's draw, gold, the locking and
deadlock retries) lives in ``hits.handout``; its public names are importable from here as before.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from hits.handlers import AnswerErrors, task_handler
from hits import qualifications, sql
from hits.handout import (
    MTURK_BACKENDS,  # noqa: F401 - importable from here as before
    NotEligible,
    accept_next,
    available_hits,
    current_assignment,
    pass_hit,
    preview_next,
    seed_hand_out,
)
from hits.models import HIT, Assignment, Batch, BatchChoice, TaskType, Worker
from hits.markets.money import CENT, money
from hits.markets.registry import market_for

log = logging.getLogger(__name__)


class AssignmentClosed(Exception):
    """The assignment was returned or has expired: it can no longer be submitted."""

    def __init__(self, message: str, task_type: TaskType | None = None):
        super().__init__(message)
        self.task_type = task_type


class WorkCancelled(AssignmentClosed):
    """The HIT's batch (its campaign) was cancelled: the submission is refused and nothing is stored."""


def worker_for_user(user) -> Worker:
    """The platform worker of a logged-in user, created on first use."""
    try:
        return user.worker
    except Worker.DoesNotExist:
        pass
    base = user.get_username()[:120]
    external_id = base
    suffix = 1
    while Worker.objects.filter(external_id=external_id).exists():
        suffix += 1
        external_id = f"{base}-{suffix}"
    try:
        return Worker.objects.create(user=user, external_id=external_id)
    except IntegrityError:  # created concurrently by another request of the same user
        return Worker.objects.get(user=user)


def market_worker(id_field: str, market_id: str, label: str) -> Worker:
    """The platform worker of a crowd market's worker (``id_field``: ``mturk_worker_id`` or ``prolific_pid``),
    created on their first arrival with ``external_id`` ``"<label>:<market id>"``."""
    for suffix in ("", "-2", "-3"):
        worker = Worker.objects.filter(**{id_field: market_id}).first()
        if worker is not None:
            return worker
        try:
            with transaction.atomic():
                return Worker.objects.create(external_id=f"{label}:{market_id}{suffix}", **{id_field: market_id})
        except IntegrityError:
            # Either the same worker's first two requests raced (found on the next turn), or the
            # external id is taken by someone else (e.g. imported data): try the next suffix.
            continue
    return Worker.objects.get(**{id_field: market_id})


def record_choice(worker: Worker, batch: Batch, how: str) -> None:
    """The worker chose this batch (a campaign): its qualification test is offered to them from now on."""
    BatchChoice.objects.get_or_create(worker=worker, batch=batch, defaults={"how": how})



def note_instructions_seen(worker: Worker, task_type: TaskType) -> None:
    """After the worker's first submission of a task type: its instructions start collapsed on their pages."""
    key = getattr(task_handler(task_type.slug), "instructions_key", task_type.slug)
    if key not in (worker.seen_instructions or []):
        worker.seen_instructions = [*(worker.seen_instructions or []), key]
        worker.save(update_fields=["seen_instructions"])


def worker_assignment(worker: Worker, assignment_id: int, lock: bool = False) -> Assignment:
    """The worker's assignment with its HIT, task type and batch; ``lock`` locks the assignment, then its HIT.

    Raises ``Assignment.DoesNotExist`` when the assignment is not this worker's.
    """
    try:
        assignment_id = int(assignment_id)
    except (TypeError, ValueError):
        raise Assignment.DoesNotExist from None
    if not sql.is_storable_id(assignment_id):
        raise Assignment.DoesNotExist(f"no assignment {assignment_id}")
    row = sql.fetchone(_assignment_sql(lock), [assignment_id, worker.pk])
    if row is None:
        raise Assignment.DoesNotExist(f"no assignment {assignment_id} of worker {worker.pk}")
    assignment, hit, task_type, batch = sql.instances(row, Assignment, HIT, TaskType, Batch)
    sql.attach(assignment, hit=hit, worker=worker)
    sql.attach(hit, task_type=task_type, batch=batch)
    return assignment


def _assignment_sql(lock: bool) -> str:
    return sql.statement(
        ("assignment", lock),
        lambda: (
            f"SELECT {sql.columns(Assignment, 'a')}, {sql.columns(HIT, 'h')}, {sql.columns(TaskType, 't')}, "
            f"{sql.columns(Batch, 'b')} FROM {sql.table(Assignment)} a "
            f"JOIN {sql.table(HIT)} h ON h.id = a.hit_id "
            f"JOIN {sql.table(TaskType)} t ON t.id = h.task_type_id "
            f"JOIN {sql.table(Batch)} b ON b.id = h.batch_id "
            "WHERE a.id = %s AND a.worker_id = %s" + (sql.lock_clause("a", "h") if lock else "")
        ),
    )


def mark_opened(assignment: Assignment) -> None:
    """The worker has the HIT on screen: its place is theirs for the task type's full duration."""
    # On MTurk, the campaign may set its own AssignmentDurationInSeconds: the place is held as long as MTurk holds it.
    batch = assignment.hit.batch
    held = batch.mturk_assignment_duration if batch.on_mturk else None
    full = assignment.accepted_at + timedelta(seconds=held or assignment.hit.task_type.assignment_duration)
    if assignment.state == Assignment.State.ASSIGNED and assignment.expires_at < full:
        # Only a live place: one the expiry run has just taken back stays taken back.
        updated = Assignment.objects.filter(
            pk=assignment.pk, state=Assignment.State.ASSIGNED, expires_at__gt=timezone.now()
        ).update(expires_at=full)
        if updated:
            assignment.expires_at = full


def expire_due(min_interval: float = 20.0) -> int:
    """Run ``expire_assignments`` from a request when no scheduler does (the embedded default has no Celery
    beat), at most once per ``min_interval`` seconds per process."""
    global _last_expiry
    now = time.monotonic()
    if now - _last_expiry < min_interval:
        return 0
    _last_expiry = now
    return expire_assignments()


_last_expiry = float("-inf")


@dataclass
class SubmitOutcome:
    assignment: Assignment
    duplicate: bool = False


def submit_assignment(worker: Worker, assignment_id: int, data, *, confirm_later: bool = False) -> SubmitOutcome:
    """Validate and store a worker's answers; the handler reacts in the same transaction.

    A second submission of the same assignment (double click, retry) records
    nothing and reports ``duplicate``.  Raises ``AnswerErrors`` (nothing
    stored), ``AssignmentClosed``, or ``Assignment.DoesNotExist`` when the
    assignment is not this worker's.

    ``confirm_later`` (MTurk's framed page): the answers are stored but the
    assignment is "pending": it does not count towards its HIT and the handler
    hears nothing until ``confirm_submission`` (MTurk listed it as submitted by
    the same worker); ``discard_submission`` drops it and frees its place.
    """
    now = timezone.now()
    closed = None
    with transaction.atomic():
        # One query locks the assignment and then its HIT (always in that order, as expiry does):
        # submissions of one HIT are serialised, so "the last one" is known exactly.
        assignment = worker_assignment(worker, assignment_id, lock=True)
        if assignment.state in Assignment.DONE_STATES or assignment.state == Assignment.State.PENDING:
            return SubmitOutcome(assignment, duplicate=True)
        if assignment.state == Assignment.State.ASSIGNED and assignment.expires_at <= now:
            # The expiry is kept (committed) even though the submission is refused.
            _release(assignment, Assignment.State.EXPIRED)
            assignment.state = Assignment.State.EXPIRED
        if assignment.state in (Assignment.State.RETURNED, Assignment.State.EXPIRED):
            closed = f"this HIT was {assignment.get_state_display().lower()} and can no longer be submitted"
        elif assignment.hit.batch.state == Batch.State.CANCELLED:
            # Nothing is stored or handed over: a cancelled campaign gets no completed HITs and no next stage.
            raise WorkCancelled(
                "the study this HIT belongs to was cancelled by its researchers, so this work can no longer be "
                "submitted; nothing was saved and nothing is owed for it",
                task_type=assignment.hit.task_type,
            )
        else:
            _store_submission(assignment, data, now, confirm_later)
    if closed:
        raise AssignmentClosed(closed, task_type=assignment.hit.task_type)
    return SubmitOutcome(assignment)


def _store_submission(assignment: Assignment, data, now, confirm_later: bool = False) -> None:
    """Validate, store and hand over a submission (inside the caller's transaction, HIT locked)."""
    hit = assignment.hit
    handler = task_handler(hit.task_type.slug)
    answers = handler.clean(hit, data)
    assignment.answers = answers
    assignment.feedback = str(answers.get("feedback", ""))[:2000] if isinstance(answers, dict) else ""
    assignment.state = Assignment.State.PENDING if confirm_later else Assignment.State.SUBMITTED
    assignment.submitted_at = now
    assignment.work_seconds = max(0, int((now - assignment.accepted_at).total_seconds()))
    sql.update(assignment, ["answers", "feedback", "state", "submitted_at", "work_seconds"])
    if not confirm_later:
        _hand_over(assignment, handler, now)


def _hand_over(assignment: Assignment, handler, now) -> None:
    """A submission now counts: its HIT's tally (and completion), grading or the handler's reaction."""
    hit = assignment.hit
    if hit.batch.state == Batch.State.CANCELLED:
        # Work MTurk confirms after its campaign was cancelled: kept on its assignment, but its HIT is not
        # completed and the campaign's stages go no further (no verification or presence HITs from it).
        return
    hit.n_submitted += 1
    if hit.n_submitted >= hit.max_assignments:
        hit.state = HIT.State.COMPLETED
        hit.completed_at = now
    sql.update(hit, ["n_submitted", "state", "completed_at"])
    if hit.kind == HIT.Kind.QUALIFICATION:
        qualifications.grade_if_complete(assignment, handler)
    else:
        handler.on_submitted(assignment)
    # A submission may open new HITs (the next stage); on an MTurk batch they are published after the commit.
    market_for(hit.batch).publish_soon(hit.batch)


class PlacesRefused(Exception):
    """More places cannot be added as asked (e.g. the batch's budget cap); nothing was changed."""


def add_places(hit: HIT, extra: int, *, replacement: bool = True) -> HIT:
    """Open ``extra`` more places of ``hit`` (e.g. to replace excluded work), inside the caller's transaction;
    returns the HIT that holds them.  ``replacement=False``: the places are more work wanted (e.g. a third
    judge where two disagree), not replacements: they are not counted in the payload's ``replacements`` (which
    re-including a worker withdraws), and a HIT of their own names ``hit`` under ``adds_to``, not ``replaces``.

    Locally the HIT just grows.  On MTurk the published HIT grows too (``CreateAdditionalAssignmentsForHIT``
    at the next publish) when MTurk allows it: not for a HIT MTurk deleted or no longer has, and never from
    under 10 assignments to 10 or more (MTurk refuses; the commission would also double).  Otherwise the
    places go to a new HIT with the same payload, published as its own MTurk HIT, which the workers of the
    first may not take.  On MTurk, ``PlacesRefused`` when the places would take the money committed over
    the batch's budget cap.
    """
    from hits import budget
    from hits.places import new_hit_for_places

    # The batch row first: concurrent additions to one batch are checked against the cap one at a time.  The
    # places' money is reserved when the publisher sends them; here they are refused early when they could not be.
    batch = budget.locked(hit.batch_id)
    hit = HIT.objects.select_for_update(of=("self",), no_key=True).get(pk=hit.pk)
    hit.batch = batch
    market = market_for(batch)
    priced = market.extra_places_cost(hit, extra)
    if priced is not None:
        cost, waiting = priced
        cost = cost.quantize(CENT)
        what = f"{extra} more place{'s' if extra != 1 else ''}"
        if waiting:
            what += f" ({money(cost, batch)}) with the {money(waiting, batch)} of places waiting to be published"
        try:
            budget.check(batch, cost + waiting, what)
        except budget.CapReached as exc:
            raise PlacesRefused(str(exc)) from None
    can_grow = market.can_grow(hit, extra)
    target = hit
    if can_grow:
        hit.max_assignments += extra
        if replacement:
            hit.payload = {**hit.payload, "replacements": hit.payload.get("replacements", 0) + extra}
    else:
        target = new_hit_for_places(hit, extra, link="replaces" if replacement else "adds_to")
    if can_grow:
        hit.state, hit.completed_at = HIT.State.OPEN, None
        hit.save(update_fields=["max_assignments", "payload", "state", "completed_at"])
    market_for(batch).publish_soon(batch)
    return target


def _locked_pending(assignment_id: int) -> Assignment | None:
    """The assignment locked, then its HIT (the order submissions and expiry lock them in); None unless pending."""
    assignment = Assignment.objects.select_for_update(of=("self",)).get(pk=assignment_id)
    if assignment.state != Assignment.State.PENDING:
        return None
    assignment.hit = HIT.objects.select_for_update(of=("self",)).select_related("task_type", "batch").get(pk=assignment.hit_id)
    return assignment


def confirm_submission(assignment_id: int) -> bool:
    """MTurk confirmed a pending submission (listed it as submitted by the same worker): it now counts, as a
    local submission does at once.  Idempotent: returns whether this call confirmed it."""
    with transaction.atomic():
        assignment = _locked_pending(assignment_id)
        if assignment is None:
            return False
        assignment.state = Assignment.State.SUBMITTED
        Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.SUBMITTED)
        _hand_over(assignment, task_handler(assignment.hit.task_type.slug), timezone.now())
    return True


def discard_submission(assignment_id: int, reason: str) -> bool:
    """Drop a pending submission MTurk never confirmed (a forged page, or another worker's assignment): its
    answers never count, its place is free again, and the reason is logged.  Returns whether it was discarded."""
    with transaction.atomic():
        assignment = _locked_pending(assignment_id)
        if assignment is None:
            return False
        Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.DISCARDED, review_message=reason[:1000])
        # A pending submission never counted towards the HIT's completion: freeing its place is enough.
        HIT.objects.filter(pk=assignment.hit_id).update(n_taken=F("n_taken") - 1)
    log.warning("discarded unconfirmed submission %s of HIT %s: %s", assignment_id, assignment.hit_id, reason)
    return True


def discard_other_places(assignment_id: int, reason: str) -> int:
    """MTurk confirmed ``assignment_id``: the same worker's other assignments of its HIT not confirmed (made-up
    MTurk ids opened in their name, ``Assignment.overbook``) are discarded and their places freed; their
    answers, if any, never count.  Returns how many were discarded."""
    with transaction.atomic():
        confirmed = Assignment.objects.get(pk=assignment_id)
        others = list(
            Assignment.objects.select_for_update()
            .filter(hit_id=confirmed.hit_id, worker_id=confirmed.worker_id, state__in=[Assignment.State.ASSIGNED, Assignment.State.PENDING])
            .exclude(pk=assignment_id)
            .values_list("pk", flat=True)
        )
        if others:
            Assignment.objects.filter(pk__in=others).update(state=Assignment.State.DISCARDED, review_message=reason[:1000])
            HIT.objects.filter(pk=confirmed.hit_id).update(n_taken=F("n_taken") - len(others))
    for pk in others:
        log.warning("discarded assignment %s of HIT %s: %s", pk, confirmed.hit_id, reason)
    return len(others)


def _release(assignment: Assignment, state: str) -> None:
    """Give an assigned place back to the HIT (inside the caller's transaction)."""
    updated = Assignment.objects.filter(pk=assignment.pk, state=Assignment.State.ASSIGNED).update(state=state)
    if updated:
        HIT.objects.filter(pk=assignment.hit_id).update(n_taken=F("n_taken") - 1)


def release_assignment(assignment_id: int, state: str = Assignment.State.EXPIRED) -> bool:
    """Take an assigned place back because its time ran out on the market or the work was given back there
    (a Prolific submission returned or timed out): the assignment becomes ``state`` (expired or returned) and
    its place is free again.  Returns False when it was no longer assigned (submitted meanwhile: kept)."""
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().filter(pk=assignment_id).first()
        if assignment is None or assignment.state != Assignment.State.ASSIGNED:
            return False
        _release(assignment, state)
    return True


def return_assignment(worker: Worker, assignment_id: int, *, skipped: bool = False) -> Assignment:
    """The worker gives a HIT back (``skipped``: to get another one); it returns to the pool for others."""
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment_id, worker=worker)
        if assignment.state != Assignment.State.ASSIGNED:
            raise AssignmentClosed(f"this HIT is already {assignment.get_state_display().lower()}")
        _release(assignment, Assignment.State.RETURNED)
        # The worker's next HIT of the type moves on to another one when there is one.
        task_type_id = HIT.objects.filter(pk=assignment.hit_id).values_list("task_type_id", flat=True).get()
        pass_hit(worker.pk, task_type_id, assignment.hit_id)
        if skipped:
            Assignment.objects.filter(pk=assignment.pk).update(skipped=True)
        assignment.refresh_from_db()
    return assignment


def expire_assignments(now=None) -> int:
    """Expire assignments held past their deadline; their places return to the pool."""
    now = now or timezone.now()
    expired = 0
    ids = list(
        Assignment.objects.filter(state=Assignment.State.ASSIGNED, expires_at__lte=now).values_list("pk", flat=True)
    )
    for pk in ids:
        with transaction.atomic():
            assignment = Assignment.objects.select_for_update(skip_locked=True).filter(pk=pk).first()
            if assignment is None or assignment.state != Assignment.State.ASSIGNED:
                continue
            _release(assignment, Assignment.State.EXPIRED)
            expired += 1
    if expired:
        log.info("expired %d assignments", expired)
    return expired


def set_batch_state(batch: Batch, state: str) -> None:
    """Change a batch's state; pausing sets its open HITs aside and resuming opens them again.

    A paused batch's HITs would be refused by the hand-out anyway (it asks for an active batch),
    but while they stayed open the queue index (then one queue for all campaigns) led every hand-out
    past all of them, in queue order: one large paused campaign slowed every worker's next HIT.  (The
    queue index is now per campaign, ``hit_campaign_queue``, which would skip them too.)  HITs opened during the
    pause (follow-ups of work in progress) stay open and are held back by the batch's state.
    Callers serialise pause and resume (the campaign row is locked), so no HIT stays set aside
    in an active batch.
    """
    Batch.objects.filter(pk=batch.pk).update(state=state)
    if state == Batch.State.PAUSED:
        HIT.objects.filter(batch_id=batch.pk, state=HIT.State.OPEN).update(state=HIT.State.PAUSED)
    elif state == Batch.State.ACTIVE:
        HIT.objects.filter(batch_id=batch.pk, state=HIT.State.PAUSED).update(state=HIT.State.OPEN)
    batch.state = state


__all__ = [
    "AnswerErrors",
    "AssignmentClosed",
    "NotEligible",
    "WorkCancelled",
    "SubmitOutcome",
    "accept_next",
    "available_hits",
    "current_assignment",
    "worker_assignment",
    "expire_assignments",
    "expire_due",
    "mark_opened",
    "market_worker",
    "preview_next",
    "note_instructions_seen",
    "record_choice",
    "release_assignment",
    "seed_hand_out",
    "return_assignment",
    "set_batch_state",
    "submit_assignment",
    "worker_for_user",
]
