"""What every module of the Prolific stand-in speaks: Prolific's statuses, its ids, its error body
(``Refused``), times as Prolific writes them, amounts and whole numbers as it checks them.

Standard library only, like the whole stand-in.
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

API = "/api/v1"
CONTROL = "/__control"

# Study statuses (the stand-in's subset of Prolific's).
UNPUBLISHED, ACTIVE, PAUSED = "UNPUBLISHED", "ACTIVE", "PAUSED"
AWAITING_REVIEW, COMPLETED = "AWAITING REVIEW", "COMPLETED"

# Submission statuses (also ACTIVE and AWAITING REVIEW).
RETURNED, TIMED_OUT, APPROVED, REJECTED = "RETURNED", "TIMED-OUT", "APPROVED", "REJECTED"

HEX_ID = re.compile(r"^[0-9a-f]{24}$")
MONEY = re.compile(r"^[0-9]+(\.[0-9]{1,2})?$")
TITLES = {400: "Invalid request", 401: "Not authenticated", 404: "Not found", 405: "Method not allowed",
          409: "Conflict", 429: "Too many requests", 500: "Server error", 502: "Bad gateway",
          503: "Service unavailable"}


class Refused(Exception):
    """A request Prolific would refuse: the HTTP status and what is wrong, for an error body like Prolific's."""

    def __init__(self, status: int, detail: Any, title: str | None = None):
        super().__init__(detail if isinstance(detail, str) else json.dumps(detail))
        self.status, self.detail, self.title = status, detail, title or TITLES.get(status, "Error")

    def body(self, path: str = "") -> dict:
        return {"error": {"status": self.status, "title": self.title, "detail": self.detail,
                          "additional_information": path}}


def new_id() -> str:
    """24 lower-case hex characters, as Prolific's ids."""
    return secrets.token_hex(12)


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def cents(dollars, name: str) -> int:
    """Dollars ("4.25", at most two decimals) as cents, refused (400) when not a valid positive amount."""
    text = str(dollars).strip()
    if not MONEY.match(text):
        raise Refused(400, f"{name}: {dollars!r} is not an amount in dollars with at most two decimals (e.g. 4.25)")
    return int(Decimal(text) * 100)


def whole(value, name: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise Refused(400, {name: [f"must be a whole number of at least {low}, not {value!r}"]})
    return value


def json_object(body) -> dict:
    if not isinstance(body, dict):
        raise Refused(400, "The request body must be a JSON object")
    return body

