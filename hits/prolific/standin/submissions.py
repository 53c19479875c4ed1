"""The Prolific stand-in's submissions (a participant's attempt at a study): a participant starts, completes,
returns or times out; the researcher approves (reward, fee and VAT charged), rejects, or approves in bulk."""

from __future__ import annotations

from hits.prolific.standin.common import (
    ACTIVE, APPROVED, AWAITING_REVIEW, HEX_ID, REJECTED, RETURNED, TIMED_OUT, Refused, iso, new_id,
)
from hits.prolific.standin.studies import HOLDS_A_PLACE

REJECT_MESSAGE_MIN = 100
REJECTION_CATEGORIES = (
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK", "LOW_EFFORT",
    "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
)
STUDY_URL_FIELDS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


class Submissions:
    """Mixed into ``ProlificStandIn``: its submissions (``state['submissions']``), under its lock."""

    def _submission(self, submission_id: str) -> dict:
        return self._find("submissions", submission_id, "submission")

    def submission_view(self, submission: dict) -> dict:
        """Everything the stand-in knows of a submission (the control API and ``state/``); the API shows the
        reference's shapes (``routes.submission_listed`` and ``submission_detail``)."""
        view = dict(submission)
        view.update(started_at=iso(submission["started_at"]), completed_at=iso(submission["completed_at"]),
                    participant=submission["participant_id"], study=submission["study_id"],
                    bonus_payments=list(submission["bonus_payments"]))
        return view

    def _in_group(self, group_id: str, participant_id: str) -> bool:
        group = self.state["groups"].get(group_id)
        return bool(group) and participant_id in group["participants"]

    def start_participant(self, study_id: str, participant_id: str | None, now: float) -> dict:
        """A participant takes part: an ACTIVE submission, or a refusal (409) saying why."""
        study = self._study(study_id)
        participant_id = participant_id or new_id()
        if not isinstance(participant_id, str) or not HEX_ID.match(participant_id):
            raise Refused(400, f"participant_id {participant_id!r} is not a Prolific id (24 lower-case hex characters)")
        status = self.study_status(study)
        if status != ACTIVE:
            raise Refused(409, f"The study is {status}: participants can only start an ACTIVE study")
        subs = self._submissions_of(study)
        if any(s["participant_id"] == participant_id for s in subs):
            raise Refused(409, f"Participant {participant_id} already has a submission in this study")
        if sum(1 for s in subs if s["status"] in HOLDS_A_PLACE) >= study["total_available_places"]:
            raise Refused(409, "The study has no free place")
        for f in study["filters"]:
            listed = [self._in_group(g, participant_id) for g in f["selected_values"]]
            if f["filter_id"] == "participant_group_allowlist" and not any(listed):
                raise Refused(409, f"Participant {participant_id} is not in the study's allowlist group(s) "
                                   f"{', '.join(f['selected_values'])}")
            if f["filter_id"] == "participant_group_blocklist" and any(listed):
                raise Refused(409, f"Participant {participant_id} is in the study's blocklist group(s) "
                                   f"{', '.join(f['selected_values'])}")
        submission = {
            "id": new_id(), "participant_id": participant_id, "study_id": study["id"], "status": ACTIVE,
            "started_at": now, "completed_at": None, "study_code": None, "reward": study["reward"],
            "bonus_payments": [], "return_requested": None,
        }
        self.state["submissions"][submission["id"]] = submission
        url = study["external_study_url"]
        for name, value in zip(STUDY_URL_FIELDS, (participant_id, study["id"], submission["id"])):
            url = url.replace("{{%" + name + "%}}", value)
        return {"participant_id": participant_id, "session_id": submission["id"], "study_id": study["id"], "url": url}

    def complete(self, submission_id: str, code, now: float) -> dict:
        """The participant comes back with ``code``: AWAITING REVIEW (or APPROVED for an auto-approve code)."""
        submission = self._submission(submission_id)
        study = self.state["studies"][submission["study_id"]]
        if submission["status"] not in (ACTIVE, TIMED_OUT) or (submission["status"] == TIMED_OUT and not self._place_free(study)):
            raise Refused(409, f"The submission is {submission['status']}: only an ACTIVE one can be completed (or a TIMED-OUT one whose place is free)")
        match = next((c for c in study["completion_codes"] if c.get("code") == code), None)
        if match is None:
            raise Refused(409, f"{code!r} is not a completion code of study {study['id']}")
        actions = [a.get("action") for a in match.get("actions") or []]
        submission.update(status=AWAITING_REVIEW, completed_at=now, study_code=code)
        if "AUTOMATICALLY_APPROVE" in actions:
            self._approve(submission, now)
        return self.submission_view(submission)

    def _place_free(self, study: dict) -> bool:
        """Whether a timed-out participant's place is still theirs to complete in (no one else took it)."""
        taken = sum(1 for s in self._submissions_of(study) if s["status"] in HOLDS_A_PLACE)
        return taken < study["total_available_places"]

    def complete_by_participant(self, participant_id: str, code: str, now: float) -> dict:
        """``/submissions/complete?cc=CODE`` for the participant of the cookie."""
        for submission in self.state["submissions"].values():
            if submission["participant_id"] != participant_id or submission["status"] not in (ACTIVE, TIMED_OUT):
                continue
            study = self.state["studies"][submission["study_id"]]
            if any(c.get("code") == code for c in study["completion_codes"]):
                return self.complete(submission["id"], code, now)
        raise Refused(409, f"{code!r} is not the completion code of a study you are taking part in")

    def leave(self, submission_id: str, status: str, now: float) -> dict:
        submission = self._submission(submission_id)
        allowed = (ACTIVE, AWAITING_REVIEW) if status == RETURNED else (ACTIVE,)
        if submission["status"] not in allowed:
            raise Refused(409, f"The submission is {submission['status']}: it cannot become {status}")
        submission["status"] = status
        return self.submission_view(submission)

    def _approve(self, submission: dict, now: float) -> None:
        fee, vat = self.charges(submission["reward"])
        if submission["reward"] + fee + vat > self.state["balance"]:
            raise Refused(400, f"Insufficient funds: approving costs {submission['reward'] + fee + vat} cents, "
                               f"the balance is {self.state['balance']} cents")
        submission["status"] = APPROVED
        self._charge("reward", submission, submission["reward"], fee, vat, now)

    def transition_submission(self, submission_id: str, body: dict, now: float) -> dict:
        """APPROVE or REJECT a submission AWAITING REVIEW; returns the submission (the route shows it as its detail)."""
        submission = self._submission(submission_id)
        action = body.get("action") if isinstance(body, dict) else None
        if action not in ("APPROVE", "REJECT"):
            raise Refused(400, {"action": [f"{action!r}: the stand-in knows APPROVE and REJECT"]})
        target = APPROVED if action == "APPROVE" else REJECTED
        if action == "REJECT":
            message, category = body.get("message"), body.get("rejection_category")
            if not isinstance(message, str) or len(message.strip()) < REJECT_MESSAGE_MIN:
                raise Refused(400, {"message": [f"Required to reject, at least {REJECT_MESSAGE_MIN} characters "
                                                f"({len(message.strip()) if isinstance(message, str) else 0} given)"]})
            if category not in REJECTION_CATEGORIES:
                raise Refused(400, {"rejection_category": [
                    f"{category!r} is not one of {', '.join(REJECTION_CATEGORIES)}"]})
        if submission["status"] == target:
            return submission  # Prolific: the same request again is ignored
        if submission["status"] != AWAITING_REVIEW:
            raise Refused(400, f"The submission is {submission['status']}: only one AWAITING REVIEW can be "
                               f"{'approved' if action == 'APPROVE' else 'rejected'}")
        if action == "APPROVE":
            self._approve(submission, now)
        else:
            submission.update(status=REJECTED, rejection_message=body["message"],
                              rejection_category=body["rejection_category"])
        return submission

    def bulk_approve(self, body: dict, now: float) -> dict:
        if not isinstance(body, dict):
            raise Refused(400, "Send study_id with participant_ids, or submission_ids")
        if body.get("submission_ids") is not None:
            ids = body["submission_ids"]
            found = {i: self.state["submissions"].get(i) for i in ids} if isinstance(ids, list) else None
        elif body.get("participant_ids") is not None and body.get("study_id"):
            study, ids = self._study(body["study_id"]), body["participant_ids"]
            by_participant = {s["participant_id"]: s for s in self._submissions_of(study)}
            found = {i: by_participant.get(i) for i in ids} if isinstance(ids, list) else None
        else:
            raise Refused(400, "Send study_id with participant_ids, or submission_ids")
        if not found:
            raise Refused(400, "The list of ids to approve is empty or not a list")
        unknown = [i for i, s in found.items() if s is None]
        if unknown:
            raise Refused(400, f"No submission for: {', '.join(map(str, unknown))}")
        wrong = [f"{i} ({s['status']})" for i, s in found.items() if s["status"] not in (AWAITING_REVIEW, APPROVED)]
        if wrong:
            raise Refused(400, f"Only submissions AWAITING REVIEW can be approved: {', '.join(wrong)}")
        due = [s for s in found.values() if s["status"] == AWAITING_REVIEW]
        cost = sum(s["reward"] + sum(self.charges(s["reward"])) for s in due)
        if cost > self.state["balance"]:
            raise Refused(400, f"Insufficient funds: approving costs {cost} cents, the balance is {self.state['balance']} cents")
        for submission in due:
            self._approve(submission, now)
        return {"message": "Bulk approve in progress", "approved": len(due)}
