"""What every market's publishing shares: the refusal, the one-publisher-per-batch lock, and the regular HITs'
rewards (what a gold HIT or a study is priced from)."""

from __future__ import annotations

from contextlib import contextmanager
from decimal import Decimal

from django.db import connection

# First key of the advisory lock held while a batch is published (second key: the batch id), on any market.
PUBLISHING_LOCK = 7301


class PublishRefused(Exception):
    """Publishing cannot start: wrong backend, no HTTPS base URL, or a balance that cannot cover the HITs."""


@contextmanager
def publishing_lock(batch, namespace: int = PUBLISHING_LOCK):
    """One publisher per batch at a time (PostgreSQL session advisory lock; SQLite runs one process anyway).

    Not a row lock: each created HIT is committed on its own while the lock is held.  ``namespace`` (the lock's
    first key) lets another kind of run (e.g. Prolific's settling of a batch) have a lock of its own per batch.
    Re-entrant in one connection (PostgreSQL counts a session's advisory locks).
    """
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [namespace, batch.pk])
        acquired = cursor.fetchone()[0]
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [namespace, batch.pk])


def regular_rewards(batch) -> dict[int, Decimal]:
    """The highest reward of the batch's regular HITs, per task type."""
    from django.db.models import Max

    from hits.models import HIT

    rows = HIT.objects.filter(batch=batch, kind=HIT.Kind.REGULAR).values("task_type_id").annotate(m=Max("reward"))
    return {row["task_type_id"]: row["m"] for row in rows}
