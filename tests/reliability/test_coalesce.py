"""Follow-ups of completed HITs are coalesced per campaign with a real broker, and nothing is lost."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

import pytest
import redis

from annotation.models import GoldPresence, PresenceJudgment
from annotation.services import coalesce
from annotation.tasks import after_presence_hits_task
from config.queues import INTERACTIVE
from hits.models import Assignment, FollowUp
from tests.reliability.test_faults import _judge, celery_on, private_redis, scu_campaign  # noqa: F401 - fixtures


def _etas(port: int) -> list[datetime]:
    """When each waiting message is due (Celery's ``eta`` header), newest first (kombu pushes on the left)."""
    return [datetime.fromisoformat(json.loads(raw)["headers"]["eta"]) for raw in redis.Redis(port=port).lrange(INTERACTIVE, 0, -1)]


def _queued(port: int) -> list[tuple[str, list]]:
    """(task name, args) of every message waiting in the private broker's queue of follow-ups (``interactive``)."""
    out = []
    for raw in redis.Redis(port=port).lrange(INTERACTIVE, 0, -1):
        message = json.loads(raw)
        out.append((message["headers"]["task"], json.loads(base64.b64decode(message["body"]))[0]))
    return out


@pytest.mark.django_db
def test_many_calls_in_a_window_publish_one_drain_that_runs_the_union(
    scu_campaign, private_redis, celery_on, django_capture_on_commit_callbacks, monkeypatch  # noqa: F811
):
    ran = []
    monkeypatch.setattr(
        "annotation.tasks.update_worker_quality_task.run", lambda campaign_id, ids: ran.append((campaign_id, ids))
    )
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("cross_checks", scu_campaign.pk, [3, 1])
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("cross_checks", scu_campaign.pk, [2, 3])
    queued = _queued(private_redis["port"])
    # One drain task for both calls, not one update per call.
    assert queued == [("annotation.drain_followups", ["cross_checks", scu_campaign.pk])]
    assert coalesce.drain("cross_checks", scu_campaign.pk) == [1, 2, 3]
    assert ran == [(scu_campaign.pk, [1, 2, 3])]
    # Drained: a second drain has nothing to do, and the next call schedules a fresh drain.
    assert coalesce.drain("cross_checks", scu_campaign.pk) == []
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("cross_checks", scu_campaign.pk, [4])
    assert len(_queued(private_redis["port"])) == 2


@pytest.mark.django_db
def test_a_failed_drain_keeps_its_ids_for_the_redelivery(
    scu_campaign, private_redis, celery_on, django_capture_on_commit_callbacks, monkeypatch  # noqa: F811
):
    calls = []

    def flaky(campaign_id, ids):
        calls.append(ids)
        if len(calls) == 1:
            raise RuntimeError("worker died mid-way")

    monkeypatch.setattr("annotation.tasks.recompute_scores_task.run", flaky)
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("scores", scu_campaign.pk, [7, 8])
    with pytest.raises(RuntimeError):
        coalesce.drain("scores", scu_campaign.pk)
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("scores", scu_campaign.pk, [9])
    assert coalesce.drain("scores", scu_campaign.pk) == [7, 8, 9]
    assert calls == [[7, 8], [7, 8, 9]]


@pytest.mark.django_db
def test_a_completed_hit_with_the_broker_down_stores_its_follow_up_and_loses_nothing(
    scu_campaign, django_user_model, private_redis, celery_on, django_capture_on_commit_callbacks  # noqa: F811
):
    client = _judge(django_user_model)
    private_redis["stop"]()
    location = client.post("/work/presence/start/")["Location"]
    data = {f"p_{k}": "1" for k, _ in enumerate(Assignment.objects.get().hit.payload["units"], start=1)}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(location, {"action": "submit", **data}).status_code == 302
    assert PresenceJudgment.objects.count() == 2
    # The completed HIT's follow-ups wait in the outbox, whole: nothing of them ran yet.
    hit = Assignment.objects.get().hit
    assert list(FollowUp.objects.values_list("task_name", "args")) == [("annotation.after_presence_hits", [hit.batch_id, [hit.pk]])]
    assert not GoldPresence.objects.exists()
    # The broker is back: the stored task, once run, writes the gold labels and hands on the score
    # update and cross-checks.
    private_redis["start"]()
    with django_capture_on_commit_callbacks(execute=True):
        args = FollowUp.objects.get().args
        assert after_presence_hits_task.run(*args) == 2
    assert GoldPresence.objects.filter(summary_id=hit.payload["summary"], present=True).count() == 2
    assert ("annotation.drain_followups", ["scores", hit.batch.campaign.pk]) in _queued(private_redis["port"])


@pytest.mark.django_db
def test_a_costly_drain_stretches_the_wait_before_the_next_so_follow_ups_keep_to_their_share(
    scu_campaign, private_redis, celery_on, django_capture_on_commit_callbacks, monkeypatch, settings  # noqa: F811
):
    settings.FOLLOWUP_COALESCE_SECONDS = 2
    settings.FOLLOWUP_MAX_SHARE = 0.1
    monkeypatch.setattr("annotation.tasks.update_worker_quality_task.run", lambda campaign_id, ids: None)
    port = private_redis["port"]

    def schedule_and_wait(ids):
        with django_capture_on_commit_callbacks(execute=True):
            coalesce.schedule("cross_checks", scu_campaign.pk, ids)
        return (_etas(port)[0] - datetime.now(timezone.utc)).total_seconds()

    # A campaign without a measured drain waits the plain window.
    assert 1.0 < schedule_and_wait([1]) <= 2.0
    # The drain "takes" 1.5 s of work: the next one waits 15 s, so the work is 10% of the time.
    ticks = iter([100.0, 101.5])
    monkeypatch.setattr(coalesce, "_clock", lambda: next(ticks))
    assert coalesce.drain("cross_checks", scu_campaign.pk) == [1]
    assert 14.0 < schedule_and_wait([2]) <= 15.0
    # A cheap drain brings the wait back to the window; the other kind never had a costly one.
    ticks = iter([200.0, 200.01])
    assert coalesce.drain("cross_checks", scu_campaign.pk) == [2]
    assert 1.0 < schedule_and_wait([3]) <= 2.0
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("scores", scu_campaign.pk, [5])
    assert 1.0 < (_etas(port)[0] - datetime.now(timezone.utc)).total_seconds() <= 2.0
    assert [c for c, _ in _queued(port)] == ["annotation.drain_followups"] * 4


@pytest.mark.django_db
def test_a_stretched_wait_has_a_ceiling_and_completed_hits_keep_the_plain_window(
    scu_campaign, private_redis, celery_on, django_capture_on_commit_callbacks, monkeypatch, settings  # noqa: F811
):
    """The 500 x 10 rehearsal's snowball: completed presence HITs cost per HIT, so stretching their wait only made
    the next drain longer (89 s, then a 94 s drain that opened third judges after the crowd had stopped)."""
    settings.FOLLOWUP_COALESCE_SECONDS = 2
    settings.FOLLOWUP_MAX_SHARE = 0.1
    settings.FOLLOWUP_MAX_WAIT = 30
    monkeypatch.setattr("annotation.tasks.update_worker_quality_task.run", lambda campaign_id, ids: None)
    monkeypatch.setattr("annotation.tasks.after_presence_hits_task.run", lambda batch_id, ids: None)
    port = private_redis["port"]

    def wait_after(kind, owner, cost, ids):
        ticks = iter([0.0, cost])
        monkeypatch.setattr(coalesce, "_clock", lambda: next(ticks))
        with django_capture_on_commit_callbacks(execute=True):
            coalesce.schedule(kind, owner, ids[:1])
        assert coalesce.drain(kind, owner) == ids[:1]
        with django_capture_on_commit_callbacks(execute=True):
            coalesce.schedule(kind, owner, ids[1:])
        return max((eta - datetime.now(timezone.utc)).total_seconds() for eta in _etas(port))

    # A 9 s drain of completed HITs: the next one still comes after the window, not 90 s later.
    assert 1.0 < wait_after("completed", scu_campaign.batch_id, 9.0, [1, 2]) <= 2.0
    # A 9 s cross-check drain would stretch to 90 s: the ceiling holds it at 30 s.
    assert 29.0 < wait_after("cross_checks", scu_campaign.pk, 9.0, [3, 4]) <= 30.0
    assert coalesce.countdown(9.0, "scores") == 30.0 and coalesce.countdown(1.5, "scores") == 15.0
    assert coalesce.countdown(9.0, "completed") == 2.0


@pytest.mark.django_db
def test_a_drain_is_at_work_from_taking_its_ids_to_finishing_them(
    scu_campaign, private_redis, celery_on, django_capture_on_commit_callbacks, monkeypatch, settings  # noqa: F811
):
    """What the rehearsal's idle wait reads: a drain that took ids and has not finished them may still open work.
    Ids merely pending are not "at work" (without a Celery worker they would wait forever)."""
    settings.FOLLOWUP_COALESCE_SECONDS = 2
    seen_during = []
    monkeypatch.setattr(
        "annotation.tasks.after_presence_hits_task.run",
        lambda batch_id, ids: seen_during.append(coalesce.at_work("completed", batch_id)),
    )
    batch_id = scu_campaign.batch_id
    with django_capture_on_commit_callbacks(execute=True):
        coalesce.schedule("completed", batch_id, [7])
    assert coalesce.at_work("completed", batch_id) is False
    assert coalesce.drain("completed", batch_id) == [7]
    assert seen_during == [True]
    assert coalesce.at_work("completed", batch_id) is False


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_turns_a_completed_hit_into_gold_labels_scores_and_the_campaigns_end(
    scu_campaign, django_user_model, private_redis, celery_on, settings  # noqa: F811
):
    """With a Redis broker the last judgment of a HIT is stored by the request; a Celery worker process
    then writes the gold labels, the scores and the campaign's end."""
    import os
    import subprocess
    import sys
    import time

    from django.db import connection

    from annotation.models import Campaign, SummaryScore
    from tests.conftest import REPO, database_url_for_workers

    if connection.vendor != "postgresql":
        pytest.skip("a separate worker process needs a shared database server")
    settings.FOLLOWUP_COALESCE_SECONDS = 0.5
    url = f"redis://127.0.0.1:{private_redis['port']}/0"
    env = os.environ | {
        "DATABASE_URL": database_url_for_workers(), "CELERY_BROKER_URL": url, "REDIS_URL": url,
        "FOLLOWUP_COALESCE_SECONDS": "0.5", "PYTHONUNBUFFERED": "1",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--without-gossip",
         "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        client = _judge(django_user_model)
        location = client.post("/work/presence/start/")["Location"]
        hit = Assignment.objects.get().hit
        data = {f"p_{k}": "1" for k, _ in enumerate(hit.payload["units"], start=1)}
        assert client.post(location, {"action": "submit", **data}).status_code == 302
        # The request stored the judgments; what follows is the worker's.
        assert PresenceJudgment.objects.count() == 2
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = (
                GoldPresence.objects.filter(summary_id=hit.payload["summary"], present=True).count() == 2
                and Campaign.objects.get(pk=scu_campaign.pk).state == Campaign.State.FINISHED
                and SummaryScore.objects.filter(summary_id=hit.payload["summary"]).exists()
            )
            if done:
                break
            time.sleep(0.25)
    finally:
        worker.terminate()
        try:
            output = worker.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            worker.kill()
            output = worker.communicate()[0]
    assert done, f"the worker did not finish the follow-ups; its output:\n{output}"
    score = SummaryScore.objects.get(summary_id=hit.payload["summary"])
    assert (score.n_units, score.n_present, score.qapyramid) == (2, 2, 1.0)


@pytest.mark.django_db
def test_an_idle_rehearsal_waits_while_a_drain_of_the_batch_is_at_work(scu_campaign, private_redis, celery_on, monkeypatch, settings):  # noqa: F811
    """``simulate_crowd`` calls a run stuck only once the drain at work on its batch is done: it may open a third
    judge's place (the 500 x 10 rehearsal stopped while one was 94 s into its work)."""
    import threading
    import time

    from annotation.management.simulation import crowd

    settings.FOLLOWUP_COALESCE_SECONDS = 0.1
    monkeypatch.setattr(crowd, "SETTLE_SECONDS", 0.5)
    pending, busy, _scheduled = coalesce._keys("completed", scu_campaign.batch_id)
    client = redis.Redis(port=private_redis["port"])
    client.sadd(busy, 1)
    threading.Timer(2.0, lambda: client.delete(busy)).start()
    started = time.perf_counter()
    assert crowd._follow_ups_may_change(scu_campaign, time.perf_counter() + 30) is False
    waited = time.perf_counter() - started
    assert 2.0 <= waited < 5.0, waited
    # Nothing at work (ids pending, no Celery worker to drain them): only the short settling wait.
    client.sadd(pending, 2)
    started = time.perf_counter()
    assert crowd._follow_ups_may_change(scu_campaign, time.perf_counter() + 30) is False
    assert time.perf_counter() - started < 1.5
