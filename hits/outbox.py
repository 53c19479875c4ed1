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
import time

from celery import current_app
from django.db import transaction

from hits.models import FollowUp

log = logging.getLogger(__name__)


def _publish(task_name: str, args: list, countdown: float | None = None) -> None:
    app = current_app
    if app.conf.task_always_eager:
        app.tasks[task_name].apply(args=args, throw=True)
        return
    try:
        # The shared producer pool: one broker connection per process, reused by every submission.
        app.send_task(task_name, args=args, retry=False, countdown=countdown)
    except Exception:
        # After a broker outage kombu may leave the pooled connection dead (or the pool closed):
        # drop it so that the next publish connects afresh instead of failing until a restart.
        _reset_pool(app)
        raise


def _reset_pool(app) -> None:
    import kombu.pools

    try:
        app.pool.force_close_all()
    except Exception:  # noqa: BLE001 - the pool is being thrown away anyway
        pass
    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


def send_now(task_name: str, args: list, countdown: float | None = None) -> bool:
    """Try to publish (``countdown`` seconds from now); on failure store a FollowUp (sent without delay later).

    Returns whether it was published."""
    try:
        _publish(task_name, args, countdown)
    except Exception as exc:  # noqa: BLE001 - any broker failure must leave the work stored, not lost
        if current_app.conf.task_always_eager:
            raise
        log.warning("broker unavailable, follow-up %s stored for later: %s", task_name, exc)
        FollowUp.objects.create(task_name=task_name, args=args, error=str(exc)[:500])
        global _last_flush_check
        _last_flush_check = float("-inf")  # look again at the next successful publish
        return False
    _flush_if_due()
    return True


# Seconds between two looks for stored follow-ups from the same process: a look is a query, and
# a busy web process publishes on every submission (Celery beat flushes every minute anyway).
FLUSH_CHECK_INTERVAL = 30.0
_last_flush_check = float("-inf")


def _flush_if_due() -> None:
    global _last_flush_check
    now = time.monotonic()
    if now - _last_flush_check < FLUSH_CHECK_INTERVAL:
        return
    _last_flush_check = now
    if FollowUp.objects.exists():
        flush()


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
