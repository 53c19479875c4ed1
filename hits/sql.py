"""Hand-written SQL for the worker's hot path: the few statements every HIT cycle runs.

A worker's cycle (open the HIT page, submit, get the next HIT) runs about fifteen
statements.  Through the ORM each one is built and compiled anew on every request:
on a 2-core machine that costs about 0.8 ms of CPU per statement, several times the
statement itself, and it was most of a cycle's cost in the load benchmark
(``bench/bench_load.py``).  The statements here are composed once per process: the
tables and the columns they read come from the models' metadata (a field added to a
model is read with the rest), the columns they filter and update on are spelled out,
and ``tests/hits/test_hot_path_sql.py`` holds them to the ORM's results.  Rows come back
as ordinary model instances, converted by the fields' own database converters: callers
cannot tell them from ORM results.

Everything here is plain SQL that PostgreSQL and SQLite both run.  Row locks
(``FOR UPDATE [OF ...] [SKIP LOCKED]``) are added where the database has them; SQLite
serialises writers instead, as the ORM's ``select_for_update`` does there.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.utils import CursorDebugWrapper


_STATEMENTS: dict = {}


def statement(key, build) -> str:
    """The statement ``key``, composed by ``build()`` the first time it is asked for in this process
    (statements depend only on the models and the database)."""
    try:
        return _STATEMENTS[key]
    except KeyError:
        _STATEMENTS[key] = text = build()
        return text


def attach(obj: models.Model, **related) -> None:
    """Cache related objects on ``obj`` as ``select_related`` would (reading them runs no query)."""
    for name, value in related.items():
        type(obj)._meta.get_field(name).set_cached_value(obj, value)


def _db():
    """The default connection itself: ``django.db.connection`` is a proxy that looks the connection up
    again (in a context-local store) on every attribute read, and the helpers below read many."""
    return connections[DEFAULT_DB_ALIAS]


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


@lru_cache(maxsize=None)
def _fields(model: type[models.Model]) -> tuple:
    return tuple(model._meta.concrete_fields)


def columns(model: type[models.Model], alias: str) -> str:
    """The model's concrete columns, qualified by ``alias``, in field order."""
    return ", ".join(f"{alias}.{quote(f.column)}" for f in _fields(model))


def table(model: type[models.Model]) -> str:
    return quote(model._meta.db_table)


@lru_cache(maxsize=None)
def _converters(model: type[models.Model], vendor: str) -> tuple:
    """Per field: (expression, converters) as the ORM's compiler would apply them to a fetched value."""
    db = _db()
    result = []
    for field in _fields(model):
        col = field.get_col(model._meta.db_table)
        result.append((col, tuple(db.ops.get_db_converters(col)) + tuple(col.get_db_converters(db))))
    return tuple(result)


@lru_cache(maxsize=None)
def _attnames(model: type[models.Model]) -> list:
    return [f.attname for f in _fields(model)]


def instance(model: type[models.Model], values, db=None) -> models.Model:
    """A model instance from raw column values (in ``columns(model)`` order), as the ORM would make it."""
    db = db or _db()
    converted = []
    for value, (col, converters) in zip(values, _converters(model, db.vendor)):
        for convert in converters:
            value = convert(value, col, db)
        converted.append(value)
    return model.from_db(db.alias, _attnames(model), converted)


def instances(row, *models_) -> list[models.Model]:
    """Split one row holding several models' columns (in the given order) into instances."""
    db = _db()
    result, start = [], 0
    for model in models_:
        n = len(_fields(model))
        result.append(instance(model, row[start : start + n], db))
        start += n
    return result


def is_storable_id(value: int) -> bool:
    """Whether ``value`` fits a primary key column: ids out of range match nothing (as the ORM has it)
    rather than making the database refuse the query."""
    low, high = connection.ops.integer_field_range("BigAutoField")
    return low <= value <= high


def lock_clause(*aliases: str, skip_locked: bool = False) -> str:
    """``FOR UPDATE [OF ...] [SKIP LOCKED]`` where the database supports it; empty on SQLite.

    On PostgreSQL ``FOR NO KEY UPDATE``: the lock holders only change columns no foreign key points at (places
    taken, states), so the lock need not block another transaction's foreign-key check (an assignment or a
    draw inserted pointing at the row takes ``FOR KEY SHARE``).  Two hand-outs still exclude each other,
    and a transaction no longer waits for a row's lock just to point at it, which could close a cycle."""
    features = connection.features
    if not features.has_select_for_update:
        return ""
    clause = " FOR NO KEY UPDATE" if connection.vendor == "postgresql" else " FOR UPDATE"
    if aliases and features.has_select_for_update_of:
        clause += " OF " + ", ".join(aliases)
    if skip_locked and features.has_select_for_update_skip_locked:
        clause += " SKIP LOCKED"
    return clause


def param(field: models.Field, value):
    """A Python value as the database takes it for ``field`` (datetimes, decimals, JSON...)."""
    return field.get_db_prep_value(value, connection, prepared=False)


def fetchone(sql: str, params=(), *, prepare: bool | None = None):
    """The first row of ``sql``; ``prepare=False`` keeps PostgreSQL from preparing it (see ``_run``)."""
    with connection.cursor() as cursor:
        _run(cursor, sql, params, prepare)
        return cursor.fetchone()


def _run(cursor, sql: str, params, prepare: bool | None) -> None:
    """Execute through Django's wrappers (query counting, error translation, debug logging), passing
    ``prepare`` on to psycopg where statements are prepared (``DB_PREPARE_THRESHOLD``).

    A prepared statement is planned once for any parameters after a few runs (a generic plan).  That
    suits lookups by key, not the hand-out, whose best plan depends on the worker and the queue: on
    ``bench/bench_handout.py`` with the paused HITs left open, a hand-out took 118 ms with its statement
    prepared and 84 ms planned on each call (97 ms with no statement prepared; single runs, noisy machine).
    """
    if prepare is None or not cursor.db.settings_dict.get("OPTIONS", {}).get("server_side_binding"):
        cursor.execute(sql, params)
        return
    execute_through_wrappers(cursor, sql, params, lambda raw, sql, params: raw.execute(sql, params, prepare=prepare))


# --- Django internals: the one place this project relies on them ----------------------------------
#
# Django's cursor has no public way to pass an option of the driver's own ``execute`` (psycopg's
# ``prepare=``) while keeping what Django does around every statement.  ``execute_through_wrappers``
# therefore uses, from ``django.db.backends.utils`` (checked on Django 5.2):
#
# - ``CursorWrapper._execute_with_wrappers(sql, params, many, executor)``, which runs the connection's
#   execute wrappers around ``executor(sql, params, many, context)``;
# - ``CursorDebugWrapper.debug_sql(sql, params)``, the context manager that logs the statement and
#   records it in ``connection.queries`` when queries are captured (DEBUG, ``CaptureQueriesContext``).
#
# ``tests/hits/test_django_internals.py`` fails, naming what changed, if a Django upgrade changes them.
DJANGO_INTERNALS = (
    "django.db.backends.utils.CursorWrapper._execute_with_wrappers",
    "django.db.backends.utils.CursorDebugWrapper.debug_sql",
)


def execute_through_wrappers(cursor, sql: str, params, raw_execute) -> None:
    """Run ``raw_execute(driver_cursor, sql, params)`` as Django runs a statement of ``cursor`` (a Django
    cursor): inside the connection's execute wrappers, with database errors translated to Django's,
    refused in a broken transaction, and logged and counted like any other query."""
    db = cursor.db

    def executor(sql, params, many, context):
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            return raw_execute(cursor.cursor, sql, params)

    if isinstance(cursor, CursorDebugWrapper):
        with cursor.debug_sql(sql, params):
            cursor._execute_with_wrappers(sql, params, many=False, executor=executor)
    else:
        cursor._execute_with_wrappers(sql, params, many=False, executor=executor)


def fetchall(sql: str, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def execute(sql: str, params=()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _insert_sql(model, fields, n_rows: int) -> str:
    def build():
        row = f"({', '.join(['%s'] * len(fields))})"
        return (
            f"INSERT INTO {table(model)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
            + ", ".join([row] * n_rows)
        )

    return statement(("insert", model, n_rows), build)


def _insert_values(obj, fields, db) -> list:
    return [f.get_db_prep_save(f.pre_save(obj, True), db) for f in fields]


@lru_cache(maxsize=None)
def _insert_fields(model: type[models.Model]) -> tuple:
    return tuple(f for f in _fields(model) if not f.primary_key)


def insert(obj: models.Model) -> None:
    """INSERT one new row and set its primary key, like ``save()`` of a new object.

    Only for models that no ``pre_save``/``post_save`` receiver listens to: no signal is sent.
    """
    db = _db()
    model = type(obj)
    fields = _insert_fields(model)
    with db.cursor() as cursor:
        if db.features.can_return_columns_from_insert:
            returning = statement(("insert-returning", model), lambda: _insert_sql(model, fields, 1) + " RETURNING " + quote(model._meta.pk.column))
            cursor.execute(returning, _insert_values(obj, fields, db))
            obj.pk = cursor.fetchone()[0]
        else:  # pragma: no cover - both supported databases return columns
            cursor.execute(_insert_sql(model, fields, 1), _insert_values(obj, fields, db))
            obj.pk = db.ops.last_insert_id(cursor, model._meta.db_table, model._meta.pk.column)
    obj._state.adding = False
    obj._state.db = db.alias


def insert_many(objs: list) -> None:
    """INSERT new rows of one model in one statement (their primary keys are not read back; no signals)."""
    if not objs:
        return
    db = _db()
    model = type(objs[0])
    fields = _insert_fields(model)
    values = [v for obj in objs for v in _insert_values(obj, fields, db)]
    execute(_insert_sql(model, fields, len(objs)), values)


def update(obj: models.Model, names: list[str]) -> None:
    """UPDATE the named fields of a row already loaded (and locked) in this transaction, like
    ``save(update_fields=names)`` but sending no signal."""
    db = _db()
    model = type(obj)
    fields = [model._meta.get_field(name) for name in names]
    text = statement(
        ("update", model, tuple(names)),
        lambda: f"UPDATE {table(model)} SET {', '.join(f'{quote(f.column)} = %s' for f in fields)} "
        f"WHERE {quote(model._meta.pk.column)} = %s",
    )
    execute(text, [*(f.get_db_prep_save(getattr(obj, f.attname), db) for f in fields), obj.pk])
