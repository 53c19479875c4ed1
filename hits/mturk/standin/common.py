"""The MTurk stand-in's constants, errors and helpers (money, fees, dates, ids, parameters), shared by
its modules (``hits.mturk.standin`` and the modules of that package it builds on).

Standard library only.
"""

from __future__ import annotations

import re
import secrets
import string
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation, ROUND_HALF_UP
from xml.sax.saxutils import escape


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
