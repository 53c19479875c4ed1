"""Coalesce per-submission follow-up tasks per owner (a campaign, or a batch) over a short window.

Every completed presence HIT used to publish two Celery tasks (score update and
cross-checks) for its own few ids, and the Celery worker then re-read the
campaign and re-ran the checks once per HIT.  Under load that is most of the
follow-up cost.  Instead, with a real Redis broker, ``schedule(kind, ...)``
adds the ids (after commit) to a per-owner pending set in the broker's
Redis and publishes one ``drain_followups`` task per window (``countdown`` =
``FOLLOWUP_COALESCE_SECONDS``); that task runs the real task once for the union
of the ids gathered meanwhile.

Guarantees kept:

* eager Celery (tests, the embedded default) and a window of 0 keep the old,
  immediate behaviour: one task per call, run in-process;
* Redis unreachable -> the plain per-call publish of ``hits.outbox``, which
  stores a ``FollowUp`` row when the broker is down, so nothing is lost;
* the drain moves the pending ids into a "busy" set atomically and removes
  them only after the work succeeded, so a worker killed mid-drain (acks late,
  redelivered) finds them again; the work itself is idempotent.
"""

from __future__ import annotations

import logging
import time

from celery import current_app
from django.conf import settings
from django.db import transaction

from hits.outbox import send_after_commit, send_now

log = logging.getLogger(__name__)

DRAIN_TASK = "annotation.drain_followups"



# The Celery task (by name: the core never imports the tasks module) that takes (owner id, ids) for
# each kind; the owner is the campaign for cross-checks and score updates, the batch for completed
# presence HITs and for the agreement figures after judgments of HITs not completed yet.
TASKS = {
    "cross_checks": "annotation.update_worker_quality",
    "scores": "annotation.recompute_scores",
    "completed": "annotation.after_presence_hits",
    "judged": "annotation.after_presence_judgments",
}


def _run(kind: str, owner_id: int, ids: list[int]) -> None:
    """Run the kind's task here and now, in this process (a drain is itself a task on a worker)."""
    current_app.tasks[TASKS[kind]](owner_id, ids)


_clients: dict[str, object] = {}


def window_seconds() -> float:
    return float(getattr(settings, "FOLLOWUP_COALESCE_SECONDS", 2.0))


def _redis():
    """A client on the broker's Redis (the pending ids share the queued tasks' durability), or None."""
    conf = current_app.conf
    if conf.task_always_eager or window_seconds() <= 0:
        return None
    url = conf.broker_write_url or conf.broker_url or ""
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://")):
        return None
    client = _clients.get(url)
    if client is None:
        import redis

        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        _clients[url] = client
    return client


def enabled() -> bool:
    """Whether follow-ups are gathered in Redis (a Redis broker, not eager, a window above 0)."""
    return _redis() is not None


def _keys(kind: str, owner_id: int) -> tuple[str, str, str]:
    base = f"qapyr:coalesce:{kind}:{owner_id}"
    return base + ":pending", base + ":busy", base + ":scheduled"


def _cost_key(kind: str, owner_id: int) -> str:
    return f"qapyr:coalesce:{kind}:{owner_id}:cost"


def max_share() -> float:
    """The largest share of a Celery worker's time one campaign's follow-ups of one kind may take."""
    return float(getattr(settings, "FOLLOWUP_MAX_SHARE", 0.1))


def max_wait() -> float:
    """The longest a stretched wait may be (``countdown``), in seconds."""
    return float(getattr(settings, "FOLLOWUP_MAX_WAIT", 30.0))


#: The kinds whose drain costs about the same whatever the number of ids it takes (the cross-checks read the
#: drained workers' judgments, the score update the campaign's scores): waiting longer gathers more ids for the
#: same cost, so their wait stretches with it.  A drain of completed presence HITs costs per HIT (gold labels, a
#: third judge's places): a longer wait would only make the next drain longer by as much, then the next wait
#: longer still (on the 500 x 10 rehearsal, a 9 s drain, an 89 s wait, then a 94 s drain of 15,765 HITs that
#: opened third judges after the crowd had stopped), so it keeps the plain window.
STRETCHED = frozenset({"cross_checks", "scores", "judged"})


def countdown(last_cost: float | None, kind: str | None = None) -> float:
    """The wait before the next drain: the window, stretched (for the kinds in ``STRETCHED``) so a drain that
    took ``last_cost`` seconds runs at most ``max_share()`` of the time, and never beyond ``max_wait()``.

    The cross-checks read every judgment of the drained workers and the score update every summary
    score of the campaign, so a drain costs more as a campaign grows (on the load benchmark, a
    cross-check drain of its 50 judges went from 0.05 s to 0.15 s in the first 20,000 judgments);
    with a fixed window they would take over a Celery worker on a large campaign.
    """
    window = window_seconds()
    share = max_share()
    if not last_cost or share <= 0 or (kind is not None and kind not in STRETCHED):
        return window
    return max(window, min(last_cost / share, max_wait()))


_clock = time.monotonic


def schedule(kind: str, owner_id: int, ids) -> None:
    """After the current transaction commits, have the task ``TASKS[kind]`` run on (owner_id, ids) (coalesced)."""
    ids = sorted({int(i) for i in ids})
    if not ids:
        return
    if not enabled():
        send_after_commit(TASKS[kind], owner_id, ids)
        return
    transaction.on_commit(lambda: _enqueue(kind, owner_id, ids))


def _enqueue(kind: str, owner_id: int, ids: list[int]) -> None:
    pending, _busy, scheduled = _keys(kind, owner_id)
    try:
        client = _redis()
        last_cost = client.get(_cost_key(kind, owner_id))
        wait = countdown(float(last_cost) if last_cost else None, kind)
        pipe = client.pipeline(transaction=True)
        pipe.sadd(pending, *ids)
        # The flag outlives the wait generously: if its drain task is lost or delayed the flag
        # expires and a later call schedules another drain (draining twice is harmless).
        pipe.set(scheduled, 1, nx=True, ex=max(int(wait * 30), 60))
        first = pipe.execute()[1]
    except Exception as exc:  # noqa: BLE001 - Redis down: fall back to the plain, never-lost publish
        log.warning("coalescing unavailable (%s); publishing %s directly", exc, kind)
        send_now(TASKS[kind], [owner_id, ids])
        return
    if first:
        send_now(DRAIN_TASK, [kind, owner_id], countdown=wait)


def at_work(kind: str, owner_id: int) -> bool:
    """Whether a drain of this kind is at work for the owner (it took ids and has not finished them); False when
    coalescing is off or Redis cannot be reached.  Ids merely pending say nothing of the kind: without a Celery
    worker they wait for one indefinitely."""
    client = _redis()
    if client is None:
        return False
    _pending, busy, _scheduled = _keys(kind, owner_id)
    try:
        return bool(client.exists(busy))
    except Exception:  # noqa: BLE001 - Redis down: nothing is gathered there (the plain publish took over)
        return False


def drain(kind: str, owner_id: int) -> list[int]:
    """Run the real task once for every id gathered so far; returns the ids handled."""
    pending, busy, scheduled = _keys(kind, owner_id)
    client = _redis()
    if client is None:
        return []
    # Clear the flag first: ids added from now on schedule a new drain, ids added before are in
    # the pending set, which is moved into busy in one atomic step.
    client.delete(scheduled)
    pipe = client.pipeline(transaction=True)
    pipe.sunionstore(busy, [busy, pending])
    pipe.delete(pending)
    pipe.smembers(busy)
    members = pipe.execute()[2]
    ids = sorted(int(m) for m in members)
    if ids:
        started = _clock()
        _run(kind, owner_id, ids)
        # What this drain cost sets the wait before the next one (see ``countdown``).
        client.set(_cost_key(kind, owner_id), f"{_clock() - started:.6f}", ex=3600)
        # Only now forget them (SREM, not DEL: a concurrent drain may have moved newer ids in).
        client.srem(busy, *members)
    return ids
