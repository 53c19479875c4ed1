"""Hand follow-up work to Celery after a commit, without ever losing it or failing the request.

``send_after_commit(task, *args)`` queues the task once the current
transaction commits.  Under the embedded default (eager Celery) the task
runs in-process.  With a broker, a failure to publish (broker down, timeout)
is caught: the task is stored as a ``FollowUp`` row and sent later by
``flush()``, which runs from Celery beat, from ``manage.py
dispatch_followups``, and opportunistically whenever a later publish works.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.db import transaction

from hits.models import FollowUp

log = logging.getLogger(__name__)


def _publish(task_name: str, args: list) -> None:
    app = current_app
    if app.conf.task_always_eager:
        app.tasks[task_name].apply(args=args, throw=True)
        return
    # A connection of its own rather than the shared pool: after a broker outage kombu may leave the
    # pool closed, and every later publish would fail until the process restarts.
    with app.connection_for_write() as connection:
        app.send_task(task_name, args=args, retry=False, connection=connection)


def send_now(task_name: str, args: list) -> bool:
    """Try to publish; on failure store a FollowUp. Returns whether it was published."""
    try:
        _publish(task_name, args)
    except Exception as exc:  # noqa: BLE001 - any broker failure must leave the work stored, not lost
        if current_app.conf.task_always_eager:
            raise
        log.warning("broker unavailable, follow-up %s stored for later: %s", task_name, exc)
        FollowUp.objects.create(task_name=task_name, args=args, error=str(exc)[:500])
        return False
    if FollowUp.objects.exists():
        flush()
    return True


def send_after_commit(task, *args) -> None:
    """Publish ``task(*args)`` after the current transaction commits (never raises for broker errors)."""
    name = task if isinstance(task, str) else task.name
    payload = list(args)
    transaction.on_commit(lambda: send_now(name, payload))


def flush(limit: int = 500) -> int:
    """Send stored follow-ups, oldest first; stops at the first failure. Returns how many were sent."""
    sent = 0
    for follow_up in FollowUp.objects.all()[:limit]:
        try:
            _publish(follow_up.task_name, follow_up.args)
        except Exception as exc:  # noqa: BLE001
            FollowUp.objects.filter(pk=follow_up.pk).update(attempts=follow_up.attempts + 1, error=str(exc)[:500])
            break
        FollowUp.objects.filter(pk=follow_up.pk).delete()
        sent += 1
    return sent
