"""The live worker status of a campaign: who holds a HIT now, what they returned or let time out, their time per
HIT and their effective hourly pay against the campaign's hourly floor.  The page draws the table; its figures
come again every few seconds from the JSON view (polled by static/js/worker_status.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render

from annotation.web.views.setup import managed_campaign
from hits.activity import worker_activity


def status_rows(campaign) -> list[dict]:
    """The table's rows, as the page and the JSON view both show them."""
    if campaign.batch is None:
        return []
    floor = campaign.hourly_pay_floor
    rows = []
    for row in worker_activity(campaign.batch):
        hourly = row.hourly
        rows.append(
            {
                "worker": row.worker.external_id,
                "active": row.active,
                "returned": row.returned,
                "timed_out": row.timed_out,
                "done": row.done,
                "median_seconds": None if row.median_seconds is None else round(row.median_seconds),
                "hours_worked": round(row.seconds_worked / 3600, 2),
                "earned": str(row.earned),
                "hourly": None if hourly is None else str(hourly),
                "below_floor": bool(floor and hourly is not None and hourly < floor),
            }
        )
    return rows


def _summary(rows: list[dict]) -> dict:
    return {
        "active_workers": sum(1 for r in rows if r["active"]),
        "active_assignments": sum(r["active"] for r in rows),
        "below_floor": sum(1 for r in rows if r["below_floor"]),
    }


@login_required
def campaign_worker_status(request, slug):
    campaign = managed_campaign(request, slug)
    rows = status_rows(campaign)
    return render(
        request,
        "annotation/campaign_worker_status.html",
        {"campaign": campaign, "rows": rows, "summary": _summary(rows), "floor": campaign.hourly_pay_floor},
    )


@login_required
def campaign_worker_status_data(request, slug):
    campaign = managed_campaign(request, slug)
    rows = status_rows(campaign)
    response = JsonResponse(
        {"floor": str(campaign.hourly_pay_floor), "workers": rows, **_summary(rows)}
    )
    response["Cache-Control"] = "no-store"
    return response
