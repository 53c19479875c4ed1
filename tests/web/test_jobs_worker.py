"""A job run by a real Celery worker process (PostgreSQL + Redis, as CI runs): the page sees its progress and result."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.urls import reverse

from annotation.models import Job
from annotation.tasks import run_job_task
from tests.conftest import REPO, database_url_for_workers
from tests.web.conftest import settle_with_kept_pairs


@pytest.mark.celery_worker
@pytest.mark.skipif(not django_settings.CELERY_BROKER_URL.startswith("redis"), reason="no Celery broker configured (CELERY_BROKER_URL)")
@pytest.mark.django_db(transaction=True)
def test_export_job_in_a_worker_process(draft, rita, client_rita, tmp_path, settings):
    from config.celery import app

    if connection.vendor != "postgresql":
        pytest.skip("a separate worker process needs a shared database server")
    app.conf.task_always_eager = False  # this test wants the real broker (the autouse fixture restores it)
    settle_with_kept_pairs(draft)
    exports = tmp_path / "worker-exports"
    settings.EXPORTS_DIR = exports
    job = Job.objects.create(kind=Job.Kind.EXPORT, campaign=draft, created_by=rita)
    queue = f"test-{uuid.uuid4().hex[:12]}"
    env = os.environ | {"DATABASE_URL": database_url_for_workers(), "EXPORTS_DIR": str(exports), "PYTHONUNBUFFERED": "1"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q", queue, "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", f"{queue}@localhost"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert client_rita.get(reverse("job-status", args=[job.pk])).json()["state"] == "queued"
        assert run_job_task.apply_async(args=[job.pk], queue=queue).get(timeout=120) == "done"
    finally:
        worker.terminate()
        try:
            worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.communicate()
    status = client_rita.get(reverse("job-status", args=[job.pk])).json()
    assert status["state"] == "done" and status["done"] == status["total"] == 4
    download = client_rita.get(status["result_url"])
    assert download.status_code == 200 and download["Content-Disposition"].startswith("attachment")


@pytest.mark.celery_worker
@pytest.mark.skipif(not django_settings.CELERY_BROKER_URL.startswith("redis"), reason="no Celery broker configured (CELERY_BROKER_URL)")
@pytest.mark.django_db(transaction=True)
def test_api_export_is_run_by_a_worker_process(draft, rita, tmp_path, settings, monkeypatch):
    """Issue 41: ``POST /api/campaigns/SLUG/export/`` only queues the job; a worker process builds the zip, which the
    script polls for and downloads over the API."""
    import io
    import time
    import zipfile

    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from config.celery import app

    if connection.vendor != "postgresql":
        pytest.skip("a separate worker process needs a shared database server")
    app.conf.task_always_eager = False  # the real broker (the autouse fixture restores it)
    settle_with_kept_pairs(draft)
    exports = tmp_path / "worker-exports"
    settings.EXPORTS_DIR = exports
    queue = f"test-{uuid.uuid4().hex[:12]}"
    send_task = app.send_task
    monkeypatch.setattr(app, "send_task", lambda name, *args, **kw: send_task(name, *args, **{**kw, "queue": queue}))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=rita)[0].key}")
    queued = api.post(f"/api/campaigns/{draft.slug}/export/")
    assert queued.status_code == 202 and api.get(queued["Location"]).json()["state"] == "queued"  # no worker yet
    env = os.environ | {"DATABASE_URL": database_url_for_workers(), "EXPORTS_DIR": str(exports), "PYTHONUNBUFFERED": "1"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q", queue, "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", f"{queue}@localhost"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while (job := api.get(queued["Location"]).json())["state"] not in ("done", "failed") and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        worker.terminate()
        try:
            worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.communicate()
    assert job["state"] == "done", job
    download = api.get(job["download_url"])
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    names = sorted(n.split("/", 1)[1] for n in zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))).namelist())
    assert names == ["campaign.json", "examples.jsonl", "judgments.csv", "pairs.csv", "systems.csv", "verifications.csv"]
