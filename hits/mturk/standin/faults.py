"""The MTurk stand-in's control API in Python: injected faults, the clock, reset, disposal and the dump.

A mixin of ``hits.mturk.standin.StandIn`` (which builds on it; see its docstring for what the
stand-in models); it works on the instance's ``state``, ``lock`` and ``clock``.
"""

from __future__ import annotations

import random
import time
from decimal import Decimal

from hits.markets.standin import fired
from hits.mturk.standin.common import (
    ABANDONED,
    ACCEPTED,
    FAULT_KINDS,
    REQUIRED,
    SUBMITTED,
    WorkerRefused,
    empty_state,
    iso,
    money,
)


class ControlMixin:
    """Faults, the clock and the control API's operations."""

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
                fired(self.faults, fault, "count")
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
