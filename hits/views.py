"""Worker pages: home, start working, preview, the HIT page, history, sign-up.

These views know nothing of the protocol: the registered handler of a task
type renders the HIT's part of the page and validates its answers.
"""

from __future__ import annotations


from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.db.models import Count, Max, Min, Q, Sum
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from config.ratelimit import rate_limited
from hits import payouts
from hits.handlers import AnswerErrors, eligibility, task_handler
from hits.wording import as_sentence
from hits.invitations import InvitationClosed, take_use
from hits.models import HIT, Assignment, Invitation, Qualification, TaskType, Worker
from hits.qualifications import test_progress
from hits.services import (
    AssignmentClosed,
    NotEligible,
    WorkCancelled,
    accept_next,
    available_hits,
    current_assignment,
    expire_due,
    mark_opened,
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
    expire_due()
    rows = []
    for task_type in TaskType.objects.all():
        allowed = eligibility(worker, task_type)
        available = available_hits(worker, task_type, allowed) if allowed else None
        paid = ~Q(kind=HIT.Kind.QUALIFICATION)  # test items are unpaid: labelled so, not listed at $0
        offer = (
            available.aggregate(
                n=Count("pk"), low=Min("reward", filter=paid), high=Max("reward", filter=paid),
                tests=Count("pk", filter=~paid),
            ) if available is not None else {"n": 0}
        )
        rows.append(
            {
                "task_type": task_type,
                "eligible": bool(allowed),
                "available": offer["n"],
                "reward_low": offer.get("low"),
                "reward_high": offer.get("high"),
                "tests": offer.get("tests", 0),
                "campaigns": list(
                    available.order_by().values_list("batch__name", flat=True).distinct()[:4]
                ) if offer["n"] else [],
                "minutes": _typical_minutes(task_type),
                "why_not": "" if allowed else _why_not(worker),
                "held_back": _held_back(worker, task_type),
                "current": current_assignment(worker, task_type),
            }
        )
    return render(request, "hits/home.html", {"worker": worker, "rows": rows})


def _typical_minutes(task_type) -> float | None:
    """The median work time of this task type's last 100 submissions, in minutes (None before any)."""
    seconds = list(
        Assignment.objects.filter(hit__task_type=task_type, work_seconds__isnull=False)
        .order_by("-submitted_at").values_list("work_seconds", flat=True)[:100]
    )
    if not seconds:
        return None
    seconds.sort()
    return max(1, round(seconds[len(seconds) // 2] / 60))


def _why_not(worker) -> str:
    """Why this worker may not do any HIT now (only a platform-wide block takes every task type away)."""
    return "your account is blocked" + (f": {worker.blocked_reason}" if worker.blocked_reason else "")


#: What a campaign's own decision about a worker's test means to them, in words they can act on.
_HELD_BACK = {
    Qualification.State.FAILED: "you did not pass its qualification test",
    Qualification.State.REVIEW: "your qualification test is waiting for a researcher's review",
    Qualification.State.REVOKED: "your qualification was withdrawn",
}


def _held_back(worker, task_type) -> list[str]:
    """The running campaigns that keep this worker out of this task type, each with its reason.

    Qualification is per campaign: a failed test or a researcher's block in one campaign leaves the others open,
    so these are shown beside what is still available rather than as "not available"."""
    lines = []
    rows = Qualification.objects.filter(
        worker=worker, task_type=task_type, state__in=list(_HELD_BACK), batch__state="active"
    ).select_related("batch").order_by("batch__name")
    for qualification in rows:
        reason = _HELD_BACK[qualification.state]
        if qualification.reason:
            reason += f" ({qualification.reason})"
        lines.append(f"{qualification.batch.name}: {reason}")
    for block in worker.batch_blocks.filter(batch__state="active", batch__hits__task_type=task_type).select_related("batch").distinct():
        lines.append(f"{block.batch.name}: a researcher stopped your work here" + (f" ({block.reason})" if block.reason else ""))
    return lines


def _start(request, task_type, hit_id=None):
    worker = _worker(request)
    expire_due()
    try:
        assignment = accept_next(worker, task_type, hit_id=hit_id, unopened_hold=settings.HIT_UNOPENED_HOLD_SECONDS)
    except NotEligible as exc:
        messages.error(request, as_sentence(exc))
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
    # isascii: "²" and other digits of other scripts pass isdigit() but not int().
    hit_id = int(hit_id) if hit_id and hit_id.isascii() and hit_id.isdigit() else None
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
        mark_opened(assignment)
        return render(request, "hits/assignment.html", _page_context(handler, assignment.hit, assignment, None, worker))
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    action = request.POST["action"]
    task_type = assignment.hit.task_type
    try:
        return_assignment(worker, assignment.pk, skipped=action == "skip")
    except AssignmentClosed as exc:
        messages.info(request, as_sentence(exc))
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
    except WorkCancelled as exc:
        # The worker's text stays on the page (to keep a copy); the form cannot be sent again.
        assignment = worker_assignment(worker, pk)
        handler = task_handler(assignment.hit.task_type.slug)
        context = _page_context(handler, assignment.hit, assignment, request.POST, worker)
        context["refused"] = as_sentence(exc)
        return render(request, "hits/assignment.html", context, status=409)
    except AssignmentClosed as exc:
        messages.error(request, as_sentence(exc) + " Here is the next one.")
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
    target = request.POST.get("next") or ""
    # Only a page of this site, as the login view checks its own "next"; taken as an address, never a view name.
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        target = reverse("worker-home")
    return HttpResponseRedirect(target)


@login_required
def history(request):
    """The worker's HITs and earnings; "owed" comes from the ledger, as on the researcher's payout report."""
    worker = _worker(request)
    assignments = (
        Assignment.objects.filter(worker=worker).select_related("hit__task_type", "hit__batch").order_by("-accepted_at")[:200]
    )
    done = Assignment.objects.filter(worker=worker, state__in=Assignment.DONE_STATES)
    figures = done.aggregate(n=Count("pk"), seconds=Sum("work_seconds"))
    rows = payouts.payouts(worker=worker)
    totals = payouts.totals(rows)
    return render(
        request,
        "hits/history.html",
        {
            "assignments": assignments,
            "n_done": figures["n"],
            "seconds": figures["seconds"] or 0,
            "payouts": rows,
            "totals": totals,
            "owed": totals.owed,
        },
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
                worker = worker_for_user(user)
                # Who registered through which link: the admin lists each invitation's registrations.
                Worker.objects.filter(pk=worker.pk).update(invitation=invitation)
        except InvitationClosed:
            return render(request, "hits/join_closed.html", status=404)
        login(request, user, backend="config.auth.WorkerModelBackend")
        messages.success(request, "Welcome! Pick a task to start.")
        return redirect(reverse("worker-home"))
    return render(request, "hits/join.html", {"form": form, "invitation": invitation, "work": _work_on_offer()})


def _work_on_offer() -> list[dict]:
    """What the work is, what it pays and how long it takes, per task type (for people deciding to join)."""
    from hits.models import Batch

    offer = []
    for task_type in TaskType.objects.all():
        open_items = HIT.objects.filter(
            task_type=task_type, state=HIT.State.OPEN, batch__state=Batch.State.ACTIVE,
            batch__backend=Batch.Backend.LOCAL,
        )
        figures = open_items.filter(kind=HIT.Kind.REGULAR).aggregate(
            n=Count("pk"), low=Min("reward"), high=Max("reward")
        )
        tests = open_items.filter(kind=HIT.Kind.QUALIFICATION).count()
        offer.append({"task_type": task_type, "open": figures["n"], "tests": tests, "reward_low": figures["low"],
                      "reward_high": figures["high"], "minutes": _typical_minutes(task_type)})
    return offer
