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
from tests.conftest import REPO, database_url_for_workers
from tests.workers import celery_worker


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


def _needs_a_worker():
    if settings.CELERY_TASK_ALWAYS_EAGER:
        pytest.skip("no Celery broker configured (CELERY_BROKER_URL)")
    if connection.vendor != "postgresql":
        pytest.skip("a separate worker process needs a shared database server")


def _worker_env() -> dict:
    return os.environ | {"DATABASE_URL": database_url_for_workers()}


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_real_worker_runs_the_task_end_to_end(small_files, tmp_path):
    _needs_a_worker()
    campaign, expected = _campaign_without_automatic_predicates(small_files)
    queue = f"test-{uuid.uuid4().hex[:12]}"
    from config.celery import app

    assert not app.conf.task_always_eager
    with celery_worker(tmp_path / "worker.log", queue, env=_worker_env(), queues=(queue,)) as worker:
        result = redetect_predicates_task.apply_async(args=[campaign.pk], queue=queue)
        assert result.get(timeout=120) == expected
        assert Predicate.objects.filter(sentence__example__campaign=campaign).count() == expected
        assert Campaign.objects.get(pk=campaign.pk).state == "draft"
    output = worker.output()
    assert "annotation.redetect_predicates" in output and "succeeded" in output


def _registered_tasks() -> set[str]:
    from config.celery import app

    app.loader.import_default_modules()
    return {name for name in app.tasks if not name.startswith("celery.")}


def test_every_task_goes_on_one_of_the_three_queues_by_latency():
    """Every task of the platform is routed by name (none falls to a default by omission), every route names a
    task that exists, and the follow-ups, the batch jobs and the market calls are on their own queues."""
    from config.celery import app
    from config.queues import BATCH, INTERACTIVE, MARKETS, QUEUES, task_routes

    tasks = _registered_tasks()
    routes = task_routes()
    assert tasks - set(routes) == set(), "tasks without a queue in config/queues.py"
    assert set(routes) - tasks == set(), "config/queues.py routes names that are no task"
    assert sum(len(names) for names in QUEUES.values()) == len(routes), "a task named on two queues"
    queue_of = {name: app.amqp.router.route({}, name)["queue"].name for name in tasks}
    from annotation.automation import autoscore
    from annotation.services import coalesce, hybrid, jobs

    assert {queue_of[name] for name in [*coalesce.TASKS.values(), coalesce.DRAIN_TASK, hybrid.ROUTE_TASK,
                                        "hits.expire_assignments", "hits.deliver_message"]} == {INTERACTIVE}
    assert {queue_of[autoscore.CHUNK_TASK], queue_of[jobs.RUN_JOB_TASK]} == {BATCH}
    assert {queue_of[name] for name in tasks if name.startswith(("hits.mturk.", "hits.prolific."))} == {MARKETS}
    # A plain worker (no -Q) consumes the three; a task sent with a queue of its own keeps it.
    assert {queue.name for queue in app.conf.task_queues} == {INTERACTIVE, BATCH, MARKETS}
    assert app.conf.task_default_queue == INTERACTIVE
    assert app.amqp.router.route({"queue": "elsewhere"}, jobs.RUN_JOB_TASK)["queue"].name == "elsewhere"


def _waiting(app, queue: str) -> int:
    with app.connection_for_write() as connection:
        return app.amqp.queues[queue](connection.default_channel).queue_declare().message_count


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_plain_worker_runs_the_tasks_of_every_queue(small_files, tmp_path):
    """Tasks sent by name land on their queue (interactive, batch, markets), and ``celery -A config worker``
    without -Q, as a small install runs it, takes them all."""
    _needs_a_worker()
    from config.celery import app
    from config.queues import QUEUES

    campaign, expected = _campaign_without_automatic_predicates(small_files)
    app.control.purge()  # what earlier tests left on the three queues
    sent = {
        "interactive": app.send_task("hits.expire_assignments"),
        "batch": app.send_task("annotation.redetect_predicates", args=[campaign.pk]),
        "markets": app.send_task("hits.prolific.sync_all"),
    }
    assert {queue: _waiting(app, queue) for queue in QUEUES} == {"interactive": 1, "batch": 1, "markets": 1}
    with celery_worker(tmp_path / "worker.log", f"plain-{uuid.uuid4().hex[:8]}", env=_worker_env()) as worker:
        results = {queue: result.get(timeout=120) for queue, result in sent.items()}
    assert results == {"interactive": 0, "batch": expected, "markets": {}}, worker.output()[-3000:]
    assert {queue: _waiting(app, queue) for queue in QUEUES} == {"interactive": 0, "batch": 0, "markets": 0}


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
    from annotation.services import coalesce

    # Every coalesced follow-up's task, the drain, the job runner and the autoscore chunk.
    assert f"missing: [] checked: {len(coalesce.TASKS) + 3}" in done.stdout
