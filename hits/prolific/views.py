"""A Prolific participant's pages: arrival from the study URL, the session's next step, and the identity check
the platform's HIT pages make for a participant (``hits.views`` calls ``browser_session`` and ``go_on``).

- ``start`` (``STUDY_START_PATH``, URL name ``prolific:start``): the study URL.  Prolific's three parameters
  are checked (``hits.prolific.sessions.start_session``: malformed 400, unknown study 404, a session id bound to
  another participant or study 403, a second session in a study 409, each with a page saying why); then the
  browser is signed in as the participant and remembers the session, and the session's next step follows.
- ``session`` (``prolific:session``): the browser's session goes on: its HIT page, or Prolific's completion
  page with the study's code, or (no work at all) a page asking to return the study on Prolific.

One browser works for one participant in one session at a time.  Another participant's study link opened in a
browser that holds a session switches it cleanly: Django's login ends the previous sign-in (its session data
goes with it), so the first participant's pages refuse in this browser until their own link signs them in
again (their session, drafts and HIT are kept).  The same participant's link of another study switches the
browser to that study's session.  A participant's HIT pages refuse a browser whose remembered session is not
theirs, not active, or not the one the HIT belongs to.

A study link opens one browser (``hits.prolific.holding``): the first browser to open a session holds it, and
the session's pages serve no other.  Another browser opening the link is signed in as nobody and gets a page
(409) saying the session is open elsewhere, with a form for the move code the holding browser's HIT pages show;
the right code moves the session there, and the browser that held it is signed out on its next page (409).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from config.ratelimit import client_ip, hit_limit
from hits.models import Worker
from hits.prolific import holding, sessions
from hits.prolific.models import ProlificSession

#: The browser's session data key naming its Prolific session.
SESSION_KEY = "prolific_session"

_ENDED_WORDS = {
    ProlificSession.State.RETURNED: "you returned it on Prolific",
    ProlificSession.State.TIMED_OUT: "Prolific timed it out",
    ProlificSession.State.DISCARDED: "it is not a submission Prolific knows for you",
}


def _page(request, status: int, title: str, message: str, *, back: str = "", confirm: str = ""):
    """A page of its own for the participant (``back``: a link back to Prolific's completion page; ``confirm``:
    the address a confirmation form posts to)."""
    return render(request, "hits/prolific_message.html",
                  {"title": title, "message": message, "back": back, "confirm": confirm}, status=status)


def _refuse(request, status: int, message: str):
    return _page(request, status, "This Prolific link cannot be used", message)


@require_http_methods(["GET", "POST"])
def start(request):
    """The study URL: check Prolific's parameters, bind the session, sign the participant in, go on.  A browser
    signed in as someone who is not a Prolific participant (a researcher, a local worker) is asked first (a POST
    of the same address confirms): opening a study link never signs them out by itself.

    The first browser to open the session holds it (``hits.prolific.holding``); another one gets a page saying
    so, and takes the session over only with the move code shown in the holding browser (a POST of
    ``move_code`` to the same address)."""
    return holding.keep_cookie(request, _start(request))


def _start(request):
    values, problems = sessions.check_parameters(request.GET)
    if problems:
        return _refuse(request, 400, "This page is opened from a Prolific study, and its address is wrong: "
                                     + "; ".join(problems) + ". Please open the study from Prolific again.")
    if request.method != "POST" and request.user.is_authenticated and not is_participant(request.user):
        return _page(request, 200, "Sign out to take part in this Prolific study?",
                     f"This browser is signed in as {request.user.get_username()}. Taking part in the study signs "
                     "that account out and signs the browser in as the Prolific participant "
                     f"{values['PROLIFIC_PID']}.", confirm=request.get_full_path())
    bound = ProlificSession.objects.filter(session_id=values["SESSION_ID"]).exclude(
        state=ProlificSession.State.DISCARDED).exists()
    # Ids in a URL are no secret: cap how fast one client can open new sessions.
    if not bound and hit_limit(f"SUBMIT_RATE_LIMIT:prolific-start:{client_ip(request)}", settings.SUBMIT_RATE_LIMIT):
        return render(request, "429.html", status=429)
    try:
        session = sessions.start_session(values["PROLIFIC_PID"], values["STUDY_ID"], values["SESSION_ID"])
    except sessions.SessionRefused as exc:
        return _refuse(request, exc.status, str(exc))
    if session.state in sessions.ENDED:
        return _ended(request, session)
    if not holding.claim(request, session):
        if request.method != "POST" or "move_code" not in request.POST:
            return _held_elsewhere(request, session)
        # Ids in a URL are no secret, and neither is a guess: cap how fast one client tries move codes.
        if hit_limit(f"SUBMIT_RATE_LIMIT:prolific-move:{client_ip(request)}", settings.SUBMIT_RATE_LIMIT):
            return render(request, "429.html", status=429)
        wrong = holding.move(request, session, request.POST["move_code"])
        if wrong:
            return _held_elsewhere(request, session, wrong=wrong)
        messages.success(request, "Your session is in this browser now: the other browser is signed out of it.")
    user = sessions.participant_user(session.worker)
    if request.user.pk != user.pk:
        login(request, user, backend="config.auth.WorkerModelBackend")
    request.session[SESSION_KEY] = session.pk
    return go_on(request, session)


@require_GET
def session(request):
    """The browser's Prolific session goes on (its HIT, the completion code, or no work)."""
    current, refusal = browser_session(request)
    if refusal is not None:
        return refusal
    return go_on(request, current)


def go_on(request, current: ProlificSession, *, submitted: bool = False, moving_on: bool = False):
    """The response for the session's next step (``submitted``: after a HIT was just submitted; ``moving_on``:
    after one was given back, so another one comes when there is one)."""
    step = sessions.advance(current, unopened_hold=settings.HIT_UNOPENED_HOLD_SECONDS, moving_on=moving_on)
    if step.completed:
        waiting = _unconfirmed(request, step.session)
        if waiting is not None:
            # After a HIT's form: the page to reload is the session's, not the form's.
            return redirect("prolific:session") if request.method == "POST" and waiting.status_code == 200 else waiting
        # Prolific's page is the end of the way: nothing is left on the browser's message list for later.
        list(messages.get_messages(request))
        return HttpResponseRedirect(sessions.completion_url(step.session.study))
    if step.ended:
        return _ended(request, step.session)
    if step.assignment is not None:
        if submitted:
            messages.success(request, "Submitted. Thank you! Here is the next one.")
        return redirect("assignment", pk=step.assignment.pk)
    list(messages.get_messages(request))
    if step.unfinished:
        return _page(
            request, 200, "The qualification test ends here, without a completion code",
            f"The test is graded only as a whole, and {step.why}: it cannot be finished, so there is no completion "
            "code. Please return the submission on Prolific (\"Return submission\"). The items you finished are "
            "paid as a bonus once reviewed.",
        )
    return _page(
        request, 200, "No work for you in this study right now",
        f"Sorry: {step.why}. Please return the study on Prolific (\"Return submission\"): you have done no work "
        "in it, so there is no completion code and nothing to pay.",
    )


def _unconfirmed(request, current: ProlificSession):
    """None when the completion code may be shown; else the page to show instead: a refusal (Prolific denies
    the submission: the session is discarded, nothing counts) or a page saying the code comes once Prolific
    confirms the submission (Prolific cannot be reached now)."""
    try:
        if sessions.code_may_be_shown(current):
            return None
    except sessions.SessionRefused as exc:
        sessions.discard_session(current, str(exc))
        return _refuse(request, exc.status, str(exc) + " Nothing done in this session counts.")
    list(messages.get_messages(request))
    return _page(
        request, 200, "Your work is saved: the completion code comes once Prolific confirms",
        "You finished this session, but Prolific could not confirm your submission just now. Your work is kept. "
        "Please reload this page in a few minutes: the completion code is shown here as soon as Prolific "
        "confirms your submission. Do not return the study on Prolific.",
    )


def _held_elsewhere(request, current: ProlificSession, *, wrong: str = ""):
    """The study link in a browser that does not hold its session: what happened, and the way to move here."""
    list(messages.get_messages(request))
    signed_in = ""
    if request.user.is_authenticated and request.user.pk != current.worker.user_id:
        signed_in = f" Moving signs this browser out of {request.user.get_username()}."
    return render(request, "hits/prolific_held.html", {
        "title": "This study link is open in another browser",
        "message": "Your Prolific session is already open in another browser (or another device). A study link "
                   "works in one browser only: anyone could copy the link, so the link alone does not let a "
                   "second browser work as you. Continue in the other browser, or move the session here with "
                   "the move code shown on the HIT page there. Moving signs the other browser out of this "
                   "session; the HITs you finished and your current HIT are kept." + signed_in,
        "wrong": wrong, "confirm": request.get_full_path(),
    }, status=409)


def _ended(request, current: ProlificSession):
    why = _ENDED_WORDS.get(current.state, current.get_state_display().lower())
    return _page(request, 410, "This Prolific session is over",
                 f"This session has ended ({why}): no more work can be done in it. The HITs you finished are kept.")


def browser_session(request, worker: Worker | None = None, assignment_id=None):
    """The browser's Prolific session, checked: (session, None), or (None, a refusal page).

    The browser must be signed in as the session's participant and the session active; with ``assignment_id``
    the HIT must be one of that session's (a participant's HIT of another session is refused here)."""
    pk = request.session.get(SESSION_KEY)
    current = None
    if pk is not None and request.user.is_authenticated:
        current = ProlificSession.objects.select_related("study__batch", "study__task_type").filter(
            pk=pk, worker__user_id=request.user.pk
        ).first()
    if current is None or (worker is not None and current.worker_id != worker.pk):
        return None, _refuse(request, 403, "These pages belong to a Prolific session that this browser does not hold. "
                                           "Please open the study from Prolific again to continue.")
    if not holding.holds(request, current):
        # The session was moved to another browser (with its move code), or released by the researcher: this
        # browser is signed out of it.
        logout(request)
        if not current.browser:
            return None, _refuse(request, 403, "This browser no longer holds this Prolific session. Please open "
                                               "the study from Prolific again to continue.")
        return None, _page(request, 409, "Your session moved to another browser",
                           "This Prolific session is now held by another browser (moved there with its move code, "
                           "or let in there by the researcher), so this browser is signed out of it and nothing more "
                           "can be submitted here. Continue in the other browser. To work here again, open the study "
                           "link here and enter the move code shown in the other browser.")
    if current.state == ProlificSession.State.COMPLETED:
        waiting = _unconfirmed(request, current)
        if waiting is not None:
            return None, waiting
        return None, _page(request, 410, "You finished this study",
                           "You already finished this session: please go back to Prolific with your completion code.",
                           back=sessions.completion_url(current.study))
    if current.state != ProlificSession.State.ACTIVE:
        return None, _ended(request, current)
    if assignment_id is not None and not _in_session(current, assignment_id):
        return None, _refuse(request, 403, "This HIT is not part of your current Prolific session. Please open "
                                           "the study from Prolific again to continue.")
    return current, None


def _in_session(current: ProlificSession, assignment_id) -> bool:
    try:
        assignment_id = int(assignment_id)
    except (TypeError, ValueError):
        return False
    return sessions.session_assignments(current).filter(pk=assignment_id).exists()


def progress(current: ProlificSession) -> dict:
    """The HIT page's progress line: this is HIT ``n`` of ``of`` in the session."""
    of = current.study.hits_per_submission
    return {"n": min(current.hits_done + 1, of), "of": of, "move_code": current.move_code}


def is_participant(user) -> bool:
    """Whether a signed-in user is a Prolific participant (their pages are their session's)."""
    try:
        return bool(user.worker.prolific_pid)
    except (AttributeError, Worker.DoesNotExist):
        return False


__all__ = ["SESSION_KEY", "browser_session", "go_on", "is_participant", "progress", "session", "start"]
