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
  after a retry or of a token sent before, or ``HitAlreadyExists``) is
  settled the same way.  Found: done.  Not found: the error stands; the next
  try asks again (and sends a new token only once the old one may be
  forgotten), so a call is never made twice on MTurk by the platform.
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
    if request.sends and request.first_sent_at and now - request.first_sent_at > TOKEN_MEMORY:
        found = went_through()
        if found is not None:
            _settle(request, "found", now)
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
        if not ambiguous(exc, sent_before):
            raise
        try:
            found = went_through()
        except MTurkError:
            raise exc from None
        if found is None:
            raise
        _settle(request, "found", now)
        return Sent(found=found)
    _settle(request, "answered", now)
    return Sent(response=response)


def _settle(request: MTurkRequest, outcome: str, now) -> None:
    MTurkRequest.objects.filter(pk=request.pk).update(outcome=outcome, settled_at=now)

