"""Who may do which HITs: qualification tests, revocation, blocking, and the decision log.

Protocol-agnostic rules:

- A task type that ``requires_qualification`` shows a new worker only its
  qualification HITs.  When the worker has submitted every open
  qualification HIT of the type, the type's handler grades the test
  (``handler.grade_qualification(assignments)``) and the worker becomes
  qualified, failed, or waits for a researcher's review.
- A failed worker may try again after ``qualification_cooldown_hours``, at
  most ``qualification_max_attempts`` times; a new attempt shows the same
  qualification HITs again (``Assignment.attempt`` numbers the attempts).
- A revoked qualification or a block closes every HIT of the type (for a
  block: every type), whether or not the type requires a qualification.
- Every decision is logged (``QualificationEvent``) with who or what made it,
  and ``hits.signals.qualification_changed`` / ``worker_blocked`` are sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from hits import sql
from hits.models import HIT, Assignment, Qualification, QualificationEvent, TaskType, Worker
from hits.signals import qualification_changed, worker_blocked

REGULAR_KINDS = (HIT.Kind.REGULAR, HIT.Kind.GOLD)


@dataclass
class TestGrade:
    """A handler's verdict on a finished qualification test.

    ``passed`` is None when the automatic checks cannot decide and a
    researcher must review the test.
    """

    score: float
    passed: bool | None
    details: dict = field(default_factory=dict)


def qualification_for(worker: Worker, task_type: TaskType) -> Qualification | None:
    # Asked on every hand-out (the eligibility rule): hand-written SQL, see hits.sql.
    statement = sql.statement(
        "qualification",
        lambda: f"SELECT {sql.columns(Qualification, 'q')} FROM {sql.table(Qualification)} q WHERE q.worker_id = %s AND q.task_type_id = %s",
    )
    row = sql.fetchone(statement, [worker.pk, task_type.pk])
    return sql.instance(Qualification, row) if row is not None else None


def current_attempt(qualification: Qualification | None) -> int:
    return (qualification.attempts if qualification else 0) + 1


def can_attempt(qualification: Qualification | None, task_type: TaskType, now=None) -> tuple[bool, str]:
    """Whether the worker may (re)take the test now, and if not, why."""
    if qualification is None or qualification.state == Qualification.State.PENDING:
        return True, ""
    if qualification.state != Qualification.State.FAILED:
        return False, qualification.get_state_display()
    if qualification.attempts >= task_type.qualification_max_attempts:
        return False, f"no attempts left ({qualification.attempts} of {task_type.qualification_max_attempts} used)"
    now = now or timezone.now()
    ready = (qualification.last_attempt_at or now) + timedelta(hours=task_type.qualification_cooldown_hours)
    if now < ready:
        return False, f"you may try again after {ready:%Y-%m-%d %H:%M} UTC"
    return True, ""


def qualification_rule(worker: Worker, task_type: TaskType):
    """Eligibility rule registered with ``hits.handlers``: which kinds of HIT a worker may get."""
    qualification = qualification_for(worker, task_type)
    if qualification is not None and qualification.state in (Qualification.State.REVOKED, Qualification.State.REVIEW):
        return []
    if not task_type.requires_qualification:
        return None
    if qualification is not None and qualification.state == Qualification.State.QUALIFIED:
        return list(REGULAR_KINDS)
    allowed, _ = can_attempt(qualification, task_type)
    return [HIT.Kind.QUALIFICATION] if allowed else []


def attempt_for_kinds(worker: Worker, task_type: TaskType, kinds) -> int:
    """The attempt number an assignment of these kinds gets (1 except for qualification retakes)."""
    if set(kinds) == {HIT.Kind.QUALIFICATION}:
        return current_attempt(qualification_for(worker, task_type))
    return 1


def grade_if_complete(assignment: Assignment, handler) -> Qualification | None:
    """After a qualification submission: grade the test once every qualification HIT is done.

    Runs inside the submission's transaction.
    """
    task_type = assignment.hit.task_type
    worker = assignment.worker
    open_tests = HIT.objects.filter(task_type=task_type, kind=HIT.Kind.QUALIFICATION).exclude(
        state=HIT.State.CANCELLED
    )
    done = Assignment.objects.filter(
        hit__in=open_tests, worker=worker, attempt=assignment.attempt, state__in=Assignment.DONE_STATES
    ).select_related("hit")
    if done.count() < open_tests.count():
        Qualification.objects.get_or_create(worker=worker, task_type=task_type)
        return None
    grade: TestGrade = handler.grade_qualification(list(done))
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type)
    qualification.attempts = assignment.attempt
    qualification.last_attempt_at = timezone.now()
    qualification.score = grade.score
    if grade.passed is None:
        state, action, reason = Qualification.State.REVIEW, QualificationEvent.Action.REVIEW, "test sent to a researcher for review"
    elif grade.passed:
        state, action, reason = Qualification.State.QUALIFIED, QualificationEvent.Action.GRANT, f"passed the test (score {grade.score:.2f})"
    else:
        state, action, reason = Qualification.State.FAILED, QualificationEvent.Action.FAIL, f"did not pass the test (score {grade.score:.2f})"
    _set(qualification, state, reason, action, figures={"score": grade.score, **grade.details}, automatic=True)
    return qualification


def _set(qualification: Qualification, state: str, reason: str, action: str, *, figures=None, by=None, automatic=False):
    qualification.state = state
    qualification.reason = reason[:500]
    qualification.save()
    QualificationEvent.objects.create(
        worker=qualification.worker,
        task_type=qualification.task_type,
        action=action,
        reason=reason[:500],
        figures=figures or {},
        decided_by=by,
        automatic=automatic,
    )
    qualification_changed.send(
        sender=Qualification, worker=qualification.worker, task_type=qualification.task_type, state=state, reason=reason
    )


@transaction.atomic
def revoke(worker: Worker, task_type: TaskType, reason: str, *, by=None, automatic=False, figures=None) -> Qualification:
    """Take a worker's qualification for a type away (their HITs of that type stop)."""
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type)
    _set(qualification, Qualification.State.REVOKED, reason, QualificationEvent.Action.REVOKE, figures=figures, by=by, automatic=automatic)
    return qualification


@transaction.atomic
def reinstate(
    worker: Worker, task_type: TaskType, reason: str = "reinstated by a researcher", *, by=None, figures=None
) -> Qualification:
    """Give a worker the qualification (after a review, or undoing a revocation)."""
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type)
    action = QualificationEvent.Action.GRANT if qualification.state == Qualification.State.REVIEW else QualificationEvent.Action.REINSTATE
    _set(qualification, Qualification.State.QUALIFIED, reason, action, by=by, figures=figures)
    return qualification


@transaction.atomic
def fail_review(worker: Worker, task_type: TaskType, reason: str = "test not accepted on review", *, by=None) -> Qualification:
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type)
    _set(qualification, Qualification.State.FAILED, reason, QualificationEvent.Action.FAIL, by=by)
    return qualification


@transaction.atomic
def set_blocked(worker: Worker, blocked: bool, reason: str = "", *, by=None) -> Worker:
    """Block (or unblock) a worker from every task type."""
    Worker.objects.filter(pk=worker.pk).update(blocked=blocked, blocked_reason=reason[:500] if blocked else "")
    worker.refresh_from_db()
    QualificationEvent.objects.create(
        worker=worker,
        action=QualificationEvent.Action.BLOCK if blocked else QualificationEvent.Action.UNBLOCK,
        reason=reason[:500],
        decided_by=by,
    )
    worker_blocked.send(sender=Worker, worker=worker, blocked=blocked, reason=reason)
    return worker


def status_label(worker: Worker, task_type: TaskType, qualification: Qualification | None = None) -> str:
    """One word for reports: qualified, pending, failed, revoked or blocked."""
    if worker.blocked:
        return "blocked"
    if qualification is None:
        qualification = qualification_for(worker, task_type)
    if qualification is None:
        return "qualified" if not task_type.requires_qualification else "pending"
    return {
        Qualification.State.QUALIFIED: "qualified",
        Qualification.State.PENDING: "pending",
        Qualification.State.REVIEW: "pending",
        Qualification.State.FAILED: "failed",
        Qualification.State.REVOKED: "revoked",
    }[qualification.state]
