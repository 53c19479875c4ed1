"""Every route the URL resolver knows, found automatically: strangers are refused, CSRF is enforced, and
hostile input is never a server error (issue 27, part 5).

The authorization matrix (test_authorization.py) names each route's expected status per role, and the
hostile-input tests (test_hostile_input.py) fuzz the forms they list.  These tests need no list: a route
added later (a new hand-out, framed-page or review endpoint) is reached by them on the day it is added,
with its parameters filled from the matrix world's objects, and with the fields of every form the owner's
and the worker's pages show.
"""

from __future__ import annotations

import itertools
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.exceptions import NoReverseMatch

from hits.models import Assignment
from tests.reliability.test_authorization import LOGIN, MATRIX, _researcher_object, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

# Values for each URL parameter name; a route not in the matrix is tried with every combination that reverses.
CANDIDATES = {
    "slug": ["matrix", "generation"],
    "campaign_slug": ["matrix"],
    "pk": ["ASSIGNMENT", "JOB", "EXAMPLE", "UNIT", "SYSTEM", "SUMMARY", "PREDICATE"],
    "token": ["TOKEN"],
}
# Routes that take no CSRF token by design: MTurk posts the framed HIT page (the assignment's secret token
# in the form plays that role); /api/token/ trades a user name and password for a token in the response
# body and sets no cookie, so a forged request gains its sender nothing.
CSRF_EXEMPT = {"mturk-hit", "api-token"}
PUBLIC = {name for name, (_, _, expected) in MATRIX.items() if expected[0] not in (LOGIN, 401, 403, 404)}

HOSTILE = ["", "9" * 5000, "-1", "NaN", "\u202e<script>x</script>", "//evil.example/", "\uff11\uff12", "[" * 3000, "x" * 5000]
HOSTILE_JSON = [
    '{"worker": ' + "9" * 5000 + "}", '{"amount": NaN, "reason": Infinity}', "[" * 50_000, '{"a": "\\ud800"}',
    '{"worker": "nobody", "username": "", "message": "x", "judge": "lexical", "name": "' + "x" * 3000 + '"}',
]
GENERIC_FIELDS = ["action", "worker", "hit", "next", "page", "message", "amount", "name", "slug", "upload", "assignmentId", "hitId", "workerId"]


def _routes(resolver=None, prefix=""):
    """The name of every named route outside the Django admin, as ``reverse`` names it (``namespace:name``)."""
    resolver = resolver or get_resolver()
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace != "admin":
                yield from _routes(pattern, f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield prefix + pattern.name


def _urls(world_objects) -> list[tuple[str, str]]:
    """(route name, URL) of every route: the matrix's parameters, else each combination of CANDIDATES."""
    _, assignment, invitation = world_objects

    def fill(value):
        return assignment.pk if value == "ASSIGNMENT" else invitation.token if value == "TOKEN" else _researcher_object(value)

    found = []
    for name in sorted(set(_routes())):
        if name in MATRIX:
            found.append((name, reverse(name, kwargs={k: fill(v) for k, v in MATRIX[name][1].items()})))
            continue
        params = next(iter(get_resolver().reverse_dict.getlist(name)))[0][0][1]
        urls = set()
        for combo in itertools.product(*(CANDIDATES.get(p, ["1"]) for p in params)):
            try:
                urls.add(reverse(name, kwargs={p: fill(v) for p, v in zip(params, combo)}))
            except NoReverseMatch:
                continue
        assert urls, f"route {name} ({params}): add its parameters to CANDIDATES"
        found += [(name, url) for url in sorted(urls)]
    return found


def _client(users, role):
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(users[role])
    return client


def _rolled_back(call):
    with transaction.atomic():
        response = call()
        transaction.set_rollback(True)
    return response


def test_every_route_refuses_strangers(world):
    """Anonymous callers reach only public routes; another researcher reaches nothing of the campaign;
    another worker reaches nothing of the worker's assignment."""
    users, assignment, _ = world
    leaks = []
    for name, url in _urls(world):
        method = MATRIX.get(name, ("GET",))[0]
        for role in ("anonymous", "other_researcher", "other_worker"):
            if role == "anonymous" and name in PUBLIC:
                continue
            if role != "anonymous" and not ("/matrix/" in url or f"/{assignment.pk}/" in url and url.startswith("/work/")):
                continue
            client = _client(users, role)
            for verb in {method, "GET"}:
                response = _rolled_back(lambda: client.post(url, {}) if verb == "POST" else client.get(url))
                # Signed-in strangers are refused outright or sent to sign in; any other answer (a 200, or
                # a 302 after a write, as a form's post-redirect-get does) means the route let them act.
                refused = response.status_code in (401, 403, 404, 405) or _to_login(response)
                if 200 <= response.status_code < 300 or (role != "anonymous" and not refused):
                    leaks.append(f"{role} {verb} {url} ({name}) -> {response.status_code} {response.get('Location', '')}")
    assert not leaks, "\n".join(leaks)
    assert Assignment.objects.get(pk=assignment.pk).state == "assigned"


def _to_login(response) -> bool:
    return response.status_code == 302 and urlsplit(response.get("Location", "")).path == "/accounts/login/"


def test_every_route_refuses_a_post_without_a_csrf_token(world):
    """A POST without the token is a 403 where the same POST with it is not: a route that refuses the
    caller anyway (a 403 by authorization) would hide a missing CSRF check, so it is checked by the role
    it serves."""
    users, assignment, _ = world
    missing, checked, answered = [], set(), set()
    for name, url in _urls(world):
        if name in CSRF_EXEMPT:
            continue
        for role in ("owner", "worker", "staff"):
            trusted = Client()  # the test client's default: as if the form's token were sent
            trusted.force_login(users[role])
            code = _rolled_back(lambda: trusted.post(url, {"action": "approve"})).status_code
            if code not in (401, 403):
                answered.add(name)
            if code in (401, 403, 405):
                continue  # refused to this role whatever the token (or not a POST route): says nothing about CSRF
            checked.add(name)
            client = Client(enforce_csrf_checks=True)
            client.force_login(users[role])
            response = _rolled_back(lambda: client.post(url, {"action": "approve"}))
            if response.status_code != 403:
                missing.append(f"{role} POST {url} ({name}) -> {response.status_code}")
    assert not missing, "\n".join(missing)
    # No route refuses every role this POST (it would go unchecked), and the researcher's and the
    # worker's pages were checked by the roles they serve.
    refused = {name for name, _ in _urls(world)} - answered - CSRF_EXEMPT
    assert not refused, sorted(refused)
    assert {"campaign-control", "assignment", "start-working"} <= checked, sorted(checked)
    assert Assignment.objects.get(pk=assignment.pk).state == "assigned"


class _Forms(HTMLParser):
    """The action and field names of every form of a page."""

    def __init__(self, page_url):
        super().__init__()
        self.page_url, self.forms, self._current = page_url, [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            action = urlsplit(attrs.get("action") or self.page_url)
            if not action.netloc:
                self._current = (action.path or urlsplit(self.page_url).path, set())
                self.forms.append(self._current)
        elif tag in ("input", "select", "textarea", "button") and self._current is not None and attrs.get("name"):
            self._current[1].add(attrs["name"])

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def test_no_route_answers_hostile_input_with_a_server_error(world):
    users, assignment, _ = world
    urls = _urls(world)
    fields: dict[str, set] = {}
    for role in ("owner", "worker"):
        client = _client(users, role)
        for _, url in urls:
            if url.startswith("/api/") or "logout" in url:
                continue
            response = _rolled_back(lambda: client.get(url))
            if response.status_code == 200 and response.get("Content-Type", "").startswith("text/html"):
                parser = _Forms(url)
                parser.feed(response.content.decode("utf-8", "replace"))
                for action, names in parser.forms:
                    fields.setdefault(action, set()).update(names)
    failures, tried = [], 0
    for name, url in urls:
        names = sorted(fields.get(url, set()) | set(GENERIC_FIELDS))
        for role in ("anonymous", "worker", "owner"):
            client = _client(users, role)
            # Each hostile value in every field at once (anonymous callers are turned away first: two tries).
            values = HOSTILE[:2] if role == "anonymous" else HOSTILE
            calls = [("GET", lambda v=v: client.get(url, {n: v[:1000] for n in names[:6]})) for v in values[:2]]
            calls += [("POST", lambda v=v: client.post(url, {n: v for n in names})) for v in values]
            if url.startswith("/api/") and role == "owner":
                calls += [("POST json", lambda b=b: client.post(url, b, content_type="application/json")) for b in HOSTILE_JSON]
                calls += [("PATCH json", lambda b=b: client.patch(url, b, content_type="application/json")) for b in HOSTILE_JSON[:2]]
            for label, call in calls:
                response = _rolled_back(call)
                tried += 1
                if response.status_code >= 500:
                    failures.append(f"{role} {label} {url} ({name}) -> {response.status_code}")
    assert not failures, "\n".join(failures[:20])
    assert tried > 10 * len(urls) and {"/campaigns/matrix/control/", "/campaigns/matrix/qualifications/"} <= set(fields), sorted(fields)
    assert Assignment.objects.get(pk=assignment.pk).state == "assigned"
