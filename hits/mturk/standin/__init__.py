"""A local stand-in for Amazon Mechanical Turk: the requester API boto3 speaks, and the worker's side of it.

Run ``python manage.py mturk_standin --port 8765 [--state var/mturk-standin.json]
[--time-scale 3600] [--balance 50.00] [--fault OPERATION:KIND[:COUNT[:RATE]]] [--seed N]``
and set ``MTURK_ENDPOINT_URL=http://127.0.0.1:8765``: the platform's boto3 client
(sandbox and live alike) then talks to it instead of AWS, and a campaign can be
rehearsed end to end without spending money.  Tests start it in a thread
(``StandIn(port=0).start()``, ``.url``, ``.stop()``).  It answers ``POST /`` in
MTurk's JSON 1.1 protocol (``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``):
CreateHIT, CreateAdditionalAssignmentsForHIT, GetHIT, ListHITs, ListReviewableHITs,
ListAssignmentsForHIT, GetAssignment, ApproveAssignment, RejectAssignment, SendBonus,
ListBonusPayments, UpdateExpirationForHIT, DeleteHIT, GetAccountBalance, the
qualification type and score operations, worker blocks and NotifyWorkers; any other
operation is refused with an error naming it.

Errors have MTurk's shapes: ``RequestError`` (HTTP 400) for a refused call and
``ServiceFault`` (HTTP 500) for a failure, each with a ``Message`` ending in the
request id (also in the ``x-amzn-RequestId`` header), and a ``TurkErrorCode`` only
where MTurk's reference documents one: ``AWS.MechanicalTurk.HitAlreadyExists`` for a
CreateHIT token used in the last 24 hours and ``...InvalidMaximumAssignmentsIncrease``,
and ``...QualificationTypeAlreadyExists`` (sent by MTurk, not in its reference).  A repeated SendBonus or
CreateAdditionalAssignmentsForHIT token is a RequestError without a code whose message
says the token has already been processed and gives the first request's id (never the
HIT or bonus: a client must read MTurk's records to learn what the first call did).
After 24 hours (stand-in time) a token is forgotten and the call is done again.

Workers are simulated over plain JSON or form posts: ``/_standin/worker/hits`` (what
a worker may discover), ``/_standin/worker/preview``, ``/_standin/worker/accept``
(returns the assignment id and the ExternalQuestion URL with ``assignmentId``,
``hitId``, ``turkSubmitTo`` and ``workerId`` appended), ``/_standin/worker/return``
and ``/_standin/worker/qualification`` (a worker's Locale, approval rate or other
score); the HIT page posts its form to ``/mturk/externalSubmit`` as on MTurk.

The control API: ``GET /_standin/state`` (balance, available and on hold, ledger of
charges and total charged, HITs, assignments, bonuses, qualifications, blocks,
notifications, faults and requests per operation), ``POST /_standin/advance``
(``seconds``), ``/_standin/balance`` (sets the available balance), ``/_standin/reset``
and ``/_standin/dispose`` (``HITId``: the 120-day auto-deletion now), and
``GET/POST/DELETE /_standin/faults``: ``{"operation": "SendBonus" or "*", "kind":
"throttle" | "service_fault" | "lost_reply" | "fault_after", "count": 1 (null: until
cleared), "rate": 1.0}`` (``StandIn.inject`` from Python).  ``throttle`` answers HTTP
400 ``ThrottlingException`` "Rate exceeded" and ``service_fault`` HTTP 500
``ServiceFault``, both without doing the call; ``lost_reply`` does the call and closes
the connection without an answer, ``fault_after`` does it and answers a ServiceFault.
A fault hits a matching request with probability ``rate``, drawn from a generator
seeded with ``seed`` (the same run gives the same faults).

What it models: the balance (reward + fee charged on approval, bonus + fee on
SendBonus; fee 20%, 40% of the reward on HITs of 10 or more assignments, at least
$0.01 each); funds held: CreateHIT and CreateAdditionalAssignmentsForHIT hold reward +
fee for every place (``OnHoldBalance``; ``AvailableBalance`` is what is left, and a
call it cannot cover is refused), released as each place closes: approved (then
charged), rejected, returned or abandoned once the HIT has expired, unused when the
HIT expires or is deleted; automatic approval after ``AutoApprovalDelayInSeconds``,
abandonment after ``AssignmentDurationInSeconds``, HIT statuses and counts, request
tokens (24 hours), UpdateExpirationForHIT's idempotency on (HIT, ExpireAt), the
under-10 rule, DeleteHIT's refusals, the 30-day override of a rejection (only while
the HIT exists), qualification requirements (all comparators, ActionsGuarded) and
blocks; worker ids checked against ``^A[A-Z0-9]+$`` (at most 64 characters) wherever
MTurk takes one, the simulated workers' endpoints included; ASCII control characters
0-8, 11, 12 and 14-31 refused in RequesterFeedback, and (stricter than MTurk
documents) in SendBonus's Reason and NotifyWorkers' Subject and MessageText.  Its
clock runs ``time_scale`` simulated seconds per real second, can be advanced, and
never runs backwards (after a restart it resumes at the later of the saved time and
the wall clock); token expiry, automatic approval and abandonment, HIT expiry, the
30-day override window and the 120-day deletion all follow it.  What it does not
model: signatures, and credentials unless ``access_key`` is given (then a call signed with
another key gets AWS's common HTTP 403 ``UnrecognizedClientException``), MTurk's own throttling (only
injected), HIT types and layouts (CreateHITWithHITType), review policies,
qualification tests and requests, notifications by SNS/SQS, HTTPS on ExternalURL,
multipart forms on externalSubmit (url-encoded posts and GET queries only), and the
exact wording of MTurk's messages.  Faults act over HTTP only (``StandIn.call`` from
Python never fails on purpose) and are not kept in the state file.  Standard library
only; it imports nothing from Django or the platform, so it runs alone as well as in
the test process.

This package keeps ``StandIn`` (and re-exports the names below); it is built from mixins, one module per
concern: ``state`` (HITs, assignments, tokens, persistence, time), ``balance`` (the money), ``qualifications``,
``operations`` (the requester API's dispatch), ``workers``, ``faults`` (injected faults, the clock, reset,
dump); ``common`` holds the constants and helpers, ``routes`` the request handler (the wire).  What both
markets' stand-ins share (the clock, the served HTTP server, a dropped connection) is ``hits.markets.standin``.
"""

from __future__ import annotations

import os
import random
import threading
from typing import Callable

from hits.mturk.standin.common import (  # noqa: F401 - the stand-in's names, also for its users
    ABANDONED,
    ACCEPTED,
    ADULT,
    ALREADY_EXISTS,
    ANSWERS_NS,
    APPROVED,
    AUTO_DISPOSE_AFTER,
    CENT,
    COMMISSION,
    COMPARATORS,
    CONTROL,
    CONTROL_CHARS,
    DAY,
    DEFAULT_AUTO_APPROVAL_DELAY,
    DEFAULT_BALANCE,
    DEFAULT_PAGE_SIZE,
    DOCUMENTED_CODES,
    EXTERNAL_URL,
    FAULT_AFTER,
    FAULT_KINDS,
    GUARDS,
    HIT_ALREADY_EXISTS,
    HOLDS_A_PLACE,
    ID_CHARS,
    INVALID_MAX_ASSIGNMENTS_INCREASE,
    LARGE_HIT_ASSIGNMENTS,
    LARGE_HIT_COMMISSION,
    LOCALE,
    LOST_REPLY,
    MASTERS,
    MIN_FEE,
    MIN_REWARD,
    MONEY,
    NUMBER_APPROVED,
    OVERRIDE_REJECTION_WINDOW,
    PERCENT_APPROVED,
    PREVIEW_ID,
    QUESTION_ROOTS,
    REJECTED,
    REQUIRED,
    RETURNED,
    REVIEWABLE_STATUSES,
    Refused,
    SERVICE_FAULT,
    STATE_VERSION,
    SUBMITTED,
    SUBMIT_PATH,
    SYSTEM_TYPES,
    TARGET_PREFIX,
    THROTTLE,
    TOKEN_LIFETIME,
    WORKER_ID,
    WORKER_ID_MAX,
    WorkerRefused,
    answer_xml,
    bonus_fee,
    commission,
    empty_state,
    integer,
    iso,
    java_date,
    millis,
    money,
    new_id,
    reward_fee,
    text,
    timestamp,
    valid_worker_id,
)
from hits.mturk.standin.faults import ControlMixin
from hits.mturk.standin.routes import REFUSED_PAGE, SUBMITTED_PAGE, Handler  # noqa: F401
from hits.mturk.standin.balance import MoneyMixin
from hits.mturk.standin.operations import OperationsMixin
from hits.mturk.standin.qualifications import QualificationsMixin
from hits.mturk.standin.state import StateMixin
from hits.mturk.standin.workers import WorkersMixin
from hits.markets.standin import Clock, ServedStandIn

class StandIn(StateMixin, MoneyMixin, QualificationsMixin, OperationsMixin, WorkersMixin, ControlMixin, ServedStandIn):
    """MTurk's requester API and worker site, in memory (optionally kept in ``state_path``), over HTTP.

    ``port=0`` picks a free port; ``url`` is the endpoint to give boto3 (and
    the ``turkSubmitTo`` of the HIT pages).  ``start()`` serves in a daemon
    thread, ``serve_forever()`` in the calling one; ``stop()`` ends either.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        state_path: str | os.PathLike | None = None,
        time_scale: float = 1.0,
        balance=DEFAULT_BALANCE,
        log: Callable[[str], None] | None = None,
        public_url: str | None = None,
        seed: int = 0,
        access_key: str | None = None,
    ):
        self.lock, self.access_key = threading.RLock(), access_key  # access_key: the one key answered (None: any)
        # Injected faults (``inject``) and the requests each operation received; neither is kept in the state file.
        self.faults: list[dict] = []
        self.requests: dict[str, int] = {}
        self.seed = seed
        self._random = random.Random(seed)
        self.clock = Clock(time_scale)
        self.state_path = os.fspath(state_path) if state_path else None
        self.log = log
        self._changes = 0
        self.state = empty_state(money(balance, "balance"), self.clock.now())
        self.loaded = bool(self.state_path and os.path.exists(self.state_path))
        if self.loaded:
            self._load()
        self._listen(host, port, Handler)
        self.url = public_url or f"http://{host}:{self.port}"

    # -- serving

    thread_name = "mturk-standin"

    def stop(self) -> None:
        """Stop serving, close the socket, and save the state file one last time (with the clock's time)."""
        self._stop_serving()
        with self.lock:
            self.state["now"] = max(self.state["now"], self.clock.now())
            if self.state_path:
                self._save()
