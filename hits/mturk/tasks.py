"""Celery entry points of the MTurk backend.

Every task is idempotent (request tokens, and state compared with MTurk's
before each call), so a task that is re-delivered after a worker died
(``acks_late``, the project's default) repeats nothing that was done.
"""

from __future__ import annotations

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="hits.mturk.publish_batch", acks_late=True)
def publish_batch_task(batch_id: int) -> dict:
    """Publish the batch's unpublished open HITs, ``MTURK_PUBLISH_CHUNK`` at a time; chains itself until done."""
    from django.conf import settings

    from hits.models import Batch
    from hits.mturk.publishing import PublishRefused, publish_batch

    from hits.mturk.client import MTurkError

    batch = Batch.objects.get(pk=batch_id)
    try:
        report = publish_batch(batch, limit=settings.MTURK_PUBLISH_CHUNK)
    except (PublishRefused, MTurkError) as exc:
        # Nothing is lost: the HITs stay unpublished and the next publish or sync (Celery beat) picks them up.
        log.warning("MTurk publishing of batch %s stopped: %s", batch_id, exc)
        return {"refused": str(exc)}
    if report.remaining and not report.stopped:
        publish_batch_task.delay(batch_id)
    return report.as_dict()


@shared_task(name="hits.mturk.settle_batch", acks_late=True)
def settle_batch_task(batch_id: int) -> dict:
    """Make the pending MTurk calls of a batch's reviews and bonuses (after approve/reject/bonus)."""
    from hits.models import Batch
    from hits.mturk.client import MTurkError
    from hits.mturk.sync import settle_batch

    try:
        return settle_batch(Batch.objects.get(pk=batch_id)).as_dict()
    except MTurkError as exc:
        # The ledger entries stay pending; the next sync makes the calls.
        log.warning("MTurk settling of batch %s stopped: %s", batch_id, exc)
        return {"error": str(exc)}


@shared_task(name="hits.mturk.sync_all", acks_late=True)
def sync_all_task() -> dict:
    """Celery beat: sync every active or finishing MTurk batch."""
    from django.db.models import Q

    from hits.models import Batch
    from hits.mturk.sync import sync_batch

    done = {}
    # Active batches (they may have HITs waiting to be published) and any batch with HITs still on MTurk.
    live = Q(state=Batch.State.ACTIVE) | Q(hits__mturk__isnull=False, hits__mturk__deleted_at__isnull=True)
    mturk = [Batch.Backend.MTURK_SANDBOX, Batch.Backend.MTURK_LIVE]  # not Prolific's: its own sync runs it
    for batch in Batch.objects.filter(backend__in=mturk).filter(live).distinct().order_by("pk"):
        try:
            done[batch.pk] = sync_batch(batch).as_dict()
        except Exception as exc:  # noqa: BLE001 - one account's outage must not stop the other batches
            log.exception("MTurk sync of batch %s failed", batch.pk)
            done[batch.pk] = {"error": str(exc)[:300]}
    return done


def _retry_later(task, exc) -> int:
    """A failed MTurk call: retried later by a real worker; in-process (eager) it is logged, not raised into a request."""
    if task.request.is_eager:
        log.error("%s failed and was not retried (no Celery worker): %s", task.name, exc)
        return 0
    raise task.retry(exc=exc, countdown=60 * 2 ** task.request.retries, max_retries=5)


@shared_task(name="hits.mturk.mirror_qualification", acks_late=True, bind=True)
def mirror_qualification_task(self, worker_id: int, task_type_id: int, granted: bool, reason: str, batch_id: int | None = None) -> int:
    """Grant or revoke the worker's MTurk qualification of a task type in one batch (both accounts where it exists)."""
    from hits.mturk.client import MTurkError
    from hits.mturk.qualifications import mirror_qualification

    try:
        return mirror_qualification(worker_id, task_type_id, granted, reason, batch_id)
    except MTurkError as exc:
        return _retry_later(self, exc)


@shared_task(name="hits.mturk.mirror_block", acks_late=True, bind=True)
def mirror_block_task(self, worker_id: int, blocked: bool, reason: str) -> int:
    """Create or delete the worker's MTurk block (CreateWorkerBlock / DeleteWorkerBlock)."""
    from hits.mturk.client import MTurkError
    from hits.mturk.qualifications import mirror_block

    try:
        return mirror_block(worker_id, blocked, reason)
    except MTurkError as exc:
        return _retry_later(self, exc)


@shared_task(name="hits.mturk.mirror_batch_block", acks_late=True, bind=True)
def mirror_batch_block_task(self, worker_id: int, batch_id: int, blocked: bool, reason: str) -> int:
    """A researcher's block in one campaign: take the batch's MTurk qualification types away (or give them back)."""
    from hits.mturk.client import MTurkError
    from hits.mturk.qualifications import mirror_batch_block

    try:
        return mirror_batch_block(worker_id, batch_id, blocked, reason)
    except MTurkError as exc:
        return _retry_later(self, exc)
