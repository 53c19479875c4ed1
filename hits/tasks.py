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


# The markets' tasks (publish, settle, sync) register with the same worker: ``AppConfig.ready`` loads them through
# the seam (``hits.markets.registry.ready``) in every process.
