"""Project-wide request handling."""

from __future__ import annotations

import logging

from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve

log = logging.getLogger(__name__)


class ProbeMiddleware:
    """``/healthz`` (alive) and ``/readyz`` (ready: the database answers) for load balancers and Kubernetes probes.

    First in the chain: a probe comes from the orchestrator over plain HTTP to the pod's address, which is neither
    in ``ALLOWED_HOSTS`` nor HTTPS; answering before the host check and the HTTPS redirect keeps the probes
    meaningful on a production configuration.  Nothing but a GET or HEAD of these two paths is answered here.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in ("GET", "HEAD") or request.path not in ("/healthz", "/readyz"):
            return self.get_response(request)
        answer = JsonResponse({"status": "ok"}) if request.path == "/healthz" else readiness()
        # The headers every response carries (the policy is added last in the chain, which a probe skips).
        return ContentSecurityPolicyMiddleware(lambda _request: answer)(request)


def readiness() -> JsonResponse:
    """200 when the database answers a trivial query, 503 with the reason otherwise (the pod leaves the service)."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        connection.close_if_unusable_or_obsolete()
        return JsonResponse({"status": "unavailable", "database": str(exc).strip()[:200]}, status=503)
    return JsonResponse({"status": "ready"})


class DatabaseUnavailableMiddleware:
    """A lost database connection gives a clear 503 page instead of a server error.

    The request's transaction was rolled back, so nothing was half written:
    the page says so and asks the worker to try again (the browser keeps
    the form when they go back).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, (OperationalError, InterfaceError)) or (
            isinstance(exception, DatabaseError) and "connection" in str(exception).lower()
        ):
            log.error("database unavailable during %s %s: %s", request.method, request.path, exception)
            from django.db import connections

            for connection in connections.all():
                # A connection inside an enclosing transaction (a test's, or a caller's) is not ours to close;
                # Django's request_finished handler closes broken ones at the end of every real request.
                if not connection.in_atomic_block:
                    connection.close_if_unusable_or_obsolete()
            return render(request, "503.html", status=503)
        return None


class StorageUnavailableMiddleware:
    """The object store out of reach during a request (staging an upload, streaming an export): 503 with the
    store's reason, as JSON for the API and as a page for the browser, never a server error."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from config.storage import StorageUnavailable

        if not isinstance(exception, StorageUnavailable):
            return None
        log.error("%s during %s %s", exception, request.method, request.path)
        if request.path.startswith("/api/"):
            from django.http import JsonResponse

            return JsonResponse({"detail": f"{exception}. Nothing was stored; try again in a moment."}, status=503)
        return render(request, "503_storage.html", {"reason": str(exception)}, status=503)


class RefuseNulMiddleware:
    """A form field or query parameter holding a NUL character is a 400, whatever the view.

    No text the platform stores may hold one, and PostgreSQL refuses it even in a lookup (a
    DataError, so a 500 from any view that looks a posted value up).  JSON bodies are the API
    serializers' concern (their text fields refuse NUL with a message per field).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        fields = [request.GET]
        if request.method == "POST" and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            fields.append(request.POST)
        for data in fields:
            if any("\x00" in key or any("\x00" in value for value in values) for key, values in data.lists()):
                return self._refuse(request, data is not request.GET)
        return self.get_response(request)

    # The HIT pages (local and MTurk's framed one) and the fields of theirs that are not the worker's text.
    HIT_PAGES = ("assignment", "mturk-hit")
    NOT_TYPED = ("csrfmiddlewaretoken", "token", "hitId", "assignmentId", "workerId", "action", "hit")

    def _refuse(self, request, posted: bool):
        try:
            page = resolve(request.path_info).url_name if posted else None
        except Resolver404:
            page = None
        if page not in self.HIT_PAGES:
            return render(request, "400_nul.html", status=400)
        # A worker's answers: what they typed comes back (without the NUL) so that nothing is lost; the
        # submission itself is refused, not silently altered.
        typed = [
            (name.replace("\x00", ""), value.replace("\x00", ""))
            for name, values in request.POST.lists()
            if name not in self.NOT_TYPED
            for value in values
            if value.replace("\x00", "").strip()
        ]
        context = {"typed": typed}
        if page == "mturk-hit":
            # Shown inside MTurk's frame, which the default policy (and X-Frame-Options) would leave blank.
            from hits.mturk.views import framable_by_mturk

            context["body_template"] = "400_nul_body.html"
            return framable_by_mturk(lambda r: render(r, "hits/mturk_message.html", context, status=400))(request)
        return render(request, "400_nul.html", context, status=400)


class QueryCountMiddleware:
    """Adds an ``X-DB-Queries`` header with the number of SQL queries of the request (benchmarks only).

    Active when ``COUNT_QUERIES=1``; the load benchmark reads the header to
    report queries per request.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.db import connection

        count = [0]

        def counter(execute, sql, params, many, context):
            count[0] += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counter):
            response = self.get_response(request)
        response["X-DB-Queries"] = str(count[0])
        return response


# The policy of every page: scripts and styles from this site only (inline styles allowed: progress bars
# size themselves with style="width: N%"), nothing framed, no plugins, forms posted anywhere (the
# framed MTurk page posts to MTurk's externalSubmit).  A view may set its own directives (the framed
# MTurk page its frame-ancestors, the API reference its scripts): those replace the same ones here.
CONTENT_SECURITY_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "frame-ancestors": "'none'",
}


def _directives(policy: str) -> dict[str, str]:
    found = {}
    for part in policy.split(";"):
        name, _, value = part.strip().partition(" ")
        if name:
            found[name.lower()] = value.strip()
    return found


class ContentSecurityPolicyMiddleware:
    """Sends ``Content-Security-Policy`` on every response, merged with the directives a view set."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = {**CONTENT_SECURITY_POLICY, **_directives(response.get("Content-Security-Policy", ""))}
        response["Content-Security-Policy"] = "; ".join(f"{name} {value}" for name, value in policy.items())
        return response
