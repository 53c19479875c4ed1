"""Who may do which HITs: qualification tests, revocation, blocking, and the decision log.

Protocol-agnostic rules, all per batch (a campaign's HITs): one batch's test,
revocation or block never changes what a worker may do in another batch.

- A batch *tests* a task type when it has open qualification HITs of that
  type.  There a new worker is shown only those test items; a batch that does
  not test the type lets every worker do its regular and gold HITs.
- A local batch's test items are handed only to a worker who chose the batch
  (``BatchChoice``: signed up through its invitation, or started work from it)
  and only while it has regular HITs of the type open to them: one batch's
  test never stands in front of another batch's work.
- When the worker has submitted every test item they were or can be handed
  in that batch, the type's handler grades the test
  (``handler.grade_qualification(assignments)``) and the worker becomes
  qualified, failed, or waits for a researcher's review, in that batch.
  A test item returned or expired may be taken again.
- A batch that ``accepts_group_qualifications`` lets a worker qualified in
  another batch of its (non-blank) ``qualification_group`` skip its test;
  a revocation or block stays in its own batch.
- A failed worker may try again after ``qualification_cooldown_hours``, at
  most ``qualification_max_attempts`` times; a new attempt shows the same
  test items again (``Assignment.attempt`` numbers the attempts).
- A revoked qualification closes the batch's HITs of the type; a batch block
  (``BatchBlock``) closes all of the batch's HITs; a platform-wide block
  (``Worker.blocked``, an admin's decision) closes everything.
- Every decision is logged (``QualificationEvent``) with who or what made it,
  and ``hits.signals.qualification_changed`` / ``worker_blocked`` /
  ``batch_block_changed`` are sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from types import SimpleNamespace

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from hits import sql
from hits.handlers import Eligibility
from hits.models import HIT, Assignment, Batch, BatchBlock, BatchChoice, HITExclusion, Qualification, QualificationEvent, TaskType, Worker
from hits.signals import batch_block_changed, qualification_changed, worker_blocked

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


def qualification_for(worker: Worker, task_type: TaskType, batch: Batch) -> Qualification | None:
    """The worker's standing for a task type in one batch (None: nothing decided there yet)."""
    return Qualification.objects.filter(worker=worker, task_type=task_type, batch=batch).first()


def tested_batches(task_type: TaskType, *, active_only: bool = True) -> dict[int, str]:
    """Batches that test this task type (open qualification HITs): batch id -> the qualification group whose
    qualifications it accepts ("" when it accepts only its own)."""
    hits = HIT.objects.filter(task_type=task_type, kind=HIT.Kind.QUALIFICATION, state__in=HIT.UNFINISHED_STATES)
    if active_only:
        hits = hits.filter(state=HIT.State.OPEN, batch__state=Batch.State.ACTIVE)
    rows = hits.values_list("batch_id", "batch__qualification_group", "batch__accepts_group_qualifications").distinct()
    return {batch_id: group if accepts else "" for batch_id, group, accepts in rows}


def current_attempt(qualification: Qualification | None) -> int:
    return (qualification.attempts if qualification else 0) + 1


def can_attempt(qualification: Qualification | None, limits, now=None) -> tuple[bool, str]:
    """Whether the worker may (re)take the test now, and if not, why.

    ``limits``: the batch whose test it is (its ``qualification_cooldown_hours`` and
    ``qualification_max_attempts``)."""
    if qualification is None or qualification.state == Qualification.State.PENDING:
        return True, ""
    if qualification.state != Qualification.State.FAILED:
        return False, qualification.get_state_display()
    if qualification.attempts >= limits.qualification_max_attempts:
        return False, f"no attempts left ({qualification.attempts} of {limits.qualification_max_attempts} used)"
    now = now or timezone.now()
    ready = (qualification.last_attempt_at or now) + timedelta(hours=limits.qualification_cooldown_hours)
    if now < ready:
        return False, f"you may try again after {ready:%Y-%m-%d %H:%M} UTC"
    return True, ""


def _rule_sql() -> str:
    """One statement for the eligibility rule (asked on every hand-out, see hits.sql): the worker's
    qualifications of the type with their batch's group ("q"), the batches testing the type now with the
    group each accepts, whether the batch is local, whether the worker chose it and whether it has regular
    work open to them ("t"), and the batches the worker is blocked from ("x")."""

    def build():
        nulls = ", ".join(["NULL"] * len(Qualification._meta.concrete_fields))
        fence = " OFFSET 0" if connection.vendor == "postgresql" else ""
        b = sql.table(Batch)
        h = sql.table(HIT)
        return (
            "SELECT 'q', q.batch_id, b.qualification_group, b.qualification_cooldown_hours, b.qualification_max_attempts, "
            f"NULL, NULL, NULL, {sql.columns(Qualification, 'q')} FROM {sql.table(Qualification)} q "
            f"JOIN {b} b ON b.id = q.batch_id WHERE q.worker_id = %s AND q.task_type_id = %s "
            "UNION ALL SELECT 't', t.batch_id, t.grp, t.cooldown, t.max_attempts, t.local_batch, "
            f"EXISTS (SELECT 1 FROM {sql.table(BatchChoice)} c WHERE c.worker_id = %s AND c.batch_id = t.batch_id), "
            f"EXISTS (SELECT 1 FROM {h} r WHERE r.batch_id = t.batch_id AND r.task_type_id = %s AND r.kind = %s "
            "AND r.state = %s AND r.n_taken < r.max_assignments "
            f"AND NOT EXISTS (SELECT 1 FROM {sql.table(HITExclusion)} e WHERE e.hit_id = r.id AND e.worker_id = %s) "
            # OFFSET 0 (PostgreSQL): one probe per HIT looked at, never the worker's whole history read first.
            f"AND NOT EXISTS (SELECT 1 FROM {sql.table(Assignment)} a WHERE a.hit_id = r.id AND a.worker_id = %s{fence})), "
            # DISTINCT inside a subquery: PostgreSQL would type a DISTINCT branch's NULLs as text.
            f"{nulls} FROM (SELECT DISTINCT h.batch_id AS batch_id, "
            "CASE WHEN b.accepts_group_qualifications THEN b.qualification_group ELSE '' END AS grp, "
            "b.qualification_cooldown_hours AS cooldown, b.qualification_max_attempts AS max_attempts, "
            "b.backend = %s AS local_batch "
            f"FROM {h} h JOIN {b} b ON b.id = h.batch_id "
            "WHERE h.task_type_id = %s AND h.kind = %s AND h.state = %s AND b.state = %s) t "
            f"UNION ALL SELECT 'x', x.batch_id, '', NULL, NULL, NULL, NULL, NULL, {nulls} FROM {sql.table(BatchBlock)} x WHERE x.worker_id = %s"
        )

    return sql.statement("qualification-rule", build)


def qualification_rule(worker: Worker, task_type: TaskType) -> Eligibility:
    """Eligibility rule registered with ``hits.handlers``: which HITs of a type a worker may get, per batch.

    A local batch's test is offered only to a worker who chose that batch (``BatchChoice``: invited to it,
    or started work from it) and only while it has regular work open to them; one they could choose is
    listed in ``Eligibility.choosable``.  On MTurk the worker chose the HIT there.
    """
    regular = frozenset(REGULAR_KINDS)
    rows = sql.fetchall(
        _rule_sql(),
        [
            worker.pk, task_type.pk,
            worker.pk, task_type.pk, HIT.Kind.REGULAR, HIT.State.OPEN, worker.pk, worker.pk,
            Batch.Backend.LOCAL, task_type.pk, HIT.Kind.QUALIFICATION, HIT.State.OPEN, Batch.State.ACTIVE,
            worker.pk,
        ],
    )
    own: dict[int, Qualification] = {}
    qualified_groups: dict[str, set[int]] = {}
    tested: dict[int, str] = {}
    limits: dict[int, SimpleNamespace] = {}
    offered: dict[int, tuple[bool, bool]] = {}  # batch id -> (the worker may be handed its test, may choose it)
    blocked: set[int] = set()
    for source, batch_id, group, cooldown, max_attempts, local_batch, chosen, has_work, *columns in rows:
        if source == "t":
            limits[batch_id] = SimpleNamespace(qualification_cooldown_hours=cooldown, qualification_max_attempts=max_attempts)
            offered[batch_id] = (not local_batch or (bool(chosen) and bool(has_work)), bool(local_batch and not chosen and has_work))
        if source == "q":
            own[batch_id] = qualification = sql.instance(Qualification, columns)
            if qualification.state == Qualification.State.QUALIFIED and group:
                qualified_groups.setdefault(group, set()).add(batch_id)
        elif source == "t":
            tested[batch_id] = group
        else:
            blocked.add(batch_id)
    batches: dict[int, tuple[frozenset, int]] = {}
    choosable: set[int] = set()
    for batch_id, group in tested.items():
        qualification = own.get(batch_id)
        if qualification is not None and qualification.state == Qualification.State.QUALIFIED:
            batches[batch_id] = (regular, 1)
        elif qualification is not None and qualification.state in (Qualification.State.REVOKED, Qualification.State.REVIEW):
            batches[batch_id] = (frozenset(), 1)
        elif group and qualified_groups.get(group, set()) - {batch_id}:
            batches[batch_id] = (regular, 1)  # qualified in another campaign this one accepts
        else:
            allowed, _ = can_attempt(qualification, limits[batch_id])
            handed, may_choose = offered[batch_id]
            batches[batch_id] = (frozenset({HIT.Kind.QUALIFICATION}) if allowed and handed else frozenset(), current_attempt(qualification))
            if allowed and may_choose:
                choosable.add(batch_id)
    for batch_id, qualification in own.items():
        if qualification.state in (Qualification.State.REVOKED, Qualification.State.REVIEW):
            batches[batch_id] = (frozenset(), 1)
    for batch_id in blocked:
        batches[batch_id] = (frozenset(), 1)
        choosable.discard(batch_id)
    return Eligibility(regular, batches, frozenset(choosable))


def test_progress(worker: Worker, hit: HIT, attempt: int) -> tuple[int, int]:
    """(k, n) for a test item's page: this is item k of the n the worker's test of that batch has."""
    tests = HIT.objects.filter(batch_id=hit.batch_id, task_type_id=hit.task_type_id, kind=HIT.Kind.QUALIFICATION).exclude(
        exclusions__worker=worker
    )
    done = Assignment.objects.filter(
        hit__in=tests, worker=worker, attempt=attempt, state__in=Assignment.DONE_STATES
    ).exclude(hit_id=hit.pk)
    n_done = done.count()
    # Items already answered count even if withdrawn since; items still to come only while open.
    n = n_done + tests.filter(state__in=HIT.UNFINISHED_STATES).exclude(pk__in=done.values("hit_id")).count()
    return n_done + 1, max(n, n_done + 1)


def grade_if_complete(assignment: Assignment, handler) -> Qualification | None:
    """After a qualification submission: grade the worker's test of that batch once every item they were or
    can be handed is done (items they are excluded from, or that have no place left for them, do not count).

    Runs inside the submission's transaction.
    """
    task_type = assignment.hit.task_type
    worker = assignment.worker
    batch_id = assignment.hit.batch_id
    tests = HIT.objects.filter(batch_id=batch_id, task_type=task_type, kind=HIT.Kind.QUALIFICATION)
    done = Assignment.objects.filter(
        hit__in=tests, worker=worker, attempt=assignment.attempt, state__in=Assignment.DONE_STATES
    ).select_related("hit")
    still_to_do = (
        tests.filter(state__in=HIT.UNFINISHED_STATES)
        .exclude(pk__in=done.values("hit_id"))
        .exclude(exclusions__worker=worker)
        .filter(
            # A place free for them, or one they hold now.
            Q(n_taken__lt=F("max_assignments"))
            | Q(assignments__worker=worker, assignments__attempt=assignment.attempt, assignments__state=Assignment.State.ASSIGNED)
        )
    )
    if still_to_do.exists():
        Qualification.objects.get_or_create(worker=worker, task_type=task_type, batch_id=batch_id)
        return None
    grade: TestGrade = handler.grade_qualification(list(done))
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type, batch_id=batch_id)
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


def _set(qualification: Qualification, state: str, reason: str, action: str, *, figures=None, by=None, automatic=False, record_reason=None):
    """``reason`` is the worker's to see; ``record_reason`` (default ``reason``) is kept in the event for researchers."""
    qualification.state = state
    qualification.reason = reason[:500]
    qualification.save()
    QualificationEvent.objects.create(
        worker=qualification.worker,
        task_type=qualification.task_type,
        batch_id=qualification.batch_id,
        action=action,
        reason=(record_reason or reason)[:500],
        figures=figures or {},
        decided_by=by,
        automatic=automatic,
    )
    qualification_changed.send(
        sender=Qualification, worker=qualification.worker, task_type=qualification.task_type, state=state, reason=reason,
        batch=qualification.batch,
    )


@transaction.atomic
def revoke(
    worker: Worker, task_type: TaskType, batch: Batch, reason: str, *, by=None, automatic=False, figures=None, record_reason=None
) -> Qualification:
    """Take a worker's qualification for a type away in one batch (their HITs of that type there stop).

    ``reason`` is shown to the worker; ``record_reason``, when given, is the researchers' fuller account."""
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type, batch=batch)
    _set(
        qualification, Qualification.State.REVOKED, reason, QualificationEvent.Action.REVOKE, figures=figures, by=by, automatic=automatic,
        record_reason=record_reason,
    )
    return qualification


@transaction.atomic
def reinstate(
    worker: Worker, task_type: TaskType, batch: Batch, reason: str = "reinstated by a researcher", *, by=None, figures=None
) -> Qualification:
    """Give a worker the qualification in one batch (after a review, or undoing a revocation)."""
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type, batch=batch)
    action = QualificationEvent.Action.GRANT if qualification.state == Qualification.State.REVIEW else QualificationEvent.Action.REINSTATE
    _set(qualification, Qualification.State.QUALIFIED, reason, action, by=by, figures=figures)
    return qualification


@transaction.atomic
def fail_review(
    worker: Worker, task_type: TaskType, batch: Batch, reason: str = "test not accepted on review", *, by=None
) -> Qualification:
    """A researcher does not accept a test sent to review: the worker failed it (and may retry after the cool-down)."""
    qualification, _ = Qualification.objects.select_for_update().get_or_create(worker=worker, task_type=task_type, batch=batch)
    _set(qualification, Qualification.State.FAILED, reason, QualificationEvent.Action.FAIL, by=by)
    return qualification


@transaction.atomic
def set_blocked(worker: Worker, blocked: bool, reason: str = "", *, by=None) -> Worker:
    """Block (or unblock) a worker from every task type of every batch: an admin's decision."""
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


@transaction.atomic
def set_batch_blocked(worker: Worker, batch: Batch, blocked: bool, reason: str = "", *, by=None) -> bool:
    """Keep a worker out of one batch (or let them back in); returns whether anything changed."""
    if blocked:
        _, changed = BatchBlock.objects.get_or_create(batch=batch, worker=worker, defaults={"reason": reason[:500], "decided_by": by})
    else:
        changed = BatchBlock.objects.filter(batch=batch, worker=worker).delete()[0] > 0
    if changed:
        QualificationEvent.objects.create(
            worker=worker,
            batch=batch,
            action=QualificationEvent.Action.BLOCK if blocked else QualificationEvent.Action.UNBLOCK,
            reason=reason[:500],
            decided_by=by,
        )
        batch_block_changed.send(sender=BatchBlock, worker=worker, batch=batch, blocked=blocked, reason=reason)
    return changed


def status_label(
    worker: Worker, task_type: TaskType, batch: Batch, qualification: Qualification | None = None, *,
    tested: bool | None = None, blocked_here: bool | None = None, fetched: bool = False,
) -> str:
    """One word or two for reports: qualified, not tested, testing, review, failed, revoked or blocked.

    ``fetched``: ``qualification`` was looked up already (None: the worker has none in this batch).
    """
    if worker.blocked:
        return "blocked"
    if blocked_here is None:
        blocked_here = BatchBlock.objects.filter(worker=worker, batch=batch).exists()
    if blocked_here:
        return "blocked"
    if qualification is None and not fetched:
        qualification = qualification_for(worker, task_type, batch)
    if qualification is None:
        if tested is None:
            tested = batch.pk in tested_batches(task_type, active_only=False)
        if not tested:
            return "qualified"
        if batch.accepts_group_qualifications and batch.qualification_group:
            accepted = Qualification.objects.filter(
                worker=worker, task_type=task_type, state=Qualification.State.QUALIFIED,
                batch__qualification_group=batch.qualification_group,
            ).exclude(batch=batch)
            if accepted.exists():
                return "qualified"
        return "not tested"
    return {
        Qualification.State.QUALIFIED: "qualified",
        Qualification.State.PENDING: "testing",
        Qualification.State.REVIEW: "review",
        Qualification.State.FAILED: "failed",
        Qualification.State.REVOKED: "revoked",
    }[qualification.state]
