"""Worker pages: home, start working, preview, the HIT page, history, sign-up.

These views know nothing of the protocol: the registered handler of a task
type renders the HIT's part of the page and validates its answers.
"""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import UserCreationForm
from django.db import transaction
from django.db.models import Count, Max, Min, Q, Sum
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from config.ratelimit import rate_limited
from hits import messaging, payouts
from hits.handlers import AnswerErrors, eligibility, task_handler
from hits.wording import as_sentence
from hits.worktime import shown_minutes
from hits.invitations import InvitationClosed, take_use
from hits.models import HIT, Assignment, Batch, BatchChoice, Invitation, Qualification, TaskType, Worker
from hits.markets.registry import session_pages
from hits.qualifications import can_attempt, test_progress
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
    record_choice,
    return_assignment,
    submit_assignment,
    worker_assignment,
    worker_for_user,
)


def _worker(request):
    return worker_for_user(request.user)


def _not_for_participants(view):
    """A Prolific participant's pages are their session's: the platform's own lists and hand-out (local work)
    send them back to it."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if session_pages().is_participant(request.user):
            return redirect("prolific:session")
        return view(request, *args, **kwargs)

    return wrapped


@login_required
@_not_for_participants
def worker_home(request):
    worker = _worker(request)
    expire_due()
    rows = []
    for task_type in TaskType.objects.all():
        allowed = eligibility(worker, task_type)
        # Gold checks are never counted nor offered on their own: a figure or a button standing for them alone
        # would tell how many remain (they are handed out only beside regular work, issue 27).  Beside regular
        # work they are counted with it: the figure then drops by one after every HIT the worker does, gold or
        # not, where counting regular work alone would drop only after a regular HIT (issue 39).
        available = available_hits(worker, task_type, allowed) if allowed else None
        paid = ~Q(kind=HIT.Kind.QUALIFICATION)  # test items are unpaid: labelled so, not listed at $0
        counted = (
            available.order_by("batch__name", "batch_id").values("batch_id", "batch__name")
            .annotate(n=Count("pk"), low=Min("reward", filter=paid), high=Max("reward", filter=paid), tests=Count("pk", filter=~paid),
                      gold=Count("pk", filter=Q(kind=HIT.Kind.GOLD)))
        ) if available is not None else ()
        per_campaign = [c for c in counted if c["n"] > c["gold"]]
        rewards = [r for c in per_campaign for r in (c["low"], c["high"]) if r is not None]
        rewards = rewards or [r for r in _usual_rewards(task_type) if r is not None]
        # Campaigns whose qualification test the worker may take once they start from that campaign.
        to_choose = list(Batch.objects.filter(pk__in=allowed.choosable).order_by("name").values("id", "name")) if allowed.choosable else []
        rows.append(
            {
                "task_type": task_type,
                "eligible": bool(allowed),
                "available": sum(c["n"] for c in per_campaign),
                "reward_low": min(rewards) if rewards else None,
                "reward_high": max(rewards) if rewards else None,
                "tests": sum(c["tests"] for c in per_campaign),
                "campaigns": [
                    {"id": c["batch_id"], "name": c["batch__name"], "n": c["n"], "test": c["tests"] == c["n"]} for c in per_campaign
                ],
                "tests_to_choose": to_choose,
                "minutes": shown_minutes(task_type),
                "why_not": "" if allowed else _why_not(worker),
                "held_back": _held_back(worker, task_type),
                "current": current_assignment(worker, task_type),
            }
        )
    return render(request, "hits/home.html", {"worker": worker, "rows": rows, "session": _session_progress(request),
                                              "notices": messaging.notices(worker)})


@login_required
@_not_for_participants
@require_POST
def message_read(request, pk):
    """The worker marks one of their messages read: it moves below the unread ones on ``/work/``."""
    messaging.mark_read(_worker(request), pk)
    return redirect("worker-home")


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
        if qualification.state == Qualification.State.FAILED:
            # Said once, with what the worker can act on: the score and when they may try again.
            if qualification.score is not None:
                reason += f" (score {qualification.score:.2f})"
            allowed, why_not = can_attempt(qualification, qualification.batch)
            reason += "; " + ("you may take it again now" if allowed else why_not)
        elif qualification.reason:
            reason += f" ({qualification.reason})"
        lines.append(f"{qualification.batch.name}: {reason}")
    for block in worker.batch_blocks.filter(batch__state="active", batch__hits__task_type=task_type).select_related("batch").distinct():
        lines.append(f"{block.batch.name}: a researcher stopped your work here" + (f" ({block.reason})" if block.reason else ""))
    return lines


def _start(request, task_type, *, batch=None, moving_on=False):
    worker = _worker(request)
    expire_due()
    try:
        assignment = accept_next(
            worker, task_type, unopened_hold=settings.HIT_UNOPENED_HOLD_SECONDS,
            batch_id=batch.pk if batch is not None else None, moving_on=moving_on,
        )
    except NotEligible as exc:
        messages.error(request, as_sentence(exc))
        return redirect("worker-home")
    if assignment is None:
        where = f" in {batch.name}" if batch is not None else ""
        other = "other " if moving_on else ""
        messages.info(request, ("Skipped. " if moving_on else "") + f"No {other}{task_type.name} HITs{where} are available right now. Thank you!")
        return redirect("worker-home")
    if moving_on:
        messages.info(request, "Skipped. Here is another one.")
    return redirect("assignment", pk=assignment.pk)


def _posted_id(value) -> int | None:
    # isascii: "²" and other digits of other scripts pass isdigit() but not int().
    return int(value) if value and value.isascii() and value.isdigit() and len(value) < 19 else None


@login_required
@require_POST
@_not_for_participants
def start_working(request, slug):
    """The worker's next HIT of a type: the one drawn for them (what the preview showed), never one the page
    names, so no one can pick their HITs and step around gold checks.  ``campaign`` (a button per campaign on
    the home page): a HIT of that campaign, and the worker has chosen it (its qualification test is offered)."""
    task_type = get_object_or_404(TaskType, slug=slug)
    batch = None
    batch_id = _posted_id(request.POST.get("campaign"))
    if batch_id is not None:
        batch = Batch.objects.filter(
            pk=batch_id, state=Batch.State.ACTIVE, backend=Batch.Backend.LOCAL, hits__task_type=task_type
        ).distinct().first()
        if batch is None:
            messages.info(request, f"That campaign has no {task_type.name} HITs right now.")
            return redirect("worker-home")
        record_choice(_worker(request), batch, BatchChoice.How.START)
    return _start(request, task_type, batch=batch)


@login_required
@_not_for_participants
def preview(request, slug):
    """A read-only look at the next HIT the worker would get, before accepting it: the HIT drawn for them,
    the same on every preview until they take it (or the draw is no longer open to them, or expires)."""
    task_type = get_object_or_404(TaskType, slug=slug)
    worker = _worker(request)
    hit = preview_next(worker, task_type)
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


#: A work session ends after this long without a submission; the next one starts a new count.
WORK_SESSION_GAP = timedelta(hours=1)
_WORK_SESSION_COOKIE = "work_session"


def _session_progress(request) -> dict:
    """The HITs submitted in this browser's work session and the rewards they carry (owed once approved).

    Kept in a signed cookie that the submission sets (and that lapses an hour after the last one): showing it
    costs the HIT page no query."""
    figures = request.get_signed_cookie(_WORK_SESSION_COOKIE, default=None, salt="work-session", max_age=WORK_SESSION_GAP)
    try:
        user, n, earned = json.loads(figures) if figures else (None, 0, "0.00")
        if user != request.user.pk:
            raise ValueError("another account's session")
        return {"n": int(n), "earned": Decimal(earned)}
    except (ValueError, TypeError, ArithmeticError):
        return {"n": 0, "earned": Decimal("0.00")}


def _count_in_session(request, response, reward):
    """A submission taken: one more HIT and its reward in the work session's figures."""
    figures = _session_progress(request)
    earned = (figures["earned"] + Decimal(reward or 0)).quantize(Decimal("0.01"))
    value = json.dumps([request.user.pk, figures["n"] + 1, str(earned)])
    response.set_signed_cookie(
        _WORK_SESSION_COOKIE, value, salt="work-session", max_age=int(WORK_SESSION_GAP.total_seconds()),
        httponly=True, samesite="Lax", secure=request.is_secure(),
    )
    return response


@login_required
@rate_limited("SUBMIT_RATE_LIMIT", lambda r: f"user:{r.user.pk}")
def assignment_page(request, pk):
    worker = _worker(request)
    session = None
    if worker.prolific_pid:
        # A Prolific participant works only in the session this browser holds, on that session's HITs.
        session, refusal = session_pages().browser_session(request, worker, pk)
        if refusal is not None:
            return refusal
    if request.method == "POST" and request.POST.get("action") not in ("return", "skip"):
        # A submission loads (and locks) the assignment itself: no separate lookup first.
        return _submit(request, worker, pk, session)
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
        context = _hit_page(request, handler, assignment, None, worker, session)
        return render(request, "hits/assignment.html", context)
    if request.method != "POST":
        return HttpResponseNotAllowed(["GET", "POST"])
    action = request.POST["action"]
    task_type = assignment.hit.task_type
    try:
        return_assignment(worker, assignment.pk, skipped=action == "skip")
    except AssignmentClosed as exc:
        messages.info(request, as_sentence(exc))
        return redirect("worker-home")
    if session is not None:
        return session_pages().go_on(request, session, moving_on=True)
    if action == "skip":
        return _start(request, task_type, moving_on=True)
    messages.info(request, "HIT returned.")
    return redirect("worker-home")


def _hit_page(request, handler, assignment, data, worker, session) -> dict:
    """The HIT page's context with the progress line of the worker's session: a Prolific session's ("HIT 3 of
    10"), else the browser's work session."""
    context = _page_context(handler, assignment.hit, assignment, data, worker)
    if session is not None:
        context["prolific"] = session_pages().progress(session)
    else:
        context["session"] = _session_progress(request)
    return context


def _submit(request, worker, pk, session=None):
    """Store the worker's answers; on success, the next HIT (auto-accept) or the home page.

    In a Prolific ``session`` the answers are stored pending (they count once Prolific's records confirm the
    session, ``hits.prolific.sessions``), and the session goes on: its next HIT, or back to Prolific."""
    try:
        outcome = submit_assignment(worker, pk, request.POST, confirm_later=session is not None)
    except Assignment.DoesNotExist:
        raise Http404("No such assignment") from None
    except AnswerErrors as exc:
        assignment = worker_assignment(worker, pk)
        handler = task_handler(assignment.hit.task_type.slug)
        context = _hit_page(request, handler, assignment, request.POST, worker, session)
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
        if session is not None:
            return session_pages().go_on(request, session)
        return _start(request, exc.task_type)
    task_type = outcome.assignment.hit.task_type
    if outcome.duplicate:
        messages.info(request, "This HIT was already submitted; it was recorded once.")
    else:
        key = getattr(task_handler(task_type.slug), "instructions_key", task_type.slug)
        if key not in (worker.seen_instructions or []):
            worker.seen_instructions = [*(worker.seen_instructions or []), key]
            worker.save(update_fields=["seen_instructions"])
        if session is not None:
            # (A test's result comes once the session is confirmed: its items are graded then.)
            return session_pages().go_on(request, session, submitted=True)
        messages.success(request, "Submitted. Thank you!")
        if outcome.assignment.hit.kind == HIT.Kind.QUALIFICATION:
            _tell_test_result(request, worker, outcome.assignment)
    if session is not None:
        return session_pages().go_on(request, session)
    response = _start(request, task_type) if worker.auto_accept_next else redirect("worker-home")
    return response if outcome.duplicate else _count_in_session(request, response, outcome.assignment.hit.reward)


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
        allowed, why_not = can_attempt(qualification, assignment.hit.batch)
        retry = "You may take it again now." if allowed else as_sentence(why_not)
        messages.warning(request, f"Test finished: you did not pass the {name} test (score {qualification.score:.2f}). {retry}")
        _tell_test_items(request, worker, assignment)


def _tell_test_items(request, worker, assignment) -> None:
    """After a failed test, item by item, what was expected (from the handler). Only a qualification test's own
    items: gold checks hide among regular HITs and are never explained."""
    explain = getattr(task_handler(assignment.hit.task_type.slug), "test_feedback", None)
    if explain is None:
        return
    items = Assignment.objects.filter(
        worker=worker, attempt=assignment.attempt, state__in=Assignment.DONE_STATES, hit__kind=HIT.Kind.QUALIFICATION,
        hit__batch_id=assignment.hit.batch_id, hit__task_type_id=assignment.hit.task_type_id,
    ).select_related("hit")
    # One short line per checked entry, marked right or wrong (issue 39: one dense paragraph per item, no marks).
    for right, line in explain(list(items)):
        mark = "✓ Right:" if right else "✗ Wrong:"
        messages.info(request, f"{mark} {line}", extra_tags="test-item " + ("right" if right else "wrong"))


#: What a change of the campaign means to a worker who has one of its HITs open (the status poll shows it).
_CAMPAIGN_NOTICES = {
    Batch.State.PAUSED: (
        "This campaign was paused by its researchers. You may still submit this HIT and be paid for it; "
        "no new HITs of it are handed out until it resumes."
    ),
    Batch.State.CANCELLED: (
        "This campaign was cancelled by its researchers: this HIT can no longer be submitted, nothing of it is "
        "saved and nothing is owed for it. Copy what you wrote if you want to keep it, then Return the HIT."
    ),
}


@login_required
def assignment_status(request, pk):
    """A small JSON an open HIT page polls (about every 30 s): the assignment's state, its campaign's, the time
    left and what a change means for the worker. One query for the assignment; nothing is written."""
    try:
        assignment = worker_assignment(_worker(request), pk)
    except Assignment.DoesNotExist:
        raise Http404("No such assignment") from None
    now = timezone.now()
    open_ = assignment.state == Assignment.State.ASSIGNED and assignment.expires_at > now
    campaign = assignment.hit.batch.state
    notice = ""
    if assignment.state == Assignment.State.ASSIGNED and not open_:
        notice = "The time for this HIT is up: it can no longer be submitted."
    elif not open_:
        notice = f"This HIT is {assignment.get_state_display().lower()}: there is nothing more to do on this page."
    else:
        notice = _CAMPAIGN_NOTICES.get(campaign, "")
    response = JsonResponse({
        "state": assignment.state,
        "campaign": campaign,
        "open": open_,
        "can_submit": open_ and campaign != Batch.State.CANCELLED,
        "expires_at": assignment.expires_at.isoformat(),
        "seconds_left": max(0, int((assignment.expires_at - now).total_seconds())),
        "notice": notice,
    })
    response["Cache-Control"] = "no-store"
    return response


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
@_not_for_participants
def history(request):
    """The worker's HITs and earnings; "owed" comes from the ledger, as on the researcher's payout report."""
    worker = _worker(request)
    assignments = list(
        Assignment.objects.filter(worker=worker).select_related("hit__task_type", "hit__batch").order_by("-accepted_at")[:200]
    )
    for a in assignments:
        # Work the campaign cancelled (or a test item withdrawn) before it was handed in: nothing is owed for it.
        a.closed = a.state == Assignment.State.ASSIGNED and (
            a.hit.state == HIT.State.CANCELLED or a.hit.batch.state == Batch.State.CANCELLED
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
    existing = Worker.objects.filter(user=request.user).first() if request.user.is_authenticated else None
    if existing is not None and invitation.batch_id is not None and invitation.batch.state == Batch.State.ACTIVE:
        # A worker with an account already: the link invites them to its campaign (no new account, no use taken).
        record_choice(existing, invitation.batch, BatchChoice.How.INVITATION)
        messages.success(request, f"You joined {invitation.batch.name}: its work (and its qualification test, if it has one) is offered to you.")
        return redirect("worker-home")
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                # The use and the account together: concurrent sign-ups never pass the link's limit.
                take_use(invitation)
                user = form.save()
                worker = worker_for_user(user)
                if invitation.batch_id is not None:
                    # Invited to a campaign: its qualification test is offered to this worker.
                    record_choice(worker, invitation.batch, BatchChoice.How.INVITATION)
                # Who registered through which link: the admin lists each invitation's registrations.
                Worker.objects.filter(pk=worker.pk).update(invitation=invitation)
        except InvitationClosed:
            return render(request, "hits/join_closed.html", status=404)
        login(request, user, backend="config.auth.WorkerModelBackend")
        messages.success(request, "Welcome! Pick a task to start.")
        return redirect(reverse("worker-home"))
    return render(request, "hits/join.html", {"form": form, "invitation": invitation, "work": _work_on_offer(invitation)})


def _usual_rewards(task_type, batch_id: int | None = None) -> tuple:
    """The reward range of a task type's paid HITs in running local campaigns (``batch_id``: that one), open or
    not: what the task pays when nothing is open right now.  (None, None) when there are none."""
    rows = HIT.objects.filter(
        task_type=task_type, kind=HIT.Kind.REGULAR, batch__state=Batch.State.ACTIVE, batch__backend=Batch.Backend.LOCAL
    )
    if batch_id is not None:
        rows = rows.filter(batch_id=batch_id)
    figures = rows.aggregate(low=Min("reward"), high=Max("reward"))
    return figures["low"], figures["high"]


def _work_on_offer(invitation: Invitation | None = None) -> list[dict]:
    """What the work is, what it pays and how long it takes, per task type (for people deciding to join).

    A link to one campaign shows that campaign's work only: the tests of other campaigns are offered to
    those who chose them, not to this link's newcomers."""
    from hits.models import Batch

    offer = []
    for task_type in TaskType.objects.all():
        open_items = HIT.objects.filter(
            task_type=task_type, state=HIT.State.OPEN, batch__state=Batch.State.ACTIVE,
            batch__backend=Batch.Backend.LOCAL,
        )
        if invitation is not None and invitation.batch_id is not None:
            open_items = open_items.filter(batch_id=invitation.batch_id)
        figures = open_items.filter(kind=HIT.Kind.REGULAR).aggregate(
            n=Count("pk"), low=Min("reward"), high=Max("reward")
        )
        if figures["low"] is None:
            # Nothing open right now: what the task pays all the same (the home page says the same).
            figures["low"], figures["high"] = _usual_rewards(task_type, invitation.batch_id if invitation is not None else None)
        tests = open_items.filter(kind=HIT.Kind.QUALIFICATION).count()
        offer.append({"task_type": task_type, "open": figures["n"], "tests": tests, "reward_low": figures["low"],
                      "reward_high": figures["high"], "minutes": shown_minutes(task_type)})
    return offer
