"""Two researcher steps before the presence stage: the near-duplicate review of kept QA pairs, and
hand-written QA pairs for sentences the crowd gets nothing for (no predicate)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from hits.wording import as_sentence
from annotation.models import ContentUnit, Example, ReferenceSentence
from annotation.services import duplicates
from annotation.services.predicates import add_handwritten_pair, examples_without_predicates
from annotation.web.views.setup import managed_campaign


@login_required
def campaign_duplicates(request, slug):
    """GET: the examples held for review with their near-duplicate pairs.  POST: merge, release, or skip the step."""
    campaign = managed_campaign(request, slug)
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "merge":
                keep = get_object_or_404(ContentUnit, pk=request.POST.get("keep") or 0, example__campaign=campaign)
                drop = get_object_or_404(ContentUnit, pk=request.POST.get("drop") or 0, example__campaign=campaign)
                duplicates.merge_pair(campaign, keep, drop)
                messages.success(request, f"“{drop.question}” merged into “{keep.question}”.")
            elif action == "release":
                example = get_object_or_404(Example, pk=request.POST.get("example") or 0, campaign=campaign)
                n = duplicates.release_example(campaign, example)
                messages.success(request, f"{example.external_id} reviewed: {n} presence HITs created.")
            elif action == "skip":
                n = duplicates.skip_duplicate_review(campaign)
                messages.success(request, f"Duplicate review turned off for this campaign: {n} presence HITs created.")
            else:
                messages.error(request, "Unknown action.")
        except ValidationError as exc:
            messages.error(request, as_sentence(" ".join(exc.messages)))
        return redirect("campaign-duplicates", slug=slug)
    found_by_example = duplicates.held_examples(campaign)
    # Every pair shown, of every held example, in one query.
    shown = {x for _, found in found_by_example for d in found for x in (d.first, d.second)}
    units = ContentUnit.objects.select_related("predicate").in_bulk(shown) if shown else {}
    held = [
        {"example": example, "pairs": [(units[d.first], units[d.second], d.reason) for d in found]}
        for example, found in found_by_example
    ]
    return render(request, "annotation/campaign_duplicates.html", {"campaign": campaign, "held": held})


@login_required
@require_POST
def campaign_handwritten_pair(request, slug):
    """Add a researcher's QA pair to a sentence of an example without predicates (before launch)."""
    campaign = managed_campaign(request, slug)
    sentence = get_object_or_404(ReferenceSentence, pk=request.POST.get("sentence") or 0, example__campaign=campaign)
    values = {k: request.POST.get(k, "") for k in ("predicate_text", "question", "answer")}
    try:
        unit = add_handwritten_pair(sentence, **values)
    except ValidationError as exc:
        # Shown again with what was typed, next to the sentence it was for.
        return render(
            request,
            "annotation/campaign_handwritten.html",
            {"campaign": campaign, **handwritten_context(campaign), "error": as_sentence(" ".join(exc.messages)),
             "typed": {"sentence": sentence.pk, **values}},
            status=400,
        )
    messages.success(request, f"QA pair “{unit.question} {unit.answers[0]}” added to {sentence.example.external_id}.")
    return redirect("campaign-handwritten", slug=slug)


def handwritten_context(campaign) -> dict:
    examples = list(examples_without_predicates(campaign).prefetch_related("sentences", "units"))
    return {"examples": examples, "editable": campaign.state == campaign.State.DRAFT}


@login_required
def campaign_handwritten(request, slug):
    """The examples no crowd QA pair can come for, with a form to write pairs by hand."""
    campaign = managed_campaign(request, slug)
    return render(request, "annotation/campaign_handwritten.html", {"campaign": campaign, **handwritten_context(campaign), "typed": {}})
