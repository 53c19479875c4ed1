"""Faults lose nothing: the broker down, a lost database connection, limits and rate limits."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest
from django.db import connection
from django.test import Client, override_settings

from annotation.models import PresenceJudgment
from hits.models import Assignment, FollowUp
from hits import outbox
from tests.conftest import launched_scu_campaign


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def scu_campaign(tmp_path):
    rows = [("e1", "A cat sat on the mat .", "A cat sat .", ["A cat sat.", "On the mat."])]
    return launched_scu_campaign(tmp_path / "ds", "Faults", rows, assignments_presence=1)


def _judge(django_user_model, name="judy"):
    django_user_model.objects.create_user(username=name, password="pw-faults-123")
    client = Client()
    client.login(username=name, password="pw-faults-123")
    return client


@pytest.fixture
def private_redis():
    """A redis-server of our own on a free port; stopped (and restartable) without touching the machine's."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    state = {"process": None, "port": port}

    def start():
        state["process"] = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("private redis did not start")

    def stop():
        state["process"].terminate()
        state["process"].wait(timeout=10)

    state["start"], state["stop"] = start, stop
    start()
    yield state
    if state["process"].poll() is None:
        stop()


@pytest.fixture
def celery_on(private_redis):
    """Point the Celery app at the private broker, publishing for real (not eager)."""
    from config.celery import app

    import kombu.pools

    keys = ("broker_url", "broker_read_url", "broker_write_url", "task_always_eager")
    saved = {key: app.conf[key] for key in keys}

    def reset_pools():
        # kombu keeps pools in process-wide registries keyed by connection: clear them, or the
        # next publish (even an eager one, which borrows a producer) gets a closed pool back.
        app.pool.force_close_all()
        kombu.pools.reset()
        app._pool = None
        app.amqp._producer_pool = None

    url = f"redis://127.0.0.1:{private_redis['port']}/0"
    # broker_read_url/broker_write_url were resolved from the settings' broker when the app was configured.
    app.conf.update(broker_url=url, broker_read_url=url, broker_write_url=url, task_always_eager=False)
    reset_pools()
    yield app
    app.conf.update(saved)
    reset_pools()


@pytest.mark.django_db
def test_broker_down_submission_still_succeeds_and_follow_ups_run_when_it_returns(
    scu_campaign, django_user_model, private_redis, celery_on, django_capture_on_commit_callbacks
):
    import redis

    client = _judge(django_user_model)
    private_redis["stop"]()
    location = client.post("/work/presence/start/")["Location"]
    assignment = Assignment.objects.get()
    data = {f"p_{k}": "1" for k, _ in enumerate(assignment.hit.payload["units"], start=1)}
    started = time.perf_counter()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(location, {"action": "submit", **data})
    assert response.status_code == 302  # the worker's submission is accepted...
    assert time.perf_counter() - started < 20
    assert PresenceJudgment.objects.count() == 2
    stored = list(FollowUp.objects.values_list("task_name", flat=True))
    assert "annotation.after_presence_hits" in stored  # ...and the follow-up work is kept, not lost
    private_redis["start"]()
    sent = outbox.flush()
    assert sent == len(stored)
    assert not FollowUp.objects.exists()
    from config.queues import QUEUES

    # The follow-ups wait on their queues (by latency: config.queues), every one of them sent.
    queued = sum(redis.Redis(port=private_redis["port"]).llen(queue) for queue in QUEUES)
    assert queued == len(stored)


@pytest.mark.django_db
def test_lost_database_connection_gives_a_clean_error_and_no_partial_write(scu_campaign, django_user_model, monkeypatch):
    from annotation.web import hit_pages
    from django.db import OperationalError

    client = _judge(django_user_model, "dora")
    location = client.post("/work/presence/start/")["Location"]
    assignment = Assignment.objects.get()
    original = hit_pages.PresenceHandler.on_submitted

    def drop_connection(self, submitted):
        original(self, submitted)  # the judgments are written inside the transaction...
        raise OperationalError("server closed the connection unexpectedly")  # ...then the connection is lost

    monkeypatch.setattr(hit_pages.PresenceHandler, "on_submitted", drop_connection)
    data = {f"p_{k}": "0" for k, _ in enumerate(assignment.hit.payload["units"], start=1)}
    response = client.post(location, {"action": "submit", **data})
    assert response.status_code == 503
    assert b"Nothing was saved from it" in response.content
    assignment.refresh_from_db()
    assert assignment.state == "assigned" and assignment.answers is None
    assert PresenceJudgment.objects.count() == 0


@pytest.mark.django_db
def test_login_and_submission_are_rate_limited(django_user_model, scu_campaign, pinned_rate_window):
    from django.core.cache import cache

    cache.clear()
    django_user_model.objects.create_user(username="rate", password="pw-rate-1234")
    with override_settings(LOGIN_RATE_LIMIT="3/60", SUBMIT_RATE_LIMIT="2/60"):
        client = Client()
        codes = [client.post("/accounts/login/", {"username": "rate", "password": "wrong"}).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        other = _judge(django_user_model, "quick")
        location = other.post("/work/presence/start/")["Location"]
        answers = [other.post(location, {"action": "submit"}).status_code for _ in range(3)]
        assert answers[:2] == [400, 400] and answers[2] == 429
    cache.clear()
