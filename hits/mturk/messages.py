"""Messages to MTurk workers: NotifyWorkers, 100 workers a call (issue 40; before it, ``mturk_sync --notify-*``).

``notify`` sends one subject and message to a list of MTurk worker ids; ``notify_workers`` to every MTurk worker of
a batch; ``send_message`` is the market's hook (``MTurkMarket.send_message``): the platform's workers, each with
what became of their copy.  MTurk's limits (its reference): a Subject of at most 200 characters, a MessageText of
at most 4096, 1 to 100 WorkerIds a call; its answer lists the workers it could not notify
(``NotifyWorkersFailureStatuses``: ``SoftFailure`` may work later, ``HardFailure`` will not).  NotifyWorkers takes
no request token: a call whose answer is lost may have notified its workers, so they are "unknown", never
counted as failed nor sent again unless the researcher asks.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from hits.markets.base import Delivery
from hits.models import Assignment, Batch
from hits.mturk.client import MTurk, MTurkError, for_batch
from hits.mturk.models import MTurkAssignment
from hits.mturk.text import mturk_safe_text

log = logging.getLogger(__name__)

# The worker ids MTurk issues (its API's pattern for WorkerId).
MTURK_WORKER_ID = re.compile(r"A[A-Z0-9]+")
NOTIFY_BATCH = 100  # MTurk's most WorkerIds per NotifyWorkers call
SUBJECT_LIMIT, MESSAGE_LIMIT = 200, 4096


@dataclass
class Notified:
    """Who NotifyWorkers reached: ``sent`` workers asked for, ``failures`` the workers not notified: MTurk's
    per-worker refusals, and every worker of a call of 100 that failed twice (``code`` the error's type);
    ``unknown``: those of a call whose last failure was transient (MTurk may have notified them)."""

    sent: int = 0
    failures: list = field(default_factory=list)  # {"worker", "code", "message"}
    failed_calls: int = 0
    unknown: set = field(default_factory=set)

    @property
    def reached(self) -> int:
        return self.sent - len(self.failures)


def notify(mturk: MTurk, subject: str, message: str, worker_ids: list[str]) -> Notified:
    """Send the message to ``worker_ids`` (already valid MTurk ids), 100 a call.  Subject and message are cleaned
    of the characters MTurk refuses (``mturk_safe_text``) and cut to MTurk's limits.  A call that fails (after
    the client's own retries) is tried once more on its own; if it fails again its workers are returned as
    failures with the error, and the other calls are still made."""
    subject, message = mturk_safe_text(subject).strip(), mturk_safe_text(message).strip()
    if not subject or not message:
        raise ValueError("a notification needs a subject and a message")
    result = Notified(sent=len(worker_ids))
    for start in range(0, len(worker_ids), NOTIFY_BATCH):
        group = worker_ids[start : start + NOTIFY_BATCH]
        answer = _notify_group(mturk, subject[:SUBJECT_LIMIT], message[:MESSAGE_LIMIT], group, result)
        for failure in answer.get("NotifyWorkersFailureStatuses", []):
            result.failures.append({
                "worker": failure.get("WorkerId", ""), "code": failure.get("NotifyWorkersFailureCode", ""),
                "message": failure.get("NotifyWorkersFailureMessage", ""),
            })
    return result


def _notify_group(mturk: MTurk, subject: str, message: str, group: list[str], result: Notified) -> dict:
    """One NotifyWorkers call of up to 100 workers, tried twice; on a second failure its workers are failures."""
    error = None
    for _ in range(2):
        try:
            return mturk.call("NotifyWorkers", Subject=subject, MessageText=message, WorkerIds=group)
        except MTurkError as exc:
            error = exc
            log.warning("NotifyWorkers for %d workers from %s failed: %s", len(group), group[0], exc)
    result.failed_calls += 1
    result.failures.extend({"worker": worker, "code": error.code, "message": error.message[:300]} for worker in group)
    if error.transient:
        result.unknown.update(group)
    return {}


def notify_workers(batch: Batch, subject: str, message: str, mturk: MTurk | None = None) -> Notified:
    """Send a message to every MTurk worker of the batch (``notify``)."""
    if not mturk_safe_text(subject).strip() or not mturk_safe_text(message).strip():
        raise ValueError("a notification needs a subject and a message")
    worker_ids = sorted({
        # Only ids MTurk could have issued (``^A[A-Z0-9]+$``): one made-up id (a forged page's) would make MTurk
        # refuse the whole call of 100.
        worker_id for worker_id in MTurkAssignment.objects.filter(mturk_hit__hit__batch=batch)
        .exclude(assignment__state=Assignment.State.DISCARDED).values_list("mturk_worker_id", flat=True)
        if MTURK_WORKER_ID.fullmatch(worker_id or "")
    })
    return notify(mturk or for_batch(batch), subject, message, worker_ids)


def send_message(batch: Batch, subject: str, body: str, workers: list, mturk: MTurk | None = None) -> dict:
    """``MTurkMarket.send_message``: ``{worker pk: Delivery}``.  A worker without an id MTurk could have issued
    is failed here (MTurk would refuse the whole call of 100 for one such id)."""
    done, by_id = {}, {}
    for worker in workers:
        worker_id = worker.mturk_worker_id or ""
        if MTURK_WORKER_ID.fullmatch(worker_id):
            by_id[worker_id] = worker
        else:
            done[worker.pk] = Delivery("failed", "no MTurk worker id: this worker did not come from MTurk", "no-mturk-id")
    if not by_id:
        return done
    result = notify(mturk or for_batch(batch), subject, body, sorted(by_id))
    failed = {f["worker"]: f for f in result.failures}
    for worker_id, worker in by_id.items():
        failure = failed.get(worker_id)
        if failure is None:
            done[worker.pk] = Delivery("sent", "NotifyWorkers")
        elif worker_id in result.unknown:
            done[worker.pk] = Delivery("unknown", f"no clear answer from MTurk: {failure['message']}", failure["code"])
        else:
            done[worker.pk] = Delivery("failed", failure["message"] or "MTurk could not notify this worker", failure["code"])
    return done
