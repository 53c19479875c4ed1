"""The live worker status of a campaign: who holds a HIT now, what they returned or let time out, their time per
HIT and their effective hourly pay against the campaign's hourly floor.  The page draws the table; its figures
come again every few seconds from the JSON view (polled by static/js/worker_status.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import render

from annotation.selectors.worker_status import worker_status
from hits.activity import MIN_MEASURED_SECONDS
from annotation.web.views.setup import managed_campaign


@login_required
def campaign_worker_status(request, slug):
    campaign = managed_campaign(request, slug)
    return render(
        request,
        "annotation/campaign_worker_status.html",
        {"campaign": campaign, "status": worker_status(campaign), "floor": campaign.hourly_pay_floor,
         "min_minutes": MIN_MEASURED_SECONDS // 60},
    )


@login_required
def campaign_worker_status_data(request, slug):
    response = JsonResponse(worker_status(managed_campaign(request, slug)))
    response["Cache-Control"] = "no-store"
    return response
