"""Celery beat may run twice (two hosts, two replicas of a service): each scheduled task still runs once a period.

Beat marks what it sends (the ``celery_beat_task`` header).  Every task of the platform is a ``GuardedTask``
(``config/celery.py``): a task sent by beat first claims its period in the database, one conditional
``UPDATE`` of its ``ScheduledRun`` row on the database's clock, which only one of two concurrent runs can win
(a row lock on PostgreSQL, the write lock on SQLite).  The claim holds for ``CLAIM_SHARE`` of the task's
interval: a second beat's send within it, whatever the two beats' offset, finds it taken and the body is not
run.  The guard is in the database, not Redis, so it holds on every broker and on the embedded default.

The same task called in any other way (a command, a view, a test) runs as always.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from celery import Task
from django.db.models import DateTimeField, ExpressionWrapper, Value
from django.db.models.functions import Now

log = logging.getLogger(__name__)

# A run claims this share of its interval: one beat's sends, a period apart give or take its own jitter, all
# run; another beat's, at most one interval away from the first's, find the claim taken.
CLAIM_SHARE = 0.9
# A schedule that is no fixed interval (a crontab) fires at most once a minute.
SHORTEST_INTERVAL = 60.0
_NEVER = datetime(2000, 1, 1, tzinfo=timezone.utc)


def interval_seconds(schedule) -> float:
    """The seconds between two runs of a beat entry's ``schedule`` (a number, a timedelta or a Celery schedule)."""
    if isinstance(schedule, (int, float)):
        return float(schedule)
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    run_every = getattr(schedule, "run_every", None)
    if isinstance(run_every, timedelta):
        return run_every.total_seconds()
    return SHORTEST_INTERVAL


def claim(task_name: str, interval: float) -> bool:
    """Whether this run of the scheduled task may go ahead: True for the first of a period, False for a second
    sent within ``CLAIM_SHARE`` of ``interval`` seconds of it (by another beat, or the same one's resend)."""
    from hits.models import ScheduledRun

    ScheduledRun.objects.get_or_create(task_name=task_name, defaults={"started_at": _NEVER})
    since = ExpressionWrapper(Now() - Value(timedelta(seconds=interval * CLAIM_SHARE)), output_field=DateTimeField())
    return ScheduledRun.objects.filter(task_name=task_name, started_at__lte=since).update(started_at=Now()) == 1


def sent_by_beat(request) -> bool:
    if getattr(request, "celery_beat_task", False):  # a worker's request carries the message's headers
        return True
    return bool((getattr(request, "headers", None) or {}).get("celery_beat_task"))  # an in-process (eager) run


class GuardedTask(Task):
    """The platform's Celery task: a run sent by beat goes ahead only if it claims its period (``claim``)."""

    def __call__(self, *args, **kwargs):
        if sent_by_beat(self.request):
            intervals = [interval_seconds(entry["schedule"]) for entry in (self.app.conf.beat_schedule or {}).values()
                         if entry.get("task") == self.name]
            if intervals and not claim(self.name, min(intervals)):
                log.info("%s: not run, another beat's run of this period already started", self.name)
                return None
        return super().__call__(*args, **kwargs)
