"""Qualification items one at a time in the browser: add or change one test item (or gold item) with a form,
checked as the file import checks it.  A refused item comes back with everything typed and the reason."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render

from hits.wording import as_sentence
from annotation.services.qualification_tests import (
    SECTIONS,
    QualificationDefinitionError,
    campaign_test_items,
    item_definition,
    save_qualification_item,
    section_of,
)
from annotation.web.qualification_forms import MAX_ROWS, SECTION_TITLES, QualificationItemForm, rows_in
from annotation.web.views.setup import managed_campaign


@login_required
def qualification_item_new(request, slug):
    """A new item of the section named by ``?kind=`` (generation by default)."""
    section = request.GET.get("kind") or "generation"
    if section not in SECTIONS:
        raise Http404("No such kind of qualification item")
    return _item_page(request, managed_campaign(request, slug), section, None)


@login_required
def qualification_item_edit(request, slug, pk):
    campaign = managed_campaign(request, slug)
    hit = get_object_or_404(campaign_test_items(campaign), pk=pk)
    return _item_page(request, campaign, section_of(hit), hit)


def _item_page(request, campaign, section, hit):
    existing = item_definition(hit) if hit is not None else None
    statements = campaign.unit_type == "scu" or any("text" in p for p in (existing or {}).get("pairs", []))
    error, status = "", 200
    if existing and len(existing.get("questions") or existing.get("pairs") or []) > MAX_ROWS:
        messages.error(request, f"This item has more than {MAX_ROWS} rows: change it through a definition file.")
        return redirect("campaign-qualifications", slug=campaign.slug)
    if request.method == "POST":
        form = QualificationItemForm(section, request.POST, statements=statements, n_rows=rows_in(existing, request.POST))
        if form.is_valid():
            try:
                saved = save_qualification_item(campaign, section, form.item(), replacing=hit)
            except QualificationDefinitionError as exc:
                error = f"{as_sentence(exc)} Nothing was saved."
            else:
                changed = "changed" if hit is not None and saved.pk == hit.pk else "saved"
                if hit is not None and saved.pk != hit.pk:
                    changed = "saved as a new item (workers had taken the old one, which is withdrawn with their answers kept)"
                messages.success(request, f"{SECTION_TITLES[section]} {changed}.")
                return redirect("campaign-qualifications", slug=campaign.slug)
        else:
            error = "Some fields are missing or too long: see below. Nothing was saved."
        status = 400
    else:
        initial = QualificationItemForm.initial_from(section, existing) if existing else {}
        form = QualificationItemForm(section, initial=initial, statements=statements, n_rows=rows_in(existing))
    return render(
        request,
        "annotation/campaign_qualification_item.html",
        {"campaign": campaign, "form": form, "section": section, "title": SECTION_TITLES[section], "hit": hit, "error": error},
        status=status,
    )


def test_items(campaign) -> list[dict]:
    """The qualification tests page's list of items in force, each with its edit link's id."""
    rows = []
    for hit in campaign_test_items(campaign):
        inline = hit.payload.get("inline", {})
        section = section_of(hit)
        rows.append({"hit": hit, "section": section, "title": SECTION_TITLES[section],
                     "text": inline.get("sentence") or inline.get("candidate", "")})
    return rows
