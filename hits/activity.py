"""What each worker of a batch (a campaign) is doing now and has done: the researcher's live worker status.

Per worker:

- ``active``: assignments held right now (accepted, not submitted, not past their deadline);
- ``returned``: given back (with "Return" or "Skip"); ``timed_out``: expired, or past the deadline and
  not swept yet;
- ``done``: submitted, approved or rejected; ``median_seconds``: the median time per done HIT;
- ``earned``: the money of that work, from the ledger (rewards of approved work and bonuses) plus
  the reward of work still awaiting review (it is usually approved; rejected work earns nothing);
- ``seconds_worked``: the time spent on done work, qualification tests included (unpaid, but
  worked); returned and timed-out work has no recorded time and is left out;
- ``hourly``: earned / hours worked, None until ``MIN_MEASURED_SECONDS`` of work are recorded (a few
  seconds' work gave rates like $15,588/h that said nothing about the pay).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.utils import timezone

from hits.models import Assignment, Batch, LedgerEntry, Worker
from hits.markets.money import CENT
from hits.payouts import ZERO, cents

#: The measured work time below which no hourly pay is stated (and no worker flagged below the floor).
MIN_MEASURED_SECONDS = 300


@dataclass
class WorkerActivity:
    worker: Worker
    active: int = 0
    returned: int = 0
    timed_out: int = 0
    done: int = 0
    median_seconds: float | None = None
    seconds_worked: int = 0
    earned: Decimal = ZERO

    @property
    def hourly(self) -> Decimal | None:
        """Effective hourly pay in USD: earned / hours worked; None with less than ``MIN_MEASURED_SECONDS``."""
        if self.seconds_worked < MIN_MEASURED_SECONDS:
            return None
        return (self.earned * 3600 / Decimal(self.seconds_worked)).quantize(CENT)


def worker_activity(batch: Batch, now=None, worker: Worker | None = None) -> list[WorkerActivity]:
    """One row per worker who took any assignment of ``batch``, ordered by worker (a few queries); only
    ``worker``'s row (or none) when given."""
    now = now or timezone.now()
    assignments = Assignment.objects.filter(hit__batch=batch)
    ledger_entries = LedgerEntry.objects.filter(batch=batch)
    if worker is not None:
        assignments, ledger_entries = assignments.filter(worker=worker), ledger_entries.filter(worker=worker)
    held = Q(state=Assignment.State.ASSIGNED)
    counts = assignments.values("worker_id").annotate(
        active=Count("pk", filter=held & Q(expires_at__gt=now)),
        returned=Count("pk", filter=Q(state=Assignment.State.RETURNED)),
        timed_out=Count("pk", filter=Q(state=Assignment.State.EXPIRED) | (held & Q(expires_at__lte=now))),
        done=Count("pk", filter=Q(state__in=Assignment.DONE_STATES)),
        seconds=Sum("work_seconds", filter=Q(state__in=Assignment.DONE_STATES)),
        awaiting=Sum("hit__reward", filter=Q(state=Assignment.State.SUBMITTED)),
    )
    ledger = {
        row["worker_id"]: row["earned"]
        for row in ledger_entries
        .exclude(kind=LedgerEntry.Kind.FEE)
        .exclude(state=LedgerEntry.State.REFUSED)
        .values("worker_id")
        .annotate(earned=Sum("amount"))
    }
    times: dict[int, list[int]] = {}
    for worker_id, seconds in assignments.filter(state__in=Assignment.DONE_STATES, work_seconds__isnull=False).values_list(
        "worker_id", "work_seconds"
    ):
        times.setdefault(worker_id, []).append(seconds)
    rows = list(counts)
    workers = Worker.objects.in_bulk([row["worker_id"] for row in rows])
    result = [
        WorkerActivity(
            worker=workers[row["worker_id"]],
            active=row["active"],
            returned=row["returned"],
            timed_out=row["timed_out"],
            done=row["done"],
            median_seconds=statistics.median(times[row["worker_id"]]) if row["worker_id"] in times else None,
            seconds_worked=row["seconds"] or 0,
            earned=cents(ledger.get(row["worker_id"])) + cents(row["awaiting"]),
        )
        for row in rows
    ]
    return sorted(result, key=lambda r: r.worker.external_id)


__all__ = ["WorkerActivity", "worker_activity"]
