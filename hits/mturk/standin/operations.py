"""The MTurk stand-in's requester API: the dispatch of an operation and the operations on HITs and
assignments.

A mixin of ``hits.mturk.standin.StandIn`` (which builds on it; see its docstring for what the
stand-in models); it works on the instance's ``state``, ``lock`` and ``clock``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from decimal import Decimal
from xml.sax.saxutils import unescape

from hits.mturk.standin.common import (
    APPROVED,
    DAY,
    DEFAULT_AUTO_APPROVAL_DELAY,
    EXTERNAL_URL,
    INVALID_MAX_ASSIGNMENTS_INCREASE,
    LARGE_HIT_ASSIGNMENTS,
    MIN_REWARD,
    OVERRIDE_REJECTION_WINDOW,
    QUESTION_ROOTS,
    REJECTED,
    REQUIRED,
    REVIEWABLE_STATUSES,
    Refused,
    SUBMITTED,
    TOKEN_LIFETIME,
    integer,
    java_date,
    millis,
    money,
    new_id,
    reward_fee,
    text,
    timestamp,
)


class OperationsMixin:
    """The requester API's dispatch and its HIT and assignment operations."""

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
