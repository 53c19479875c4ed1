"""The Prolific stand-in's wire (``state.ProlificStandIn`` keeps the state, its mixins the operations): the shapes
of a submission in a study's list and on its own, the route table of the API, and the request handler (the API,
the participant's pages, the control API).

Standard library only, as the stand-in; it imports nothing of the modules that build on it.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Callable
from urllib.parse import parse_qsl

from hits.markets.standin import StandInHandler, drop_connection
from hits.prolific.standin.common import (
    API, CONTROL, HEX_ID, RETURNED, TIMED_OUT, Refused, cents, iso, json_object,
)

COOKIE = "prolific_participant"

PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
        "<h1>{title}</h1><p>{message}</p><p><small>Prolific stand-in</small></p></body></html>")


def submission_listed(submission: dict) -> dict:
    """A submission as a study's list shows it (``GET /studies/{id}/submissions/``, the reference's
    ``SubmissionShort``): who, its status and times, the code entered.  No ``bonus_payments``, no reward: those
    are read from the submission itself (``submission_detail``)."""
    return {
        "id": submission["id"], "participant_id": submission["participant_id"], "status": submission["status"],
        "started_at": iso(submission["started_at"]), "completed_at": iso(submission["completed_at"]),
        "has_siblings": False, "study_code": submission["study_code"], "return_requested": submission["return_requested"],
    }


def submission_detail(submission: dict) -> dict:
    """A submission on its own (``GET /submissions/{id}/``, "Retrieve a submission"): as the reference lists it,
    with ``participant`` (not ``participant_id``), ``study_id``, ``entered_code`` and ``bonus_payments`` (cents,
    one per payment made)."""
    return {
        "id": submission["id"], "started_at": iso(submission["started_at"]), "status": submission["status"],
        "study_id": submission["study_id"], "completed_at": iso(submission["completed_at"]),
        "entered_code": submission["study_code"], "participant": submission["participant_id"], "parent_study_id": None,
        "bonus_payments": list(submission["bonus_payments"]), "return_requested": submission["return_requested"],
    }


def _submissions_page(s: "Any", study_id: str, r: "Call") -> dict:
    return s.page([submission_listed(x) for x in s._submissions_of(s._study(study_id))], r.path, r.query)


def _study_of_query(r: "Call") -> str:
    if not r.query.get("study"):
        raise Refused(400, {"study": ["Give the study whose submissions to list (?study=ID)"]})
    return r.query["study"]


def _pay(s: "Any", bonus_id: str, now: float) -> None:
    s.pay_bonus(bonus_id, now)


class Call:
    """One API request as the operations see it: the path's ids, the JSON body, the query, the instant."""

    def __init__(self, ids: tuple, body: Any, query: dict, path: str, now: float):
        self.ids, self.body, self.query, self.path, self.now = ids, body, query, path, now

    @property
    def id(self) -> str:
        return self.ids[0]

    @property
    def object(self) -> dict:
        return json_object(self.body)


# (method, path under /api/v1, status of a success, operation(stand-in, call) -> body)
OPERATIONS: list[tuple[str, str, int, Callable[["Any", Call], Any]]] = [
    ("GET", "/users/me/", 200, lambda s, r: s.me()),
    ("GET", "/workspaces/", 200, lambda s, r: s.page([s.workspace()], r.path, r.query)),
    ("GET", "/workspaces/{}/", 200, lambda s, r: s.workspace(r.id)),
    ("GET", "/workspaces/{}/balance/", 200, lambda s, r: s.workspace_balance(r.id)),
    ("GET", "/projects/{}/", 200, lambda s, r: s.project(r.id)),
    ("GET", "/studies/", 200, lambda s, r: s.page([s.study_view(x) for x in s.state["studies"].values()], r.path, r.query)),
    ("POST", "/studies/", 201, lambda s, r: s.create_study(r.object, r.now)),
    ("POST", "/study-cost-calculator/", 200, lambda s, r: s.study_cost(r.object)),
    ("GET", "/studies/{}/", 200, lambda s, r: s.study_view(s._study(r.id))),
    ("PATCH", "/studies/{}/", 200, lambda s, r: s.patch_study(r.id, r.object)),
    ("POST", "/studies/{}/transition/", 200, lambda s, r: s.transition_study(r.id, r.object, r.now)),
    ("GET", "/studies/{}/submissions/", 200, lambda s, r: _submissions_page(s, r.id, r)),
    ("GET", "/submissions/", 200, lambda s, r: _submissions_page(s, _study_of_query(r), r)),
    ("POST", "/submissions/bulk-approve/", 200, lambda s, r: s.bulk_approve(r.object, r.now)),
    ("POST", "/submissions/bonus-payments/", 201, lambda s, r: s.create_bonus(r.object, r.now)),
    ("GET", "/submissions/{}/", 200, lambda s, r: submission_detail(s._submission(r.id))),
    ("POST", "/submissions/{}/transition/", 200, lambda s, r: submission_detail(s.transition_submission(r.id, r.object, r.now))),
    ("POST", "/bulk-bonus-payments/{}/pay/", 202, lambda s, r: _pay(s, r.id, r.now)),
    ("POST", "/messages/", 204, lambda s, r: s.send_message(r.body, r.now)),
    ("POST", "/messages/bulk/", 204, lambda s, r: s.bulk_message(r.body, r.now)),
    ("GET", "/participant-groups/", 200, lambda s, r: s.page([s.group_view(g) for g in s.state["groups"].values()],
                                                             r.path, r.query)),
    ("POST", "/participant-groups/", 201, lambda s, r: s.create_group(r.object, r.now)),
    ("GET", "/participant-groups/{}/", 200, lambda s, r: s.group_view(s._group(r.id))),
    ("GET", "/participant-groups/{}/participants/", 200, lambda s, r: s.page(s.members(s._group(r.id)), r.path, r.query)),
    ("POST", "/participant-groups/{}/participants/", 200,
     lambda s, r: {"results": s.change_members(r.id, r.object, True, r.now)}),
    ("DELETE", "/participant-groups/{}/participants/", 200,
     lambda s, r: {"results": s.change_members(r.id, r.object, False, r.now)}),
]
ROUTES = [(method, re.compile("^" + API + re.escape(path).replace(r"\{\}", "([0-9a-zA-Z_-]+)") + "$"), status, operation)
          for method, path, status, operation in OPERATIONS]


class Handler(StandInHandler):
    server_version = "ProlificStandIn/1.0"

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's name
        if self.standin.log is not None:
            self.standin.log("%s %s" % (self.address_string(), format % args))

    # answers

    def _json(self, status: int, payload, headers: dict | None = None) -> None:
        self._send(status, b"" if payload is None else json.dumps(payload).encode(), headers=headers)

    def _page(self, status: int, title: str, message: str, headers: dict | None = None) -> None:
        page = PAGE.format(title=html.escape(title), message=html.escape(message))
        self._send(status, page.encode(), "text/html; charset=utf-8", headers)

    # dispatch

    def _route(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return self._json(400, Refused(400, "Content-Length is not a number").body())
        raw = self.rfile.read(length) if length > 0 else b""
        path, _, query_text = self.path.partition("?")
        query = dict(parse_qsl(query_text, keep_blank_values=True))
        try:
            if path.startswith(API + "/"):
                self._api(method, path, query, raw)
            elif path.startswith(CONTROL + "/"):
                self._control(method, path[len(CONTROL):], raw)
            elif method == "GET" and re.match(r"^/studies/[^/]+/start/?$", path):
                self._start_page(path.split("/")[2], query)
            elif method == "GET" and path.rstrip("/") == "/submissions/complete":
                self._complete_page(query)
            else:
                self._json(404, Refused(404, f"Nothing at {method} {path}").body(path))
        except BrokenPipeError:
            pass

    @staticmethod
    def _body(raw: bytes) -> Any:
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            raise Refused(400, "The request body is not JSON") from None

    def _api(self, method: str, path: str, query: dict, raw: bytes) -> None:
        standin = self.standin
        if self.headers.get("Authorization") != f"Token {standin.token}":
            detail = ("Authentication credentials were not provided." if not self.headers.get("Authorization")
                      else "Invalid token.")
            return self._json(401, Refused(401, detail).body(path))
        fault = standin.fault_for(method, path)
        if fault and fault["kind"] == "throttle":
            return self._json(429, Refused(429, "Request was throttled.").body(path),
                              {"Retry-After": f"{fault['retry_after']:g}"})
        if fault and fault["kind"] == "error":
            return self._json(fault["status"], Refused(fault["status"], "The stand-in failed on purpose (injected).").body(path))
        try:
            status, payload = self._dispatch(method, path, query, self._body(raw))
        except Refused as exc:
            status, payload = exc.status, exc.body(path)
        except Exception as exc:  # a bug of the stand-in: a plain 500, so the caller sees it
            status, payload = 500, Refused(500, f"Prolific stand-in failure: {exc!r}").body(path)
        if fault and fault["kind"] == "lost_reply":
            return drop_connection(self)
        self._json(status, payload)

    def _dispatch(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any]:
        return self.standin.call(method, path, query, body)

    # the participant's pages

    def _start_page(self, study_id: str, query: dict) -> None:
        try:
            with self.standin.session() as now:
                started = self.standin.start_participant(study_id, query.get("participant_id") or None, now)
        except Refused as exc:
            return self._page(exc.status, "You cannot take part in this study", str(exc))
        cookie = f"{COOKIE}={started['participant_id']}; Path=/; HttpOnly; SameSite=Lax"
        self._send(302, b"", "text/plain", {"Location": started["url"], "Set-Cookie": cookie})

    def _participant(self) -> str | None:
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and HEX_ID.match(value):
                return value
        return None

    def _complete_page(self, query: dict) -> None:
        participant = self._participant()
        code = query.get("cc", "")
        if participant is None:
            return self._page(400, "Submission not completed",
                              "We do not know who you are: start the study from Prolific (the stand-in's start link) first.")
        try:
            with self.standin.session() as now:
                done = self.standin.complete_by_participant(participant, code, now)
        except Refused as exc:
            return self._page(400, "Submission not completed", f"The completion code is not valid: {exc}")
        self._page(200, "Submission completed",
                   f"Thank you. Your submission {done['id']} for study {done['study_id']} is {done['status']}.")

    # control

    def _control(self, method: str, path: str, raw: bytes) -> None:
        standin = self.standin
        try:
            body = self._body(raw)
            status, payload = self._control_action(method, path, body)
        except Refused as exc:
            status, payload = exc.status, exc.body(CONTROL + path)
        except Exception as exc:
            status, payload = 500, Refused(500, f"Prolific stand-in failure: {exc!r}").body(CONTROL + path)
        if standin.log is not None and path != "/state/":
            standin.log(f"{method} {CONTROL}{path}: {status}")
        self._json(status, payload)

    def _control_action(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        standin = self.standin
        if not path.endswith("/"):
            path += "/"
        leave = re.match(r"^/submissions/([^/]+)/(complete|return|timeout)/$", path)
        if method == "POST" and leave:
            submission_id, what = leave.groups()
            with standin.session() as now:
                if what == "complete":
                    code = body.get("code") if isinstance(body, dict) else None
                    if not code:
                        raise Refused(400, "Send the completion code the participant came back with: {\"code\": ...}")
                    return 200, standin.complete(submission_id, code, now)
                return 200, standin.leave(submission_id, RETURNED if what == "return" else TIMED_OUT, now)
        if (method, path) == ("POST", "/participants/"):
            body = json_object(body)
            if not body.get("study_id"):
                raise Refused(400, {"study_id": ["This field is required."]})
            with standin.session() as now:
                return 201, standin.start_participant(body["study_id"], body.get("participant_id"), now)
        if (method, path) == ("POST", "/clock/"):
            seconds = json_object(body).get("advance_seconds", 0)
            return 200, {"now": iso(standin.advance(seconds))}
        if (method, path) == ("POST", "/faults/"):
            return 201, {"added": standin.add_fault(body), "faults": [dict(f) for f in standin.faults]}
        if (method, path) == ("GET", "/faults/"):
            return 200, {"faults": [dict(f) for f in standin.faults]}
        if (method, path) == ("DELETE", "/faults/"):
            with standin.lock:
                removed, standin.faults = len(standin.faults), []
            return 200, {"removed": removed}
        if (method, path) == ("POST", "/balance/"):
            balance = cents(json_object(body).get("balance"), "balance")
            with standin.session():
                standin.state["balance"] = balance
                return 200, standin.balance_view()
        if (method, path) == ("GET", "/messages/"):
            return 200, {"messages": standin.messages()}
        if (method, path) == ("GET", "/state/"):
            return 200, standin.dump()
        if (method, path) == ("POST", "/reset/"):
            balance = json_object(body).get("balance")
            try:
                standin.reset(balance)
            except ValueError as exc:
                raise Refused(400, str(exc)) from None
            return 200, {"reset": True, "balance": standin.balance_view()}
        raise Refused(404, f"Nothing at {method} {CONTROL}{path}")
