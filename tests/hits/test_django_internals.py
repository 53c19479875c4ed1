"""The Django internals ``hits.sql`` relies on (``hits.sql.DJANGO_INTERNALS``): present, with the shape it
calls them with, and doing what it needs.  A Django upgrade that changes them fails here, by name,
before it can break the worker's hot path."""

from __future__ import annotations

import importlib
import inspect

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from hits import sql


def _resolve(dotted: str):
    module_name, class_name, attribute = dotted.rsplit(".", 2)
    cls = getattr(importlib.import_module(module_name), class_name)
    return getattr(cls, attribute)


@pytest.mark.parametrize("dotted", sql.DJANGO_INTERNALS)
def test_every_internal_still_exists(dotted):
    assert callable(_resolve(dotted)), f"{dotted} is gone: hits.sql.execute_through_wrappers needs another way"


def test_internal_signatures_are_the_ones_hits_sql_calls():
    wrappers = inspect.signature(_resolve("django.db.backends.utils.CursorWrapper._execute_with_wrappers"))
    assert list(wrappers.parameters) == ["self", "sql", "params", "many", "executor"], wrappers
    debug = inspect.signature(_resolve("django.db.backends.utils.CursorDebugWrapper.debug_sql"))
    assert list(debug.parameters)[:3] == ["self", "sql", "params"], debug


@pytest.mark.django_db
def test_a_statement_runs_inside_the_execute_wrappers_on_the_driver_cursor():
    seen = []

    def recorder(execute, statement, params, many, context):
        seen.append((statement, many, context["cursor"]))
        return execute(statement, params, many, context)

    def raw_execute(driver_cursor, statement, params):
        seen.append(driver_cursor)
        return driver_cursor.execute(statement, params)

    with connection.execute_wrapper(recorder), connection.cursor() as cursor:
        sql.execute_through_wrappers(cursor, "SELECT 41 + %s", [1], raw_execute)
        assert cursor.fetchone() == (42,)
        assert seen[0] == ("SELECT 41 + %s", False, cursor)
        # The database driver's cursor under Django's wrapper receives the call (psycopg's, or the
        # SQLite backend's), so driver options such as psycopg's ``prepare=`` reach it.
        assert seen[1] is cursor.cursor and seen[1] is not cursor


@pytest.mark.django_db
def test_the_statement_is_counted_and_errors_are_django_errors():
    with CaptureQueriesContext(connection) as queries, connection.cursor() as cursor:
        sql.execute_through_wrappers(cursor, "SELECT 1", [], lambda raw, s, p: raw.execute(s, p))
    assert [q["sql"] for q in queries.captured_queries] == ["SELECT 1"]
    # A driver error comes out as Django's (translated), which the driver's own classes are not.
    with pytest.raises(DatabaseError):
        with transaction.atomic(), connection.cursor() as cursor:
            sql.execute_through_wrappers(cursor, "SELECT * FROM no_such_table", [], lambda raw, s, p: raw.execute(s, p))


@pytest.mark.django_db
def test_a_broken_transaction_refuses_the_statement():
    with transaction.atomic():
        connection.needs_rollback = True
        try:
            with pytest.raises(TransactionManagementError), connection.cursor() as cursor:
                sql.execute_through_wrappers(cursor, "SELECT 1", [], lambda raw, s, p: raw.execute(s, p))
        finally:
            connection.needs_rollback = False
