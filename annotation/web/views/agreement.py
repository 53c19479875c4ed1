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
            batch_points, y_min=_y_floor(batch_points), chart_id="alpha-over-time", reference=pooled, y_label="Krippendorff's alpha",
            label="Krippendorff's alpha per batch of units, in the order they were completed, with 95% intervals",
        )
        if batch_points
        else None,
        "systems": interval_chart(
            system_points, y_min=_y_floor(system_points), chart_id="alpha-per-system", reference=pooled, y_label="Krippendorff's alpha",
            label="Krippendorff's alpha per system with 95% intervals",
        )
        if any(p["value"] is not None for p in system_points)
        else None,
        "accuracy": histogram_chart(
            *board["histogram"], chart_id="worker-accuracy", label="Number of judges per accuracy against the majority",
            x_label="accuracy against the majority", y_label="judges",
        )
        if board["worker_accuracy"]
        else None,
    }
    return render(
        request, "annotation/campaign_agreement.html", {"campaign": campaign, "board": board, "charts": charts, "notes": _notes(board)}
    )


#: Fewer units than this in a batch make its alpha and interval shaky.
FEW_UNITS = 30


def skew_note(figures: dict, what: str, positive: str) -> str:
    """Alpha near zero (or below) beside high raw agreement: the labels are nearly all one value."""
    alpha, percent, share = figures.get("alpha"), figures.get("percent"), figures.get("positive_share")
    if alpha is None or percent is None or share is None or percent < 0.85 or alpha > 0.4:
        return ""
    majority, label = (share, positive) if share >= 0.5 else (1 - share, "the other verdict")
    return (
        f"{what}: alpha is {alpha:.3f} although the judgments agree {percent:.1%} of the time. {majority:.1%} of the "
        f"verdicts are “{label}”, so agreement by chance alone is already about that high, and alpha, which "
        f"discounts chance agreement, stays near zero or falls below it. With labels this skewed, read the pairwise agreement."
    )


def _notes(board: dict) -> dict:
    """One line under a figure that needs explaining: zero-width intervals, small batches, skewed labels."""
    notes = {}
    zero = [b for b in board["batches"] if b["lo"] is not None and abs(b["hi"] - b["lo"]) < 1e-9]
    small = [b for b in board["batches"] if b["n_units"] < FEW_UNITS]
    batch_lines = []
    if zero:
        b = zero[0]
        batch_lines.append(
            f"An interval of zero width (batch {b['batch']}: [{b['lo']:.3f}, {b['hi']:.3f}], a dashed ring on the chart) means "
            f"every bootstrap resample gave the same alpha: the batch's units come from too few examples to resample."
        )
    if small:
        batch_lines.append(
            f"Batch{'es' if len(small) > 1 else ''} {', '.join(str(b['batch']) for b in small)} "
            f"{'have' if len(small) > 1 else 'has'} fewer than {FEW_UNITS} units: {'their' if len(small) > 1 else 'its'} alpha moves a lot with a few judgments."
        )
    notes["batches"] = batch_lines
    zero_systems = [s for s in board["systems"] if s["lo"] is not None and abs(s["hi"] - s["lo"]) < 1e-9]
    notes["systems"] = (
        [f"A zero-width interval ({zero_systems[0]['name']}: [{zero_systems[0]['lo']:.3f}, {zero_systems[0]['hi']:.3f}]) "
         f"means every bootstrap resample of examples gave the same alpha (too few examples judged)."]
        if zero_systems else []
    )
    notes["agreement"] = [
        line for line in (
            skew_note(board["presence"], "Presence", "present"),
            skew_note(board["verification"], "Verification", "valid"),
        ) if line
    ]
    return notes
