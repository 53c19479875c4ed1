"""The HIT page inside MTurk's frame: the same HIT pages and services as local workers.

MTurk loads ``ExternalURL?assignmentId=..&hitId=..&workerId=..&turkSubmitTo=..``:

- ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``: the worker is previewing;
  the page is shown read-only.
- otherwise the MTurk worker id is mapped to a platform ``Worker``
  (created on first visit), the local assignment of this HIT is taken for
  them (``hits.services.accept_next``, the same rules as local workers:
  qualifications, exclusions, blocks; but never refused for want of a place:
  MTurk hands out the HIT's places, see ``HIT.overbook``) and the page shows
  the form.
- the form posts back here; the answers are validated and stored by
  ``hits.services.submit_assignment`` *first*, then the page posts
  ``assignmentId`` to ``<turkSubmitTo>/mturk/externalSubmit`` so MTurk
  records the submission.  Stored answers are "pending": they count (gold
  labels, cross-checks, scores, the next stage) only once the sync sees MTurk
  list the assignment as submitted by the same worker, since anyone can open
  this page with made-up ids (``hits.mturk.sync``).

Each local assignment is bound to the MTurk ``assignmentId`` it was taken for, and the stored id is
never rewritten: another id never gets that assignment's form or token (knowing a worker's id and a HIT
id must not be enough to take their work over).  On a HIT published on MTurk (``HIT.overbook``) another
id for the same (HIT, worker) gets a local assignment of its own, with its own token (MTurk cannot be asked
about a live assignment, so a made-up id opened first must not lock the real one out); the sync confirms
the one MTurk lists for the worker and discards the others.  Once the worker's work there is confirmed,
another id is refused with a page saying why (409).

There is no login: the assignment's secret token, carried in the form,
proves the post comes from the page we served, and a worker id that does
not match the assignment is refused.  That is why the view is exempt from
Django's CSRF cookie check (a cookie set inside MTurk's third-party frame
is not sent back by browsers that block third-party cookies): the token
plays the CSRF token's role.  These are the only pages that MTurk's domains
(``MTURK_FRAME_ANCESTORS``) may frame; every other page stays unframeable.
"""

from __future__ import annotations

import hmac
import re
from functools import wraps

from django.conf import settings
from django.db import IntegrityError, transaction
from django.shortcuts import render
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt

from config.ratelimit import client_ip, hit_limit, rate_limited
from hits.handlers import AnswerErrors, task_handler
from hits.models import Assignment, Worker
from hits.wording import as_sentence
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.services import AssignmentClosed, NotEligible, WorkCancelled, accept_next, market_worker, submit_assignment

PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
# MTurk's ids are upper-case letters and digits.
MTURK_ID = re.compile(r"^[A-Z0-9]{1,64}$")


def framable_by_mturk(view):
    """Allow MTurk's domains (and only them) to frame the view's pages."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = "frame-ancestors " + " ".join(settings.MTURK_FRAME_ANCESTORS)
        return response

    return xframe_options_exempt(wrapped)


def _refuse(request, status: int, message: str):
    return render(request, "hits/mturk_message.html", {"message": message}, status=status)


def _valid_submit_to(url: str) -> bool:
    # MTurk's own hosts, those configured, and the requester endpoint when it is another (the local stand-in).
    hosts = [*settings.MTURK_SUBMIT_HOSTS, *([settings.MTURK_ENDPOINT_URL] if settings.MTURK_ENDPOINT_URL else [])]
    return url.rstrip("/") in [host.rstrip("/") for host in hosts]


def _page(request, hit, assignment, record, data=None, errors=None, status=200, refused=""):
    handler = task_handler(hit.task_type.slug)
    context = {
        "refused": refused,
        "hit": hit,
        "assignment": assignment,
        "record": record,
        "task": handler.page_context(hit, assignment, data),
        "task_template": handler.template_name,
        "preview": assignment is None,
        "errors": errors or {},
        "instructions_collapsed": False,
    }
    return render(request, "hits/mturk_hit.html", context, status=status)


def _worker(mturk_worker_id: str) -> Worker:
    """The platform worker of an MTurk worker id, created on their first accepted HIT."""
    return market_worker("mturk_worker_id", mturk_worker_id, "mturk")


ANOTHER_ASSIGNMENT = (
    "You already opened this HIT under another MTurk assignment, and only that assignment's page can be used "
    "(its place is kept for it). If you returned that assignment on MTurk, please return this one too: "
    "a HIT is done at most once per worker."
)
ALREADY_DONE = "You already did this HIT (MTurk confirmed your work), and a HIT is done at most once per worker. Please return this one."


def _bound_elsewhere(published: MTurkHIT, mturk_worker_id: str, mturk_assignment_id: str) -> str:
    """Why this MTurk assignment may not have a place of this HIT for this worker ("" when it may).

    On a HIT published on MTurk (``HIT.overbook``, every published HIT) each MTurk assignment id gets a local
    assignment of its own: only confirmed work of the worker there refuses another id (a made-up id opened
    first in the worker's name must not lock their real assignment out).  Otherwise the worker's place is bound
    to the first id seen for it while it holds the place."""
    others = MTurkAssignment.objects.filter(mturk_hit=published, mturk_worker_id=mturk_worker_id).exclude(
        mturk_assignment_id=mturk_assignment_id
    )
    if published.hit.overbook:
        return ALREADY_DONE if others.filter(assignment__state__in=Assignment.DONE_STATES).exists() else ""
    return ANOTHER_ASSIGNMENT if others.filter(assignment__state__in=Assignment.TAKING_STATES).exists() else ""


def _take(published: MTurkHIT, mturk_assignment_id: str, mturk_worker_id: str, submit_to: str):
    """The local assignment behind an MTurk assignment, taken on first visit. Returns (record, error message).

    The local assignment and its record are made in one transaction: two loads of a new id at once leave
    one assignment, never a place held by nobody's page."""
    worker = _worker(mturk_worker_id)
    hit = published.hit
    try:
        with transaction.atomic():
            try:
                assignment = accept_next(worker, hit.task_type, hit_id=hit.pk, via_mturk=True)
            except NotEligible as exc:
                return None, f"Sorry, {exc}. Please return this HIT."
            if assignment is None:
                return None, "Sorry, this HIT has no place left for you. Please return it."
            if MTurkAssignment.objects.select_for_update().filter(assignment=assignment).exists():
                # The place is bound to the MTurk assignment first seen for it (another load raced this one):
                # never rewritten, so a made-up id can neither take it over nor get its form.
                return None, ANOTHER_ASSIGNMENT
            return MTurkAssignment.objects.create(
                mturk_assignment_id=mturk_assignment_id, mturk_hit=published, assignment=assignment,
                mturk_worker_id=mturk_worker_id, submit_to=submit_to,
            ), ""
    except IntegrityError:  # two loads of the same page at once
        record = MTurkAssignment.objects.filter(mturk_assignment_id=mturk_assignment_id, mturk_worker_id=mturk_worker_id).first()
        return (record, "") if record is not None else (None, ANOTHER_ASSIGNMENT)


@csrf_exempt
@framable_by_mturk
@rate_limited("SUBMIT_RATE_LIMIT", lambda r: f"mturk:{r.POST.get('workerId', '')[:64]}")
def mturk_hit_page(request):
    """The framed HIT page (GET: preview or the form; POST: store the answers, then hand over to MTurk)."""
    params = request.POST if request.method == "POST" else request.GET
    if request.method not in ("GET", "POST"):
        return _refuse(request, 405, "Only GET and POST are allowed here.")
    hit_id = params.get("hitId", "")
    if not MTURK_ID.match(hit_id):
        return _refuse(request, 400, "This page is opened by Amazon Mechanical Turk; the hitId is missing or malformed.")
    published = MTurkHIT.objects.select_related("hit__task_type", "hit__batch").filter(mturk_hit_id=hit_id).first()
    if published is None:
        return _refuse(request, 404, "This HIT is not known to the platform.")
    mturk_assignment_id = params.get("assignmentId", "")
    if request.method == "GET" and mturk_assignment_id in ("", PREVIEW_ID):
        return _page(request, published.hit, None, None)
    worker_id = params.get("workerId", "")
    if not MTURK_ID.match(mturk_assignment_id) or not MTURK_ID.match(worker_id):
        return _refuse(request, 400, "The assignmentId or workerId is missing or malformed.")
    record = (
        MTurkAssignment.objects.select_related("assignment__hit__task_type", "assignment__worker")
        .filter(mturk_assignment_id=mturk_assignment_id)
        .first()
    )
    if record is not None and (record.mturk_worker_id != worker_id or record.mturk_hit_id != published.pk):
        return _refuse(request, 403, "This assignment belongs to another worker or HIT.")
    if request.method == "GET":
        submit_to = params.get("turkSubmitTo", "").rstrip("/")
        if not _valid_submit_to(submit_to):
            return _refuse(request, 400, "The turkSubmitTo address is not one of MTurk's.")
        if record is None:
            # Ids in a URL are no secret: cap how fast one client can take places of HITs.
            if hit_limit(f"SUBMIT_RATE_LIMIT:mturk-accept:{client_ip(request)}", settings.SUBMIT_RATE_LIMIT):
                return render(request, "429.html", status=429)
            refusal = _bound_elsewhere(published, worker_id, mturk_assignment_id)
            if refusal:
                return _refuse(request, 409, refusal)
            record, refusal = _take(published, mturk_assignment_id, worker_id, submit_to)
            if record is None:
                return _refuse(request, 409 if refusal == ANOTHER_ASSIGNMENT else 403, refusal)
        if record.assignment.state in Assignment.DONE_STATES or record.assignment.state == Assignment.State.PENDING:
            return render(request, "hits/mturk_submit.html", {"record": record})
        if record.assignment.state != Assignment.State.ASSIGNED:
            return _refuse(request, 410, f"This HIT was {record.assignment.get_state_display().lower()}. Please return it on MTurk.")
        return _page(request, published.hit, record.assignment, record)
    if record is None or not hmac.compare_digest(params.get("token", "").encode(), str(record.assignment.token).encode()):
        return _refuse(request, 403, "This submission does not come from the page of this assignment.")
    assignment = record.assignment
    try:
        submit_assignment(assignment.worker, assignment.pk, request.POST, confirm_later=True)
    except AnswerErrors as exc:
        return _page(request, published.hit, assignment, record, data=request.POST, errors=exc.errors, status=400)
    except WorkCancelled as exc:
        # As on the local page: the worker's text stays on the page (to keep a copy); the form cannot be sent again.
        refused = f"{as_sentence(exc)} Please return this HIT on MTurk."
        return _page(request, published.hit, assignment, record, data=request.POST, status=409, refused=refused)
    except AssignmentClosed as exc:
        return _refuse(request, 410, f"Sorry, {exc}. Please return it on MTurk.")
    return render(request, "hits/mturk_submit.html", {"record": record})
