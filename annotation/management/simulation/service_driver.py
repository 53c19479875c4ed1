"""The simulated crowd's fast driver: the worker pages' own services, called in-process, no HTTP and no HTML.

``simulate_crowd(..., mode="fast")`` plays each simulated worker with a ``ServiceWorker`` instead of a browser
(``browser.HttpWorker``).  Each button calls what its view calls, in the same order, and nothing else:

- "start" (``hits.views.start_working`` -> ``_start``): ``expire_due``, then ``accept_next`` with the page's
  ``HIT_UNOPENED_HOLD_SECONDS`` (the hand-out: eligibility, qualification tests, gold checks, routing);
- "submit" (``hits.views._submit``): ``submit_assignment`` with the answers as a posted form (a ``QueryDict``),
  so the task handler's own ``clean`` validates them and its ``on_submitted`` reacts (quality control, the next
  stage's HITs, gold labels, the campaign's end); then ``note_instructions_seen``;
- "return" (``hits.views.assignment_page``): ``return_assignment``.

What is left out is what only a browser sees: rendering the page, the login, cookies and CSRF, the rate limit,
the messages and the work-session cookie.  So a fast rehearsal checks the protocol, the hand-out, quality
control and the money at full size; the HTML mode (``browser.py``) also checks the pages, on small campaigns.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import QueryDict

from hits.handlers import AnswerErrors
from hits.models import Assignment, TaskType
from hits.services import (
    AssignmentClosed,
    NotEligible,
    accept_next,
    expire_due,
    note_instructions_seen,
    return_assignment,
    submit_assignment,
    worker_for_user,
)


def as_posted(data: dict) -> QueryDict:
    """The answers as the HIT page's form posts them (what ``request.POST`` holds in the view)."""
    return QueryDict(urlencode({**data, "action": "submit"}, doseq=True))


class ServiceWorker:
    """One simulated person pressing the worker pages' buttons through the services behind them."""

    def __init__(self, username: str):
        self.username = username
        self.worker = worker_for_user(get_user_model().objects.get(username=username))
        self._task_types: dict[str, TaskType] = {}
        self.last_refusal = ""  # why the last submission was refused (the page's messages)

    def log_in(self) -> None:
        """Nothing to do: no session.  (``HttpWorker`` logs in through the form.)"""

    def start_task(self, slug: str) -> Assignment | None:
        """What "start" does (``hits.views._start``): the next HIT drawn for this worker, or None."""
        if slug not in self._task_types:
            self._task_types[slug] = TaskType.objects.get(slug=slug)
        expire_due()
        try:
            return accept_next(self.worker, self._task_types[slug], unopened_hold=settings.HIT_UNOPENED_HOLD_SECONDS)
        except NotEligible:
            return None

    def submit_answers(self, assignment: Assignment, data: dict) -> bool:
        """What "submit" does (``hits.views._submit``): True when the answers were stored."""
        self.last_refusal = ""
        try:
            outcome = submit_assignment(self.worker, assignment.pk, as_posted(data))
        except AnswerErrors as exc:
            self.last_refusal = str(exc)  # what the page shows next to the fields
            return False
        except (AssignmentClosed, Assignment.DoesNotExist) as exc:
            self.last_refusal = f"{type(exc).__name__}: {exc}"
            return False  # the page shows the errors (400), the refusal (409) or moves on: nothing stored
        if not outcome.duplicate:
            note_instructions_seen(self.worker, outcome.assignment.hit.task_type)
        return True

    def give_back(self, assignment: Assignment) -> None:
        """What "return" does."""
        try:
            return_assignment(self.worker, assignment.pk)
        except AssignmentClosed:
            pass  # the page says "this HIT is already ..." and goes home
