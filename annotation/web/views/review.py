"""Review: an example's predicates, QA pairs, verifications and presence judgments side by side,
with the assignments behind them to approve, reject or reward, and QA pairs to correct."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.web.views.setup import managed_campaign, paginate
from annotation.web.forms import AssignmentReviewForm, QAPairCorrectionForm
from annotation.models import ContentUnit, Example, GoldPresence, Predicate, PresenceJudgment, SystemSummary, Verification
from hits.models import HIT, Assignment

PER_PAGE = 50


@login_required
def campaign_review(request, slug):
    """The campaign's examples with their figures; each opens the side-by-side review."""
    campaign = managed_campaign(request, slug)
    examples = (
        Example.objects.filter(campaign=campaign)
        .annotate(
            n_predicates=Count("predicates", distinct=True),
            n_kept=Count("units", filter=Q(units__state=ContentUnit.State.KEPT), distinct=True),
            n_flagged=Count("predicates", filter=Q(predicates__flagged=True), distinct=True),
        )
        .order_by("position")
    )
    listing = paginate(request, examples, PER_PAGE)
    return render(
        request,
        "annotation/campaign_review.html",
        {"campaign": campaign, "examples": listing["items"], "page": listing["page"], "pages": listing["pages"]},
    )


def _example_assignments(campaign, example, predicate_ids, summary_ids):
    """Done assignments of the HITs about this example: generation/verification by predicate, presence by summary."""
    if not campaign.batch_id:
        return []
    hits = HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR).filter(
        Q(task_type__slug__in=["generation", "verification"], payload__predicate__in=predicate_ids)
        | Q(task_type__slug="presence", payload__summary__in=summary_ids)
    )
    return list(
        Assignment.objects.filter(hit__in=hits, state__in=Assignment.DONE_STATES)
        .select_related("hit__task_type", "worker")
        .order_by("hit__task_type__position", "hit_id", "pk")
    )


@login_required
def campaign_review_example(request, slug, pk):
    campaign = managed_campaign(request, slug)
    example = get_object_or_404(Example, pk=pk, campaign=campaign)
    units = ContentUnit.objects.filter(example=example).select_related("author").prefetch_related(
        Prefetch("verifications", queryset=Verification.objects.select_related("worker").order_by("pk")),
        "corrections",
    )
    sentences = example.sentences.prefetch_related(
        Prefetch("predicates", queryset=Predicate.objects.order_by("start").prefetch_related(Prefetch("units", queryset=units)))
    ).order_by("index")
    predicate_ids = list(Predicate.objects.filter(example=example).values_list("pk", flat=True))
    summaries = list(SystemSummary.objects.filter(example=example).select_related("system").order_by("system__name"))
    kept = list(units.filter(state=ContentUnit.State.KEPT).select_related("predicate").order_by("predicate__start", "index"))
    judgments: dict[tuple[int, int], list] = {}
    for j in PresenceJudgment.objects.filter(summary__in=summaries).select_related("worker").order_by("pk"):
        judgments.setdefault((j.unit_id, j.summary_id), []).append(j)
    gold: dict[tuple[int, int], GoldPresence] = {}
    for g in GoldPresence.objects.filter(summary__in=summaries).order_by("origin"):
        gold[(g.unit_id, g.summary_id)] = g  # "majority" sorts after "imported": the crowd's label wins
    presence = [
        {
            "summary": summary,
            "rows": [
                {"unit": unit, "judgments": judgments.get((unit.pk, summary.pk), []), "gold": gold.get((unit.pk, summary.pk))}
                for unit in kept
            ],
        }
        for summary in summaries
    ]
    scu_units = list(units.filter(kind=ContentUnit.Kind.SCU)) if campaign.unit_type == "scu" else []
    return render(
        request,
        "annotation/campaign_review_example.html",
        {
            "campaign": campaign,
            "example": example,
            "sentences": sentences,
            "presence": presence,
            "scu_units": scu_units,
            "assignments": _example_assignments(campaign, example, predicate_ids, [s.pk for s in summaries]),
            "review_form": AssignmentReviewForm(),
            "previous": Example.objects.filter(campaign=campaign, position__lt=example.position).order_by("-position").first(),
            "next": Example.objects.filter(campaign=campaign, position__gt=example.position).order_by("position").first(),
        },
    )


def _assignment_of_campaign(campaign, pk) -> Assignment:
    return get_object_or_404(
        Assignment.objects.select_related("hit__batch", "worker"), pk=pk, hit__batch_id=campaign.batch_id or -1
    )


@login_required
@require_POST
def review_assignment(request, slug, pk):
    """Approve or reject an assignment with a message, or pay its worker a bonus (hits.payments does the money)."""
    from hits import payments

    campaign = managed_campaign(request, slug)
    assignment = _assignment_of_campaign(campaign, pk)
    back = request.POST.get("next") or ""
    form = AssignmentReviewForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"Assignment {assignment.pk}: {error}")
        return _back(back, slug)
    action, message = form.cleaned_data["action"], form.cleaned_data["message"].strip()
    try:
        if action == "approve":
            payments.approve_assignment(assignment, message=message, by=request.user)
            messages.success(request, f"Assignment {assignment.pk} of {assignment.worker} approved.")
        elif action == "reject":
            payments.reject_assignment(assignment, message, by=request.user)
            messages.success(request, f"Assignment {assignment.pk} of {assignment.worker} rejected; the worker sees your message.")
        else:
            amount = form.cleaned_data["amount"]
            payments.pay_bonus(assignment, amount, message, by=request.user)
            messages.success(request, f"Bonus of ${amount} for {assignment.worker} recorded.")
    except payments.PaymentError as exc:
        messages.error(request, f"Assignment {assignment.pk}: {str(exc)[:1].upper()}{str(exc)[1:]}.")
    return _back(back, slug)


def _back(target: str, slug: str):
    # Only our own review pages: a "next" from the form must not send the researcher elsewhere.
    if target.startswith(f"/campaigns/{slug}/review/"):
        return redirect(target)
    return redirect("campaign-review", slug=slug)


@login_required
@require_POST
def correct_pair(request, slug, pk):
    """Correct a QA pair's wording; the change is logged with who made it and why."""
    from annotation.services.corrections import correct_qa_pair

    campaign = managed_campaign(request, slug)
    unit = get_object_or_404(ContentUnit, pk=pk, example__campaign=campaign)
    form = QAPairCorrectionForm(request.POST)
    back = f"/campaigns/{slug}/review/{unit.example_id}/#unit-{unit.pk}"
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, f"QA pair {unit.pk}: {error}")
        return redirect(back)
    try:
        correct_qa_pair(
            unit, form.cleaned_data["question"], form.cleaned_data["answers"], by=request.user, reason=form.cleaned_data["reason"]
        )
    except ValidationError as exc:
        messages.error(request, f"QA pair {unit.pk} not changed: " + "; ".join(exc.messages) + ".")
    else:
        messages.success(request, f"QA pair {unit.pk} corrected (logged).")
    return redirect(back)
