"""The unit inspector (issue 40): every presence unit with its crowd votes, the judge's label and who decided it;
and the gold override of the review page (a researcher's label with a note, logged)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.selectors import unit_inspector
from annotation.web.views.setup import managed_campaign, parse_id

LABELS = {"present": True, "absent": False, "withdraw": None}


@login_required
def campaign_units(request, slug):
    """The inspector's page: filters, search, sort and pages over the campaign's (unit, summary) rows."""
    campaign = managed_campaign(request, slug)
    filters = unit_inspector.parse_filters(request.GET)
    listing = unit_inspector.inspect(campaign, filters)
    page = listing["page"]
    return render(
        request,
        "annotation/campaign_units.html",
        {
            "campaign": campaign, "filters": filters, **listing,
            "agreements": unit_inspector.AGREEMENT, "decisions": unit_inspector.DECIDED,
            "golds": unit_inspector.GOLD, "sorts": unit_inspector.SORTS,
            "previous_query": urlencode(filters.query(page=page - 1)) if page > 1 else "",
            "next_query": urlencode(filters.query(page=page + 1)) if page < listing["pages"] else "",
        },
    )


@login_required
@require_POST
def campaign_gold_override(request, slug):
    """Set (or withdraw) a unit's gold label in a summary with a note (review page); logged, scores recomputed."""
    from annotation.services.gold_overrides import override_gold

    campaign = managed_campaign(request, slug)
    unit_id, summary_id = parse_id(request.POST.get("unit")), parse_id(request.POST.get("summary"))
    choice = request.POST.get("label") or ""
    back = request.POST.get("next") or ""
    if not back.startswith(f"/campaigns/{slug}/review/"):
        back = f"/campaigns/{slug}/review/"
    if choice not in LABELS:
        messages.error(request, "Choose present, not present, or withdraw the override.")
        return redirect(back)
    try:
        override_gold(campaign, unit_id, summary_id, LABELS[choice], request.POST.get("note") or "", by=request.user)
    except ValidationError as exc:
        messages.error(request, f"Gold label of unit {unit_id} not changed: " + " ".join(exc.messages))
    else:
        done = "override withdrawn" if choice == "withdraw" else f"set to {'present' if LABELS[choice] else 'not present'}"
        messages.success(request, f"Gold label of unit {unit_id} {done} (logged); the scores are recomputed.")
    return redirect(back)
