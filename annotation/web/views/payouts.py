"""The payout report of a campaign: per worker, what was approved, given as bonuses, paid and still owed
(page and CSV).  Its figures come from ``hits.payouts``, as the worker's own earnings page does."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render

from annotation.services.spreadsheets import csv_writer
from annotation.web.views.setup import managed_campaign
from hits import payouts
from hits.models import Batch

COLUMNS = ["worker", "approved", "awaiting_review", "rejected", "rewards", "bonuses", "paid", "owed", "fees", "awaiting_amount"]


@login_required
def campaign_payouts(request, slug):
    campaign = managed_campaign(request, slug)
    batch = Batch.objects.filter(pk=campaign.batch_id).first()
    rows = payouts.payouts(batch=batch) if batch is not None else []
    total = payouts.totals(rows)
    if request.GET.get("format") == "csv":
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-payouts.csv"'
        writer = csv_writer(response)
        writer.writerow(["campaign", *COLUMNS])
        for row in rows:
            writer.writerow([campaign.slug, row.worker.external_id, *(getattr(row, c) for c in COLUMNS[1:])])
        writer.writerow([campaign.slug, "TOTAL", *(getattr(total, c) for c in COLUMNS[1:])])
        return response
    return render(
        request,
        "annotation/campaign_payouts.html",
        {"campaign": campaign, "rows": rows, "total": total, "on_mturk": batch is not None and batch.on_mturk},
    )
