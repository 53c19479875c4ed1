"""A rehearsal at scale: ``simulate_crowd --mode fast --approve`` on a QA campaign of N references x 10 systems.

The campaign is built from the released REALSumm data (``/work/shared/data/realsumm`` or ``$REALSUMM_DIR``:
100 references with their texts, 25 systems): its references repeated under new ids up to
``BENCH_REHEARSAL_EXAMPLES`` (default 50; the paper's size is 500), each summarised by the first
``BENCH_REHEARSAL_SYSTEMS`` systems (10), with the demo's qualification tests, the platform's default presence
rule, and ``BENCH_REHEARSAL_WORKERS`` simulated workers (40).  It prints

    rehearsal examples=N systems=S assignments=A seconds=W cpu_client_s=C cpu_db_s=D cpu_ms_per_assignment=M
    projected_500x10_minutes=P reconciled=yes|no campaign=STATE

``cpu_client_s``: this process (the simulated crowd and the platform's code); ``cpu_db_s``: its PostgreSQL
backend (read from /proc, 0 when PostgreSQL runs elsewhere); ``cpu_celery_s``: with ``BENCH_REHEARSAL_BROKER``
(a Redis URL), the Celery worker the script starts for the follow-ups (without its PostgreSQL backend).
``BENCH_REHEARSAL_PROFILE=FILE`` runs the crowd under cProfile and writes its statistics to FILE;
``BENCH_REHEARSAL_SQL=1`` counts and times this process's statements by their text (the 25 costliest printed);
``BENCH_REHEARSAL_KEEP=1`` keeps the database at the end (for EXPLAIN on a campaign's real history).
Where the server runs without autovacuum (this machine's PostgreSQL), ``pg_bench.Autovacuum`` does its work every
``BENCH_REHEARSAL_NAPTIME`` seconds (60) by its default rules, its CPU counted in ``cpu_db_s``.
``projected_500x10_minutes``: the wall time this run's seconds per assignment gives the paper's 127,000 assignments.  Needs PostgreSQL on 127.0.0.1:5432 (trust
auth, user postgres); creates and drops the database ``qapyr_bench_rehearsal``.  Skips when the data is absent.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from pg_bench import Autovacuum, backend_cpu_ns, django_on_fresh_database, drop_database, postgres_running

REPO = Path(__file__).resolve().parent.parent
DB = os.environ.get("BENCH_REHEARSAL_DB", "qapyr_bench_rehearsal")
DATA = Path(os.environ.get("REALSUMM_DIR", "/work/shared/data/realsumm"))
N_EXAMPLES = int(os.environ.get("BENCH_REHEARSAL_EXAMPLES", "50"))
N_SYSTEMS = int(os.environ.get("BENCH_REHEARSAL_SYSTEMS", "10"))
N_WORKERS = int(os.environ.get("BENCH_REHEARSAL_WORKERS", "40"))
# ``simulate_crowd(threads=...)``: the simulated workers in this many threads at once (1: one at a time, by the seed).
N_THREADS = int(os.environ.get("BENCH_REHEARSAL_THREADS", "1"))
# A Redis URL: the follow-ups go through that broker to a Celery worker this script starts (the production stack:
# gathered per window, in another process); unset: eager Celery, in the rehearsal's process.
BROKER = os.environ.get("BENCH_REHEARSAL_BROKER", "")
PAPER_ASSIGNMENTS = 127_000
# A file: the run under cProfile, its statistics written there (``python -m pstats FILE``).
PROFILE = os.environ.get("BENCH_REHEARSAL_PROFILE", "")
# Set: the statements the rehearsal's process sent, counted and timed by their text (the 25 costliest printed).
SQL_COUNTS = bool(os.environ.get("BENCH_REHEARSAL_SQL"))
# Set: the database is kept at the end (to look at the statements' plans on a campaign's real history).
KEEP = bool(os.environ.get("BENCH_REHEARSAL_KEEP"))
# Seconds between the autovacuum stand-in's passes where the server has autovacuum off (PostgreSQL's default, 60).
NAPTIME = float(os.environ.get("BENCH_REHEARSAL_NAPTIME", "60"))


def write_dataset(folder: Path, n_examples: int, n_systems: int) -> tuple[Path, Path]:
    """references.jsonl and summaries.jsonl: REALSumm's references repeated (ids ``<id>-r<k>``) to ``n_examples``."""
    ids = (DATA / "ids.txt").read_text().split("\n")
    refs = [line.replace("<t>", "").replace("</t>", "").strip() for line in (DATA / "references.txt").read_text().split("\n")]
    systems = sorted(p for p in (DATA / "summaries").glob("*.summary"))[:n_systems]
    outputs = {p.stem: p.read_text().split("\n") for p in systems}
    usable = [i for i, ex in enumerate(ids) if ex.strip() and refs[i] and all(i < len(o) and o[i].strip() for o in outputs.values())]
    references, summaries = folder / "references.jsonl", folder / "summaries.jsonl"
    with references.open("w") as r, summaries.open("w") as s:
        for n in range(n_examples):
            i = usable[n % len(usable)]
            example = f"{ids[i].strip()}-r{n // len(usable)}"
            r.write(json.dumps({"id": example, "reference": " ".join(refs[i].split())}) + "\n")
            for system, lines in outputs.items():
                s.write(json.dumps({"id": example, "system": system, "summary": " ".join(lines[i].replace("<t>", "").replace("</t>", "").split())}) + "\n")
    return references, summaries


def backend_cpu_seconds(pid: int) -> float:
    """The CPU seconds process ``pid`` has run so far (``pg_bench.backend_cpu_ns``: a PostgreSQL backend or any process)."""
    return backend_cpu_ns(pid) / 1e9


def main() -> int:
    if not (DATA / "references.txt").exists():
        print(f"rehearsal skipped: the REALSumm data is absent ({DATA})")
        return 0
    if not postgres_running():
        print("rehearsal skipped: needs PostgreSQL on 127.0.0.1:5432")
        return 0
    django_on_fresh_database(
        DB,
        # DEBUG off, as in production: DEBUG's cursor writes out every statement (about 5% of the client's CPU).
        {"DEBUG": "0", "SECRET_KEY": "bench-rehearsal-" + "x" * 40, "DATA_DIR": tempfile.mkdtemp(prefix="qapyr-rehearsal-")},
        broker=BROKER,
    )
    import logging

    logging.getLogger("celery").setLevel(logging.WARNING)
    from django.db import connection

    worker = None
    if BROKER:
        import subprocess

        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "--loglevel", "WARNING"],
            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    try:
        return run(connection, worker)
    finally:
        connection.close()
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
        if KEEP:
            print(f"# database {DB} kept (BENCH_REHEARSAL_KEEP)", flush=True)
        else:
            drop_database(DB)


def run(connection, worker=None) -> int:
    from django.contrib.auth import get_user_model

    from annotation.management.simulation import simulate_crowd
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign
    from annotation.services.qualification_tests import define_qualifications
    from hits.models import Assignment

    owner = get_user_model().objects.create_user("bench-researcher")
    folder = Path(tempfile.mkdtemp(prefix="qapyr-rehearsal-data-"))
    references, summaries = write_dataset(folder, N_EXAMPLES, N_SYSTEMS)
    started = time.perf_counter()
    report = import_campaign(name="Rehearsal at scale", slug="rehearsal", owner=owner, references=references, summaries=summaries)
    campaign = report.campaign
    define_qualifications(campaign, json.loads((REPO / "annotation/demo/qualifications.json").read_text()))
    launch_campaign(campaign)
    campaign.refresh_from_db()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # what autovacuum does on a live database: the planner's statistics
    print(f"# imported and launched in {time.perf_counter() - started:.1f} s: {report.summary_line()}", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    db_before, cpu_before, started = backend_cpu_seconds(backend), time.process_time(), time.perf_counter()
    celery_before = backend_cpu_seconds(worker.pid) if worker else 0.0

    def progress(r):
        done = sum(f.submitted for f in r.stages.values())
        print(f"# {time.perf_counter() - started:.0f} s: {done} submitted", file=sys.stderr, flush=True)

    # The crowd's threads have PostgreSQL backends of their own, closed at the end of the run: their CPU is read just
    # before they close (they started with the threads, so all of it counts).
    from annotation.management.simulation import crowd

    threads_db = {"s": 0.0}
    close = crowd._close_connections

    def read_then_close(pool, threads):
        import threading

        from django.db import connection as own

        everyone, adding = threading.Barrier(threads), threading.Lock()

        def read(_):
            if own.connection is not None:  # this thread connected: its backend's CPU
                with own.cursor() as cursor:
                    cursor.execute("SELECT pg_backend_pid()")
                    used = backend_cpu_seconds(cursor.fetchone()[0])
                with adding:
                    threads_db["s"] += used
            everyone.wait(timeout=60)  # one call per thread

        list(pool.map(read, range(threads)))
        close(pool, threads)

    crowd._close_connections = read_then_close

    def rehearse():
        return simulate_crowd(
            campaign, N_WORKERS, seed=1, mode="fast", approve=True, max_seconds=6 * 3600, progress=progress, threads=N_THREADS
        )

    with Autovacuum(DB, NAPTIME) as vacuum:  # the server's autovacuum, or this machine's stand-in for it
        if PROFILE:  # where the process's time goes (cProfile's own cost included in the figures)
            import cProfile

            profiler = cProfile.Profile()
            try:
                result = profiler.runcall(rehearse)
            finally:  # an interrupted run's profile too
                profiler.dump_stats(PROFILE)
        elif SQL_COUNTS:
            result = _counting_statements(connection, rehearse)
        else:
            result = rehearse()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    # The stand-in's vacuum counts as the database's work (autovacuum's workers would do it on the same cores).
    db = backend_cpu_seconds(backend) - db_before + threads_db["s"] + vacuum.cpu_s
    how = f"emulated every {NAPTIME:g} s, {vacuum.runs} tables vacuumed or analysed" if vacuum.emulated else "the server's own"
    print(f"# autovacuum: {how}", flush=True)
    celery = backend_cpu_seconds(worker.pid) - celery_before if worker else 0.0  # its own PostgreSQL backend not counted
    for line in result.lines():
        print("#", line)
    n = Assignment.objects.filter(hit__batch=campaign.batch, state__in=Assignment.DONE_STATES).count()
    reconciled = result.money is not None and not result.money.problems
    campaign.refresh_from_db()
    print(
        f"rehearsal examples={N_EXAMPLES} systems={N_SYSTEMS} threads={N_THREADS} assignments={n} seconds={seconds:.1f} cpu_client_s={cpu:.1f} "
        f"cpu_db_s={db:.1f} cpu_celery_s={celery:.1f} cpu_ms_per_assignment={1000 * (cpu + db + celery) / max(n, 1):.1f} "
        f"projected_500x10_minutes={seconds / max(n, 1) * PAPER_ASSIGNMENTS / 60:.1f} "
        f"reconciled={'yes' if reconciled else 'no'} campaign={campaign.state}"
    )
    return 0 if reconciled else 1


def _counting_statements(connection, call):
    """``call()`` with every statement of this process counted and timed (wall, client side) by its text, numbers
    left out; prints the 25 that took longest in all."""
    import re
    from collections import defaultdict

    spent: dict[str, list] = defaultdict(lambda: [0, 0.0])

    def timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            figures = spent[re.sub(r"\b\d+\b", "N", sql)[:160]]
            figures[0] += 1
            figures[1] += time.perf_counter() - started

    with connection.execute_wrapper(timed):
        result = call()
    for sql, (n, seconds) in sorted(spent.items(), key=lambda kv: -kv[1][1])[:25]:
        print(f"# sql n={n} s={seconds:.1f} {sql}")
    print(f"# sql total n={sum(n for n, _ in spent.values())} s={sum(t for _, t in spent.values()):.1f}")
    return result


if __name__ == "__main__":
    sys.exit(main())
