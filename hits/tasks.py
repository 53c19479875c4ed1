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


@shared_task(name="hits.deliver_message", acks_late=True)
def deliver_message_task(message_id: int) -> int:
    """Send a large message's pending copies (``hits.messaging.deliver_soon``); returns how many were taken.  Run
    twice (a redelivered task), it sends nothing twice: copies are claimed under the message's lock."""
    from hits.messaging import deliver
    from hits.models import MessageRecipient, WorkerMessage

    message = WorkerMessage.objects.filter(pk=message_id).first()
    if message is None:
        return 0
    before = message.recipients.filter(status=MessageRecipient.Status.PENDING).count()
    deliver(message)
    return before


# The markets' tasks (publish, settle, sync) register with the same worker: ``AppConfig.ready`` loads them through
# the seam (``hits.markets.registry.ready``) in every process.
