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


class Autovacuum:
    """What PostgreSQL's autovacuum does on a live database, done by the benchmark when the server has it off
    (this machine's PostgreSQL: ``autovacuum = off`` in its CI configuration; a production server has it on).

    Without it every row a campaign updates (an assignment submitted, then approved; a HIT's places) leaves a dead
    version and dead index entries that each later lookup walks past: a worker's "live assignment" lookup read 270
    pages after 340 HITs.  Every ``naptime`` seconds (autovacuum's default, 60) a thread applies autovacuum's own
    default rules to the database's tables: VACUUM a table with more than 50 + 20% of its live rows dead (or, for
    inserts, 1,000 + 20% inserted since), ANALYZE one with more than 50 + 10% changed since.  ``cpu_s``: the CPU its
    PostgreSQL backend used (counted by the benchmarks with theirs); ``runs``: the tables vacuumed or analysed.
    With autovacuum on in the server it does nothing (``emulated`` False)."""

    def __init__(self, name: str, naptime: float = 60.0):
        import threading

        import psycopg

        self.url = f"postgresql://postgres@127.0.0.1:5432/{name}"
        self.naptime, self.cpu_s, self.runs = naptime, 0.0, 0
        with psycopg.connect(self.url, autocommit=True) as conn:
            self.emulated = conn.execute("SHOW autovacuum").fetchone()[0] == "off"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True) if self.emulated else None

    def __enter__(self):
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            start = backend_cpu_ns(pid)
            try:
                while not self._stop.wait(self.naptime):
                    self.pass_once(conn)
            finally:
                self.cpu_s = (backend_cpu_ns(pid) - start) / 1e9

    def pass_once(self, conn) -> None:
        rows = conn.execute(
            "SELECT relname, n_dead_tup > 50 + 0.2 * n_live_tup OR n_ins_since_vacuum > 1000 + 0.2 * n_live_tup, "
            "n_mod_since_analyze > 50 + 0.1 * n_live_tup FROM pg_stat_user_tables"
        ).fetchall()
        for table, vacuum, analyze in rows:
            if vacuum or analyze:
                conn.execute(f'{"VACUUM (ANALYZE)" if vacuum and analyze else "VACUUM" if vacuum else "ANALYZE"} "{table}"')
                self.runs += 1


def catch_up(name: str) -> int:
    """One pass of ``Autovacuum``'s rules now, where the server has autovacuum off: the state a live database's
    tables would reach within a minute of a bulk write (a benchmark's set-up).  The number of tables done."""
    import psycopg

    keeper = Autovacuum(name)
    if keeper.emulated:
        with psycopg.connect(keeper.url, autocommit=True) as conn:
            keeper.pass_once(conn)
    return keeper.runs
