"""A small in-process Prolific for the publishing tests (until the stand-in of ``hits.prolific.standin`` serves
them): studies, their transitions and places, participant groups, and lost replies, behind ``httpx.MockTransport``."""

from __future__ import annotations

import itertools
import json
import re

import httpx

from hits.prolific.client import Prolific


class FakeProlific:
    def __init__(self):
        self.studies: dict[str, dict] = {}
        self.groups: dict[str, dict] = {}
        self.calls: list[tuple[str, str, dict | None]] = []
        self.faults: list[dict] = []
        self._ids = itertools.count(1)

    def client(self) -> Prolific:
        return Prolific(base_url="https://prolific.test", token="test-token", transport=httpx.MockTransport(self.handle),
                        sleep=lambda seconds: None)

    def lose_reply(self, method: str, path: str, times: int = 1, kind: str = "lost_reply"):
        self.faults.append({"method": method, "path": path, "times": times, "kind": kind})

    def _new_id(self) -> str:
        return f"{next(self._ids):024x}"

    def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == "Token test-token"
        method, path = request.method, request.url.path
        body = json.loads(request.content) if request.content else None
        self.calls.append((method, path, body))
        fault = next((f for f in self.faults if f["method"] == method and re.fullmatch(f["path"], path) and f["times"]), None)
        if fault and fault["kind"] == "error":
            fault["times"] -= 1
            return httpx.Response(503, json={"error": "unavailable"})
        response = self._answer(method, path, body, request)
        if fault:
            fault["times"] -= 1
            raise httpx.ReadError("connection dropped before the answer", request=request)
        return response

    def _answer(self, method, path, body, request) -> httpx.Response:
        if path == "/api/v1/users/me/":
            return httpx.Response(200, json={"id": "me", "current_workspace_id": "ws1"})
        if path == "/api/v1/studies/" and method == "POST":
            study = {**body, "id": self._new_id(), "status": "UNPUBLISHED"}
            self.studies[study["id"]] = study
            return httpx.Response(201, json=study)
        if path == "/api/v1/studies/" and method == "GET":
            return httpx.Response(200, json={"results": list(self.studies.values()), "_links": {"next": {"href": None}}})
        match = re.fullmatch(r"/api/v1/studies/(\w+)/(transition/)?", path)
        if match:
            study = self.studies.get(match[1])
            if study is None:
                return httpx.Response(404, json={"error": {"detail": "not found"}})
            if match[2]:
                action = body["action"]
                moves = {"PUBLISH": ({"UNPUBLISHED"}, "ACTIVE"), "PAUSE": ({"ACTIVE"}, "PAUSED"),
                         "START": ({"PAUSED"}, "ACTIVE"), "STOP": ({"ACTIVE", "PAUSED"}, "COMPLETED")}
                allowed, target = moves[action]
                if study["status"] not in allowed:
                    return httpx.Response(400, json={"error": {"detail": f"cannot {action} a study that is {study['status']}"}})
                study["status"] = target
                return httpx.Response(200, json=study)
            if method == "PATCH":
                if body["total_available_places"] < study["total_available_places"]:
                    return httpx.Response(400, json={"error": {"detail": "places can only increase"}})
                study.update(body)
            return httpx.Response(200, json=study)
        if path == "/api/v1/participant-groups/" and method == "POST":
            group = {**body, "id": self._new_id()}
            self.groups[group["id"]] = group
            return httpx.Response(201, json=group)
        if path == "/api/v1/participant-groups/" and method == "GET":
            return httpx.Response(200, json={"results": list(self.groups.values())})
        return httpx.Response(404, json={"error": {"detail": f"no route {method} {path}"}})

    def sent(self, method: str, pattern: str) -> list:
        return [body for m, p, body in self.calls if m == method and re.fullmatch(pattern, p)]
