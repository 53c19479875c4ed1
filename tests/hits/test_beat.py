"""Celery beat started twice (two hosts, two replicas) runs each scheduled task once a period (``hits.beat``).

The sends go through Celery's own beat scheduler (``celery.beat.Scheduler.apply_async``), as a beat process makes
them: a Celery upgrade that stopped marking them would fail here.  A run returns its task's result; a run the guard
stops returns None.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app
from celery.beat import Scheduler, ScheduleEntry
from django.conf import settings
from django.db import connection

from hits.beat import CLAIM_SHARE, GuardedTask, interval_seconds
from hits.models import ScheduledRun
from hits.tasks import expire_assignments_task
from tests.concurrently import at_once
from tests.conftest import database_url_for_workers
from tests.workers import celery_worker

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "hits.expire_assignments"


def beat_sends(name: str = TASK):
    """One send of the beat entry of task ``name``, as a beat process makes it (the result handle)."""
    app = current_app
    key, entry = next((key, entry) for key, entry in settings.CELERY_BEAT_SCHEDULE.items() if entry["task"] == name)
    scheduled = ScheduleEntry(name=key, task=name, schedule=entry["schedule"], app=app)
    return Scheduler(app, lazy=True).apply_async(scheduled, advance=False)


def test_every_scheduled_task_is_guarded_with_its_beat_interval():
    app = current_app
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert isinstance(app.tasks[entry["task"]], GuardedTask), entry["task"]
        assert interval_seconds(entry["schedule"]) >= 1
    assert interval_seconds(timedelta(minutes=5)) == 300 and interval_seconds(60) == 60.0


def test_two_beats_sending_the_same_task_at_once_run_its_body_once(eager_celery):
    """In-process (eager) runs, each in its own thread and database connection: SQLite and PostgreSQL alike."""
    try:
        results = [sent.result for sent in at_once([beat_sends, beat_sends])]
    finally:
        # Celery's "no result.get() inside a task" flag is one global that two in-process runs in threads can
        # leave set: cleared, or every later .get() of this process would refuse.
        from celery._state import _set_task_join_will_block

        _set_task_join_will_block(False)
    assert sorted(results, key=lambda r: r is None) == [0, None], results
    assert ScheduledRun.objects.filter(task_name=TASK).count() == 1


def test_the_claim_holds_for_most_of_the_interval_and_only_for_beats_sends(eager_celery):
    assert beat_sends().get() == 0
    assert beat_sends().get() is None  # the second beat, any time within the period
    # Not from beat (a command, a view, a test, a task sent by hand): runs as always.
    assert expire_assignments_task() == 0 and expire_assignments_task.delay().get() == 0
    interval = interval_seconds(next(e["schedule"] for e in settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == TASK))
    run = ScheduledRun.objects.get(task_name=TASK)
    # Just inside the claim: still taken; one beat's next send, an interval later: runs.
    ScheduledRun.objects.filter(pk=run.pk).update(started_at=run.started_at - timedelta(seconds=interval * CLAIM_SHARE - 5))
    assert beat_sends().get() is None
    ScheduledRun.objects.filter(pk=run.pk).update(started_at=run.started_at - timedelta(seconds=interval))
    assert beat_sends().get() == 0
    # The markets' syncs have their own interval and claim (one task's run does not take another's).
    assert beat_sends("hits.flush_followups").get() == 0


@pytest.mark.celery_worker
def test_two_beats_on_a_real_worker_run_the_task_once(tmp_path):
    """Redis and a worker of two processes: both sends are taken at once, one by each process."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        pytest.skip("no Celery broker configured (CELERY_BROKER_URL)")
    if connection.vendor != "postgresql":
        pytest.skip("a separate worker process needs a shared database server")
    import os

    app = current_app
    app.control.purge()
    env = os.environ | {"DATABASE_URL": database_url_for_workers()}
    with celery_worker(tmp_path / "worker.log", "beats", env=env, concurrency=2) as worker:
        worker.wait_ready()
        sent = [beat_sends(), beat_sends()]
        results = [result.get(timeout=120) for result in sent]
    assert sorted(results, key=lambda r: r is None) == [0, None], worker.output()[-3000:]
    assert "not run, another beat's run of this period already started" in worker.output()
