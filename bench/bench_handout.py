"""Hand-out benchmark: the time to give a worker their next HIT while a large paused campaign
sits ahead of a running one in the queue.

A paused campaign's open HITs are set aside (HIT state "paused") so that the queue index skips
them; before, they stayed open and every hand-out walked past all of them.  The script measures
both on the same data, by putting the paused campaign's HITs back to "open" for the second
measurement (the state they had before), and prints

    handout paused_hits=N accept_ms=A accept_ms_left_open=B ratio=B/A cpu_ms=C cpu_ms_left_open=D

(medians over ``BENCH_HANDOUT_WORKERS`` fresh workers, 30; ``cpu_ms``: the CPU a hand-out used in this process and
in its PostgreSQL backend together, read from ``/proc``, which a busy machine disturbs far less than the wall time).
Then the same for workers with a history (``BENCH_HANDOUT_HISTORY`` submitted assignments each, 1000: a
judge of the paper's size), the paused campaign's HITs set aside again:

    handout_experienced history=H accept_ms=E cpu_ms=F

Before each measurement the tables get what autovacuum would have given them by then (``pg_bench.catch_up``:
this machine's PostgreSQL runs without it; the planner's statistics and vacuum).  ``BENCH_HANDOUT_SQL=1`` adds each statement's median wall time.  ``BENCH_HANDOUT_SINGLE=1`` stops there.  Then the fair hand-out across campaigns
(issue 39): the large campaign running again beside ``BENCH_HANDOUT_CAMPAIGNS`` (4) small ones, each worker
recruited by one of them or by none, and every worker served a HIT of each campaign before (round-robin
looks up when each campaign last served them):

    handout_campaigns campaigns=K accept_ms=C  Needs PostgreSQL on
127.0.0.1:5432 (trust auth, user postgres); creates and drops the database "qapyr_bench_handout".
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from pg_bench import backend_cpu_ns, catch_up, django_on_fresh_database, drop_database, postgres_running

DB = os.environ.get("BENCH_HANDOUT_DB", "qapyr_bench_handout")
PAUSED_EXAMPLES = int(os.environ.get("BENCH_HANDOUT_EXAMPLES", "5000"))  # x 10 systems = HITs
N_WORKERS = int(os.environ.get("BENCH_HANDOUT_WORKERS", "30"))
N_CAMPAIGNS = int(os.environ.get("BENCH_HANDOUT_CAMPAIGNS", "4"))
HISTORY = int(os.environ.get("BENCH_HANDOUT_HISTORY", "1000"))
# Set: each measurement's statements printed with their median wall time (``# TAG sql n=... median_ms=...``).
SQL_TIMES = bool(os.environ.get("BENCH_HANDOUT_SQL"))


def main() -> int:
    if not postgres_running():
        print("handout skipped: needs PostgreSQL on 127.0.0.1:5432")
        return 0
    django_on_fresh_database(DB, {"DEBUG": "1", "CELERY_TASK_ALWAYS_EAGER": "1", "DATA_DIR": tempfile.mkdtemp(prefix="qapyr-handout-")})
    from bench_load import write_dataset
    from django.contrib.auth import get_user_model

    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign, pause_campaign
    from hits.models import HIT, TaskType, Worker
    from hits.services import accept_next
    from django.utils import timezone

    def campaign(name, n_examples):
        with tempfile.TemporaryDirectory() as tmp:
            write_dataset(Path(tmp) / "ds", n_examples)
            created = import_campaign(name=name, folder=Path(tmp) / "ds", predicates="none").campaign
        launch_campaign(created)
        created.refresh_from_db()
        return created

    paused = campaign("Paused", PAUSED_EXAMPLES)  # first in the queue (lower ids)
    pause_campaign(paused)
    running = campaign("Running", max(1, N_WORKERS))
    presence = TaskType.objects.get(slug="presence")
    users = get_user_model()

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    cpu_ms: dict[str, float] = {}
    statements: dict[str, list] = {}

    def timed(execute, text, params, many, context):  # BENCH_HANDOUT_SQL: each statement's wall time, by its text
        if not SQL_TIMES:
            return execute(text, params, many, context)
        started = time.perf_counter()
        try:
            return execute(text, params, many, context)
        finally:
            statements.setdefault(re.sub(r"\b\d+\b", "N", text), []).append(time.perf_counter() - started)

    def median_accept_ms(tag, history=0):
        from hits.models import Assignment

        past = list(HIT.objects.filter(batch_id=paused.batch_id).order_by("pk").values_list("pk", flat=True)[:history])
        workers = []
        for i in range(N_WORKERS):
            user = users.objects.create_user(f"{tag}{i}")
            workers.append(Worker.objects.create(user=user, external_id=user.username))
            if past:  # work done before, one assignment per HIT, an hour apart back from now
                now = timezone.now()
                Assignment.objects.bulk_create(
                    [Assignment(hit_id=h, worker=workers[-1], state=Assignment.State.SUBMITTED, accepted_at=now - timedelta(hours=k + 1),
                                expires_at=now - timedelta(hours=k), submitted_at=now - timedelta(hours=k)) for k, h in enumerate(past)],
                    batch_size=2000,
                )
        catch_up(DB)  # what autovacuum would have done by now (after the set-up, or the histories just written)
        times, cpu = [], []
        for worker in workers:
            db_before, client_before, started = backend_cpu_ns(backend), time.process_time_ns(), time.perf_counter()
            with connection.execute_wrapper(timed):
                assignment = accept_next(worker, presence)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time_ns() - client_before + backend_cpu_ns(backend) - db_before)
            if assignment is None or assignment.hit.batch_id != running.batch_id:
                raise SystemExit("handout: a worker did not get a HIT of the running campaign")
        cpu_ms[tag] = statistics.median(cpu) / 1e6
        if SQL_TIMES:
            for text, spent in sorted(statements.items(), key=lambda kv: -sum(kv[1])):
                print(f"# {tag} sql n={len(spent)} median_ms={1000 * statistics.median(spent):.2f} {text[:150]}")
            statements.clear()
        return 1000 * statistics.median(times)

    def median_across_campaigns(large):
        from annotation.services.pipeline import resume_campaign
        from hits.models import Assignment, Batch, BatchChoice

        resume_campaign(large)
        small = [campaign(f"Small {k}", max(1, N_WORKERS)) for k in range(N_CAMPAIGNS)]
        batches = [large.batch_id] + [c.batch_id for c in small]
        times = []
        for i in range(N_WORKERS):
            user = users.objects.create_user(f"fair{i}")
            worker = Worker.objects.create(user=user, external_id=user.username)
            if i % 2:  # half of them recruited by one of the small campaigns
                BatchChoice.objects.create(worker=worker, batch=Batch.objects.get(pk=small[i % N_CAMPAIGNS].batch_id), how="invitation")
            for batch_id in batches:  # served by every campaign once before
                served = accept_next(worker, presence, batch_id=batch_id)
                Assignment.objects.filter(pk=served.pk).update(state=Assignment.State.SUBMITTED)
            started = time.perf_counter()
            assignment = accept_next(worker, presence)
            times.append(time.perf_counter() - started)
            if assignment is None:
                raise SystemExit("handout: a worker got no HIT with five campaigns running")
        return 1000 * statistics.median(times)

    n_paused = HIT.objects.filter(batch_id=paused.batch_id, state=HIT.State.PAUSED).count()
    aside = median_accept_ms("aside")
    HIT.objects.filter(batch_id=paused.batch_id, state=HIT.State.PAUSED).update(state=HIT.State.OPEN)
    left_open = median_accept_ms("open")
    print(
        f"handout paused_hits={n_paused} accept_ms={aside:.1f} accept_ms_left_open={left_open:.1f} ratio={left_open / aside:.1f} "
        f"cpu_ms={cpu_ms['aside']:.2f} cpu_ms_left_open={cpu_ms['open']:.2f}",
        flush=True,
    )
    if HISTORY:
        HIT.objects.filter(batch_id=paused.batch_id, state=HIT.State.OPEN).update(state=HIT.State.PAUSED)
        experienced = median_accept_ms("veteran", HISTORY)
        print(f"handout_experienced history={HISTORY} accept_ms={experienced:.1f} cpu_ms={cpu_ms['veteran']:.2f}", flush=True)
    if not os.environ.get("BENCH_HANDOUT_SINGLE"):
        print(f"handout_campaigns campaigns={N_CAMPAIGNS + 1} accept_ms={median_across_campaigns(paused):.1f}", flush=True)
    from django.db import connections

    connections.close_all()
    if not os.environ.get("BENCH_HANDOUT_KEEP"):  # set: the database is kept (to look at the statements' plans)
        drop_database(DB)
    return 0


if __name__ == "__main__":
    sys.exit(main())
