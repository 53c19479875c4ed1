"""Worker pages: home, start working, preview, the HIT page, history, sign-up.

These views know nothing of the protocol: the registered handler of a task
type renders the HIT's part of the page and validates its answers.
"""

from __future__ import annotations

from decimal import Decimal

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from config.ratelimit import rate_limited
from hits.handlers import AnswerErrors, eligibility, task_handler
from hits.models import HIT, Assignment, Invitation, Qualification, TaskType
from hits.invitations import InvitationClosed, take_use
from hits.qualifications import test_progress
from hits.services import (
    AssignmentClosed,
    NotEligible,
    accept_next,
    available_hits,
    current_assignment,
    preview_next,
    return_assignment,
    submit_assignment,
    worker_assignment,
    worker_for_user,
)


def _worker(request):
    return worker_for_user(request.user)


@login_required
def worker_home(request):
    worker = _worker(request)
    rows = []
    for task_type in TaskType.objects.all():
        allowed = eligibility(worker, task_type)
        rows.append(
            {
                "task_type": task_type,
                "eligible": bool(allowed),
                "available": available_hits(worker, task_type, allowed).count() if allowed else 0,
                "current": current_assignment(worker, task_type),
            }
        )
    return render(request, "hits/home.html", {"worker": worker, "rows": rows})


def _start(request, task_type, hit_id=None):
    worker = _worker(request)
    try:
        assignment = accept_next(worker, task_type, hit_id=hit_id)
    except NotEligible as exc:
        messages.error(request, str(exc).capitalize() + ".")
        return redirect("worker-home")
    if assignment is None:
        messages.info(request, f"No {task_type.name} HITs are available right now. Thank you!")
        return redirect("worker-home")
    return redirect("assignment", pk=assignment.pk)


@login_required
@require_POST
def start_working(request, slug):
    task_type = get_object_or_404(TaskType, slug=slug)
    hit_id = request.POST.get("hit")
    hit_id = int(hit_id) if hit_id and hit_id.isdigit() else None
    # The server chooses the HIT: a posted id counts only when it is the one this worker's preview showed
    # (chosen as the hand-out chooses, gold mixed in), so no one can pick their HITs and step around gold checks.
    previewed = request.session.pop(f"previewed-{task_type.slug}", None)
    return _start(request, task_type, hit_id if hit_id is not None and hit_id == previewed else None)


@login_required
def preview(request, slug):
    """A read-only look at the next HIT the worker would get, before accepting it."""
    task_type = get_object_or_404(TaskType, slug=slug)
    worker = _worker(request)
    hit = preview_next(worker, task_type)
    if hit is not None:
        request.session[f"previewed-{task_type.slug}"] = hit.pk
    if hit is None:
        messages.info(request, f"No {task_type.name} HITs are available right now.")
        return redirect("worker-home")
    handler = task_handler(slug)
    context = _page_context(handler, hit, None, None, worker)
    context.update({"preview": True, "task_type": task_type})
    return render(request, "hits/assignment.html", context)


def _page_context(handler, hit, assignment, data, worker):
    context = handler.page_context(hit, assignment, data)
    key = getattr(handler, "instructions_key", hit.task_type.slug)
    test_item = None
    if hit.kind == HIT.Kind.QUALIFICATION:
        test_item = test_progress(worker, hit, assignment.attempt if assignment else 1)
    return {
        "test_item": test_item,
        "hit": hit,
        "assignment": assignment,
        "task": context,
        "task_template": handler.template_name,
        "instructions_collapsed": key in (worker.seen_instructions or []),
        "errors": {},
        "worker": worker,
    }


@login_required
@rate_limited("SUBMIT_RATE_LIMIT", lambda r: f"user:{r.user.pk}")
def assignment_page(request, pk):
    worker = _worker(request)
    if request.method == "POST" and request.POST.get("action") not in ("return", "skip"):
        # A submission loads (and locks) the assignment itself: no separate lookup first.
        return _submit(request, worker, pk)
    try:
        assignment = worker_assignment(worker, pk)
    except Assignment.DoesNotExist:
        # Someone else's assignment, or none at all: the same answer, so ids reveal nothing.
        raise Http404("No such assignment") from None
    handler = task_handler(assignment.hit.task_type.slug)
    if request.method == "GET":
        if assignment.state != Assignment.State.ASSIGNED:
            messages.info(request, f"This HIT is {assignment.get_state_display().lower()}.")
            return redirect("worker-home")
        return render(request, "hits/assignment.html", _page_context(handler, assignment.hit, assignment, None, worker))
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    action = request.POST["action"]
    task_type = assignment.hit.task_type
    try:
        return_assignment(worker, assignment.pk)
    except AssignmentClosed as exc:
        messages.info(request, str(exc).capitalize() + ".")
        return redirect("worker-home")
    if action == "skip":
        messages.info(request, "Skipped. Here is another one.")
        return _start(request, task_type)
    messages.info(request, "HIT returned.")
    return redirect("worker-home")


def _submit(request, worker, pk):
    """Store the worker's answers; on success, the next HIT (auto-accept) or the home page."""
    try:
        outcome = submit_assignment(worker, pk, request.POST)
    except Assignment.DoesNotExist:
        raise Http404("No such assignment") from None
    except AnswerErrors as exc:
        assignment = worker_assignment(worker, pk)
        handler = task_handler(assignment.hit.task_type.slug)
        context = _page_context(handler, assignment.hit, assignment, request.POST, worker)
        context["errors"] = exc.errors
        return render(request, "hits/assignment.html", context, status=400)
    except AssignmentClosed as exc:
        messages.error(request, str(exc).capitalize() + ". Here is the next one.")
        return _start(request, exc.task_type)
    task_type = outcome.assignment.hit.task_type
    if outcome.duplicate:
        messages.info(request, "This HIT was already submitted; it was recorded once.")
    else:
        key = getattr(task_handler(task_type.slug), "instructions_key", task_type.slug)
        if key not in (worker.seen_instructions or []):
            worker.seen_instructions = [*(worker.seen_instructions or []), key]
            worker.save(update_fields=["seen_instructions"])
        messages.success(request, "Submitted. Thank you!")
        if outcome.assignment.hit.kind == HIT.Kind.QUALIFICATION:
            _tell_test_result(request, worker, outcome.assignment)
    if worker.auto_accept_next:
        return _start(request, task_type)
    return redirect("worker-home")


def _tell_test_result(request, worker, assignment) -> None:
    """After the last item of a test: its result, in words (the standing page keeps it)."""
    qualification = Qualification.objects.filter(
        worker=worker, task_type_id=assignment.hit.task_type_id, batch_id=assignment.hit.batch_id, attempts=assignment.attempt
    ).exclude(state=Qualification.State.PENDING).first()
    if qualification is None:
        return
    name = assignment.hit.task_type.name
    if qualification.state == Qualification.State.QUALIFIED:
        messages.success(request, f"Test finished: you passed the {name} test (score {qualification.score:.2f}). Real HITs follow.")
    elif qualification.state == Qualification.State.REVIEW:
        messages.info(request, f"Test finished: a researcher will review your {name} test; you will see the decision on your standing page.")
    else:
        messages.warning(
            request,
            f"Test finished: you did not pass the {name} test (score {qualification.score:.2f}). Your standing page says when you may try again.",
        )


@login_required
@require_POST
def worker_settings(request):
    worker = _worker(request)
    worker.auto_accept_next = request.POST.get("auto_accept_next") == "on"
    worker.save(update_fields=["auto_accept_next"])
    messages.info(request, "Auto-accept is " + ("on." if worker.auto_accept_next else "off."))
    return redirect(request.POST.get("next") or "worker-home")


@login_required
def history(request):
    worker = _worker(request)
    assignments = (
        Assignment.objects.filter(worker=worker).select_related("hit__task_type").order_by("-accepted_at")[:200]
    )
    done = Assignment.objects.filter(worker=worker, state__in=Assignment.DONE_STATES)
    totals = done.aggregate(
        n=Count("pk"),
        seconds=Sum("work_seconds"),
        owed=Sum("hit__reward", filter=Q(paid=False) & ~Q(state=Assignment.State.REJECTED)),
        bonus=Sum("bonus", filter=Q(paid=False)),
    )
    # SQLite sums decimals with float-like precision: round to cents.
    owed = (Decimal(totals["owed"] or 0) + Decimal(totals["bonus"] or 0)).quantize(Decimal("0.01"))
    return render(
        request,
        "hits/history.html",
        {"assignments": assignments, "n_done": totals["n"], "seconds": totals["seconds"] or 0, "owed": owed},
    )


def join(request, token):
    """Sign-up through an invitation link: creates the account and its worker identity."""
    invitation = Invitation.objects.filter(token=token).first()
    if invitation is None or not invitation.usable(timezone.now()):
        return render(request, "hits/join_closed.html", status=404)
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                # The use and the account together: concurrent sign-ups never pass the link's limit.
                take_use(invitation)
                user = form.save()
                worker_for_user(user)
        except InvitationClosed:
            return render(request, "hits/join_closed.html", status=404)
        login(request, user, backend="config.auth.WorkerModelBackend")
        messages.success(request, "Welcome! Pick a task to start.")
        return redirect(reverse("worker-home"))
    return render(request, "hits/join.html", {"form": form, "invitation": invitation})
