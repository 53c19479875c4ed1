"""The HIT engine: accept, submit once, return, expire, exclusions, eligibility."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.utils import timezone

from hits.handlers import AnswerErrors, register_eligibility_rule, register_task_handler
from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.services import (
    AssignmentClosed,
    NotEligible,
    accept_next,
    expire_assignments,
    return_assignment,
    submit_assignment,
)

pytestmark = pytest.mark.django_db


class EchoHandler:
    """A minimal task: the answer is a non-empty 'text' field."""

    template_name = "hits/test_echo.html"
    submitted: list = []

    def page_context(self, hit, assignment, data):
        return {"value": (data or {}).get("text", "")}

    def clean(self, hit, data):
        if not data.get("text"):
            raise AnswerErrors({"text": ["Write something."]})
        return {"text": data["text"]}

    def on_submitted(self, assignment):
        self.submitted.append(assignment.pk)


@pytest.fixture
def echo():
    handler = EchoHandler()
    handler.submitted = []
    register_task_handler("echo", handler)
    task_type = TaskType.objects.create(slug="echo", name="Echo", assignment_duration=600)
    batch = Batch.objects.create(name="b", reference="test:1")
    return handler, task_type, batch


def _workers(n):
    return [Worker.objects.create(external_id=f"w{i}") for i in range(n)]


def test_hit_is_filled_by_distinct_workers_up_to_its_maximum(echo):
    _, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type, max_assignments=2)
    a, b, c = _workers(3)
    first = accept_next(a, task_type)
    assert first.hit == hit
    assert accept_next(a, task_type) == first  # the same live assignment comes back
    assert accept_next(b, task_type).hit == hit
    assert accept_next(c, task_type) is None
    hit.refresh_from_db()
    assert hit.n_taken == 2


def test_database_refuses_overfill_and_second_assignment_of_a_worker(echo):
    _, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type, max_assignments=1, n_taken=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        HIT.objects.filter(pk=hit.pk).update(n_taken=2)
    worker = _workers(1)[0]
    now = timezone.now()
    Assignment.objects.create(hit=hit, worker=worker, accepted_at=now, expires_at=now)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(hit=hit, worker=worker, accepted_at=now, expires_at=now)


def test_submit_twice_records_once_and_bad_answers_store_nothing(echo):
    handler, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type, max_assignments=1)
    worker = _workers(1)[0]
    assignment = accept_next(worker, task_type)
    with pytest.raises(AnswerErrors):
        submit_assignment(worker, assignment.pk, {"text": ""})
    assignment.refresh_from_db()
    assert assignment.state == "assigned" and assignment.answers is None
    first = submit_assignment(worker, assignment.pk, {"text": "hello"})
    second = submit_assignment(worker, assignment.pk, {"text": "again"})
    assert not first.duplicate and second.duplicate
    assert handler.submitted == [assignment.pk]
    assignment.refresh_from_db()
    hit.refresh_from_db()
    assert assignment.answers == {"text": "hello"} and assignment.state == "submitted"
    assert hit.n_submitted == 1 and hit.state == "completed"


def test_another_workers_assignment_cannot_be_submitted_or_returned(echo):
    _, task_type, batch = echo
    HIT.objects.create(batch=batch, task_type=task_type)
    owner, intruder = _workers(2)
    assignment = accept_next(owner, task_type)
    with pytest.raises(Assignment.DoesNotExist):
        submit_assignment(intruder, assignment.pk, {"text": "x"})
    with pytest.raises(Assignment.DoesNotExist):
        return_assignment(intruder, assignment.pk)


def test_returned_hit_goes_back_to_the_pool_and_cannot_be_submitted(echo):
    _, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type)
    a, b = _workers(2)
    assignment = accept_next(a, task_type)
    return_assignment(a, assignment.pk)
    with pytest.raises(AssignmentClosed, match="returned"):
        submit_assignment(a, assignment.pk, {"text": "late"})
    assert accept_next(a, task_type) is None  # never the same HIT twice for one worker
    assert accept_next(b, task_type).hit == hit


def test_expired_assignments_return_to_the_pool(echo):
    _, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type)
    a, b = _workers(2)
    assignment = accept_next(a, task_type)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert accept_next(b, task_type) is None
    call_command("expire_assignments")
    assignment.refresh_from_db()
    assert assignment.state == "expired"
    with pytest.raises(AssignmentClosed, match="expired"):
        submit_assignment(a, assignment.pk, {"text": "too late"})
    assert accept_next(b, task_type).hit == hit


def test_submission_after_the_deadline_is_refused_and_the_place_freed(echo):
    _, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type)
    worker = _workers(1)[0]
    assignment = accept_next(worker, task_type)
    Assignment.objects.filter(pk=assignment.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(AssignmentClosed):
        submit_assignment(worker, assignment.pk, {"text": "x"})
    hit.refresh_from_db()
    assert hit.n_taken == 0 and Assignment.objects.get().state == "expired"
    assert expire_assignments() == 0


def test_excluded_workers_blocked_workers_and_paused_batches_get_nothing(echo):
    _, task_type, batch = echo
    hit = HIT.objects.create(batch=batch, task_type=task_type, max_assignments=3)
    writer, blocked, other = _workers(3)
    hit.exclusions.create(worker=writer)
    assert accept_next(writer, task_type) is None
    Worker.objects.filter(pk=blocked.pk).update(blocked=True)
    blocked.refresh_from_db()
    with pytest.raises(NotEligible):
        accept_next(blocked, task_type)
    Batch.objects.filter(pk=batch.pk).update(state="paused")
    assert accept_next(other, task_type) is None


def test_eligibility_rules_narrow_the_kinds_of_hit(echo):
    _, task_type, batch = echo
    HIT.objects.create(batch=batch, task_type=task_type, kind="regular", priority=0)
    qual = HIT.objects.create(batch=batch, task_type=task_type, kind="qualification", priority=5)
    worker = _workers(1)[0]

    def only_qualification(w, t):
        return ["qualification"] if w.external_id == "w0" and t.slug == "echo" else None

    register_eligibility_rule(only_qualification)
    # A batch's test is handed only to a worker who chose the batch (started work from it).
    from hits.services import record_choice

    record_choice(worker, batch, "start")
    try:
        assert accept_next(worker, task_type).hit == qual
    finally:
        from hits import handlers

        handlers._eligibility_rules.remove(only_qualification)
