"""The MTurk stand-in's worker side: what simulated workers discover, preview, accept, return and submit.

A mixin of ``hits.mturk.standin.StandIn`` (which builds on it; see its docstring for what the
stand-in models); it works on the instance's ``state``, ``lock`` and ``clock``.
"""

from __future__ import annotations

from urllib.parse import urlencode

from hits.mturk.standin.common import (
    ACCEPTED,
    HOLDS_A_PLACE,
    PREVIEW_ID,
    RETURNED,
    Refused,
    SUBMITTED,
    WorkerRefused,
    answer_xml,
    new_id,
    valid_worker_id,
)


class WorkersMixin:
    """The simulated workers' side of MTurk."""

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
