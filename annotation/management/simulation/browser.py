"""The simulated people's HTTP side: a browser with cookies and CSRF, plain requests, the in-process server."""

from __future__ import annotations

import http.cookiejar
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.core.handlers.wsgi import WSGIHandler

from hits.models import Assignment

_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class HttpWorker:
    """One simulated person's browser: cookies, CSRF token, no automatic redirects."""

    def __init__(self, base_url: str, username: str, password: str):
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect())

    def request(self, path: str, data: dict | None = None) -> tuple[int, str, str]:
        """(status, Location header, body) of a GET, or of a POST when ``data`` is given."""
        url = path if path.startswith("http") else self.base_url + path
        body = None
        headers = {"Referer": self.base_url + "/"}
        if data is not None:
            data = {**data, "csrfmiddlewaretoken": self._csrf_token()}
            body = urllib.parse.urlencode(data, doseq=True).encode()
        req = urllib.request.Request(url, data=body, headers=headers)
        try:
            with self.opener.open(req, timeout=60) as response:
                return response.status, response.headers.get("Location", ""), response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("Location", ""), exc.read().decode(errors="replace")

    def _csrf_token(self) -> str:
        for cookie in self.cookies:
            if cookie.name == "csrftoken":
                return cookie.value
        return ""

    def log_in(self) -> None:
        status, _, body = self.request("/accounts/login/")
        match = _CSRF_INPUT.search(body)
        if status != 200 or not match:
            raise RuntimeError(f"login page answered {status}")
        status, location, _ = self.request(
            "/accounts/login/", {"username": self.username, "password": self.password, "next": "/work/"}
        )
        if status != 302:
            raise RuntimeError(f"{self.username} could not log in (status {status})")

    # --- the worker pages' buttons (the simulated crowd's page driver) -------------------------------------------

    def start_task(self, slug: str):
        """Press "start" for a task type: the assignment the page redirects to (with its HIT), or None."""
        status, location, _ = self.request(f"/work/{slug}/start/", {})
        match = re.search(r"/work/assignments/(\d+)/", location or "")
        if status != 302 or not match:
            return None
        return Assignment.objects.select_related("hit").get(pk=int(match.group(1)))

    def submit_answers(self, assignment, data: dict) -> bool:
        """Post the HIT page's form: True when the page took it (a redirect), False when validation refused it."""
        status, _, _ = self.request(f"/work/assignments/{assignment.pk}/", {**data, "action": "submit"})
        return status == 302

    def give_back(self, assignment) -> None:
        self.request(f"/work/assignments/{assignment.pk}/", {"action": "return"})


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def _closing_connections(app):
    """Each request runs in a new thread: close its database connection when the request ends."""
    from django.db import connections

    def wrapped(environ, start_response):
        try:
            return list(app(environ, start_response))
        finally:
            connections.close_all()

    return wrapped


def loopback_settings() -> None:
    """Let this process's own loopback server answer plain HTTP under production settings (DEBUG off).

    The server below listens on 127.0.0.1 only, inside the command that started it, for the simulated people of
    that command; without this, DEBUG off refuses its address (``ALLOWED_HOSTS`` is empty), redirects every request
    to HTTPS and marks the session and CSRF cookies Secure, which a plain-HTTP client never sends back.  Nothing
    else of the process serves requests, so the change reaches no real visitor."""
    from django.conf import settings

    if "127.0.0.1" not in settings.ALLOWED_HOSTS and "*" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "127.0.0.1"]
    settings.SECURE_SSL_REDIRECT = False
    settings.SESSION_COOKIE_SECURE = False
    settings.CSRF_COOKIE_SECURE = False


def serve_in_background():
    """Serve the Django application on a free loopback port; returns (server, base URL)."""
    loopback_settings()
    server = make_server(
        "127.0.0.1", 0, _closing_connections(WSGIHandler()), server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def http_request(method: str, url: str, data: dict | None = None, as_json: bool = False):
    """(status, body text) of one request; errors are answers too."""
    body = None
    headers = {}
    if data is not None:
        if as_json:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        else:
            body, headers["Content-Type"] = urllib.parse.urlencode(data, doseq=True).encode(), "application/x-www-form-urlencoded"
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")
