"""Calls that carry a UniqueRequestToken, never re-sent blind (issue 30).

MTurk refuses a repeated token for 24 hours, then forgets it: a CreateHIT,
SendBonus or CreateAdditionalAssignmentsForHIT sent again later with the same
token could act twice.  Its reference gives a code for a repeat only for
CreateHIT (``HitAlreadyExists``); other repeats are "an error with a message
containing the request ID", and messages are never parsed here.  So:

- every such call is recorded (``MTurkRequest``) before it is first sent;
- before a token first sent more than ``TOKEN_MEMORY`` (23 h) ago is sent
  again, MTurk's records are read (``went_through``: ListHITs by the HIT's
  RequesterAnnotation, ListBonusPayments on the assignment, GetHIT's
  MaxAssignments).  Found: the call counts as done, nothing is sent.  Not
  found: it is sent with a new token (the old one is forgotten by now);
- an ambiguous answer (a lost reply or a fault after all retries, a refusal
  after a retry or of a token sent before) is settled the same way.  Found:
  done.  Not found: the error stands; the next try asks again (and sends a
  new token only once the old one may be forgotten), so a call is never made
  twice on MTurk by the platform;
- ``HitAlreadyExists`` is not ambiguous: MTurk says the call was made.  The
  request is marked ``made`` at once and is never sent again, whatever the
  time; until its records show what it made, ``Made`` is raised (the caller
  tracks the HIT as published and the sync settles it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

from django.db.models import F
from django.utils import timezone

from hits.mturk.client import HIT_ALREADY_EXISTS, MTurk, MTurkError
from hits.mturk.models import MTurkRequest

# MTurk forgets a token after 24 hours; an hour's margin for clocks and slow calls.
TOKEN_MEMORY = timedelta(hours=23)
# TurkErrorCodes MTurk documents as "this token was used, the call went through".
DONE_BEFORE_CODES = {HIT_ALREADY_EXISTS}
# ``MTurkRequest.outcome`` values: MTurk's reply; its records show the call made; MTurk said the call was made
# (``DONE_BEFORE_CODES``) and its records have not shown what it made yet: never sent again.
ANSWERED, FOUND, MADE = "answered", "found", "made"


class Made(MTurkError):
    """MTurk said the call was made (``HitAlreadyExists``), but its records have not shown what it made yet.

    Not a refusal: what the call made exists on MTurk (a HIT, with money on hold).  The call is never sent
    again; ``went_through`` is asked again until it finds it."""

    def __init__(self, error: MTurkError, lookup: str = ""):
        super().__init__(error.operation, error.code, error.message, error.turk_code, error.attempts, error.transient)
        self.lookup = lookup
        self.args = (f"{error}; MTurk's records do not show it yet{f' ({lookup})' if lookup else ''}",)


@dataclass
class Sent:
    """How a tokened call ended: MTurk's ``response``, or (``found``) what its records show the call did."""

    response: dict | None = None
    found: object = None

    @property
    def recovered(self) -> bool:
        return self.response is None


def renewed_token(key: str, renewal: int) -> str:
    """The token of the ``renewal``-th resend of ``key`` (0: ``key`` itself), at most 64 characters."""
    if not renewal:
        return key[:64]
    suffix = f"~r{renewal}"
    return key[: 64 - len(suffix)] + suffix


def _request(operation: str, key: str) -> MTurkRequest:
    request, _ = MTurkRequest.objects.get_or_create(key=key[:64], defaults={"operation": operation, "token": key[:64]})
    return request


def ambiguous(exc: MTurkError, sent_before: bool) -> bool:
    """Whether an error leaves open that MTurk acted on the call: a lost connection or a fault after the
    retries, a refusal after a retry or of a token sent before (it may be refused as a repeat, whatever the
    message says), or a documented "used before" code."""
    return exc.transient or exc.attempts > 1 or sent_before or exc.turk_code in DONE_BEFORE_CODES


def call(
    operation: str, *, mturk: MTurk, key: str, params: dict, went_through: Callable[[], object], now=None
) -> Sent:
    """Send ``operation`` with ``params`` on ``mturk`` (its UniqueRequestToken set here), recorded under ``key``.

    ``went_through()`` reads MTurk's records and returns what shows the call was made (a HIT, a bonus...),
    or None if it was not.  Raises the call's ``MTurkError`` when it failed and the records do not show it
    done; an error while reading the records (then nothing is sent) is raised as is.
    """
    now = now or timezone.now()
    request = _request(operation, key)
    if request.outcome == MADE:
        # MTurk said the call was made: only its records are read, never a second call (not even with a new token).
        return _look_up(request, went_through, now, None)
    if request.sends and request.first_sent_at and now - request.first_sent_at > TOKEN_MEMORY:
        found = went_through()
        if found is not None:
            _settle(request, FOUND, now)
            return Sent(found=found)
        # Not made, and MTurk may have forgotten the token: a new one, so no stale token is ever re-sent.
        request.renewals += 1
        request.token = renewed_token(request.key, request.renewals)
        request.sends, request.first_sent_at = 0, None
        request.save(update_fields=["renewals", "token", "sends", "first_sent_at"])
    # Recorded before sending (committed at once unless the caller holds a transaction open).  Read back: a
    # concurrent sender of the same call (a settle task and a sync) counts too.
    MTurkRequest.objects.filter(pk=request.pk).update(sends=F("sends") + 1, first_sent_at=request.first_sent_at or now)
    sent_before = MTurkRequest.objects.values_list("sends", flat=True).get(pk=request.pk) > 1
    try:
        response = mturk.call(operation, **{**params, "UniqueRequestToken": request.token})
    except MTurkError as exc:
        if exc.turk_code in DONE_BEFORE_CODES:
            MTurkRequest.objects.filter(pk=request.pk).update(outcome=MADE)
            return _look_up(request, went_through, now, exc)
        if not ambiguous(exc, sent_before):
            raise
        try:
            found = went_through()
        except MTurkError:
            raise exc from None
        if found is None:
            raise
        _settle(request, FOUND, now)
        return Sent(found=found)
    _settle(request, ANSWERED, now)
    return Sent(response=response)


def _look_up(request: MTurkRequest, went_through: Callable[[], object], now, error: MTurkError | None) -> Sent:
    """A call MTurk said it made: what its records show it made, else ``Made`` (an error reading them included)."""
    if error is None:
        error = MTurkError(request.operation, "RequestError", "MTurk said this call was made", next(iter(DONE_BEFORE_CODES)))
    try:
        found = went_through()
    except MTurkError as lookup:
        raise Made(error, f"reading them failed: {lookup}") from None
    if found is None:
        raise Made(error) from None
    _settle(request, FOUND, now)
    return Sent(found=found)


def settle_found(key: str, now=None) -> None:
    """A call MTurk said it made (``MADE``) whose result its records now show (read by the caller)."""
    MTurkRequest.objects.filter(key=key[:64]).update(outcome=FOUND, settled_at=now or timezone.now())


def _settle(request: MTurkRequest, outcome: str, now) -> None:
    MTurkRequest.objects.filter(pk=request.pk).update(outcome=outcome, settled_at=now)

