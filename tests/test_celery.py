"""Celery for real: a worker process against Redis when a broker is configured, eager otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.db import connection

from annotation.models import Campaign, Predicate
from annotation.services.campaign_import import import_campaign
from annotation.tasks import redetect_predicates_task
from tests.conftest import REPO


def _campaign_without_automatic_predicates(small_files):
    refs, sums = small_files
    campaign = import_campaign(name="Tasks", references=refs, summaries=sums).campaign
    expected = Predicate.objects.count()
    Predicate.objects.all().delete()
    return campaign, expected


@pytest.mark.django_db
def test_task_runs_in_process_under_the_embedded_default(small_files):
    from config.celery import app

    was_eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        campaign, expected = _campaign_without_automatic_predicates(small_files)
        assert redetect_predicates_task.delay(campaign.pk).get() == expected
        assert Predicate.objects.filter(sentence__example__campaign=campaign).count() == expected
    finally:
        app.conf.task_always_eager = was_eager


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.mark.celery_worker
@pytest.mark.skipif(settings.CELERY_TASK_ALWAYS_EAGER, reason="no Celery broker configured (CELERY_BROKER_URL)")
@pytest.mark.django_db(transaction=True)
def test_real_worker_runs_the_task_end_to_end(small_files):
    if connection.vendor != "postgresql":
        pytest.skip("a separate worker process needs a shared database server")
    campaign, expected = _campaign_without_automatic_predicates(small_files)
    queue = f"test-{uuid.uuid4().hex[:12]}"
    env = os.environ | {"DATABASE_URL": _database_url(), "PYTHONUNBUFFERED": "1"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-Q", queue, "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=INFO", "-n", f"{queue}@localhost"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    from config.celery import app

    assert not app.conf.task_always_eager
    try:
        result = redetect_predicates_task.apply_async(args=[campaign.pk], queue=queue)
        assert result.get(timeout=120) == expected
        assert Predicate.objects.filter(sentence__example__campaign=campaign).count() == expected
        assert Campaign.objects.get(pk=campaign.pk).state == "draft"
    finally:
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
    assert "annotation.redetect_predicates" in output and "succeeded" in output


def test_tasks_queued_by_name_are_registered_in_a_fresh_process():
    """The core and automation queue Celery tasks by name (they never import ``annotation.tasks``); a new
    process, web or worker, knows every one of those names once Django is set up."""
    code = (
        "import django; django.setup()\n"
        "import sys\n"
        "from celery import current_app\n"
        "from annotation.automation import autoscore\n"
        "from annotation.services import coalesce, jobs\n"
        "names = [*coalesce.TASKS.values(), coalesce.DRAIN_TASK, jobs.RUN_JOB_TASK, autoscore.CHUNK_TASK]\n"
        "missing = [n for n in names if n not in current_app.tasks]\n"
        "print('missing:', missing, 'checked:', len(names))\n"
        "sys.exit(1 if missing else 0)\n"
    )
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "missing: [] checked: 6" in done.stdout
