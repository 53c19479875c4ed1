"""A campaign's live worker status (``hits.activity``) with each worker's effective hourly pay set against the
campaign's hourly pay floor: the worker status page, its polled JSON view and the API show this."""

from __future__ import annotations

from annotation.models import Campaign
from hits.activity import MIN_MEASURED_SECONDS, worker_activity

#: Why a worker's hourly pay is not shown yet (the page and its polled figures).
HOURLY_PENDING = f"not stated before {MIN_MEASURED_SECONDS // 60} min of measured work"


def worker_status(campaign: Campaign) -> dict:
    """``floor`` (USD per hour, as a string), ``workers`` (one dict per worker, money as strings) and the counts
    of workers holding HITs now, of HITs held and of workers paid below the floor (a floor of 0 flags no one)."""
    floor = campaign.hourly_pay_floor
    rows = []
    for row in worker_activity(campaign.batch) if campaign.batch_id else []:
        hourly = row.hourly
        rows.append(
            {
                "worker": row.worker.external_id,
                "worker_id": row.worker.pk,
                "active": row.active,
                "returned": row.returned,
                "timed_out": row.timed_out,
                "done": row.done,
                "median_seconds": None if row.median_seconds is None else round(row.median_seconds),
                "hours_worked": round(row.seconds_worked / 3600, 2),
                "earned": str(row.earned),
                "hourly": None if hourly is None else str(hourly),
                "hourly_note": HOURLY_PENDING if hourly is None and row.done else "",
                "below_floor": bool(floor and hourly is not None and hourly < floor),
            }
        )
    return {
        "floor": str(floor),
        "workers": rows,
        "active_workers": sum(1 for r in rows if r["active"]),
        "active_assignments": sum(r["active"] for r in rows),
        "below_floor": sum(1 for r in rows if r["below_floor"]),
    }
