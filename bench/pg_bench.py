"""The PostgreSQL set-up the benchmarks share (``bench_handout.py``, ``bench_rehearsal.py``): a fresh database of
their own on 127.0.0.1:5432 (trust auth, user postgres), Django configured on it and migrated, dropped at the end,
and the CPU a PostgreSQL backend has used so far (read from ``/proc``)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def postgres_running() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        return False
    return True


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def django_on_fresh_database(name: str, environment: dict[str, str], broker: str = "") -> None:
    """Drop and create the database ``name``, set ``environment`` (DEBUG, DATA_DIR, ...) with no broker but
    ``broker`` (empty: none), set up Django on it and migrate."""
    import psycopg

    drop_database(name)
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    os.environ.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}", DJANGO_SETTINGS_MODULE="config.settings", **environment
    )
    for key in ("CELERY_BROKER_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    if broker:
        os.environ["CELERY_BROKER_URL"] = broker
    sys.path[:0] = [str(REPO), str(REPO / "bench")]
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def backend_cpu_ns(pid: int) -> int:
    """The CPU time (ns) the PostgreSQL backend ``pid`` has run so far (``/proc/PID/schedstat``; 0 elsewhere)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
