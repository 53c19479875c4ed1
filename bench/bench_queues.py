"""Queues by latency (issue 50): the crowd's follow-ups keep their latency while an autoscore run of the trained judge
occupies the batch worker.

Two Celery workers as the compose file runs them (``-Q interactive`` and ``-Q batch``, one task at a time each) on
Redis and PostgreSQL.  A follow-up, a campaign's score update as the gathered follow-ups send it
(``annotation.recompute_scores`` for one summary), is sent every ``BENCH_QUEUES_EVERY`` seconds
(``BENCH_QUEUES_FOLLOWUPS`` of them), and its latency measured from the send to the end of its run (the result's
``date_done``).  Three rounds:

- ``idle``: nothing else runs;
- ``autoscore``: an autoscore run of the trained judge (a cross-encoder trained here for one epoch on the bench's
  own labelled folder) is started just before, its chunks (``BENCH_QUEUES_CHUNK`` summaries each) filling the
  batch queue throughout the round;
- ``one-queue``: an autoscore run of one system's summaries with every task on one queue and one worker, as
  before issue 50 (the follow-ups wait behind the chunks queued before them).

Prints, per round:

    queues mode=idle|autoscore|one-queue followups=N p50_ms=.. p95_ms=.. max_ms=.. chunks_done=D/K load=L

``chunks_done``: the autoscore chunks finished when the round's last follow-up ended (the batch worker was busy
throughout when D < K); ``load``: the machine's 1-minute load average at the end.  Needs PostgreSQL on
127.0.0.1:5432 (trust auth, user postgres; creates and drops ``qapyr_bench_queues``), Redis at
``BENCH_QUEUES_BROKER`` (default ``redis://127.0.0.1:6379/6``; its three queues are purged) and torch
(``make judges``); skips otherwise.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlparse

from pg_bench import django_on_fresh_database, drop_database, postgres_running

DB = "qapyr_bench_queues"
BROKER = os.environ.get("BENCH_QUEUES_BROKER", "redis://127.0.0.1:6379/6")
N_FOLLOWUPS = int(os.environ.get("BENCH_QUEUES_FOLLOWUPS", "40"))
EVERY = float(os.environ.get("BENCH_QUEUES_EVERY", "0.5"))
CHUNK = int(os.environ.get("BENCH_QUEUES_CHUNK", "2"))
# The autoscore campaign: examples x systems summaries, units per example (the judge's pairs: their product).
EXAMPLES = int(os.environ.get("BENCH_QUEUES_EXAMPLES", "24"))
SYSTEMS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
UNITS = 8


def reachable(url: str) -> bool:
    parsed = urlparse(url)
    try:
        socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), timeout=1).close()
    except OSError:
        return False
    return True


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def followups(app, campaign_id: int, summary_ids: list[int]) -> list[float]:
    """Send the follow-ups at their pace; their latencies (ms), send to end of run."""
    sent = []
    for i in range(N_FOLLOWUPS):
        at = datetime.now(timezone.utc)
        sent.append((at, app.send_task("annotation.recompute_scores", args=[campaign_id, [summary_ids[i % len(summary_ids)]]])))
        time.sleep(EVERY)
    latencies = []
    for at, result in sent:
        result.get(timeout=900)
        latencies.append((result.date_done - at).total_seconds() * 1000)
    return latencies


def main() -> int:
    if not postgres_running() or not reachable(BROKER):
        print("queues skipped: needs PostgreSQL on 127.0.0.1:5432 and Redis at " + BROKER)
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("queues skipped: the trained judge needs torch (make judges)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-queues-"))
    django_on_fresh_database(DB, {"DEBUG": "1", "DATA_DIR": str(work / "var"), "MODELS_DIR": str(work / "models"),
                                  "AUTOSCORE_CHUNK_SIZE": str(CHUNK), "FOLLOWUP_COALESCE_SECONDS": "0",
                                  "HF_HUB_OFFLINE": "1", "JUDGE_TORCH_THREADS": "1"}, broker=BROKER)
    try:
        return run(work)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(DB)


def run(work: Path) -> int:
    from celery import current_app as app

    from annotation.automation.autoscore import start_autoscore_run
    from annotation.automation.judges.crossencoder import CrossEncoderSettings
    from annotation.automation.judges.datasets import dataset_from_folder
    from annotation.automation.judges.training import train_presence_judge
    from annotation.models import AutoscoreRun, SystemSummary
    from annotation.services.campaign_import import import_campaign
    from config.queues import INTERACTIVE
    from tests.judges.test_hybrid_campaign import write_folder
    from tests.workers import celery_worker

    training = write_folder(work / "training", n_examples=6, n_units=UNITS, systems=SYSTEMS[:3], seed=1)
    train_presence_judge(dataset_from_folder(training), "bench-queues", settings=CrossEncoderSettings(epochs=1))
    scored = import_campaign(name="Autoscored", folder=write_folder(work / "scored", n_examples=EXAMPLES, n_units=UNITS, systems=SYSTEMS)).campaign
    small = import_campaign(name="Followed", folder=write_folder(work / "followed", n_examples=3, n_units=4, systems=SYSTEMS[:2])).campaign
    summary_ids = list(SystemSummary.objects.filter(system__campaign=small).values_list("pk", flat=True))
    app.control.purge()

    def round_(mode: str, autoscore: bool, systems=None) -> None:
        run = start_autoscore_run(scored, "trained:bench-queues", systems=systems) if autoscore else None
        if run is not None:  # the batch worker has taken its first chunk: the round starts with it busy
            while not AutoscoreRun.objects.get(pk=run.pk).chunks.filter(attempts__gt=0).exists():
                time.sleep(0.1)
        latencies = followups(app, small.pk, summary_ids)
        done = f"{run.chunks.filter(done=True).count()}/{run.n_chunks}" if run else "-"
        print(f"queues mode={mode} followups={len(latencies)} p50_ms={percentile(latencies, 0.5):.0f} "
              f"p95_ms={percentile(latencies, 0.95):.0f} max_ms={max(latencies):.0f} chunks_done={done} "
              f"load={os.getloadavg()[0]:.1f}", flush=True)
        if run is not None:  # what is left of the run is not the next round's
            app.control.purge()

    def warm_up() -> None:
        """A worker's first tasks pay its imports (SciPy's statistics for a score update; torch and the judge's
        model for a chunk, half a minute on a busy machine): paid here, before anything is measured."""
        app.send_task("annotation.recompute_scores", args=[small.pk, summary_ids[:1]]).get(timeout=600)
        run = start_autoscore_run(small, "trained:bench-queues")
        while (state := AutoscoreRun.objects.get(pk=run.pk).state) not in ("finished", "failed"):
            time.sleep(0.2)
        if state == "failed":
            raise RuntimeError(f"the warm-up's autoscore run failed: {AutoscoreRun.objects.get(pk=run.pk).error}")

    with ExitStack() as workers:  # as the compose file runs them, one task at a time each
        for queue in ("interactive", "batch"):
            workers.enter_context(celery_worker(work / f"{queue}.log", f"bench-{queue}", env=dict(os.environ), queues=(queue,))).wait_ready(180)
        warm_up()
        round_("idle", autoscore=False)
        round_("autoscore", autoscore=True)
    # Before issue 50: every task on one queue, taken in order by one worker.
    app.conf.task_routes = {name: {"queue": INTERACTIVE} for name in app.conf.task_routes}
    app.amqp.flush_routes()
    app.amqp.router = app.amqp.Router()
    with celery_worker(work / "one-queue.log", "bench-one-queue", env=dict(os.environ), queues=(INTERACTIVE,)) as worker:
        worker.wait_ready(180)
        warm_up()
        round_("one-queue", autoscore=True, systems=SYSTEMS[:1])  # one system's chunks: the wait stays bounded
    return 0


if __name__ == "__main__":
    sys.exit(main())
