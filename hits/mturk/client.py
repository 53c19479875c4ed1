"""The boto3 MTurk client: sandbox or live endpoint, and retries with backoff.

Credentials come from the standard AWS chain only (environment variables,
shared config files, instance roles); nothing here reads or logs them.
Throttling and transient failures (MTurk's ``ServiceFault``, HTTP 429/5xx,
connection errors) are retried up to ``MTURK_MAX_RETRIES`` times, waiting

    delay(n) = MTURK_RETRY_BASE_SECONDS * 2**n * U(0.5, 1.0)

before retry n (0-based; jitter so that several workers do not retry in
step).  A ``RequestError`` (bad parameters, a used request token, no funds)
is not transient and is raised at once as ``MTurkError``.  These retries are
the only ones: botocore's own are off (``total_max_attempts`` 1), so one
attempt is exactly one HTTP request.

A call carrying a ``UniqueRequestToken`` is never re-sent blind: see
``hits.mturk.tokens``, which settles every ambiguous answer by reading
MTurk's records.  Repeats and refusals are never told by a message; only
documented ``TurkErrorCode`` values are acted on.  One exception remains:
``does_not_exist`` (a HIT or assignment MTurk no longer has) takes a code
ending in ``DoesNotExist`` and otherwise MTurk's "does not exist" wording.
"""

from __future__ import annotations

import logging
import random
import re
import time
from typing import Callable

from django.conf import settings

log = logging.getLogger(__name__)

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
LIVE_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
# Where workers see a HIT, for links in the README and command output.
WORKER_SITE = {True: "https://workersandbox.mturk.com", False: "https://worker.mturk.com"}

RETRYABLE_CODES = {
    "ServiceFault", "ServiceUnavailable", "InternalFailure", "InternalError",
    "Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded",
}


# MTurk is one marketplace in one region: its endpoints, and the region requests are signed for.
REGION = "us-east-1"

# MTurk's ``TurkErrorCode`` values the platform acts on (botocore puts the code in ``exc.response``).  For a
# repeated token, only the code MTurk's reference documents: CreateHIT's UniqueRequestToken ("subsequent calls
# will return a AWS.MechanicalTurk.HitAlreadyExists error").  A repeated token of any other call is documented
# only as "an error with a message containing the request ID": no code to rely on, so such answers are settled
# by reading MTurk's records (``hits.mturk.tokens``).  A qualification type name used before is answered with
# QualificationTypeAlreadyExists (what MTurk sends; a wrong guess here only stops a publish, it pays nothing).
HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
QUALIFICATION_TYPE_ALREADY_EXISTS = "AWS.MechanicalTurk.QualificationTypeAlreadyExists"


class MTurkError(Exception):
    """An MTurk call failed for good (after retries when the failure was transient).

    ``code`` is the error's type (``RequestError``, ``ServiceFault``...), ``turk_code`` MTurk's own
    ``TurkErrorCode`` when it sent one (e.g. ``AWS.MechanicalTurk.HitAlreadyExists``).  ``attempts``: the
    HTTP requests made for the call; ``transient``: the last failure was a fault, a throttle or a lost
    connection, so whether MTurk acted on the call is unknown."""

    def __init__(self, operation: str, code: str, message: str, turk_code: str = "", attempts: int = 1, transient: bool = False):
        self.operation, self.code, self.message, self.turk_code = operation, code, message, turk_code
        self.attempts, self.transient = attempts, transient
        super().__init__(f"MTurk {operation} failed: {code}{f' ({turk_code})' if turk_code else ''}: {message}")


def _snake(operation: str) -> str:
    # CreateHIT -> create_hit, ListAssignmentsForHIT -> list_assignments_for_hit (botocore's own naming).
    from botocore import xform_name

    return xform_name(operation)


def make_boto3_client(sandbox: bool):
    """A fresh boto3 ``mturk`` client for the sandbox or the live marketplace.

    ``MTURK_ENDPOINT_URL``, when set, replaces both AWS endpoints (e.g. the
    local stand-in, ``hits.mturk.standin``).  botocore's own retries are
    switched off: ``MTurk.call`` retries, so every attempt is visible (and
    tested) in one place.  botocore's ``max_attempts`` counts *retries*
    (``max_attempts=1`` is 2 requests); ``total_max_attempts`` counts
    requests, so 1 means one request per attempt in any retry mode.
    """
    import boto3
    from botocore.config import Config

    return boto3.client(
        "mturk",
        region_name=REGION,
        endpoint_url=settings.MTURK_ENDPOINT_URL or (SANDBOX_ENDPOINT if sandbox else LIVE_ENDPOINT),
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=10, read_timeout=30),
    )


# Tests (and tools) may install a factory returning a stubbed client: factory(sandbox) -> boto3 client.
client_factory: Callable[[bool], object] = make_boto3_client


class MTurk:
    """One requester account (sandbox or live) with retried calls."""

    def __init__(self, sandbox: bool, client=None, sleep: Callable[[float], None] = time.sleep):
        self.sandbox = sandbox
        self.client = client if client is not None else client_factory(sandbox)
        self.sleep = sleep

    def call(self, operation: str, **params) -> dict:
        """Call ``operation`` (MTurk's name, e.g. "CreateHIT") with boto3 parameters, retrying transient failures."""
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        method = getattr(self.client, _snake(operation))
        retries = settings.MTURK_MAX_RETRIES
        for attempt in range(retries + 1):
            try:
                return method(**params)
            except ClientError as exc:
                error = exc.response.get("Error", {})
                code, message = error.get("Code", "Unknown"), error.get("Message", "")
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
                transient = code in RETRYABLE_CODES or status == 429 or status >= 500
                if not transient or attempt == retries:
                    turk_code = exc.response.get("TurkErrorCode") or error.get("TurkErrorCode") or ""
                    raise MTurkError(operation, code, message, str(turk_code), attempt + 1, transient) from None
                reason = code
            except NoCredentialsError:
                raise MTurkError(operation, "NoCredentials", "no AWS credentials in the environment or the AWS chain") from None
            except (EndpointConnectionError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError) as exc:
                if attempt == retries:
                    raise MTurkError(operation, type(exc).__name__, str(exc), attempts=attempt + 1, transient=True) from None
                reason = type(exc).__name__
            delay = settings.MTURK_RETRY_BASE_SECONDS * (2**attempt) * random.uniform(0.5, 1.0)
            log.warning("MTurk %s: %s, retry %d of %d in %.1fs", operation, reason, attempt + 1, retries, delay)
            self.sleep(delay)
        raise AssertionError("unreachable")

    def pages(self, operation: str, key: str, **params):
        """Every item of a paginated List* call, following ``NextToken`` until MTurk gives none."""
        token = None
        while True:
            page = self.call(operation, **params, **({"NextToken": token} if token else {}))
            yield from page.get(key, [])
            token = page.get("NextToken")
            if not token:
                return


def for_batch(batch) -> MTurk:
    """The account of a batch's backend (sandbox for ``mturk-sandbox``)."""
    return MTurk(sandbox=batch.backend != "mturk-live")


def does_not_exist(error: MTurkError) -> bool:
    """Whether MTurk says the HIT or assignment is gone (deleted, e.g. 120 days after creation) or never was."""
    return error.turk_code.endswith("DoesNotExist") or bool(re.search(r"does not exist", error.message, re.I))
