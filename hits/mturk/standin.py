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
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import secrets
import string
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Callable
from urllib.parse import parse_qsl, urlencode
from xml.sax.saxutils import escape, unescape

from hits.standins import Clock, ServedStandIn, StandInHandler, drop_connection

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
CONTROL = "/_standin"
SUBMIT_PATH = "/mturk/externalSubmit"
STATE_VERSION = 1

CENT = Decimal("0.01")
COMMISSION = Decimal("0.20")
LARGE_HIT_COMMISSION = Decimal("0.40")
LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = CENT
MIN_REWARD = CENT
DEFAULT_BALANCE = "10000.00"

DAY = 24 * 3600
TOKEN_LIFETIME = DAY
OVERRIDE_REJECTION_WINDOW = 30 * DAY
AUTO_DISPOSE_AFTER = 120 * DAY
DEFAULT_AUTO_APPROVAL_DELAY = 30 * DAY
DEFAULT_PAGE_SIZE = 10

# MTurk's system qualification types, and the value a simulated worker has unless told otherwise.
LOCALE = "00000000000000000071"
PERCENT_APPROVED = "000000000000000000L0"
NUMBER_APPROVED = "00000000000000000040"
ADULT = "00000000000000000060"
MASTERS = ("2F1QJWKUDD8XADTFD2Q0G6UTO95ALH", "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6")  # live, sandbox
SYSTEM_TYPES = {LOCALE, PERCENT_APPROVED, NUMBER_APPROVED, ADULT, *MASTERS}

COMPARATORS = {
    "LessThan", "LessThanOrEqualTo", "GreaterThan", "GreaterThanOrEqualTo",
    "EqualTo", "NotEqualTo", "Exists", "DoesNotExist", "In", "NotIn",
}
GUARDS = {"Accept", "PreviewAndAccept", "DiscoverPreviewAndAccept"}
PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"

# Assignment statuses.  Only the last three exist in MTurk's API; the others are the worker's side.
ACCEPTED, RETURNED, ABANDONED = "Accepted", "Returned", "Abandoned"
SUBMITTED, APPROVED, REJECTED = "Submitted", "Approved", "Rejected"
REVIEWABLE_STATUSES = (SUBMITTED, APPROVED, REJECTED)
HOLDS_A_PLACE = (ACCEPTED, SUBMITTED, APPROVED, REJECTED)

# TurkErrorCode values: only those MTurk's API reference documents are ever sent.  A repeated CreateHIT
# token is ``HitAlreadyExists`` (CreateHIT's reference); a CreateHIT past 9 assignments
# ``InvalidMaximumAssignmentsIncrease`` (CreateAdditionalAssignmentsForHIT's); and, the one exception (what MTurk
# sends, though its reference does not list it), a second qualification type of the same name
# ``QualificationTypeAlreadyExists``.  Every other refusal is a RequestError with a message and no
# code (a repeated SendBonus or CreateAdditionalAssignmentsForHIT token included: the reference promises only
# "an error with a message containing the request ID").
HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
INVALID_MAX_ASSIGNMENTS_INCREASE = "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease"
ALREADY_EXISTS = "AWS.MechanicalTurk.QualificationTypeAlreadyExists"
DOCUMENTED_CODES = (HIT_ALREADY_EXISTS, INVALID_MAX_ASSIGNMENTS_INCREASE, ALREADY_EXISTS)

# Faults the control API can inject per operation (see ``StandIn.inject``).
THROTTLE, SERVICE_FAULT, LOST_REPLY, FAULT_AFTER = "throttle", "service_fault", "lost_reply", "fault_after"
FAULT_KINDS = (THROTTLE, SERVICE_FAULT, LOST_REPLY, FAULT_AFTER)

# Parameters MTurk requires per operation (the botocore service model agrees: see the tests).
REQUIRED = {
    "ApproveAssignment": ("AssignmentId",),
    "AssociateQualificationWithWorker": ("QualificationTypeId", "WorkerId"),
    "CreateAdditionalAssignmentsForHIT": ("HITId", "NumberOfAdditionalAssignments"),
    "CreateHIT": ("LifetimeInSeconds", "AssignmentDurationInSeconds", "Reward", "Title", "Description"),
    "CreateQualificationType": ("Name", "Description", "QualificationTypeStatus"),
    "CreateWorkerBlock": ("WorkerId", "Reason"),
    "DeleteHIT": ("HITId",),
    "DeleteWorkerBlock": ("WorkerId",),
    "DisassociateQualificationFromWorker": ("WorkerId", "QualificationTypeId"),
    "GetAccountBalance": (),
    "GetAssignment": ("AssignmentId",),
    "GetHIT": ("HITId",),
    "GetQualificationScore": ("QualificationTypeId", "WorkerId"),
    "GetQualificationType": ("QualificationTypeId",),
    "ListAssignmentsForHIT": ("HITId",),
    "ListBonusPayments": (),
    "ListHITs": (),
    "ListQualificationTypes": ("MustBeRequestable",),
    "ListReviewableHITs": (),
    "ListWorkerBlocks": (),
    "ListWorkersWithQualificationType": ("QualificationTypeId",),
    "NotifyWorkers": ("Subject", "MessageText", "WorkerIds"),
    "RejectAssignment": ("AssignmentId", "RequesterFeedback"),
    "SendBonus": ("WorkerId", "BonusAmount", "AssignmentId", "Reason"),
    "UpdateExpirationForHIT": ("HITId", "ExpireAt"),
}

WORKER_ID = re.compile(r"^A[A-Z0-9]+$")  # MTurk's CustomerId pattern (1 to 64 characters)
WORKER_ID_MAX = 64
# What MTurk refuses in RequesterFeedback (and the stand-in also in bonus reasons and NotifyWorkers texts):
# ASCII 0-8, 11, 12 and 14-31.  Tab, line feed and carriage return are allowed.
CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
MONEY = re.compile(r"^[0-9]+(\.[0-9]{0,2})?$")
EXTERNAL_URL = re.compile(r"<ExternalURL>\s*(.*?)\s*</ExternalURL>", re.S)
QUESTION_ROOTS = ("ExternalQuestion", "HTMLQuestion", "QuestionForm")
ANSWERS_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"


class Refused(Exception):
    """A call MTurk would refuse: ``RequestError`` (HTTP 400), with a ``TurkErrorCode`` only where MTurk documents one."""

    def __init__(self, message: str, turk_code: str | None = None, error_type: str = "RequestError", status: int = 400):
        super().__init__(message)
        self.message, self.turk_code, self.error_type, self.status = message, turk_code, error_type, status


class WorkerRefused(Exception):
    """A worker-side action the worker site would not allow (accept on a full HIT, submit twice...)."""

    def __init__(self, message: str, status: int = 409, reason: str = "refused"):
        super().__init__(message)
        self.message, self.status, self.reason = message, status, reason


# ---------------------------------------------------------------------------------------------- money


def money(value, name: str = "amount") -> Decimal:
    """A dollar amount from MTurk's string form ("0.20"), refused unless it has at most two decimals."""
    text = str(value).strip()
    if not MONEY.match(text):
        raise Refused(f"{name} {value!r} is not a valid amount in USD (e.g. 0.25)")
    try:
        return Decimal(text).quantize(CENT)
    except InvalidOperation:
        raise Refused(f"{name} {value!r} is not a valid amount in USD") from None


def commission(amount: Decimal, rate: Decimal) -> Decimal:
    return max(MIN_FEE, (Decimal(amount) * rate).quantize(CENT, rounding=ROUND_HALF_UP))


def reward_fee(reward, max_assignments: int) -> Decimal:
    """MTurk's fee on one approved assignment: 20% of the reward, 40% on HITs of 10+ assignments, at least $0.01."""
    rate = LARGE_HIT_COMMISSION if max_assignments >= LARGE_HIT_ASSIGNMENTS else COMMISSION
    return commission(Decimal(reward), rate)


def bonus_fee(amount) -> Decimal:
    """MTurk's fee on one bonus: 20%, at least $0.01."""
    return commission(Decimal(amount), COMMISSION)


# ---------------------------------------------------------------------------------------------- time


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="seconds")


def java_date(epoch: float) -> str:
    # How MTurk spells a time in its idempotency tokens, e.g. "Wed Jul 14 20:26:06 UTC 2021".
    return datetime.fromtimestamp(int(epoch), tz=timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")


def millis(epoch: float) -> int:
    return int(epoch * 1000)


def timestamp(value, name: str) -> float:
    """A request timestamp: epoch seconds (what botocore sends) or an ISO 8601 string."""
    if isinstance(value, bool):
        raise Refused(f"{name} must be a timestamp")
    if isinstance(value, (int, float)):
        return float(value)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise Refused(f"{name} {value!r} is not a timestamp") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


# ---------------------------------------------------------------------------------------------- helpers


ID_CHARS = string.ascii_uppercase + string.digits


def new_id(first: str = "3", length: int = 30) -> str:
    return first + "".join(secrets.choice(ID_CHARS) for _ in range(length - 1))


def integer(params: dict, name: str, default=None, low: int | None = None, high: int | None = None) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"{name} must be an integer")
    if (low is not None and value < low) or (high is not None and value > high):
        raise Refused(f"{name} must be between {low} and {high}, not {value}")
    return value


def text(
    params: dict, name: str, max_length: int, required: bool = False, default: str = "", plain: bool = False
) -> str:
    """A string parameter; ``plain`` ones (texts a worker reads) refuse ASCII control characters as MTurk does."""
    value = params.get(name, default)
    if not isinstance(value, str):
        raise Refused(f"{name} must be a string")
    if required and not value.strip():
        raise Refused(f"{name} must not be empty")
    if len(value) > max_length:
        raise Refused(f"{name} is longer than {max_length} characters")
    found = CONTROL_CHARS.search(value) if plain else None
    if found is not None:
        raise Refused(
            f"{name} contains the control character ASCII {ord(found.group())} at position {found.start()}: "
            "ASCII 0-8, 11, 12 and 14-31 are not allowed"
        )
    return value


def valid_worker_id(value, name: str = "WorkerId") -> str:
    """A worker id as MTurk takes it: ``^A[A-Z0-9]+$``, at most 64 characters, else a RequestError naming it."""
    if not isinstance(value, str) or not WORKER_ID.match(value) or len(value) > WORKER_ID_MAX:
        raise Refused(
            f"{name} {value!r} is invalid: a worker id matches ^A[A-Z0-9]+$ and has at most {WORKER_ID_MAX} characters"
        )
    return value


def answer_xml(fields: list[tuple[str, str]]) -> str:
    """The submitted form fields as MTurk stores them: a QuestionFormAnswers document, one Answer per field."""
    answers = "".join(
        f"<Answer><QuestionIdentifier>{escape(name)}</QuestionIdentifier><FreeText>{escape(value)}</FreeText></Answer>"
        for name, value in fields
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<QuestionFormAnswers xmlns="{ANSWERS_NS}">{answers}</QuestionFormAnswers>'


def empty_state(balance: Decimal, now: float) -> dict:
    return {
        "version": STATE_VERSION,
        "now": now,
        "initial_balance": str(balance),
        "balance": str(balance),
        "seq": 0,
        "hits": {},
        "assignments": {},
        "bonuses": [],
        "ledger": [],
        "qualification_types": {},
        "qualifications": {},  # type id -> worker id -> score
        "blocks": {},  # worker id -> reason
        "notifications": [],
        "tokens": {},  # "<operation>:<token>" -> {"at", "id", "request_id"}
        "expirations": {},  # "<HIT id><ExpireAt as MTurk spells it>" -> when it was processed
    }


# ---------------------------------------------------------------------------------------------- the stand-in


class StandIn(ServedStandIn):
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
        self._listen(host, port, _Handler)
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

    # -- state, time and persistence

    @contextmanager
    def _session(self):
        """One request: under the lock, at one instant; due automatic events first; saved if anything changed."""
        with self.lock:
            self._changes = 0
            now = self.clock.now()
            self._tick(now)
            try:
                yield now
            finally:
                if self._changes:
                    self.state["now"] = max(self.state["now"], now)
                    if self.state_path:
                        self._save()

    def _changed(self) -> None:
        self._changes += 1

    def _next_seq(self) -> int:
        self.state["seq"] += 1
        return self.state["seq"]

    def _save(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.state_path))
        os.makedirs(folder, exist_ok=True)
        temporary = f"{self.state_path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(self.state, handle)
        os.replace(temporary, self.state_path)

    def _load(self) -> None:
        with open(self.state_path, encoding="utf-8") as handle:
            state = json.load(handle)
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"{self.state_path}: not a state file of this stand-in (version {state.get('version')})")
        self.state = state
        # Time went on while the stand-in was stopped (as on MTurk), but never backwards.
        self.clock.restart(max(state["now"], time.time()))

    def _tick(self, now: float) -> None:
        """What MTurk does on its own as time passes: abandonments, automatic approvals, 120-day deletions."""
        live = [a for a in self.state["assignments"].values() if a["status"] in (ACCEPTED, SUBMITTED)]
        for assignment in live:
            if assignment["status"] == ACCEPTED and assignment["Deadline"] <= now:
                assignment["status"] = ABANDONED
                assignment["AbandonTime"] = assignment["Deadline"]
                self._changed()
        due = sorted(
            (a for a in live if a["status"] == SUBMITTED and a["AutoApprovalTime"] <= now),
            key=lambda a: (a["AutoApprovalTime"], a["seq"]),
        )
        for assignment in due:
            self._approve(assignment, assignment["AutoApprovalTime"], feedback=None, automatic=True)
        for hit in self.state["hits"].values():
            if not hit["deleted"] and hit["CreationTime"] + AUTO_DISPOSE_AFTER <= now:
                self._dispose(hit, hit["CreationTime"] + AUTO_DISPOSE_AFTER)

    def _balance(self) -> Decimal:
        return Decimal(self.state["balance"])

    def _charge(self, kind: str, amount: Decimal, fee: Decimal, at: float, assignment: dict, automatic=False) -> None:
        self.state["balance"] = str(self._balance() - amount - fee)
        self.state["ledger"].append(
            {
                "kind": kind,
                "at": at,
                "HITId": assignment["HITId"],
                "AssignmentId": assignment["AssignmentId"],
                "WorkerId": assignment["WorkerId"],
                "amount": str(amount),
                "fee": str(fee),
                "total": str(amount + fee),
                "automatic": automatic,
            }
        )
        self._changed()

    # -- HITs and assignments

    def _hit(self, hit_id) -> dict:
        hit = self.state["hits"].get(hit_id) if isinstance(hit_id, str) else None
        if hit is None or hit["deleted"]:
            raise Refused(f"Hit {hit_id} does not exist.")
        return hit

    def _assignments_of(self, hit: dict) -> list[dict]:
        return [self.state["assignments"][aid] for aid in hit["assignments"]]

    def _counts(self, hit: dict, now: float) -> dict:
        statuses = [a["status"] for a in self._assignments_of(hit)]
        pending = statuses.count(ACCEPTED)
        taken = sum(statuses.count(s) for s in HOLDS_A_PLACE)
        expired = hit["Expiration"] <= now
        available = 0 if expired else max(hit["MaxAssignments"] - taken, 0)
        if hit["deleted"]:
            status = "Disposed"
        elif expired or (available == 0 and pending == 0):
            status = "Reviewable"  # every place submitted, or the HIT expired
        elif available == 0:
            status = "Unassignable"
        else:
            status = "Assignable"
        return {
            "HITStatus": status,
            "NumberOfAssignmentsPending": pending,
            "NumberOfAssignmentsAvailable": available,
            "NumberOfAssignmentsCompleted": statuses.count(APPROVED) + statuses.count(REJECTED),
            "expired": expired,
            "submitted": statuses.count(SUBMITTED),
        }

    def _hit_view(self, hit: dict, now: float) -> dict:
        counts = self._counts(hit, now)
        view = {
            key: hit[key]
            for key in (
                "HITId", "HITTypeId", "HITGroupId", "CreationTime", "Title", "Description", "Question", "Keywords",
                "MaxAssignments", "Reward", "AutoApprovalDelayInSeconds", "Expiration", "AssignmentDurationInSeconds",
                "QualificationRequirements",
            )
        }
        if hit.get("RequesterAnnotation"):
            view["RequesterAnnotation"] = hit["RequesterAnnotation"]
        view["HITReviewStatus"] = "NotReviewed"
        view.update({k: v for k, v in counts.items() if k not in ("expired", "submitted")})
        return view

    def _assignment(self, assignment_id) -> dict:
        """An assignment as the requester sees it: submitted at least, of a HIT not deleted."""
        assignment = self.state["assignments"].get(assignment_id) if isinstance(assignment_id, str) else None
        if (
            assignment is None
            or assignment["status"] not in REVIEWABLE_STATUSES
            or self.state["hits"][assignment["HITId"]]["deleted"]
        ):
            raise Refused(f"Assignment {assignment_id} does not exist.")
        return assignment

    @staticmethod
    def _assignment_view(assignment: dict) -> dict:
        view = {
            key: assignment[key]
            for key in ("AssignmentId", "WorkerId", "HITId", "AutoApprovalTime", "AcceptTime", "SubmitTime", "Deadline", "Answer")
        }
        view["AssignmentStatus"] = assignment["status"]
        for key in ("ApprovalTime", "RejectionTime", "RequesterFeedback"):
            if assignment.get(key) is not None:
                view[key] = assignment[key]
        return view

    def _approve(self, assignment: dict, at: float, feedback: str | None, automatic: bool = False) -> None:
        hit = self.state["hits"][assignment["HITId"]]
        reward = Decimal(hit["Reward"])
        self._charge("reward", reward, reward_fee(reward, hit["MaxAssignments"]), at, assignment, automatic)
        assignment["status"] = APPROVED
        assignment["ApprovalTime"] = at
        assignment["RejectionTime"] = None
        if feedback is not None:
            assignment["RequesterFeedback"] = feedback
        self._changed()

    def _dispose(self, hit: dict, at: float) -> None:
        hit["deleted"] = True
        hit["DeletionTime"] = at
        self._changed()

    def _check_token(self, operation: str, token, now: float) -> str | None:
        """A token used by the same operation in the last 24 hours (stand-in time) refuses the call.

        The message says the token was processed and holds the first request's id, nothing more (no HIT or
        bonus id to parse).  Only CreateHIT's refusal carries a code (``HitAlreadyExists``, documented there).
        After 24 hours the token is forgotten and the call is done again, as MTurk warns."""
        if token is None:
            return None
        if not isinstance(token, str) or not 1 <= len(token) <= 64:
            raise Refused("UniqueRequestToken must be 1 to 64 characters")
        used = self.state["tokens"].get(f"{operation}:{token}")
        if used is not None and now - used["at"] < TOKEN_LIFETIME:
            raise Refused(
                f'The idempotency token "{token}" has already been processed. Request ID: {used["request_id"]} '
                f"({millis(now)})",
                HIT_ALREADY_EXISTS if operation == "CreateHIT" else None,
            )
        return token

    def _use_token(self, operation: str, token: str | None, now: float, created: str, request_id: str) -> None:
        if token is not None:
            self.state["tokens"][f"{operation}:{token}"] = {"at": now, "id": created, "request_id": request_id}

    def _held(self, hit: dict, now: float) -> Decimal:
        """What MTurk holds for the HIT: reward + fee for every place that may still be paid.

        A place is held while it is free on a HIT not expired, in progress or submitted; it is released when
        its work is approved (then charged), rejected, returned or abandoned once the HIT has expired, and
        when the HIT expires or is deleted with places unused."""
        if hit["deleted"]:
            return Decimal("0.00")
        counts = self._counts(hit, now)
        places = counts["NumberOfAssignmentsAvailable"] + counts["NumberOfAssignmentsPending"] + counts["submitted"]
        reward = Decimal(hit["Reward"])
        return (reward + reward_fee(reward, hit["MaxAssignments"])) * places

    def _on_hold(self, now: float) -> Decimal:
        return sum((self._held(hit, now) for hit in self.state["hits"].values()), Decimal("0.00"))

    def _available(self, now: float) -> Decimal:
        return self._balance() - self._on_hold(now)

    def _need_funds(self, cost: Decimal, what: str, now: float) -> None:
        available = self._available(now)
        if cost > available:
            raise Refused(f"Your account's available balance of ${available} is insufficient for {what} (${cost}).")

    # -- qualifications

    def _score(self, type_id: str, worker_id: str) -> dict | None:
        """The worker's granted value of a qualification type (system types have defaults), or None."""
        held = self.state["qualifications"].get(type_id, {}).get(worker_id)
        if held is not None:
            return held if held["Status"] == "Granted" else None
        if type_id == LOCALE:
            return {"LocaleValue": {"Country": "US"}}
        if type_id == PERCENT_APPROVED:
            return {"IntegerValue": 100}
        if type_id == ADULT:
            return {"IntegerValue": 1}
        if type_id == NUMBER_APPROVED:
            approved = sum(
                1 for a in self.state["assignments"].values() if a["WorkerId"] == worker_id and a["status"] == APPROVED
            )
            return {"IntegerValue": approved}
        return None

    @staticmethod
    def _meets(requirement: dict, held: dict | None) -> bool:
        comparator = requirement["Comparator"]
        if comparator == "Exists":
            return held is not None
        if comparator == "DoesNotExist":
            return held is None
        if held is None:
            return False
        if requirement.get("LocaleValues"):
            locale = held.get("LocaleValue")
            if locale is None:
                return False
            match = any(
                wanted.get("Country") == locale.get("Country")
                and (not wanted.get("Subdivision") or wanted.get("Subdivision") == locale.get("Subdivision"))
                for wanted in requirement["LocaleValues"]
            )
            return match if comparator in ("EqualTo", "In") else not match if comparator in ("NotEqualTo", "NotIn") else False
        value, values = held.get("IntegerValue"), requirement.get("IntegerValues") or []
        if value is None or not values:
            return False
        if comparator == "In":
            return value in values
        if comparator == "NotIn":
            return value not in values
        target = values[0]
        return {
            "LessThan": value < target,
            "LessThanOrEqualTo": value <= target,
            "GreaterThan": value > target,
            "GreaterThanOrEqualTo": value >= target,
            "EqualTo": value == target,
            "NotEqualTo": value != target,
        }[comparator]

    def _unmet(self, hit: dict, worker_id: str, action: str) -> dict | None:
        """The first requirement of the HIT the worker does not meet and that guards ``action``, if any."""
        for requirement in hit["QualificationRequirements"]:
            guarded = requirement.get("ActionsGuarded") or ("PreviewAndAccept" if requirement.get("RequiredToPreview") else "Accept")
            if action == "preview" and guarded == "Accept":
                continue
            if action == "discover" and guarded != "DiscoverPreviewAndAccept":
                continue
            if not self._meets(requirement, self._score(requirement["QualificationTypeId"], worker_id)):
                return requirement
        return None

    def _requirements(self, requirements) -> list[dict]:
        if requirements is None:
            return []
        if not isinstance(requirements, list) or len(requirements) > 10:
            raise Refused("QualificationRequirements must be a list of at most 10 requirements")
        checked = []
        for requirement in requirements:
            type_id, comparator = requirement.get("QualificationTypeId"), requirement.get("Comparator")
            if type_id not in SYSTEM_TYPES and type_id not in self.state["qualification_types"]:
                raise Refused(f"QualificationType {type_id} does not exist.")
            if comparator not in COMPARATORS:
                raise Refused(f"Comparator {comparator!r} is not one of {sorted(COMPARATORS)}")
            values = (requirement.get("IntegerValues") or []) + (requirement.get("LocaleValues") or [])
            if comparator in ("Exists", "DoesNotExist") and values:
                raise Refused(f"A requirement with Comparator {comparator} takes no IntegerValues or LocaleValues")
            if comparator not in ("Exists", "DoesNotExist") and not values:
                raise Refused(f"A requirement with Comparator {comparator} needs IntegerValues or LocaleValues")
            if comparator not in ("In", "NotIn", "Exists", "DoesNotExist") and len(values) != 1:
                raise Refused(f"A requirement with Comparator {comparator} takes exactly one value")
            if requirement.get("ActionsGuarded") is not None and requirement["ActionsGuarded"] not in GUARDS:
                raise Refused(f"ActionsGuarded must be one of {sorted(GUARDS)}")
            checked.append(dict(requirement))
        return checked

    # -- the requester API

    def call(self, operation: str, params: dict, request_id: str | None = None) -> dict:
        """Run one requester operation (MTurk's name and parameters); raises ``Refused`` as MTurk would."""
        handler = getattr(self, f"_op_{operation}", None)
        if handler is None or operation not in REQUIRED:
            raise Refused(
                f"Operation {operation} is not supported by the MTurk stand-in.", error_type="UnknownOperationException"
            )
        if not isinstance(params, dict):
            raise Refused("The request body must be a JSON object", error_type="SerializationException")
        missing = [name for name in REQUIRED[operation] if params.get(name) is None]
        if missing:
            raise Refused(f"{operation}: missing required parameter(s) {', '.join(missing)}")
        with self._session() as now:
            return handler(params, now, request_id or str(uuid.uuid4()))

    def _op_GetAccountBalance(self, params, now, request_id):
        return {"AvailableBalance": str(self._available(now)), "OnHoldBalance": str(self._on_hold(now))}

    def _op_CreateHIT(self, params, now, request_id):
        token = self._check_token("CreateHIT", params.get("UniqueRequestToken"), now)
        if params.get("HITLayoutId") or params.get("HITLayoutParameters"):
            raise Refused("HIT layouts are not supported by the MTurk stand-in: give a Question")
        question = text(params, "Question", 131072, required=True)
        if not any(f"<{root}" in question for root in QUESTION_ROOTS):
            raise Refused("Question must be an ExternalQuestion, HTMLQuestion or QuestionForm document")
        reward = money(params["Reward"], "Reward")
        if reward < MIN_REWARD:
            raise Refused(f"Reward must be at least ${MIN_REWARD}")
        max_assignments = integer(params, "MaxAssignments", 1, 1, 1_000_000_000)
        lifetime = integer(params, "LifetimeInSeconds", None, 30, 31_536_000)
        duration = integer(params, "AssignmentDurationInSeconds", None, 30, 31_536_000)
        delay = integer(params, "AutoApprovalDelayInSeconds", DEFAULT_AUTO_APPROVAL_DELAY, 0, 30 * DAY)
        requirements = self._requirements(params.get("QualificationRequirements"))
        hit = {
            "Title": text(params, "Title", 128, required=True),
            "Description": text(params, "Description", 2000, required=True),
            "Keywords": text(params, "Keywords", 1000),
            "RequesterAnnotation": text(params, "RequesterAnnotation", 255),
            "Question": question,
            "Reward": str(reward),
            "MaxAssignments": max_assignments,
            "AssignmentDurationInSeconds": duration,
            "AutoApprovalDelayInSeconds": delay,
            "QualificationRequirements": requirements,
        }
        cost = (reward + reward_fee(reward, max_assignments)) * max_assignments
        self._need_funds(cost, f"a HIT of {max_assignments} assignment(s) at ${reward}", now)
        kind = json.dumps([hit[k] for k in ("Title", "Description", "Keywords", "Reward", "AssignmentDurationInSeconds",
                                            "AutoApprovalDelayInSeconds", "QualificationRequirements")], sort_keys=True)
        type_id = base64.b32encode(hashlib.sha256(kind.encode()).digest()).decode()[:30]
        hit_id = new_id()
        found = EXTERNAL_URL.search(question)
        hit.update(
            HITId=hit_id,
            HITTypeId=type_id,
            HITGroupId=type_id[::-1],
            CreationTime=now,
            Expiration=now + lifetime,
            seq=self._next_seq(),
            deleted=False,
            assignments=[],
            created_by=request_id,
            external_url=unescape(found.group(1)) if found else None,
        )
        self.state["hits"][hit_id] = hit
        self._use_token("CreateHIT", token, now, hit_id, request_id)
        self._changed()
        return {"HIT": self._hit_view(hit, now)}

    def _op_CreateAdditionalAssignmentsForHIT(self, params, now, request_id):
        hit = self._hit(params["HITId"])
        extra = integer(params, "NumberOfAdditionalAssignments", None, 1, 1_000_000_000)
        token = self._check_token("CreateAdditionalAssignmentsForHIT", params.get("UniqueRequestToken"), now)
        total = hit["MaxAssignments"] + extra
        if hit["MaxAssignments"] < LARGE_HIT_ASSIGNMENTS <= total:
            raise Refused(
                f"HIT {hit['HITId']} was created with fewer than {LARGE_HIT_ASSIGNMENTS} assignments and cannot be "
                f"extended to {total} (10 or more). ({millis(now)})",
                INVALID_MAX_ASSIGNMENTS_INCREASE,
            )
        reward = Decimal(hit["Reward"])
        self._need_funds((reward + reward_fee(reward, total)) * extra, f"{extra} more assignment(s) at ${reward}", now)
        # The expiration is left as it is: an expired HIT takes workers again only after UpdateExpirationForHIT.
        hit["MaxAssignments"] = total
        self._use_token("CreateAdditionalAssignmentsForHIT", token, now, hit["HITId"], request_id)
        self._changed()
        return {}

    def _op_GetHIT(self, params, now, request_id):
        return {"HIT": self._hit_view(self._hit(params["HITId"]), now)}

    def _page(self, items: list, key: Callable, params: dict, name: str, view: Callable) -> dict:
        size = integer(params, "MaxResults", DEFAULT_PAGE_SIZE, 1, 100)
        items = sorted(items, key=key)
        token = params.get("NextToken")
        if token is not None:
            try:
                after = tuple(json.loads(base64.urlsafe_b64decode(token.encode())))
            except (ValueError, TypeError, AttributeError):
                raise Refused(f"NextToken {token!r} is not valid") from None
            items = [item for item in items if key(item) > after]
        page = items[:size]
        result = {"NumResults": len(page), name: [view(item) for item in page]}
        if len(items) > size:
            result["NextToken"] = base64.urlsafe_b64encode(json.dumps(list(key(page[-1]))).encode()).decode()
        return result

    def _op_ListHITs(self, params, now, request_id):
        hits = [h for h in self.state["hits"].values() if not h["deleted"]]
        return self._page(hits, lambda h: (h["seq"],), params, "HITs", lambda h: self._hit_view(h, now))

    def _op_ListReviewableHITs(self, params, now, request_id):
        wanted = params.get("Status", "Reviewable")
        if wanted not in ("Reviewable", "Reviewing"):
            raise Refused("Status must be Reviewable or Reviewing")
        hits = [
            h for h in self.state["hits"].values()
            if not h["deleted"] and self._counts(h, now)["HITStatus"] == wanted
            and params.get("HITTypeId") in (None, h["HITTypeId"])
        ]
        return self._page(hits, lambda h: (h["seq"],), params, "HITs", lambda h: self._hit_view(h, now))

    def _op_ListAssignmentsForHIT(self, params, now, request_id):
        hit = self._hit(params["HITId"])
        statuses = params.get("AssignmentStatuses") or list(REVIEWABLE_STATUSES)
        if any(s not in REVIEWABLE_STATUSES for s in statuses):
            raise Refused(f"AssignmentStatuses must be among {list(REVIEWABLE_STATUSES)}")
        listed = [a for a in self._assignments_of(hit) if a["status"] in statuses]
        return self._page(
            listed, lambda a: (a["SubmitTime"], a["seq"]), params, "Assignments", self._assignment_view
        )

    def _op_GetAssignment(self, params, now, request_id):
        assignment = self._assignment(params["AssignmentId"])
        hit = self.state["hits"][assignment["HITId"]]
        return {"Assignment": self._assignment_view(assignment), "HIT": self._hit_view(hit, now)}

    def _op_ApproveAssignment(self, params, now, request_id):
        assignment = self._assignment(params["AssignmentId"])
        feedback = text(params, "RequesterFeedback", 1024, plain=True) if params.get("RequesterFeedback") is not None else None
        status, aid = assignment["status"], assignment["AssignmentId"]
        if status == APPROVED:
            raise Refused(f"Assignment {aid} is already Approved. ({millis(now)})")
        if status == REJECTED:
            if not params.get("OverrideRejection"):
                raise Refused(
                    f"Assignment {aid} was Rejected; approving it needs OverrideRejection. ({millis(now)})")
            if now - assignment["SubmitTime"] > OVERRIDE_REJECTION_WINDOW:
                raise Refused(
                    f"Assignment {aid} was submitted more than 30 days ago: its rejection can no longer be overridden. "
                    f"({millis(now)})")
        hit = self.state["hits"][assignment["HITId"]]
        reward = Decimal(hit["Reward"])
        if status == REJECTED:  # a Submitted assignment's money is on hold already; an overridden rejection's is not
            self._need_funds(reward + reward_fee(reward, hit["MaxAssignments"]), f"approving assignment {aid}", now)
        self._approve(assignment, now, feedback)
        return {}

    def _op_RejectAssignment(self, params, now, request_id):
        assignment = self._assignment(params["AssignmentId"])
        feedback = text(params, "RequesterFeedback", 1024, required=True, plain=True)
        if assignment["status"] != SUBMITTED:
            raise Refused(
                f"Assignment {assignment['AssignmentId']} is {assignment['status']}: only a Submitted assignment can be "
                f"rejected. ({millis(now)})")
        assignment.update(status=REJECTED, RejectionTime=now, RequesterFeedback=feedback)
        self._changed()
        return {}

    def _op_SendBonus(self, params, now, request_id):
        valid_worker_id(params["WorkerId"])
        assignment = self._assignment(params["AssignmentId"])
        if params["WorkerId"] != assignment["WorkerId"]:
            raise Refused(
                f"Worker {params['WorkerId']} did not work on assignment {assignment['AssignmentId']}.")
        amount = money(params["BonusAmount"], "BonusAmount")
        if amount < CENT:
            raise Refused("BonusAmount must be at least $0.01")
        reason = text(params, "Reason", 4096, required=True, plain=True)
        token = self._check_token("SendBonus", params.get("UniqueRequestToken"), now)
        fee = bonus_fee(amount)
        self._need_funds(amount + fee, f"a bonus of ${amount}", now)
        bonus_id = new_id("B")
        self.state["bonuses"].append(
            {
                "BonusId": bonus_id,
                "WorkerId": assignment["WorkerId"],
                "BonusAmount": str(amount),
                "AssignmentId": assignment["AssignmentId"],
                "HITId": assignment["HITId"],
                "Reason": reason,
                "GrantTime": now,
                "UniqueRequestToken": token,
            }
        )
        self._charge("bonus", amount, fee, now, assignment)
        self._use_token("SendBonus", token, now, f"bonus {bonus_id}", request_id)
        return {}

    def _op_ListBonusPayments(self, params, now, request_id):
        hit_id, assignment_id = params.get("HITId"), params.get("AssignmentId")
        if (hit_id is None) == (assignment_id is None):
            raise Refused("ListBonusPayments needs either HITId or AssignmentId")
        if hit_id is not None:
            self._hit(hit_id)
        bonuses = [
            b for b in self.state["bonuses"]
            if (hit_id is None or b["HITId"] == hit_id) and (assignment_id is None or b["AssignmentId"] == assignment_id)
        ]
        fields = ("WorkerId", "BonusAmount", "AssignmentId", "Reason", "GrantTime")
        return self._page(
            bonuses, lambda b: (b["GrantTime"], b["BonusId"]), params, "BonusPayments", lambda b: {k: b[k] for k in fields}
        )

    def _op_UpdateExpirationForHIT(self, params, now, request_id):
        hit = self._hit(params["HITId"])
        expire_at = timestamp(params["ExpireAt"], "ExpireAt")
        key = f"{hit['HITId']}{java_date(expire_at)}"
        processed = self.state["expirations"].get(key)
        if processed is not None and now - processed < TOKEN_LIFETIME:
            raise Refused(f'The idempotency token "{key}" has already been processed. ({millis(now)})')
        # In the past: the HIT expires now (no new workers).  In the future: it runs until then, reopened if expired;
        # its unused places are held again, so reopening needs the funds for them.
        before, was = self._held(hit, now), hit["Expiration"]
        hit["Expiration"] = expire_at if expire_at > now else now
        more = self._held(hit, now) - before
        if more > 0 and self._available(now) < 0:
            hit["Expiration"] = was
            raise Refused(
                f"Your account's available balance of ${self._available(now)} is insufficient for reopening HIT "
                f"{hit['HITId']} (${more})."
            )
        self.state["expirations"][key] = now
        self._changed()
        return {}

    def _op_DeleteHIT(self, params, now, request_id):
        hit = self._hit(params["HITId"])
        counts = self._counts(hit, now)
        if counts["HITStatus"] != "Reviewable":
            raise Refused(
                f"This HIT is currently in the state '{counts['HITStatus']}'. This operation can be called with a status "
                f"of: Reviewable ({millis(now)})")
        if counts["NumberOfAssignmentsPending"] or counts["submitted"]:
            raise Refused(
                f"HIT {hit['HITId']} still has {counts['NumberOfAssignmentsPending']} assignment(s) in progress and "
                f"{counts['submitted']} submitted assignment(s) not approved or rejected. ({millis(now)})")
        self._dispose(hit, now)
        return {}

    # qualification types, scores and blocks

    def _qualification_type(self, type_id) -> dict:
        found = self.state["qualification_types"].get(type_id) if isinstance(type_id, str) else None
        if found is None:
            raise Refused(f"QualificationType {type_id} does not exist.")
        return found

    @staticmethod
    def _worker_id(params: dict) -> str:
        return valid_worker_id(params.get("WorkerId"))

    def _op_CreateQualificationType(self, params, now, request_id):
        name = text(params, "Name", 200, required=True)
        if any(t["Name"] == name for t in self.state["qualification_types"].values()):
            raise Refused(
                "You have already created a QualificationType with this name. A QualificationType's name must be unique "
                f"among all of the QualificationTypes created by the same user. ({millis(now)})",
                ALREADY_EXISTS,
            )
        status = params["QualificationTypeStatus"]
        if status not in ("Active", "Inactive"):
            raise Refused("QualificationTypeStatus must be Active or Inactive")
        type_id = new_id()
        created = {
            "QualificationTypeId": type_id,
            "CreationTime": now,
            "Name": name,
            "Description": text(params, "Description", 2000, required=True),
            "Keywords": text(params, "Keywords", 1000),
            "QualificationTypeStatus": status,
            "IsRequestable": True,
            "AutoGranted": bool(params.get("AutoGranted", False)),
        }
        for optional in ("RetryDelayInSeconds", "Test", "AnswerKey", "TestDurationInSeconds", "AutoGrantedValue"):
            if params.get(optional) is not None:
                created[optional] = params[optional]
        self.state["qualification_types"][type_id] = created
        self._changed()
        return {"QualificationType": created}

    def _op_GetQualificationType(self, params, now, request_id):
        return {"QualificationType": self._qualification_type(params["QualificationTypeId"])}

    def _op_ListQualificationTypes(self, params, now, request_id):
        query = (params.get("Query") or "").lower()
        types = [
            t for t in self.state["qualification_types"].values()
            if query in f"{t['Name']} {t['Description']} {t['Keywords']}".lower()
            and (not params["MustBeRequestable"] or t["IsRequestable"])
        ]
        return self._page(types, lambda t: (t["CreationTime"], t["QualificationTypeId"]), params, "QualificationTypes", dict)

    def _op_AssociateQualificationWithWorker(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        worker_id = self._worker_id(params)
        value = integer(params, "IntegerValue", 1)
        self.state["qualifications"].setdefault(type_id, {})[worker_id] = {
            "QualificationTypeId": type_id,
            "WorkerId": worker_id,
            "GrantTime": now,
            "IntegerValue": value,
            "Status": "Granted",
            "SendNotification": bool(params.get("SendNotification", False)),
        }
        self._changed()
        return {}

    def _op_DisassociateQualificationFromWorker(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        worker_id = self._worker_id(params)
        held = self.state["qualifications"].get(type_id, {}).get(worker_id)
        if held is not None:
            held.update(Status="Revoked", RevokeTime=now, Reason=params.get("Reason", ""))
            self._changed()
        return {}

    def _op_GetQualificationScore(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        held = self.state["qualifications"].get(type_id, {}).get(self._worker_id(params))
        if held is None:
            raise Refused(
                f"You requested a Qualification that does not exist: worker {params['WorkerId']}, type {type_id}.")
        return {"Qualification": self._qualification_view(held)}

    @staticmethod
    def _qualification_view(held: dict) -> dict:
        return {k: held[k] for k in ("QualificationTypeId", "WorkerId", "GrantTime", "IntegerValue", "Status") if k in held}

    def _op_ListWorkersWithQualificationType(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        wanted = params.get("Status")
        held = [q for q in self.state["qualifications"].get(type_id, {}).values() if wanted in (None, q["Status"])]
        return self._page(held, lambda q: (q["WorkerId"],), params, "Qualifications", self._qualification_view)

    def _op_CreateWorkerBlock(self, params, now, request_id):
        worker_id = self._worker_id(params)
        self.state["blocks"][worker_id] = text(params, "Reason", 1024, required=True)
        self._changed()
        return {}

    def _op_DeleteWorkerBlock(self, params, now, request_id):
        worker_id = self._worker_id(params)
        if self.state["blocks"].pop(worker_id, None) is not None:
            self._changed()
        return {}

    def _op_ListWorkerBlocks(self, params, now, request_id):
        blocks = [{"WorkerId": w, "Reason": r} for w, r in self.state["blocks"].items()]
        return self._page(blocks, lambda b: (b["WorkerId"],), params, "WorkerBlocks", dict)

    def _op_NotifyWorkers(self, params, now, request_id):
        subject = text(params, "Subject", 200, required=True, plain=True)
        message = text(params, "MessageText", 4096, required=True, plain=True)
        worker_ids = params["WorkerIds"]
        if not isinstance(worker_ids, list) or not 1 <= len(worker_ids) <= 100:
            raise Refused("WorkerIds must list 1 to 100 worker ids")
        for position, value in enumerate(worker_ids):  # a malformed id refuses the whole call (the API's pattern)
            valid_worker_id(value, f"WorkerIds[{position}]")
        reviewed = {a["WorkerId"] for a in self.state["assignments"].values() if a["status"] in (APPROVED, REJECTED)}
        failures, delivered = [], []
        for worker_id in worker_ids:
            if worker_id in self.state["blocks"]:
                reason = "You have blocked this Worker; they cannot be notified."
            elif worker_id not in reviewed:
                reason = "You can only notify Workers whose work you have approved or rejected."
            else:
                delivered.append(worker_id)
                continue
            failures.append(
                {"NotifyWorkersFailureCode": "HardFailure", "NotifyWorkersFailureMessage": reason, "WorkerId": worker_id}
            )
        self.state["notifications"].append(
            {"at": now, "Subject": subject, "MessageText": message, "delivered": delivered, "failed": failures}
        )
        self._changed()
        return {"NotifyWorkersFailureStatuses": failures}

    # -- the worker's side

    def _question_url(self, hit: dict, params: dict) -> str | None:
        if not hit["external_url"]:
            return None
        separator = "&" if "?" in hit["external_url"] else "?"
        return hit["external_url"] + separator + urlencode(params)

    @staticmethod
    def _simulated_worker(value) -> str:
        try:
            return valid_worker_id(value)
        except Refused as exc:
            raise WorkerRefused(exc.message, 400, "invalid") from None

    def _worker_hit(self, hit_id, worker_id) -> dict:
        self._simulated_worker(worker_id)
        hit = self.state["hits"].get(hit_id) if isinstance(hit_id, str) else None
        if hit is None or hit["deleted"]:
            raise WorkerRefused(f"HIT {hit_id} does not exist", 404, "unknown")
        if worker_id in self.state["blocks"]:
            raise WorkerRefused(f"worker {worker_id} is blocked by this requester", 403, "blocked")
        return hit

    def discoverable(self, worker_id: str) -> list[dict]:
        """The HITs a worker finds on the worker site: assignable, and no hiding requirement unmet."""
        with self._session() as now:
            self._simulated_worker(worker_id)
            if worker_id in self.state["blocks"]:
                return []
            return [
                self._hit_view(hit, now)
                for hit in sorted(self.state["hits"].values(), key=lambda h: h["seq"])
                if not hit["deleted"]
                and self._counts(hit, now)["HITStatus"] == "Assignable"
                and self._unmet(hit, worker_id, "discover") is None
            ]

    def preview(self, hit_id: str, worker_id: str) -> dict:
        """The HIT's page as a previewing worker sees it (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE``)."""
        with self._session() as now:
            hit = self._worker_hit(hit_id, worker_id)
            unmet = self._unmet(hit, worker_id, "preview")
            if unmet is not None:
                raise WorkerRefused(
                    f"worker {worker_id} does not meet the requirement on {unmet['QualificationTypeId']} "
                    f"({unmet['Comparator']}) needed to preview this HIT", 403, "qualification",
                )
            return {
                "HITId": hit["HITId"],
                "HITStatus": self._counts(hit, now)["HITStatus"],
                "URL": self._question_url(hit, {"assignmentId": PREVIEW_ID, "hitId": hit["HITId"]}),
                "Question": hit["Question"],
            }

    def accept(self, hit_id: str, worker_id: str) -> dict:
        """A worker accepts the HIT: a new Accepted assignment and the HIT page's URL, or ``WorkerRefused``."""
        with self._session() as now:
            hit = self._worker_hit(hit_id, worker_id)
            unmet = self._unmet(hit, worker_id, "accept")
            if unmet is not None:
                raise WorkerRefused(
                    f"worker {worker_id} does not meet the requirement on {unmet['QualificationTypeId']} "
                    f"({unmet['Comparator']}) of HIT {hit['HITId']}", 403, "qualification",
                )
            counts = self._counts(hit, now)
            if counts["expired"]:
                raise WorkerRefused(f"HIT {hit['HITId']} has expired", 409, "expired")
            if any(a["WorkerId"] == worker_id and a["status"] in HOLDS_A_PLACE for a in self._assignments_of(hit)):
                raise WorkerRefused(f"worker {worker_id} already worked on HIT {hit['HITId']}", 409, "already")
            if counts["NumberOfAssignmentsAvailable"] == 0:
                raise WorkerRefused(f"HIT {hit['HITId']} has no place left", 409, "full")
            assignment_id = new_id()
            assignment = {
                "AssignmentId": assignment_id,
                "HITId": hit["HITId"],
                "WorkerId": worker_id,
                "status": ACCEPTED,
                "AcceptTime": now,
                "Deadline": now + hit["AssignmentDurationInSeconds"],
                "SubmitTime": None,
                "AutoApprovalTime": None,
                "ApprovalTime": None,
                "RejectionTime": None,
                "Answer": None,
                "answers": None,
                "RequesterFeedback": None,
                "seq": self._next_seq(),
            }
            self.state["assignments"][assignment_id] = assignment
            hit["assignments"].append(assignment_id)
            self._changed()
            url = self._question_url(
                hit, {"assignmentId": assignment_id, "hitId": hit["HITId"], "turkSubmitTo": self.url, "workerId": worker_id}
            )
            return {
                "AssignmentId": assignment_id,
                "HITId": hit["HITId"],
                "WorkerId": worker_id,
                "Deadline": assignment["Deadline"],
                "URL": url,
            }

    def _open_assignment(self, assignment_id) -> dict:
        assignment = self.state["assignments"].get(assignment_id) if isinstance(assignment_id, str) else None
        if assignment is None or self.state["hits"][assignment["HITId"]]["deleted"]:
            raise WorkerRefused(f"assignment {assignment_id} does not exist", 400, "unknown")
        if assignment["status"] != ACCEPTED:
            raise WorkerRefused(
                f"assignment {assignment_id} is {assignment['status']}, not in progress", 400, assignment["status"].lower()
            )
        return assignment

    def return_assignment(self, assignment_id: str) -> dict:
        """The worker gives the assignment back: Returned, and its place is free again."""
        with self._session() as now:
            assignment = self._open_assignment(assignment_id)
            assignment.update(status=RETURNED, ReturnTime=now)
            self._changed()
            return {"AssignmentId": assignment_id, "status": RETURNED}

    def submit(self, assignment_id: str, fields: list[tuple[str, str]]) -> dict:
        """What ``/mturk/externalSubmit`` records: the assignment Submitted with its fields as QuestionFormAnswers."""
        with self._session() as now:
            assignment = self._open_assignment(assignment_id)
            hit = self.state["hits"][assignment["HITId"]]
            fields = [(name, value) for name, value in fields if name != "assignmentId"]
            assignment.update(
                status=SUBMITTED,
                SubmitTime=now,
                AutoApprovalTime=now + hit["AutoApprovalDelayInSeconds"],
                Answer=answer_xml(fields),
                answers=fields,
            )
            self._changed()
            if assignment["AutoApprovalTime"] <= now:
                self._approve(assignment, now, feedback=None, automatic=True)
            return {"AssignmentId": assignment_id, "HITId": hit["HITId"], "status": assignment["status"]}

    def set_worker_score(self, worker_id: str, type_id: str, integer_value=None, locale=None) -> dict:
        """Give a simulated worker a qualification value (a system one such as Locale, or a type of this account)."""
        with self._session() as now:
            self._simulated_worker(worker_id)
            if type_id not in SYSTEM_TYPES and type_id not in self.state["qualification_types"]:
                raise WorkerRefused(f"qualification type {type_id} does not exist", 404, "unknown")
            score = {"QualificationTypeId": type_id, "WorkerId": worker_id, "GrantTime": now, "Status": "Granted"}
            if locale is not None:
                score["LocaleValue"] = locale if isinstance(locale, dict) else {"Country": str(locale)}
            else:
                score["IntegerValue"] = int(integer_value if integer_value is not None else 1)
            self.state["qualifications"].setdefault(type_id, {})[worker_id] = score
            self._changed()
            return score

    # -- faults

    def inject(self, operation: str, kind: str, count: int | None = 1, rate: float = 1.0) -> dict:
        """Make ``operation`` (MTurk's name, or ``"*"`` for every one) fail ``count`` times (None: until cleared).

        ``kind``: ``throttle`` (HTTP 400 ThrottlingException "Rate exceeded", not done), ``service_fault`` (HTTP
        500 ServiceFault, not done), ``lost_reply`` (done, then the connection is closed with no reply) or
        ``fault_after`` (done, then HTTP 500 ServiceFault).  Each matching request fails with probability
        ``rate`` (drawn from a generator seeded with the stand-in's ``seed``: the same run gives the same
        faults); only the requests that fail use up ``count``.  Faults act over HTTP only."""
        if operation != "*" and operation not in REQUIRED:
            raise ValueError(f"operation {operation!r} is not one the stand-in serves (or '*' for all)")
        if kind not in FAULT_KINDS:
            raise ValueError(f"kind {kind!r} is not one of {', '.join(FAULT_KINDS)}")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
            raise ValueError(f"count must be a positive integer or null (until cleared), not {count!r}")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
            raise ValueError(f"rate must be a number in (0, 1], not {rate!r}")
        with self.lock:
            fault = {"operation": operation, "kind": kind, "count": count, "rate": float(rate), "fired": 0}
            self.faults.append(fault)
            return dict(fault)

    def clear_faults(self, operation: str | None = None, reseed: bool = True) -> int:
        """Remove the injected faults (of one operation if given); returns how many were removed."""
        with self.lock:
            kept = [f for f in self.faults if operation is not None and f["operation"] != operation]
            removed = len(self.faults) - len(kept)
            self.faults = kept
            if reseed and operation is None:
                self._random = random.Random(self.seed)
            return removed

    def fault_list(self) -> list[dict]:
        with self.lock:
            return [dict(f) for f in self.faults]

    def _fault_for(self, operation: str) -> str | None:
        """Count the request and draw whether an injected fault hits it; returns the fault's kind or None."""
        with self.lock:
            self.requests[operation] = self.requests.get(operation, 0) + 1
            for fault in self.faults:
                if fault["operation"] not in ("*", operation):
                    continue
                if fault["rate"] < 1 and self._random.random() >= fault["rate"]:
                    continue
                fault["fired"] += 1
                if fault["count"] is not None:
                    fault["count"] -= 1
                    if fault["count"] == 0:
                        self.faults.remove(fault)
                return fault["kind"]
            return None

    # -- control

    def advance(self, seconds: float) -> float:
        """Move stand-in time forward (automatic approvals and abandonments that fall due happen); returns the time."""
        if seconds < 0:
            raise ValueError("the stand-in's clock only moves forward")
        with self.lock:
            self.clock.advance(seconds)
            with self._session() as now:
                self._changed()
                return now

    def now(self) -> float:
        with self.lock:
            return self.clock.now()

    def set_balance(self, balance) -> str:
        """Set the available balance (what the requester may still spend); funds on hold stay held."""
        with self._session() as now:
            self.state["balance"] = str(money(balance, "balance") + self._on_hold(now))
            self._changed()
            return str(self._available(now))

    def reset(self, balance=None) -> None:
        """Forget everything: no HITs, no ledger, the starting (or given) balance, the clock at wall time."""
        with self.lock:
            start = money(balance if balance is not None else self.state["initial_balance"], "balance")
            self.clock.restart(time.time())
            self.state = empty_state(start, self.clock.now())
            self.state["initial_balance"] = str(start)
            self.faults, self.requests, self._random = [], {}, random.Random(self.seed)
            if self.state_path:
                self._save()

    def dispose(self, hit_id: str) -> None:
        """MTurk's automatic deletion of a HIT (120 days on), now: due approvals are made, then the HIT is gone."""
        with self._session() as now:
            hit = self.state["hits"].get(hit_id)
            if hit is None or hit["deleted"]:
                raise WorkerRefused(f"HIT {hit_id} does not exist", 404, "unknown")
            for assignment in self._assignments_of(hit):
                if assignment["status"] == SUBMITTED:
                    self._approve(assignment, now, feedback=None, automatic=True)
                elif assignment["status"] == ACCEPTED:
                    assignment.update(status=ABANDONED, AbandonTime=now)
            self._dispose(hit, now)

    def dump(self) -> dict:
        """Everything the stand-in knows, for people and tests: balance, ledger, HITs, assignments, the rest."""
        with self._session() as now:
            state = self.state
            charged = sum((Decimal(entry["total"]) for entry in state["ledger"]), Decimal("0.00"))
            hits = []
            for hit in sorted(state["hits"].values(), key=lambda h: h["seq"]):
                view = self._hit_view(hit, now)
                view.update(Deleted=hit["deleted"], ExternalURL=hit["external_url"], Assignments=list(hit["assignments"]))
                hits.append(view)
            assignments = []
            for assignment in sorted(state["assignments"].values(), key=lambda a: a["seq"]):
                view = {k: v for k, v in assignment.items() if k not in ("seq", "status")}
                view["AssignmentStatus"] = assignment["status"]
                assignments.append(view)
            return {
                "now": now,
                "now_iso": iso(now),
                "time_scale": self.clock.time_scale,
                "balance": state["balance"],
                "available_balance": str(self._available(now)),
                "on_hold": str(self._on_hold(now)),
                "initial_balance": state["initial_balance"],
                "total_charged": str(charged),
                "ledger": state["ledger"],
                "hits": hits,
                "assignments": assignments,
                "bonuses": state["bonuses"],
                "qualification_types": list(state["qualification_types"].values()),
                "qualifications": [q for by_worker in state["qualifications"].values() for q in by_worker.values()],
                "blocks": [{"WorkerId": w, "Reason": r} for w, r in state["blocks"].items()],
                "notifications": state["notifications"],
                "faults": self.fault_list(),
                "requests": dict(self.requests),
            }


# ---------------------------------------------------------------------------------------------- HTTP


SUBMITTED_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>HIT submitted</title></head><body>"
    "<h1>Your work was submitted</h1><p>Assignment {assignment} of HIT {hit} (MTurk stand-in).</p></body></html>"
)
REFUSED_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>Not submitted</title></head><body>"
    "<h1>This submission was not recorded</h1><p>{message}</p></body></html>"
)


def _count(value) -> int | None:
    """A fault's ``count`` from JSON or a form: a positive integer, or null / "" / "none" for until cleared."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
        return None
    if isinstance(value, bool):
        raise ValueError("count must be a positive integer or null")
    return int(value)


class _Handler(StandInHandler):
    server_version = "MTurkStandIn/1.0"

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's name
        pass  # calls are logged one line each by _api; the access log would only repeat them

    def _json(self, status: int, payload, headers: dict | None = None, content_type: str = "application/json") -> None:
        self._send(status, json.dumps(payload).encode(), content_type, headers)

    def _route(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return self._json(400, {"error": "Content-Length is not a number"})
        body = self.rfile.read(length) if length > 0 else b""
        path, _, query = self.path.partition("?")
        target = self.headers.get("X-Amz-Target")
        try:
            if method == "POST" and target:
                self._api(target, body)
            elif path == SUBMIT_PATH:
                self._external_submit(body if method == "POST" else query.encode())
            elif path.startswith(CONTROL + "/"):
                self._control(method, path[len(CONTROL):], query, body)
            else:
                self._json(404, {"error": f"nothing at {method} {path}"})
        except BrokenPipeError:
            pass

    # requester API (JSON 1.1)

    def _api(self, target: str, body: bytes) -> None:
        request_id = str(uuid.uuid4())
        headers = {"x-amzn-RequestId": request_id}
        content_type = "application/x-amz-json-1.1"
        operation = target[len(TARGET_PREFIX):] if target.startswith(TARGET_PREFIX) else target
        key = re.search(r"Credential=([^/,\s]+)/", self.headers.get("Authorization", ""))  # SigV4: Credential=<key>/<date>/...
        if self.standin.access_key is not None and (key and key.group(1)) != self.standin.access_key:  # AWS's 403 for an unknown key
            self._log(f"{operation}: UnrecognizedClientException (unknown access key)")
            return self._json(403, {"__type": "UnrecognizedClientException", "Message": "The security token included in the request is invalid."}, headers, content_type)
        fault = self.standin._fault_for(operation)
        if fault == THROTTLE:
            self._log(f"{operation}: ThrottlingException (injected)")
            return self._json(400, {"__type": "ThrottlingException", "Message": "Rate exceeded"}, headers, content_type)
        if fault == SERVICE_FAULT:
            self._log(f"{operation}: ServiceFault (injected, not done)")
            return self._json(500, self._service_fault(request_id), headers, content_type)
        try:
            if not target.startswith(TARGET_PREFIX):
                raise Refused(f"Operation {target} is not an MTurk requester operation.", error_type="UnknownOperationException")
            try:
                params = json.loads(body or b"{}")
            except ValueError:
                raise Refused("The request body is not JSON", error_type="SerializationException") from None
            result = self.standin.call(operation, params, request_id)
        except Refused as exc:
            self._log(f"{operation}: {exc.error_type} {exc.turk_code or '-'}: {exc.message}")
            if fault is not None:
                return self._lose(operation, fault, request_id, headers, content_type)
            error = {"__type": exc.error_type, "Message": f"{exc.message} (RequestId: {request_id})"}
            if exc.turk_code:
                error["TurkErrorCode"] = exc.turk_code
            self._json(exc.status, error, headers, content_type)
            return
        except Exception as exc:  # a bug of the stand-in: MTurk's ServiceFault, so the caller sees it plainly
            self._log(f"{operation}: ServiceFault: {exc!r}")
            fault = {"__type": "ServiceFault", "Message": f"MTurk stand-in failure: {exc!r} (RequestId: {request_id})"}
            self._json(500, fault, headers, content_type)
            return
        self._log(f"{operation}: ok")
        if fault is not None:
            return self._lose(operation, fault, request_id, headers, content_type)
        self._json(200, result, headers, content_type)

    @staticmethod
    def _service_fault(request_id: str) -> dict:
        return {
            "__type": "ServiceFault",
            "Message": f"Amazon Mechanical Turk is temporarily unable to process your request. (RequestId: {request_id})",
        }

    def _lose(self, operation: str, fault: str, request_id: str, headers: dict, content_type: str) -> None:
        """The call was done; its answer never arrives (``lost_reply``) or is a ServiceFault (``fault_after``)."""
        if fault == FAULT_AFTER:
            self._log(f"{operation}: done, then ServiceFault (injected)")
            return self._json(500, self._service_fault(request_id), headers, content_type)
        self._log(f"{operation}: done, reply lost (injected)")
        drop_connection(self)

    def _log(self, line: str) -> None:
        if self.standin.log is not None:
            self.standin.log(line)

    # the HIT page's submission

    def _external_submit(self, form: bytes) -> None:
        fields = parse_qsl(form.decode("utf-8", "replace"), keep_blank_values=True)
        assignment_id = next((value for name, value in fields if name == "assignmentId"), None)
        try:
            if not assignment_id or assignment_id == PREVIEW_ID:
                raise WorkerRefused("the form has no assignmentId of an accepted assignment", 400, "invalid")
            done = self.standin.submit(assignment_id, fields)
        except WorkerRefused as exc:
            self._log(f"externalSubmit {assignment_id}: refused: {exc.message}")
            self._send(exc.status, REFUSED_PAGE.format(message=escape(exc.message)).encode(), "text/html; charset=utf-8")
            return
        self._log(f"externalSubmit {assignment_id}: {done['status']}")
        page = SUBMITTED_PAGE.format(assignment=escape(assignment_id), hit=escape(done["HITId"]))
        self._send(200, page.encode(), "text/html; charset=utf-8")

    # worker simulation and control

    def _control(self, method: str, path: str, query: str, body: bytes) -> None:
        data: dict = dict(parse_qsl(query, keep_blank_values=True))
        if body:
            if (self.headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
                data.update(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            else:
                try:
                    loaded = json.loads(body)
                except ValueError:
                    return self._json(400, {"error": "the body must be JSON or a form"})
                if not isinstance(loaded, dict):
                    return self._json(400, {"error": "the body must be a JSON object"})
                data.update(loaded)
        standin = self.standin
        routes = {
            ("GET", "/state"): lambda: standin.dump(),
            ("POST", "/advance"): lambda: {"now": standin.advance(float(data.get("seconds", 0)))},
            ("POST", "/balance"): lambda: {"balance": standin.set_balance(data.get("balance", data.get("AvailableBalance")))},
            ("POST", "/reset"): lambda: standin.reset(data.get("balance")) or {"reset": True},
            ("POST", "/dispose"): lambda: standin.dispose(data.get("HITId")) or {"disposed": data.get("HITId")},
            ("GET", "/faults"): lambda: {"faults": standin.fault_list(), "requests": dict(standin.requests)},
            ("POST", "/faults"): lambda: {
                "added": standin.inject(
                    data.get("operation"), data.get("kind"), _count(data.get("count", 1)), float(data.get("rate", 1.0))
                ),
                "faults": standin.fault_list(),
            },
            ("DELETE", "/faults"): lambda: {"removed": standin.clear_faults(data.get("operation"))},
            ("GET", "/worker/hits"): lambda: {"HITs": standin.discoverable(data.get("WorkerId", ""))},
            ("GET", "/worker/preview"): lambda: standin.preview(data.get("HITId"), data.get("WorkerId")),
            ("POST", "/worker/accept"): lambda: standin.accept(data.get("HITId"), data.get("WorkerId")),
            ("POST", "/worker/return"): lambda: standin.return_assignment(data.get("AssignmentId")),
            ("POST", "/worker/qualification"): lambda: standin.set_worker_score(
                data.get("WorkerId"), data.get("QualificationTypeId"), data.get("IntegerValue"), data.get("LocaleValue")
            ),
        }
        action = routes.get((method, path))
        if action is None:
            return self._json(404, {"error": f"nothing at {method} {CONTROL}{path}"})
        try:
            result = action()
        except WorkerRefused as exc:
            self._log(f"{CONTROL}{path}: refused: {exc.message}")
            return self._json(exc.status, {"error": exc.message, "reason": exc.reason})
        except Refused as exc:
            return self._json(400, {"error": exc.message, "reason": "invalid"})
        except (TypeError, ValueError) as exc:
            return self._json(400, {"error": str(exc), "reason": "invalid"})
        except Exception as exc:  # a bug of the stand-in: say so instead of dropping the connection
            return self._json(500, {"error": f"MTurk stand-in failure: {exc!r}", "reason": "failure"})
        if path != "/state":
            self._log(f"{CONTROL}{path}: ok")
        self._json(200, result)
