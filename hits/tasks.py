"""Celery entry points of the HIT engine."""

from celery import shared_task

from hits.services import expire_assignments


@shared_task(name="hits.expire_assignments")
def expire_assignments_task() -> int:
    """Run by Celery beat every minute (see ``CELERY_BEAT_SCHEDULE``)."""
    return expire_assignments()


@shared_task(name="hits.flush_followups")
def flush_followups_task() -> int:
    """Send follow-up tasks stored while the broker was unavailable (Celery beat, every minute)."""
    from hits.outbox import flush

    return flush()


# The MTurk backend's tasks (publish, settle, sync) register with the same worker.
from hits.mturk import tasks as _mturk_tasks  # noqa: E402,F401
