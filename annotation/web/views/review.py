"""Review: an example's predicates, QA pairs, verifications and presence judgments side by side,
with the assignments behind them to approve, reject or reward, and QA pairs to correct."""

from __future__ import annotations

from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Prefetch, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from hits.wording import as_sentence
from annotation.services import rejection
from annotation.web.views.setup import managed_campaign, paginate, parse_id
from annotation.web.forms import AssignmentReviewForm, QAPairCorrectionForm
from annotation.models import ContentUnit, Example, GoldOverride, GoldPresence, Predicate, PresenceJudgment, SystemSummary, Verification
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
    waiting = _submitted(campaign)
    return render(
        request,
        "annotation/campaign_review.html",
        {
            "campaign": campaign, "examples": listing["items"], "page": listing["page"], "pages": listing["pages"],
            "waiting_workers": list(
                waiting.values("worker__external_id").annotate(n=Count("pk")).order_by("worker__external_id")
            ),
            "waiting_tasks": list(
                waiting.values("hit__task_type__slug", "hit__task_type__name").annotate(n=Count("pk")).order_by("hit__task_type__position")
            ),
            "n_waiting": waiting.count(),
            # A refused bulk decision comes back here with its choices (``_back_to_bulk``).
            "bulk_worker": request.GET.get("worker", ""), "bulk_task": request.GET.get("task", ""),
            **prolific_review_context(campaign),
        },
    )


def _back_to_bulk(slug: str, worker: str, task: str):
    """The review page with the bulk form's filters as they were chosen."""
    from urllib.parse import urlencode

    query = urlencode({k: v for k, v in (("worker", worker), ("task", task)) if v})
    return redirect(reverse("campaign-review", args=[slug]) + (f"?{query}#bulk-review" if query else ""))


def _submitted(campaign):
    """The campaign's work waiting for a decision."""
    return Assignment.objects.filter(hit__batch_id=campaign.batch_id or -1, state=Assignment.State.SUBMITTED)


def _money_of(assignments) -> dict:
    """Rewards (and MTurk's commission on them) of these assignments, as approving them would book
    (``hits.payments``' own reward and fee rules)."""
    from hits import payments

    rewards, commission = Decimal("0.00"), Decimal("0.00")
    for a in assignments:
        rewards += payments.reward_of(a)
        if a.hit.batch.on_mturk:
            commission += payments.reward_fee(a)
    return {"rewards": rewards, "fees": commission, "total": rewards + commission}


@login_required
@require_POST
def review_bulk(request, slug):
    """Approve or reject many submitted assignments at once, by worker and/or task type.

    First a confirmation page stating how many assignments and how much money; the confirmed POST carries
    the assignment ids shown, so work arriving in between is not decided unseen."""
    from hits import payments

    campaign = managed_campaign(request, slug)
    action = request.POST.get("action")
    message = (request.POST.get("message") or "").strip()[:1000]
    worker = (request.POST.get("worker") or "").strip()
    task = (request.POST.get("task") or "").strip()
    if action not in ("approve", "reject"):
        messages.error(request, "Choose to approve or to reject.")
        return _back_to_bulk(slug, worker, task)
    if action == "reject" and not message:
        messages.error(request, "Say why the work is rejected: every worker concerned sees this message.")
        return _back_to_bulk(slug, worker, task)
    category = (request.POST.get("rejection_category") or "").strip()
    data = request.POST.get("data") or rejection.EXCLUDE
    if data not in (rejection.KEEP, rejection.EXCLUDE):
        messages.error(request, "Choose whether the rejected work's data is kept or excluded.")
        return _back_to_bulk(slug, worker, task)
    if action == "reject" and campaign.batch is not None and campaign.batch.on_prolific:
        problem = _prolific_rejection_problem(message, category)
        if problem:
            messages.error(request, problem)
            return _back_to_bulk(slug, worker, task)
    chosen = _submitted(campaign).select_related("hit__batch", "hit__task_type", "hit__mturk", "worker")
    if request.POST.get("confirmed") == "1":
        ids = [i for i in map(parse_id, request.POST.getlist("ids")) if i]
        chosen = chosen.filter(pk__in=ids)
        done, refused, excluded, reopened = 0, [], 0, 0
        for assignment in chosen:
            try:
                # One MTurk settlement for the whole decision below, not one per assignment.
                if action == "approve":
                    payments.approve_assignment(assignment, message=message, by=request.user, settle=False)
                else:
                    outcome = rejection.reject_work(assignment, message, by=request.user, data=data, settle=False)
                    excluded += outcome.excluded
                    reopened += outcome.reopened
                    if assignment.hit.batch.on_prolific:
                        from hits.prolific.review import note_rejection_category

                        note_rejection_category(assignment, category)
                done += 1
            except payments.PaymentError as exc:
                refused.append(f"{assignment.pk}: {exc}")
        if done and campaign.batch is not None and campaign.batch.on_mturk:
            from hits.outbox import send_after_commit

            send_after_commit(payments.SETTLE_TASK, campaign.batch_id)
        elif done and campaign.batch is not None and campaign.batch.on_prolific:
            from hits.outbox import send_after_commit

            send_after_commit(payments.PROLIFIC_SETTLE_TASK, campaign.batch_id)
        verb = "approved" if action == "approve" else "rejected"
        messages.success(request, f"{done} assignment{'s' if done != 1 else ''} {verb}." + (
            _bulk_data_statement(data, excluded, reopened) if action == "reject" and done else ""))
        if len(ids) > done:
            messages.info(request, f"{len(ids) - done} were no longer waiting for a decision and were left as they are.")
        for line in refused[:10]:
            messages.error(request, line)
        return redirect("campaign-review", slug=slug)
    if worker:
        chosen = chosen.filter(worker__external_id=worker)
    if task:
        chosen = chosen.filter(hit__task_type__slug=task)
    chosen = list(chosen.order_by("worker__external_id", "pk"))
    if not chosen:
        messages.info(request, "No submitted work matches: nothing to decide.")
        return _back_to_bulk(slug, worker, task)
    by_worker: dict[tuple[str, int], int] = {}
    for a in chosen:
        key = (a.worker.external_id, a.worker_id)
        by_worker[key] = by_worker.get(key, 0) + 1
    return render(
        request,
        "annotation/campaign_review_bulk.html",
        {
            "campaign": campaign, "action": action, "message": message, "worker": worker, "task": task,
            "rejection_category": category, "data": data,
            "assignments": chosen, "money": _money_of(chosen),
            "by_worker": [(name, n, worker_id) for (name, worker_id), n in sorted(by_worker.items())],
            "on_mturk": chosen[0].hit.batch.on_mturk,
        },
    )


def _bulk_data_statement(data: str, excluded: int, reopened: int) -> str:
    """What a bulk rejection did with the data (presence and verification work; QA pairs are always kept)."""
    if data == rejection.KEEP:
        return " Their data is kept: it counts in the gold labels, scores and agreement as before."
    return (f" {excluded} presence judgment{'s' if excluded != 1 else ''} or verdicts excluded: gold labels and scores are "
            f"recomputed without them; {reopened} place{'s' if reopened != 1 else ''} reopened for other workers.")


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
        Prefetch("verifications", queryset=Verification.objects.select_related("worker", "assignment").order_by("pk")),
        "corrections",
    )
    sentences = example.sentences.prefetch_related(
        Prefetch("predicates", queryset=Predicate.objects.order_by("start").prefetch_related(Prefetch("units", queryset=units)))
    ).order_by("index")
    predicate_ids = list(Predicate.objects.filter(example=example).values_list("pk", flat=True))
    summaries = list(SystemSummary.objects.filter(example=example).select_related("system").order_by("system__name"))
    if campaign.unit_type == "scu":  # an "scu" campaign's units are its imported SCUs (never verified, so never "kept")
        kept = list(units.filter(kind=ContentUnit.Kind.SCU).order_by("index"))
    else:
        kept = list(units.filter(state=ContentUnit.State.KEPT).select_related("predicate").order_by("predicate__start", "index"))
    judgments: dict[tuple[int, int], list] = {}
    for j in PresenceJudgment.objects.filter(summary__in=summaries).select_related("worker", "assignment").order_by("pk"):
        judgments.setdefault((j.unit_id, j.summary_id), []).append(j)
    gold: dict[tuple[int, int], GoldPresence] = {}
    for g in GoldPresence.objects.filter(summary__in=summaries).order_by("origin"):
        # "majority" sorts after "imported" (the crowd's label wins), "override" after both (the researcher's wins).
        gold[(g.unit_id, g.summary_id)] = g
    judge = _judge_labels(campaign, summaries)
    overrides: dict[tuple[int, int], list] = {}
    for entry in GoldOverride.objects.filter(summary__in=summaries).select_related("by").order_by("-created_at", "-pk"):
        overrides.setdefault((entry.unit_id, entry.summary_id), []).append(entry)
    presence = [
        {
            "summary": summary,
            "rows": [
                {"unit": unit, "judgments": judgments.get((unit.pk, summary.pk), []), "gold": gold.get((unit.pk, summary.pk)),
                 "left_to_judge": (unit.pk, summary.pk) in judge, "judge": judge.get((unit.pk, summary.pk)),
                 "overrides": overrides.get((unit.pk, summary.pk), [])}
                for unit in kept
            ],
        }
        for summary in summaries
    ]
    scu_units = list(units.filter(kind=ContentUnit.Kind.SCU)) if campaign.unit_type == "scu" else []
    assignments = _example_assignments(campaign, example, predicate_ids, [s.pk for s in summaries])
    return render(
        request,
        "annotation/campaign_review_example.html",
        {
            "campaign": campaign,
            "example": example,
            "sentences": sentences,
            "presence": presence,
            "scu_units": scu_units,
            "assignments": assignments,
            "reincludable": _reincludable(assignments),
            "review_form": AssignmentReviewForm(),
            "excludable": rejection.EXCLUDABLE,
            **prolific_review_context(campaign),
            "previous": Example.objects.filter(campaign=campaign, position__lt=example.position).order_by("-position").first(),
            "next": Example.objects.filter(campaign=campaign, position__gt=example.position).order_by("position").first(),
        },
    )


def _reincludable(assignments) -> set[int]:
    """The rejected assignments among ``assignments`` whose data a rejection excluded (a re-include button each)."""
    rejected = [a.pk for a in assignments if a.state == Assignment.State.REJECTED]
    if not rejected:
        return set()
    return set(PresenceJudgment.objects.filter(assignment_id__in=rejected, excluded=True).values_list("assignment_id", flat=True)) | set(
        Verification.objects.filter(assignment_id__in=rejected, excluded=True).values_list("assignment_id", flat=True))


def _judge_labels(campaign, summaries) -> dict:
    """(unit, summary) -> the judge's label (an ``AutoPresence``, or None before its labelling pass) of the units
    a budgeted campaign left to its judge (not routed to people), so that review does not call them "none yet"."""
    from annotation.models import AutoPresence, PresenceCandidate
    from annotation.selectors.hybrid import latest_labelling

    if not campaign.is_hybrid:
        return {}
    left = {
        (unit, summary_id): None
        for summary_id, units in PresenceCandidate.objects.filter(
            campaign=campaign, summary__in=summaries, hit__isnull=True
        ).values_list("summary_id", "units")
        for unit in units
    }
    run = latest_labelling(campaign)
    if run is not None and left:
        for label in AutoPresence.objects.filter(run=run, summary__in=summaries, unit__isnull=False).select_related("run"):
            if (label.unit_id, label.summary_id) in left:
                left[(label.unit_id, label.summary_id)] = label
    return left


def _assignment_of_campaign(campaign, pk) -> Assignment:
    return get_object_or_404(
        Assignment.objects.select_related("hit__batch", "hit__task_type", "worker"), pk=pk, hit__batch_id=campaign.batch_id or -1
    )


def prolific_review_context(campaign) -> dict:
    """On a Prolific campaign: Prolific's rejection categories and its rules for rejecting (review page)."""
    if campaign.batch is None or not campaign.batch.on_prolific:
        return {}
    from hits.prolific.review import REJECTION_CATEGORIES, rejection_rules

    return {"prolific_categories": REJECTION_CATEGORIES.items(), "prolific_rules": rejection_rules()}


def _prolific_rejection_problem(message: str, category: str) -> str:
    """What is missing for Prolific to accept a rejection (category, message length), or ""."""
    from hits.prolific.review import ReviewRefused, check_rejection

    try:
        check_rejection(message, category)
    except ReviewRefused as exc:
        return str(exc)
    return ""


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
    amount = form.cleaned_data["amount"]  # with "approve" too: the work is approved and the bonus paid
    category = (request.POST.get("rejection_category") or "").strip()
    if action == "reject" and assignment.hit.batch.on_prolific:
        problem = _prolific_rejection_problem(message, category)
        if problem:
            messages.error(request, f"Assignment {assignment.pk}: {problem}")
            return _back(back, slug)
    try:
        # The decision and a typed bonus stand or fall together: a refused bonus (over the limit, a second one
        # not confirmed) undoes the approval too, so the researcher can correct the bonus and decide again.
        with transaction.atomic():
            if action == "approve":
                payments.approve_assignment(assignment, message=message, by=request.user)
            elif action == "reject":
                outcome = rejection.reject_work(assignment, message, by=request.user, data=form.cleaned_data["data"] or None)
                if assignment.hit.batch.on_prolific:
                    from hits.prolific.review import note_rejection_category

                    note_rejection_category(assignment, category)
            if amount is not None and action != "reject":
                # A second bonus is rarely meant (a double click, a stale page): it needs saying so.  The check
                # is made under the assignment's row lock, so two clicks at once cannot both be "the first".
                payments.pay_bonus(
                    assignment, amount, message, by=request.user,
                    first_only=request.POST.get("confirm_second_bonus") != "1",
                )
    except payments.BonusNeedsConfirming:
        assignment.refresh_from_db(fields=["bonus"])
        undone = " Nothing was changed: approve it again with the bonus confirmed, or without it." if action == "approve" else ""
        messages.error(
            request,
            f"Assignment {assignment.pk} already has a bonus of ${assignment.bonus}: "
            f"confirm to pay {assignment.worker} a second one of ${amount}.{undone}",
        )
        return _back(back, slug)
    except payments.PaymentError as exc:
        undone = " Nothing was changed (the approval waits with the bonus)." if action == "approve" and amount is not None else ""
        messages.error(request, f"Assignment {assignment.pk}: {as_sentence(exc)}{undone}")
        return _back(back, slug)
    if action == "approve":
        messages.success(request, f"Assignment {assignment.pk} of {assignment.worker} approved.")
    elif action == "reject":
        messages.success(
            request, f"Assignment {assignment.pk} of {assignment.worker} rejected; the worker sees your message. {outcome.statement}"
        )
    if amount is not None and action != "reject":
        messages.success(request, f"Bonus of ${amount} for {assignment.worker} recorded.")
    return _back(back, slug)


@login_required
@require_POST
def reinclude_assignment(request, slug, pk):
    """Undo a rejection's exclusion: the work's data counts again (``rejection.reinclude_assignment``); the
    money is untouched."""
    campaign = managed_campaign(request, slug)
    assignment = _assignment_of_campaign(campaign, pk)
    try:
        outcome = rejection.reinclude_assignment(assignment)
    except rejection.NotReincludable as exc:
        messages.error(request, as_sentence(f"Nothing was re-included: {exc}"))
    else:
        messages.success(request, f"Assignment {assignment.pk} of {assignment.worker}: {outcome.statement}")
    return _back(request.POST.get("next") or "", slug)


def _back(target: str, slug: str):
    # Only our own review and worker pages: a "next" from the form must not send the researcher elsewhere.
    if safe_back(target, slug):
        return redirect(target)
    return redirect("campaign-review", slug=slug)


def safe_back(target: str, slug: str) -> bool:
    """Whether a posted "next" is one of this campaign's review pages or worker pages (nothing else: no other
    site, no other campaign)."""
    from urllib.parse import urlsplit

    parts = urlsplit(target or "")
    if parts.scheme or parts.netloc or "\\" in target or ".." in target or not target.isprintable():
        return False
    return parts.path.startswith((f"/campaigns/{slug}/review/", f"/campaigns/{slug}/workers/"))


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
