"""Issue 9 fault test: a real Celery worker killed in the middle of an autoscore chunk.

A private redis-server (on a free port) and the PostgreSQL test database are shared by this test and
two worker processes started one after the other.  The first worker is killed (SIGKILL) while it is
judging a chunk; the second one receives the unacknowledged message again (acks late, short
visibility timeout), and the run finishes with every result exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count

from annotation.models import AutoPresence, AutoscoreChunk, AutoscoreRun, AutoSummaryScore
from tests.conftest import REPO, database_url_for_workers
from tests.reliability.test_faults import celery_on, private_redis  # noqa: F401  (fixtures)
from tests.workers import stop

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.skipif(settings.CELERY_TASK_ALWAYS_EAGER, reason="no Celery broker configured (CELERY_BROKER_URL)"),
]


def _start_worker(port: int, log_path) -> subprocess.Popen:
    name = f"crash-{uuid.uuid4().hex[:8]}@localhost"
    env = os.environ | {
        "DATABASE_URL": database_url_for_workers(),
        "CELERY_BROKER_URL": f"redis://127.0.0.1:{port}/0",
        "REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "CELERY_RESULT_BACKEND": f"redis://127.0.0.1:{port}/1",
        "PYTHONUNBUFFERED": "1",
        "SLOW_JUDGE_SECONDS": "1.5",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.judges.slow_worker_app", "worker", "--pool=solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", name],
        cwd=REPO, env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, start_new_session=True,
    )


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_chunk_resumes_without_duplicates(gold_campaign, private_redis, celery_on, tmp_path, settings):  # noqa: F811
    if connection.vendor != "postgresql":
        pytest.skip("worker processes need a shared database server (PostgreSQL)")
    import tests.judges.slow_worker_app  # noqa: F401  (registers the slow judge here too)
    from annotation.automation.autoscore import start_autoscore_run

    settings.AUTOSCORE_CHUNK_SIZE = 1  # 9 summaries -> 9 chunks
    first = _start_worker(private_redis["port"], tmp_path / "first.log")
    second = None
    try:
        run = start_autoscore_run(gold_campaign, "slow")
        assert run.n_chunks == 9
        chunks = AutoscoreChunk.objects.filter(run=run)
        _wait(lambda: chunks.filter(done=True).count() >= 2, 120, "two chunks done by the first worker")
        # Kill it in the middle of a chunk: one has started (attempt counted) and is not done yet.
        _wait(lambda: chunks.filter(done=False, attempts__gt=0).exists(), 30, "a chunk in progress")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        interrupted = chunks.get(done=False, attempts__gt=0)
        done_before = chunks.filter(done=True).count()
        assert done_before < 9
        # Nothing of the interrupted chunk was written: results exist only for chunks marked done.
        done_summaries = [s for ids in chunks.filter(done=True).values_list("summary_ids", flat=True) for s in ids]
        assert set(AutoPresence.objects.filter(run=run).values_list("summary_id", flat=True)) == set(done_summaries)

        second = _start_worker(private_redis["port"], tmp_path / "second.log")
        _wait(lambda: AutoscoreRun.objects.get(pk=run.pk).state == "finished", 180, "the run to finish after the restart")
    finally:
        for worker in (first, second):
            if worker is not None:
                stop(worker, timeout=20)
    run.refresh_from_db()
    assert run.n_done == run.n_chunks == 9
    interrupted.refresh_from_db()
    assert interrupted.done and interrupted.attempts == 2  # redelivered once, done once
    assert AutoPresence.objects.filter(run=run).count() == 27
    duplicates = AutoPresence.objects.filter(run=run).values("summary", "unit").annotate(n=Count("id")).filter(n__gt=1)
    assert not duplicates.exists()
    assert AutoSummaryScore.objects.filter(run=run).count() == 9
    assert run.results["presence"]["n"] == 27
    second_log = (tmp_path / "second.log").read_text()
    assert "annotation.autoscore_chunk" in second_log and "succeeded" in second_log
