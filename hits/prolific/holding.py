"""Which browser works in a Prolific session: the study link opens one browser.

A study link (``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``) is no secret: it sits in the browser's history,
in a shared screen, in a message.  So the link alone never makes a browser the participant's.  Every browser that
opens a session gets a cookie of its own (``COOKIE``: 256 random bits; the session keeps only its SHA-256,
``ProlificSession.browser``).  The first browser to open a session holds it (``claim``); every page of the
session (its HIT pages, its next step, its completion code) is served only to that browser.

Another browser with the same link gets a page saying the session is open elsewhere, and may take the session
over only with the session's move code (``move``): a short one-time code shown on the holding browser's HIT
pages, which only the participant sees.  Moving makes this browser the holder and makes a new code; the browser
that held the session is signed out of it on its next page.  After ``MAX_FAILURES`` wrong codes the code is
replaced (the holding browser shows the new one), so guessing gains nothing; the study link's rate limit caps
how fast one client tries.
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import transaction

from hits.prolific.models import ProlificSession

#: The cookie naming this browser to the platform's Prolific sessions.
COOKIE = "prolific_browser"
#: How long a browser keeps its cookie (seconds): far beyond Prolific's longest study time.
COOKIE_AGE = 30 * 24 * 3600
#: Wrong move codes tried before the code is replaced.
MAX_FAILURES = 5
#: The move code's letters: no 0/O, 1/I/L, to be copied by eye.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
#: The request attribute holding a browser id made during this request (``keep_cookie`` sets it).
_NEW = "_prolific_browser_new"


def new_move_code() -> str:
    """A fresh move code: 8 letters in two groups of four (31^8, about 8.5e11, possible codes)."""
    letters = "".join(secrets.choice(ALPHABET) for _ in range(8))
    return f"{letters[:4]}-{letters[4:]}"


def _digest(browser_id: str) -> str:
    return hashlib.sha256(browser_id.encode()).hexdigest()


def _browser(request, *, make: bool) -> str:
    """This browser's id (its cookie), or a new one when ``make`` (the response sets it: ``keep_cookie``)."""
    made = getattr(request, _NEW, "")
    if made:
        return made
    found = request.COOKIES.get(COOKIE, "")
    if len(found) >= 32 or not make:
        return found
    made = secrets.token_urlsafe(32)
    setattr(request, _NEW, made)
    return made


def keep_cookie(request, response):
    """Set the browser cookie on ``response`` when this request made one."""
    made = getattr(request, _NEW, "")
    if made:
        response.set_cookie(COOKIE, made, max_age=COOKIE_AGE, httponly=True, samesite="Lax", secure=request.is_secure())
    return response


def holds(request, session: ProlificSession) -> bool:
    """Whether this browser holds ``session`` (a session no browser holds is held by none: only the study link
    claims it, ``claim``)."""
    browser = _browser(request, make=False)
    return bool(session.browser and browser) and secrets.compare_digest(session.browser, _digest(browser))


def claim(request, session: ProlificSession) -> bool:
    """This browser holds ``session`` when it already did, or when no browser held it yet (then it does now).
    One conditional update: of two browsers opening a new session at once, one holds it."""
    browser = _browser(request, make=True)
    digest = _digest(browser)
    if not session.browser:
        code = new_move_code()
        if ProlificSession.objects.filter(pk=session.pk, browser="").update(browser=digest, move_code=code, move_failures=0):
            session.browser, session.move_code, session.move_failures = digest, code, 0
            return True
        session.refresh_from_db(fields=["browser", "move_code", "move_failures"])
    return secrets.compare_digest(session.browser, digest)


def move(request, session: ProlificSession, code: str) -> str:
    """Move ``session`` to this browser with its move ``code``: "" when moved (a new code is made, and the browser
    that held it no longer does), else why not (a wrong code; after ``MAX_FAILURES`` the code is replaced)."""
    typed = "".join(ch for ch in (code or "").upper() if ch in ALPHABET)
    with transaction.atomic():
        locked = ProlificSession.objects.select_for_update().get(pk=session.pk)
        expected = locked.move_code.replace("-", "")
        if not expected or not typed or not secrets.compare_digest(typed, expected):
            failures = locked.move_failures + 1
            if failures >= MAX_FAILURES:
                ProlificSession.objects.filter(pk=locked.pk).update(move_code=new_move_code(), move_failures=0)
                return (f"That code is not this session's. After {MAX_FAILURES} wrong codes the code was replaced: "
                        "reload the page in your other browser to see the new one.")
            ProlificSession.objects.filter(pk=locked.pk).update(move_failures=failures)
            return "That code is not this session's: copy it from the HIT page in your other browser."
        digest, fresh = _digest(_browser(request, make=True)), new_move_code()
        ProlificSession.objects.filter(pk=locked.pk).update(browser=digest, move_code=fresh, move_failures=0)
    session.browser, session.move_code, session.move_failures = digest, fresh, 0
    return ""


def release(session: ProlificSession) -> None:
    """No browser holds ``session`` any more: the next browser to open its study link holds it (the researcher's
    way for a participant who lost the browser, ``manage.py prolific_release_browser``); the browser that held
    it is signed out of it on its next page."""
    ProlificSession.objects.filter(pk=session.pk).update(browser="", move_code="", move_failures=0)
    session.browser, session.move_code, session.move_failures = "", "", 0


__all__ = ["COOKIE", "MAX_FAILURES", "claim", "holds", "keep_cookie", "move", "new_move_code", "release"]
