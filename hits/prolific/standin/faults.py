"""The faults a test injects in the Prolific stand-in's API (``/__control/faults/``): ``lost_reply`` (done,
unanswered: ``hits.markets.standin.drop_connection``), ``error`` (a 5xx, not done) and ``throttle`` (429 with
``Retry-After``), each matching a method and a path pattern, ``times`` times or until cleared."""

from __future__ import annotations

import re

from hits.markets.standin import fired
from hits.prolific.standin.common import Refused, whole

FAULT_KINDS = ("lost_reply", "error", "throttle")


class Faults:
    """Mixed into ``ProlificStandIn``: ``self.faults``, under its lock."""

    def add_fault(self, body: dict) -> dict:
        if not isinstance(body, dict):
            raise Refused(400, "A fault is a JSON object")
        kind = body.get("kind")
        if kind not in FAULT_KINDS:
            raise Refused(400, f"kind {kind!r} is not one of {', '.join(FAULT_KINDS)}")
        try:
            pattern = re.compile(str(body.get("path") or ".*"))
        except re.error as exc:
            raise Refused(400, f"path {body.get('path')!r} is not a regular expression: {exc}") from None
        times = body.get("times", 1)
        if times is not None:
            times = whole(times, "times", 1)
        status = body.get("status", 429 if kind == "throttle" else 503)
        if kind == "error" and (isinstance(status, bool) or not isinstance(status, int) or not 500 <= status <= 599):
            raise Refused(400, f"status {status!r}: an error fault answers a 5xx status")
        retry_after = body.get("retry_after", 1)
        if isinstance(retry_after, bool) or not isinstance(retry_after, (int, float)) or retry_after < 0:
            raise Refused(400, f"retry_after {retry_after!r} must be a number of seconds")
        fault = {"method": str(body.get("method") or "*").upper(), "path": pattern.pattern, "kind": kind,
                 "status": status, "times": times, "retry_after": retry_after, "fired": 0}
        with self.lock:
            self.faults.append(fault)
        return dict(fault)

    def fault_for(self, method: str, path: str) -> dict | None:
        with self.lock:
            for fault in self.faults:
                if fault["method"] not in ("*", method) or not re.search(fault["path"], path):
                    continue
                fired(self.faults, fault, "times")
                return dict(fault)
            return None
