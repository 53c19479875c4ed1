"""Project-wide request handling."""

from __future__ import annotations

import logging

from django.db import DatabaseError, InterfaceError, OperationalError
from django.shortcuts import render

log = logging.getLogger(__name__)


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
