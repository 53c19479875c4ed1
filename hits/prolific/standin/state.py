"""A local stand-in for Prolific: the subset of its API the platform uses, and the participant's side of it.

Run ``python manage.py prolific_standin --port 8766 [--token T] [--balance 1000.00]`` and set
``PROLIFIC_API_URL`` / ``PROLIFIC_API_TOKEN`` (and ``PROLIFIC_COMPLETION_URL`` to its
``/submissions/complete``) as it prints them: the platform's client (``hits.prolific.client``) then talks to
it instead of Prolific.  Tests use ``running_standin(token=...)`` (a free port on 127.0.0.1, served in a
thread, shut down cleanly) and its ``.url``, ``.control(method, path, json)`` and ``.state()``.

The API (``/api/v1/``, ``Authorization: Token <token>``; no token or a wrong one: 401), written from
Prolific's published reference (docs.prolific.com/api-reference):

- studies: create (UNPUBLISHED), list, retrieve, PATCH (``total_available_places`` may only grow), and
  ``transition``: UNPUBLISHED -PUBLISH-> ACTIVE, refused while the workspace's available balance cannot
  cover reward + fee of every place; ACTIVE -PAUSE-> PAUSED -START-> ACTIVE; ACTIVE|PAUSED -STOP->
  AWAITING REVIEW while submissions wait for review, then COMPLETED.  A study whose places are all taken,
  none still being worked on, is AWAITING REVIEW (COMPLETED once all are reviewed) as on Prolific.  A
  transition to the state a study is in, or one its state does not allow, is a 400.
- submissions (a participant's attempt; its id is the study URL's SESSION_ID): ACTIVE, RETURNED,
  TIMED-OUT, AWAITING REVIEW, APPROVED, REJECTED.  Late moves (researcher help): a TIMED-OUT participant "can
  still complete" while "not replaced by another participant"; one AWAITING REVIEW may still return.
  ``transition`` APPROVE (reward + fee charged) or REJECT (``message`` of at least 100 characters and a
  ``rejection_category`` from Prolific's list) only from AWAITING REVIEW; the same action again on a submission already there is ignored (Prolific: "this endpoint
  is idempotent").  ``bulk-approve`` by participant or submission ids, all or nothing.  RETURNED,
  TIMED-OUT and REJECTED free the place.  Shapes as the reference documents them: the study's list shows each
  submission short (``SubmissionShort``: no ``bonus_payments``), ``GET /submissions/{id}/`` in full
  (``participant``, ``study_id``, ``entered_code``, ``bonus_payments``): ``standin_http``.
- bonuses in two steps: ``submissions/bonus-payments/`` creates (``csv_bonuses`` lines
  ``<participant or submission id>,<amount in dollars>``; every id must have a submission in the study)
  and pays nothing; ``bulk-bonus-payments/{id}/pay/`` answers 202 and pays asynchronously: the money
  leaves the balance and lands in the submissions' ``bonus_payments`` once the stand-in's clock has passed
  ``settle_seconds`` since the call.  NOT idempotent, as Prolific warns: a second pay call pays again.
- participant groups (create, list, retrieve; participants listed, added repeat-safely, removed) and the
  ``participant_group_allowlist`` / ``participant_group_blocklist`` study filters, enforced when a
  participant starts.
- ``users/me/``, ``workspaces/`` (one), ``workspaces/{id}/``, ``projects/{id}/`` and ``workspaces/{id}/balance/`` (cents: ``total_balance``, ``available_balance`` = the
  total less what active studies hold and bonuses being paid, with breakdowns), and
  ``study-cost-calculator/``.  Money (``standin_money``): in the workspace's ``currency`` (USD or GBP, stated
  as ``currency_code`` on the workspace, the study and the balance); Prolific's fee, ``fee_rate`` (33.33% by
  default, Prolific's published platform fee) of every reward and bonus, plus VAT at ``vat_rate`` of the fee
  (by default 20% in a GBP workspace, none in a USD one), each rounded half up to the minor unit.
- listings are paginated (``page_size`` items, 5 by default, or ``?page_size=``; ``_links.next.href``;
  ``meta.count``).
- errors are shaped like Prolific's: ``{"error": {"status", "title", "detail", "additional_information"}}``.

The participant's side (no token; what a browser does on Prolific): ``GET /studies/{id}/start?participant_id=P``
("take part": an ACTIVE submission, a cookie naming the participant, 302 to the study's URL with
PROLIFIC_PID, STUDY_ID and SESSION_ID filled in) and ``GET /submissions/complete?cc=CODE`` (the
participant's ACTIVE submission in the study with that completion code goes to AWAITING REVIEW, or
APPROVED for a code whose action is AUTOMATICALLY_APPROVE; a wrong code changes nothing and says so).

The control API (no token), under ``/__control/``: ``participants/`` (a participant starts a study),
``submissions/{id}/complete/`` (``{"code"}``), ``.../return/``, ``.../timeout/``, ``clock/``
(``{"advance_seconds"}``: ACTIVE submissions past ``maximum_allowed_time`` time out, due bonus payments
settle), ``faults/`` (POST ``{"method", "path" (a regex searched in the request path), "kind": "lost_reply"
| "error" | "throttle", "status", "times", "retry_after"}``, GET, DELETE), ``balance/`` (``{"balance"}``
in dollars: sets the total), ``state/`` (everything, with the money paid per participant) and ``reset/``.
Faults hit the API only: ``lost_reply`` does the request and drops the connection without an answer,
``error`` answers ``status`` (503) without doing it, ``throttle`` answers 429 with ``Retry-After``.

What it does not model: Prolific's own rate limits (only injected), reserved places, screen-out and
partial-approval codes, messages, study collections, custom screeners other than the two group filters,
multiple workspaces, currencies other than USD and GBP, and the exact wording and numeric ``error_code`` of
Prolific's errors.  Pay per hour and the least maximum time, as Prolific computes them: ``standin_rates``.
Standard library only: it imports
nothing from Django or the platform.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import urlencode

from hits.prolific.standin_money import DEFAULT_VAT, StandInMoney, currency_code, rate
from hits.prolific.standin_http import (  # noqa: F401 - the wire's names, also for the stand-in's users
    ACTIVE, API, APPROVED, AWAITING_REVIEW, COMPLETED, CONTROL, HEX_ID, PAUSED, REJECTED, RETURNED, ROUTES, TIMED_OUT,
    UNPUBLISHED, Call, Handler, Refused, cents, iso, new_id, whole,
)
from hits.prolific.standin_rates import least_maximum, reward_per_hour
from hits.standins import Clock, ServedStandIn

DEFAULT_TOKEN = "test-token"
DEFAULT_BALANCE = "10000.00"
DEFAULT_FEE_RATE = "0.3333"
DEFAULT_PAGE_SIZE = 5
DEFAULT_SETTLE_SECONDS = 60.0
REJECT_MESSAGE_MIN = 100

STUDY_ACTIONS = ("PUBLISH", "PAUSE", "START", "STOP")
HOLDS_A_PLACE = (ACTIVE, AWAITING_REVIEW, APPROVED)
REJECTION_CATEGORIES = (
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL", "FAILED_CHECK", "LOW_EFFORT",
    "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA", "UNSUPP_DEVICE", "OTHER",
)
CODE_ACTIONS = {"MANUALLY_REVIEW": AWAITING_REVIEW, "AUTOMATICALLY_APPROVE": APPROVED}
GROUP_FILTERS = ("participant_group_allowlist", "participant_group_blocklist")
FAULT_KINDS = ("lost_reply", "error", "throttle")
STUDY_URL_FIELDS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")


class ProlificStandIn(StandInMoney, ServedStandIn):
    """Prolific's API and participant site, in memory, over HTTP (``start()`` in a thread, ``stop()``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str = DEFAULT_TOKEN,
                 balance=DEFAULT_BALANCE, fee_rate=DEFAULT_FEE_RATE, page_size: int = DEFAULT_PAGE_SIZE,
                 settle_seconds: float = DEFAULT_SETTLE_SECONDS, log: Callable[[str], None] | None = None,
                 currency: str = "USD", vat_rate=None):
        if not token:
            raise ValueError("the stand-in needs a token (the platform sends one in every request)")
        self.fee_rate = rate(fee_rate, "fee rate")
        self.currency = currency_code(currency)
        self.vat_rate = rate(DEFAULT_VAT[self.currency] if vat_rate is None else vat_rate, "VAT rate")
        if page_size < 1:
            raise ValueError("page size must be at least 1")
        if settle_seconds < 0:
            raise ValueError("the settle delay cannot be negative")
        self.token, self.page_size, self.settle_seconds, self.log = token, page_size, float(settle_seconds), log
        self.initial_balance = self._dollars_to_cents(balance)
        self.lock = threading.RLock()
        self.clock = Clock()
        self.faults: list[dict] = []
        self._reset_state(self.initial_balance)
        self._listen(host, port, Handler)
        self.url = f"http://{host}:{self.port}"

    @staticmethod
    def _dollars_to_cents(balance) -> int:
        try:
            return cents(balance, "balance")
        except Refused as exc:
            raise ValueError(str(exc)) from None

    thread_name = "prolific-standin"

    # -- state and time

    def _reset_state(self, balance: int) -> None:
        self.clock.restart(time.time())
        self.state = {
            "user_id": new_id(), "workspace_id": new_id(), "project_id": new_id(),
            "balance": balance, "studies": {}, "submissions": {}, "groups": {}, "bonuses": {}, "ledger": [],
        }

    def reset(self, balance=None) -> None:
        """Forget everything (studies, submissions, groups, bonuses, ledger, faults); the starting balance."""
        with self.lock:
            self._reset_state(self.initial_balance if balance is None else self._dollars_to_cents(balance))
            self.faults = []

    @contextmanager
    def session(self) -> Iterator[float]:
        """One request: under the lock, at one instant, with what fell due (time-outs, settled bonuses) done first."""
        with self.lock:
            now = self.clock.now()
            self._tick(now)
            yield now

    def advance(self, seconds) -> float:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise Refused(400, f"advance_seconds must be a number of seconds, at least 0, not {seconds!r}")
        with self.lock:
            self.clock.advance(seconds)
            with self.session() as now:
                return now

    def _tick(self, now: float) -> None:
        for submission in self.state["submissions"].values():
            if submission["status"] == ACTIVE:
                study = self.state["studies"][submission["study_id"]]
                if now >= submission["started_at"] + study["maximum_allowed_time"] * 60:
                    submission.update(status=TIMED_OUT)
        for bonus in self.state["bonuses"].values():
            for payment in bonus["payments"]:
                if not payment["settled"] and now >= payment["paid_at"] + self.settle_seconds:
                    self._settle(bonus, payment, now)

    # -- studies

    def _find(self, table: str, key: str, what: str) -> dict:
        item = self.state[table].get(key)
        if item is None:
            raise Refused(404, f"No {what} with id {key!r}")
        return item

    def _study(self, study_id: str) -> dict:
        return self._find("studies", study_id, "study")

    def _submissions_of(self, study: dict) -> list[dict]:
        return [s for s in self.state["submissions"].values() if s["study_id"] == study["id"]]

    def study_status(self, study: dict) -> str:
        if study["status"] in (UNPUBLISHED, PAUSED) and not study["stopped"]:
            return study["status"]
        subs = self._submissions_of(study)
        waiting = any(s["status"] == AWAITING_REVIEW for s in subs)
        if not study["stopped"]:
            taken = sum(1 for s in subs if s["status"] in HOLDS_A_PLACE)
            if taken < study["total_available_places"] or any(s["status"] == ACTIVE for s in subs):
                return ACTIVE
        return AWAITING_REVIEW if waiting else COMPLETED

    def study_view(self, study: dict) -> dict:
        view = {k: v for k, v in study.items() if k not in ("stopped", "created_at", "published_at_epoch")}
        subs = self._submissions_of(study)
        view.update(
            status=self.study_status(study), places_taken=sum(1 for s in subs if s["status"] in HOLDS_A_PLACE),
            number_of_submissions=len(subs), total_cost=study["total_available_places"] * self._place_cost(study),
            date_created=iso(study["created_at"]), published_at=iso(study["published_at_epoch"]), **reward_per_hour(study, subs))
        return view

    def create_study(self, body: dict, now: float) -> dict:
        missing = [name for name in ("name", "description", "external_study_url", "estimated_completion_time",
                                     "reward", "total_available_places", "completion_codes") if body.get(name) in (None, "")]
        if missing:
            raise Refused(400, {name: ["This field is required."] for name in missing})
        url = str(body["external_study_url"])
        if not url.startswith(("http://", "https://")):
            raise Refused(400, {"external_study_url": [f"{url!r} is not an http(s) URL"]})
        codes = body["completion_codes"]
        if not isinstance(codes, list) or not codes:
            raise Refused(400, {"completion_codes": ["a list of at least one completion code"]})
        for code in codes:
            if not isinstance(code, dict) or not code.get("code"):
                raise Refused(400, {"completion_codes": [f"each needs a 'code': {code!r}"]})
            for action in code.get("actions") or []:
                if not isinstance(action, dict) or action.get("action") not in CODE_ACTIONS:
                    raise Refused(400, {"completion_codes": [
                        f"action {action!r}: the stand-in knows {', '.join(CODE_ACTIONS)}"]})
        estimated = whole(body["estimated_completion_time"], "estimated_completion_time", 1)
        maximum = body.get("maximum_allowed_time")
        maximum = least_maximum(estimated) if maximum is None else whole(maximum, "maximum_allowed_time", estimated)
        filters = body.get("filters") or []
        self._check_filters(filters)
        study = {
            "id": new_id(), "name": str(body["name"]), "internal_name": body.get("internal_name") or "",
            "description": str(body["description"]), "external_study_url": url,
            "prolific_id_option": body.get("prolific_id_option", "url_parameters"), "completion_codes": codes,
            "total_available_places": whole(body["total_available_places"], "total_available_places", 1),
            "estimated_completion_time": estimated, "maximum_allowed_time": maximum,
            "reward": whole(body["reward"], "reward", 0), "device_compatibility": body.get("device_compatibility") or [],
            "filters": filters, "project": body.get("project") or self.state["project_id"], "currency_code": self.currency,
            "status": UNPUBLISHED, "stopped": False, "created_at": now, "published_at_epoch": None,
        }
        self.state["studies"][study["id"]] = study
        return self.study_view(study)

    def _check_filters(self, filters) -> None:
        if not isinstance(filters, list):
            raise Refused(400, {"filters": ["a list of filters"]})
        for f in filters:
            if not isinstance(f, dict) or f.get("filter_id") not in GROUP_FILTERS:
                raise Refused(400, {"filters": [f"{f!r}: the stand-in knows the filters {', '.join(GROUP_FILTERS)}"]})
            values = f.get("selected_values")
            if not isinstance(values, list) or not values:
                raise Refused(400, {"filters": [f"{f['filter_id']}: selected_values must list group ids"]})
            unknown = [v for v in values if v not in self.state["groups"]]
            if unknown:
                raise Refused(400, {"filters": [f"{f['filter_id']}: no participant group {', '.join(map(str, unknown))}"]})

    def patch_study(self, study_id: str, body: dict) -> dict:
        study = self._study(study_id)
        if not isinstance(body, dict) or not body:
            raise Refused(400, "Nothing to update: send the fields to change")
        allowed = {"total_available_places", "name", "internal_name", "description"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise Refused(400, {name: ["The stand-in cannot update this field."] for name in unknown})
        if "total_available_places" in body:
            places = whole(body["total_available_places"], "total_available_places", 1)
            if places < study["total_available_places"]:
                raise Refused(400, {"total_available_places": [
                    f"Places can only be increased ({study['total_available_places']} now, {places} asked)"]})
            if study["status"] != UNPUBLISHED and not study["stopped"]:
                extra = (places - study["total_available_places"]) * self._place_cost(study)
                if extra > self.available():
                    raise Refused(400, f"Insufficient funds: {places - study['total_available_places']} more places cost "
                                       f"{extra} cents with fees; the available balance is {self.available()} cents")
            study["total_available_places"] = places
        for name in ("name", "internal_name", "description"):
            if name in body:
                study[name] = str(body[name])
        return self.study_view(study)

    def transition_study(self, study_id: str, body: dict, now: float) -> dict:
        study = self._study(study_id)
        action = body.get("action") if isinstance(body, dict) else None
        if action not in STUDY_ACTIONS:
            raise Refused(400, {"action": [f"{action!r} is not one of {', '.join(STUDY_ACTIONS)}"]})
        status = self.study_status(study)
        if action == "PUBLISH":
            if status != UNPUBLISHED:
                raise Refused(400, f"The study is {status}: only an UNPUBLISHED study can be published")
            cost = study["total_available_places"] * self._place_cost(study)
            if cost > self.available():
                raise Refused(400, f"Insufficient funds: {study['total_available_places']} places cost {cost} cents with "
                                   f"fees; the available balance is {self.available()} cents. Top up the workspace.")
            study.update(status=ACTIVE, published_at_epoch=now)
        elif action == "PAUSE":
            if status != ACTIVE:
                raise Refused(400, f"The study is {status}: only an ACTIVE study can be paused")
            study["status"] = PAUSED
        elif action == "START":
            if status != PAUSED:
                raise Refused(400, f"The study is {status}: only a PAUSED study can be started again")
            study["status"] = ACTIVE
        else:
            if status not in (ACTIVE, PAUSED) or study["stopped"]:
                raise Refused(400, f"The study is {status}: only an ACTIVE or PAUSED study can be stopped")
            study["stopped"] = True
        return self.study_view(study)

    # -- submissions

    def _submission(self, submission_id: str) -> dict:
        return self._find("submissions", submission_id, "submission")

    def submission_view(self, submission: dict) -> dict:
        """Everything the stand-in knows of a submission (the control API and ``state/``); the API shows the
        reference's shapes (``standin_http.submission_listed`` and ``submission_detail``)."""
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

    # -- bonuses

    def create_bonus(self, body: dict, now: float) -> dict:
        if not isinstance(body, dict) or not body.get("study_id"):
            raise Refused(400, {"study_id": ["This field is required."]})
        study = self._study(body["study_id"])
        text = body.get("csv_bonuses")
        if not isinstance(text, str) or not text.strip():
            raise Refused(400, {"csv_bonuses": ["Lines '<participant or submission id>,<amount>' are required."]})
        subs = self._submissions_of(study)
        lines, bad = [], []
        for number, line in enumerate(text.strip().splitlines(), 1):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 2:
                raise Refused(400, {"csv_bonuses": [f"line {number} {line!r}: expected '<id>,<amount>'"]})
            amount = cents(parts[1], f"csv_bonuses line {number}")
            if amount <= 0:
                raise Refused(400, {"csv_bonuses": [f"line {number}: the amount must be above 0"]})
            submission = next((s for s in subs if parts[0] in (s["participant_id"], s["id"])), None)
            if submission is None:
                bad.append(parts[0])
                continue
            lines.append({"participant_id": submission["participant_id"], "submission_id": submission["id"], "amount": amount})
        if bad:
            raise Refused(400, {"csv_bonuses": [f"Not taking part in study {study['id']}: {', '.join(bad)}"]})
        amount = sum(line["amount"] for line in lines)
        fees, vat = self.charges(amount)
        bonus = {"id": new_id(), "study": study["id"], "amount": amount, "fees": fees, "vat": vat,
                 "total_amount": amount + fees + vat, "lines": lines, "payments": [], "created_at": iso(now)}
        self.state["bonuses"][bonus["id"]] = bonus
        return self.bonus_view(bonus)

    def bonus_view(self, bonus: dict) -> dict:
        view = {k: v for k, v in bonus.items() if k not in ("lines", "payments")}
        pending = any(not p["settled"] for p in bonus["payments"])
        view["status"] = "PAYING" if pending else ("PAID" if bonus["payments"] else "CREATED")
        view["payments"] = len(bonus["payments"])
        return view

    def pay_bonus(self, bonus_id: str, now: float) -> None:
        bonus = self._find("bonuses", bonus_id, "bulk bonus payment")
        if bonus["total_amount"] > self.available():
            raise Refused(400, f"Insufficient funds: the bonuses cost {bonus['total_amount']} cents with fees; the "
                               f"available balance is {self.available()} cents")
        bonus["payments"].append({"paid_at": now, "settled": False})

    def _settle(self, bonus: dict, payment: dict, now: float) -> None:
        payment["settled"] = True
        last = len(bonus["lines"]) - 1
        for index, line in enumerate(bonus["lines"]):
            submission = self.state["submissions"][line["submission_id"]]
            # The bulk's fee and VAT are charged with its last line: the ledger adds up to the bulk's exactly.
            fee, vat = (bonus["fees"], bonus["vat"]) if index == last else (0, 0)
            submission["bonus_payments"].append(line["amount"])
            self._charge("bonus", submission, line["amount"], fee, vat, now, bonus["id"])

    # -- participant groups

    def _group(self, group_id: str) -> dict:
        return self._find("groups", group_id, "participant group")

    def group_view(self, group: dict) -> dict:
        view = {k: v for k, v in group.items() if k != "participants"}
        view["participant_count"] = len(group["participants"])
        return view

    def _participant_ids(self, body) -> list[str]:
        ids = body.get("participant_ids") if isinstance(body, dict) else None
        if not isinstance(ids, list) or not ids:
            raise Refused(400, {"participant_ids": ["A list of participant ids is required."]})
        bad = [i for i in ids if not isinstance(i, str) or not HEX_ID.match(i)]
        if bad:
            raise Refused(400, {"participant_ids": [f"Not Prolific ids (24 lower-case hex characters): {bad!r}"]})
        return ids

    def create_group(self, body: dict, now: float) -> dict:
        if not isinstance(body, dict) or not str(body.get("name") or "").strip():
            raise Refused(400, {"name": ["This field is required."]})
        owner = body.get("workspace_id") or body.get("project_id")
        if owner not in (self.state["workspace_id"], self.state["project_id"]):
            raise Refused(400, {"workspace_id": [f"Send the workspace_id ({self.state['workspace_id']}) or project_id "
                                                 f"({self.state['project_id']}) of the token's workspace, not {owner!r}"]})
        ids = self._participant_ids(body) if body.get("participant_ids") else []
        group = {"id": new_id(), "name": str(body["name"]), "description": str(body.get("description") or ""),
                 "workspace_id": self.state["workspace_id"], "project_id": body.get("project_id"),
                 "is_deleted": False, "created_at": iso(now), "participants": {}}
        for pid in ids:
            group["participants"].setdefault(pid, iso(now))
        self.state["groups"][group["id"]] = group
        return self.group_view(group)

    def change_members(self, group_id: str, body: dict, add: bool, now: float) -> list[dict]:
        group = self._group(group_id)
        for pid in self._participant_ids(body):
            if add:
                group["participants"].setdefault(pid, iso(now))
            else:
                group["participants"].pop(pid, None)
        return self.members(group)

    @staticmethod
    def members(group: dict) -> list[dict]:
        return [{"participant_id": pid, "datetime_created": at} for pid, at in group["participants"].items()]

    # -- the API

    def me(self) -> dict:
        return {"id": self.state["user_id"], "email": "researcher@standin.invalid", "name": "Stand-in researcher",
                "current_project_id": self.state["project_id"], "current_workspace_id": self.state["workspace_id"],
                "currency_code": self.currency}

    def workspace(self, workspace_id: str | None = None) -> dict:
        """The token's one workspace (with its one project)."""
        if workspace_id is not None and workspace_id != self.state["workspace_id"]:
            raise Refused(404, f"No workspace with id {workspace_id!r}")
        return {"id": self.state["workspace_id"], "title": "Stand-in workspace", "currency_code": self.currency,
                "projects": [{"id": self.state["project_id"]}], "owner": self.state["user_id"]}

    def project(self, project_id: str) -> dict:
        if project_id != self.state["project_id"]:
            raise Refused(404, f"No project with id {project_id!r}")
        return {"id": project_id, "title": "Stand-in project", "workspace": self.state["workspace_id"],
                "owner": self.state["user_id"]}

    def workspace_balance(self, workspace_id: str) -> dict:
        self.workspace(workspace_id)
        return self.balance_view()

    def call(self, method: str, path: str, query: dict | None = None, body: Any = None) -> tuple[int, Any]:
        """One API request (``path`` with its ``/api/v1`` prefix), as (status, body); a refusal raises ``Refused``."""
        found = [(m, route.match(path), status, operation) for m, route, status, operation in ROUTES]
        found = [(m, match, status, operation) for m, match, status, operation in found if match]
        if not found:
            raise Refused(404, f"Nothing at {path}")
        for m, match, status, operation in found:
            if m == method:
                with self.session() as now:
                    return status, operation(self, Call(match.groups(), body, query or {}, path, now))
        raise Refused(405, f"Method {method} not allowed on {path}")

    # -- everything, for tests and rehearsals

    def dump(self) -> dict:
        with self.session() as now:
            paid: dict[str, dict] = {}
            totals = {"rewards": 0, "bonuses": 0, "fees": 0, "vat": 0}
            for entry in self.state["ledger"]:
                mine = paid.setdefault(entry["participant_id"], {"rewards": 0, "bonuses": 0})
                key = "rewards" if entry["kind"] == "reward" else "bonuses"
                mine[key] += entry["amount"]
                totals[key] += entry["amount"]
                totals["fees"] += entry["fees"]
                totals["vat"] += entry["vat"]
            return {
                "now": iso(now), "fee_rate": str(self.fee_rate), "vat_rate": str(self.vat_rate), "currency": self.currency,
                "settle_seconds": self.settle_seconds,
                "page_size": self.page_size, "user_id": self.state["user_id"],
                "workspace_id": self.state["workspace_id"], "project_id": self.state["project_id"],
                "initial_balance": self.initial_balance, "balance": self.balance_view(),
                "studies": [self.study_view(s) for s in self.state["studies"].values()],
                "submissions": [self.submission_view(s) for s in self.state["submissions"].values()],
                "groups": [dict(self.group_view(g), participant_ids=list(g["participants"]))
                           for g in self.state["groups"].values()],
                "bonuses": [dict(self.bonus_view(b), lines=b["lines"],
                                 pay_calls=[dict(p, paid_at=iso(p["paid_at"])) for p in b["payments"]])
                            for b in self.state["bonuses"].values()],
                "paid": paid, "totals": dict(totals, spent=sum(totals.values())),
                "ledger": list(self.state["ledger"]), "faults": [dict(f) for f in self.faults],
            }

    # -- faults

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
                fault["fired"] += 1
                if fault["times"] is not None:
                    fault["times"] -= 1
                    if fault["times"] == 0:
                        self.faults.remove(fault)
                return dict(fault)
            return None

    # -- listings

    def page(self, items: list, path: str, query: dict) -> dict:
        """One page of ``items`` (``?page=N``; ``?page_size=M`` or the stand-in's ``page_size`` each) with Prolific's
        ``_links`` and ``meta``."""
        try:
            number = int(query.get("page", 1))
        except ValueError:
            raise Refused(400, {"page": [f"{query.get('page')!r} is not a page number"]}) from None
        if number < 1:
            raise Refused(400, {"page": ["Page numbers start at 1"]})
        size = query.get("page_size", self.page_size)
        if not str(size).isdigit() or not 1 <= int(size) <= 200:
            raise Refused(400, {"page_size": [f"{size!r} is not a page size from 1 to 200"]})
        size = int(size)
        last = max(1, -(-len(items) // size))

        def link(n: int | None) -> dict:
            return {"href": None if n is None else f"{self.url}{path}?{urlencode(dict(query, page=n))}", "title": None}

        return {
            "results": items[(number - 1) * size:number * size],
            "_links": {"self": link(number), "next": link(number + 1 if number < last else None),
                       "previous": link(number - 1 if number > 1 else None), "last": link(last)},
            "meta": {"count": len(items)},
        }


# ---------------------------------------------------------------------------------------------- in tests


class RunningStandIn:
    """A stand-in served in a thread, as ``running_standin`` yields it."""

    def __init__(self, server: ProlificStandIn):
        self.server, self.url, self.token = server, server.url, server.token

    def control(self, method: str, path: str, json: Any = None) -> Any:
        """Call the control API (``path`` under ``/__control/``); raises ``Refused`` with its answer on an error."""
        path = path if path.startswith(CONTROL) else CONTROL + "/" + path.lstrip("/")
        data = None if json is None else _dumps(json)
        request = urllib.request.Request(self.url + path, data=data, method=method.upper(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            answer = exc.read()
            try:
                error = _loads(answer)["error"]
                raise Refused(exc.code, error.get("detail"), error.get("title")) from None
            except (ValueError, KeyError, TypeError):
                raise Refused(exc.code, answer.decode("utf-8", "replace")) from None
        return _loads(text) if text else None

    def state(self) -> dict:
        return self.control("GET", "state/")

    def reset(self, balance=None) -> None:
        self.control("POST", "reset/", {} if balance is None else {"balance": str(balance)})


# ``control``'s argument ``json`` hides the module there.
_dumps = lambda value: json.dumps(value).encode()  # noqa: E731
_loads = json.loads


@contextmanager
def running_standin(token: str = DEFAULT_TOKEN, **options) -> Iterator[RunningStandIn]:
    """A Prolific stand-in on a free port of 127.0.0.1, served in a thread while the block runs.

    ``options``: ``balance`` (in the currency), ``fee_rate``, ``page_size``, ``settle_seconds``, ``currency``,
    ``vat_rate`` (see ``ProlificStandIn``)."""
    server = ProlificStandIn(port=0, token=token, **options).start()
    try:
        yield RunningStandIn(server)
    finally:
        server.stop()
