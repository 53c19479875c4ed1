"""Celery entry points of the Prolific backend (idempotent: state is compared with Prolific's before each call,
and the one call that is not, a bulk bonus's pay, is recorded before it is sent and never repeated)."""

from __future__ import annotations

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="hits.prolific.settle_batch", acks_late=True)
def settle_batch_task(batch_id: int) -> dict:
    """After a review or a bonus: send the submissions' transitions and pay due bonuses."""
    from hits.models import Batch
    from hits.prolific.client import Prolific, ProlificError
    from hits.prolific.sync import settle_batch

    try:
        with Prolific() as client:
            return settle_batch(Batch.objects.get(pk=batch_id), client).as_dict()
    except ProlificError as exc:  # e.g. no token: the next sync makes the calls
        log.warning("Prolific settling of batch %s stopped: %s", batch_id, exc)
        return {"error": str(exc)}


@shared_task(name="hits.prolific.push_groups", acks_late=True)
def push_groups_task(batch_id: int) -> int:
    """Send a batch's participant-group changes (qualified, blocked); what fails is sent by the next sync."""
    from hits.models import Batch
    from hits.prolific.client import Prolific, ProlificError
    from hits.prolific.groups import push

    try:
        with Prolific() as client:
            return push(Batch.objects.get(pk=batch_id), client)
    except ProlificError as exc:
        log.warning("Prolific group changes of batch %s wait for the next sync: %s", batch_id, exc)
        return 0


def running_batches():
    """Prolific batches to sync: active or paused ones, and finished or cancelled ones with money still to pay
    or submissions still to decide."""
    from django.db.models import Q

    from hits.models import Batch, LedgerEntry
    from hits.prolific.models import ProlificBonus, ProlificSession

    open_money = Q(ledger__state=LedgerEntry.State.PENDING) | Q(
        prolific_bonuses__state__in=[ProlificBonus.State.RECORDED, ProlificBonus.State.CREATED,
                                     ProlificBonus.State.PAYING, ProlificBonus.State.UNKNOWN]
    )
    # Submissions still to decide (the review of a finished campaign goes on: Prolific approves on its own
    # after 21 days, and the ledger must follow).
    undecided = Q(prolific_studies__sessions__decision="", prolific_studies__sessions__state__in=[
        ProlificSession.State.ACTIVE, ProlificSession.State.COMPLETED])
    # A finished or cancelled batch whose studies still run (their STOP failed): the sync stops them.
    running_studies = Q(state__in=[Batch.State.FINISHED, Batch.State.CANCELLED],
                        prolific_studies__status__in=["ACTIVE", "PAUSED"])
    live = Q(state__in=[Batch.State.ACTIVE, Batch.State.PAUSED]) | open_money | undecided | running_studies
    return Batch.objects.filter(backend=Batch.Backend.PROLIFIC).filter(live).distinct().order_by("pk")


@shared_task(name="hits.prolific.sync_all", acks_late=True)
def sync_all_task() -> dict:
    """Celery beat (``PROLIFIC_SYNC_INTERVAL``): sync every running Prolific campaign."""
    from hits.prolific.sync import sync_batch

    done = {}
    for batch in running_batches():
        try:
            done[batch.pk] = sync_batch(batch).as_dict()
        except Exception as exc:  # noqa: BLE001 - one batch's trouble must not stop the others
            log.exception("Prolific sync of batch %s failed", batch.pk)
            done[batch.pk] = {"error": str(exc)[:300]}
    return done
