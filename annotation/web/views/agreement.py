"""The agreement dashboard of a campaign (researchers and admins)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotation.selectors.agreement import agreement_dashboard
from annotation.web.views.setup import managed_campaign
from annotation.web.charts import histogram_chart, interval_chart


def _y_floor(points: list[dict]) -> float:
    """Alpha can be negative: start the axis below the lowest interval, in steps of 0.2, never above 0."""
    lows = [p["lo"] if p.get("lo") is not None else p.get("value") for p in points]
    lows = [v for v in lows if v is not None]
    lowest = min([0.0, *lows])
    return -0.2 * int(-lowest / 0.2 + 0.999) if lowest < 0 else 0.0


@login_required
def campaign_agreement(request, slug):
    campaign = managed_campaign(request, slug)
    board = agreement_dashboard(campaign)
    pooled = board["presence"]["alpha"]
    batch_points = [
        {
            "label": f"batch {b['batch']}",
            "title": f"batch {b['batch']} ({b['n_units']} units, until {b['until']:%Y-%m-%d %H:%M})",
            "value": b["alpha"],
            "lo": b["lo"],
            "hi": b["hi"],
        }
        for b in board["batches"]
    ]
    system_points = [
        {"label": s["name"], "value": s["alpha"], "lo": s["lo"], "hi": s["hi"], "connect": False} for s in board["systems"]
    ]
    charts = {
        "batches": interval_chart(
            batch_points, y_min=_y_floor(batch_points), chart_id="alpha-over-time", reference=pooled,
            label="Krippendorff's alpha per batch of units, in the order they were completed, with 95% intervals",
        )
        if batch_points
        else None,
        "systems": interval_chart(
            system_points, y_min=_y_floor(system_points), chart_id="alpha-per-system", reference=pooled,
            label="Krippendorff's alpha per system with 95% intervals",
        )
        if any(p["value"] is not None for p in system_points)
        else None,
        "accuracy": histogram_chart(
            *board["histogram"], chart_id="worker-accuracy", label="Number of judges per accuracy against the majority"
        )
        if board["worker_accuracy"]
        else None,
    }
    return render(request, "annotation/campaign_agreement.html", {"campaign": campaign, "board": board, "charts": charts})
