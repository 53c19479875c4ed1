"""The MTurk stand-in's wire: the request handler (the JSON 1.1 API with injected faults, externalSubmit,
the control API under ``/_standin``) and its pages.

Standard library only, as the stand-in; it imports nothing from ``hits.mturk.standin`` (which builds on it):
the handler reaches the stand-in through ``self.standin``.
"""

from __future__ import annotations

import json
import re
import uuid
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from hits.markets.standin import StandInHandler, drop_connection
from hits.mturk.standin.common import (
    CONTROL,
    FAULT_AFTER,
    PREVIEW_ID,
    Refused,
    SERVICE_FAULT,
    SUBMIT_PATH,
    TARGET_PREFIX,
    THROTTLE,
    WorkerRefused,
)

SUBMITTED_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>HIT submitted</title></head><body>"
    "<h1>Your work was submitted</h1><p>Assignment {assignment} of HIT {hit} (MTurk stand-in).</p></body></html>"
)
REFUSED_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>Not submitted</title></head><body>"
    "<h1>This submission was not recorded</h1><p>{message}</p></body></html>"
)


def _count(value) -> int | None:
    """A fault's ``count`` from JSON or a form: a positive integer, or null / "" / "none" for until cleared."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
        return None
    if isinstance(value, bool):
        raise ValueError("count must be a positive integer or null")
    return int(value)


class Handler(StandInHandler):
    server_version = "MTurkStandIn/1.0"

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's name
        pass  # calls are logged one line each by _api; the access log would only repeat them

    def _json(self, status: int, payload, headers: dict | None = None, content_type: str = "application/json") -> None:
        self._send(status, json.dumps(payload).encode(), content_type, headers)

    def _route(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return self._json(400, {"error": "Content-Length is not a number"})
        body = self.rfile.read(length) if length > 0 else b""
        path, _, query = self.path.partition("?")
        target = self.headers.get("X-Amz-Target")
        try:
            if method == "POST" and target:
                self._api(target, body)
            elif path == SUBMIT_PATH:
                self._external_submit(body if method == "POST" else query.encode())
            elif path.startswith(CONTROL + "/"):
                self._control(method, path[len(CONTROL):], query, body)
            else:
                self._json(404, {"error": f"nothing at {method} {path}"})
        except BrokenPipeError:
            pass

    # requester API (JSON 1.1)

    def _api(self, target: str, body: bytes) -> None:
        request_id = str(uuid.uuid4())
        headers = {"x-amzn-RequestId": request_id}
        content_type = "application/x-amz-json-1.1"
        operation = target[len(TARGET_PREFIX):] if target.startswith(TARGET_PREFIX) else target
        key = re.search(r"Credential=([^/,\s]+)/", self.headers.get("Authorization", ""))  # SigV4: Credential=<key>/<date>/...
        if self.standin.access_key is not None and (key and key.group(1)) != self.standin.access_key:  # AWS's 403 for an unknown key
            self._log(f"{operation}: UnrecognizedClientException (unknown access key)")
            return self._json(403, {"__type": "UnrecognizedClientException", "Message": "The security token included in the request is invalid."}, headers, content_type)
        fault = self.standin._fault_for(operation)
        if fault == THROTTLE:
            self._log(f"{operation}: ThrottlingException (injected)")
            return self._json(400, {"__type": "ThrottlingException", "Message": "Rate exceeded"}, headers, content_type)
        if fault == SERVICE_FAULT:
            self._log(f"{operation}: ServiceFault (injected, not done)")
            return self._json(500, self._service_fault(request_id), headers, content_type)
        try:
            if not target.startswith(TARGET_PREFIX):
                raise Refused(f"Operation {target} is not an MTurk requester operation.", error_type="UnknownOperationException")
            try:
                params = json.loads(body or b"{}")
            except ValueError:
                raise Refused("The request body is not JSON", error_type="SerializationException") from None
            result = self.standin.call(operation, params, request_id)
        except Refused as exc:
            self._log(f"{operation}: {exc.error_type} {exc.turk_code or '-'}: {exc.message}")
            if fault is not None:
                return self._lose(operation, fault, request_id, headers, content_type)
            error = {"__type": exc.error_type, "Message": f"{exc.message} (RequestId: {request_id})"}
            if exc.turk_code:
                error["TurkErrorCode"] = exc.turk_code
            self._json(exc.status, error, headers, content_type)
            return
        except Exception as exc:  # a bug of the stand-in: MTurk's ServiceFault, so the caller sees it plainly
            self._log(f"{operation}: ServiceFault: {exc!r}")
            fault = {"__type": "ServiceFault", "Message": f"MTurk stand-in failure: {exc!r} (RequestId: {request_id})"}
            self._json(500, fault, headers, content_type)
            return
        self._log(f"{operation}: ok")
        if fault is not None:
            return self._lose(operation, fault, request_id, headers, content_type)
        self._json(200, result, headers, content_type)

    @staticmethod
    def _service_fault(request_id: str) -> dict:
        return {
            "__type": "ServiceFault",
            "Message": f"Amazon Mechanical Turk is temporarily unable to process your request. (RequestId: {request_id})",
        }

    def _lose(self, operation: str, fault: str, request_id: str, headers: dict, content_type: str) -> None:
        """The call was done; its answer never arrives (``lost_reply``) or is a ServiceFault (``fault_after``)."""
        if fault == FAULT_AFTER:
            self._log(f"{operation}: done, then ServiceFault (injected)")
            return self._json(500, self._service_fault(request_id), headers, content_type)
        self._log(f"{operation}: done, reply lost (injected)")
        drop_connection(self)

    def _log(self, line: str) -> None:
        if self.standin.log is not None:
            self.standin.log(line)

    # the HIT page's submission

    def _external_submit(self, form: bytes) -> None:
        fields = parse_qsl(form.decode("utf-8", "replace"), keep_blank_values=True)
        assignment_id = next((value for name, value in fields if name == "assignmentId"), None)
        try:
            if not assignment_id or assignment_id == PREVIEW_ID:
                raise WorkerRefused("the form has no assignmentId of an accepted assignment", 400, "invalid")
            done = self.standin.submit(assignment_id, fields)
        except WorkerRefused as exc:
            self._log(f"externalSubmit {assignment_id}: refused: {exc.message}")
            self._send(exc.status, REFUSED_PAGE.format(message=escape(exc.message)).encode(), "text/html; charset=utf-8")
            return
        self._log(f"externalSubmit {assignment_id}: {done['status']}")
        page = SUBMITTED_PAGE.format(assignment=escape(assignment_id), hit=escape(done["HITId"]))
        self._send(200, page.encode(), "text/html; charset=utf-8")

    # worker simulation and control

    def _control(self, method: str, path: str, query: str, body: bytes) -> None:
        data: dict = dict(parse_qsl(query, keep_blank_values=True))
        if body:
            if (self.headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
                data.update(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            else:
                try:
                    loaded = json.loads(body)
                except ValueError:
                    return self._json(400, {"error": "the body must be JSON or a form"})
                if not isinstance(loaded, dict):
                    return self._json(400, {"error": "the body must be a JSON object"})
                data.update(loaded)
        standin = self.standin
        routes = {
            ("GET", "/state"): lambda: standin.dump(),
            ("POST", "/advance"): lambda: {"now": standin.advance(float(data.get("seconds", 0)))},
            ("POST", "/balance"): lambda: {"balance": standin.set_balance(data.get("balance", data.get("AvailableBalance")))},
            ("POST", "/reset"): lambda: standin.reset(data.get("balance")) or {"reset": True},
            ("POST", "/dispose"): lambda: standin.dispose(data.get("HITId")) or {"disposed": data.get("HITId")},
            ("GET", "/faults"): lambda: {"faults": standin.fault_list(), "requests": dict(standin.requests)},
            ("POST", "/faults"): lambda: {
                "added": standin.inject(
                    data.get("operation"), data.get("kind"), _count(data.get("count", 1)), float(data.get("rate", 1.0))
                ),
                "faults": standin.fault_list(),
            },
            ("DELETE", "/faults"): lambda: {"removed": standin.clear_faults(data.get("operation"))},
            ("GET", "/worker/hits"): lambda: {"HITs": standin.discoverable(data.get("WorkerId", ""))},
            ("GET", "/worker/preview"): lambda: standin.preview(data.get("HITId"), data.get("WorkerId")),
            ("POST", "/worker/accept"): lambda: standin.accept(data.get("HITId"), data.get("WorkerId")),
            ("POST", "/worker/return"): lambda: standin.return_assignment(data.get("AssignmentId")),
            ("POST", "/worker/qualification"): lambda: standin.set_worker_score(
                data.get("WorkerId"), data.get("QualificationTypeId"), data.get("IntegerValue"), data.get("LocaleValue")
            ),
        }
        action = routes.get((method, path))
        if action is None:
            return self._json(404, {"error": f"nothing at {method} {CONTROL}{path}"})
        try:
            result = action()
        except WorkerRefused as exc:
            self._log(f"{CONTROL}{path}: refused: {exc.message}")
            return self._json(exc.status, {"error": exc.message, "reason": exc.reason})
        except Refused as exc:
            return self._json(400, {"error": exc.message, "reason": "invalid"})
        except (TypeError, ValueError) as exc:
            return self._json(400, {"error": str(exc), "reason": "invalid"})
        except Exception as exc:  # a bug of the stand-in: say so instead of dropping the connection
            return self._json(500, {"error": f"MTurk stand-in failure: {exc!r}", "reason": "failure"})
        if path != "/state":
            self._log(f"{CONTROL}{path}: ok")
        self._json(200, result)
