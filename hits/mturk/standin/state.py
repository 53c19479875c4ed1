"""The MTurk stand-in's state: requests at one instant, persistence, time's automatic events, HITs,
assignments and request tokens.

A mixin of ``hits.mturk.standin.StandIn`` (which builds on it; see its docstring for what the
stand-in models); it works on the instance's ``state``, ``lock`` and ``clock``.
"""

from __future__ import annotations

import base64
import json
import os
import time
from contextlib import contextmanager
from decimal import Decimal
from typing import Callable

from hits.mturk.standin.common import (
    ABANDONED,
    ACCEPTED,
    APPROVED,
    AUTO_DISPOSE_AFTER,
    DEFAULT_PAGE_SIZE,
    HIT_ALREADY_EXISTS,
    HOLDS_A_PLACE,
    REJECTED,
    REVIEWABLE_STATUSES,
    Refused,
    STATE_VERSION,
    SUBMITTED,
    TOKEN_LIFETIME,
    integer,
    millis,
    reward_fee,
)


class StateMixin:
    """The state of HITs and assignments, kept and advanced in time."""

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
