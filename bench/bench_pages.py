"""Researcher pages on a large finished campaign: the progress page and the agreement dashboard.

The released raw QA-presence judgments (``../shared/data/qapyramid/QA_presence.json``: 50 examples x 10
systems, 26,278 judgments by 16 workers) are imported ``BENCH_PAGES_COPIES`` times over as one campaign
(the examples renamed per copy, default 10: 500 examples x 10 systems, about 263,000 judgments), with
``import_qapyramid_raw``.  Each page is requested ``BENCH_PAGES_RUNS`` times (default 5) as its owner;
printed are the medians of the wall time and of this process's CPU time (Python: views, templates, numpy;
PostgreSQL's own CPU not included) and the number of queries:

    pages examples=N judgments=J page=progress queries=Q wall_s=W cpu_s=C
    pages examples=N judgments=J page=agreement queries=Q wall_s=W cpu_s=C
    pages ... part=worker_accuracy wall_s=W cpu_s=C   (the per-judge accuracy alone)

``BENCH_PAGES_DUMP=FILE`` also writes the dashboard's figures (no bootstrap) as JSON.  ``BENCH_PAGES_REPO``
runs the same measurement on another checkout of the code (e.g. an older commit unpacked with
``git archive``; run it from that folder: Celery puts the working directory first on the module path), for
a before/after comparison.  Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres); creates and
drops the database "qapyr_bench_pages" (the statistics refreshed after the import, as autovacuum would).
Skips when the data is absent.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(os.environ.get("BENCH_PAGES_REPO") or Path(__file__).resolve().parent.parent).resolve()
RAW = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "qapyramid" / "QA_presence.json"
DB = os.environ.get("BENCH_PAGES_DB", "qapyr_bench_pages")
COPIES = int(os.environ.get("BENCH_PAGES_COPIES", "10"))
RUNS = int(os.environ.get("BENCH_PAGES_RUNS", "5"))


def _replicated(raw: dict, copies: int) -> dict:
    """The released file with every example repeated ``copies`` times under new ids (predicate ids follow)."""
    out: dict = {}
    for system, examples in raw.items():
        out[system] = {}
        for copy in range(copies):
            for example, predicates in examples.items():
                new = f"{example}-{copy}"
                out[system][new] = {p.replace(example, new, 1): pairs for p, pairs in predicates.items()}
    return out


def _measure(client, url: str):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    walls, cpus, queries = [], [], 0
    for _ in range(RUNS):
        with CaptureQueriesContext(connection) as captured:
            wall, cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        if response.status_code != 200:
            raise SystemExit(f"pages: {url} answered {response.status_code}")
        queries = len(captured.captured_queries)
    return queries, statistics.median(walls), statistics.median(cpus)


def main() -> int:
    if not RAW.exists():
        print(f"pages skipped: {RAW} is absent")
        return 0
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        print("pages skipped: needs PostgreSQL on 127.0.0.1:5432")
        return 0
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB}")
    os.environ.update(
        DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{DB}", DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1", CELERY_TASK_ALWAYS_EAGER="1", DATA_DIR=tempfile.mkdtemp(prefix="qapyr-pages-"), ALLOWED_HOSTS="testserver",
    )
    for key in ("CELERY_BROKER_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    sys.path[:0] = [str(REPO)]
    try:
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client

        call_command("migrate", verbosity=0)
        from annotation.models import Campaign, PresenceJudgment
        from annotation.selectors import agreement
        from annotation.services.raw_import import import_qapyramid_raw

        owner = get_user_model().objects.create_user("bench-owner")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "raw.json"
            path.write_text(json.dumps(_replicated(json.loads(RAW.read_text()), COPIES)))
            campaign = import_qapyramid_raw(path, name="Bench pages", owner=owner).campaign
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        n_examples = campaign.examples.count()
        n_judgments = PresenceJudgment.objects.filter(summary__system__campaign=campaign).count()
        client = Client()
        client.force_login(owner)
        head = f"pages examples={n_examples} judgments={n_judgments}"
        for page in ("progress", "agreement"):
            queries, wall, cpu = _measure(client, f"/campaigns/{campaign.slug}/{page}/")
            print(f"{head} page={page} queries={queries} wall_s={wall:.3f} cpu_s={cpu:.3f}", flush=True)
        campaign = Campaign.objects.get(pk=campaign.pk)
        cpus, walls = [], []
        for _ in range(RUNS):
            arguments = (campaign,) if agreement.worker_accuracy.__code__.co_argcount == 1 else (
                campaign, agreement.presence_judgments(campaign)[0])  # the former version took the judgments read
            started, cpu = time.perf_counter(), time.process_time()
            agreement.worker_accuracy(*arguments)
            cpus.append(time.process_time() - cpu)
            walls.append(time.perf_counter() - started)
        print(f"{head} part=worker_accuracy wall_s={statistics.median(walls):.3f} cpu_s={statistics.median(cpus):.3f}", flush=True)
        if os.environ.get("BENCH_PAGES_DUMP"):  # the dashboard's figures, to compare two versions of the code
            board = agreement.agreement_dashboard(campaign, n_boot=0)
            board["disagreement"] = [(r["unit"].pk, r["summary"].pk, r["n"], r["n_present"]) for r in board["disagreement"]]
            board["flagged"] = [p.pk for p in board["flagged"]]
            Path(os.environ["BENCH_PAGES_DUMP"]).write_text(json.dumps(board, default=str, sort_keys=True, indent=1))
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
