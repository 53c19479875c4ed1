"""Shared fixtures of the test suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
DEMO_DIR = REPO / "annotation" / "demo"


@pytest.fixture
def pinned_rate_window(monkeypatch):
    """Stop the rate limiter's clock for the test: a slow test's requests then all fall in one
    sliding window, so a limit of N admits exactly N whatever the test's speed."""
    import time
    from types import SimpleNamespace

    import config.ratelimit

    now = time.time()
    monkeypatch.setattr(config.ratelimit, "time", SimpleNamespace(time=lambda: now))


@pytest.fixture(autouse=True)
def paper_presence_rule(request, monkeypatch):
    """New campaigns default to the adaptive presence rule (issue 29: two judges, a third where they disagree);
    tests about something else create them under the paper's fixed rule, so their counts of presence
    assignments stay those of the protocol.  Tests of the rule set ``presence_judges`` themselves; a test
    marked ``adaptive_default`` sees the real default."""
    if request.node.get_closest_marker("adaptive_default"):
        return
    from annotation.models import Campaign

    field = Campaign._meta.get_field("presence_judges")
    monkeypatch.setattr(field, "_get_default", lambda: Campaign.PresenceJudges.FIXED)


@pytest.fixture
def eager_celery():
    """Run Celery tasks in-process even when a broker is configured (CI on PostgreSQL + Redis has no worker here)."""
    from config.celery import app

    was = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = was


def launched_scu_campaign(folder: Path, name: str, rows, system: str = "s1", launch: bool = True, **fields):
    """Import and launch an SCU campaign of one system; ``rows``: (id, reference, summary, units) per
    example; ``fields``: campaign settings changed before the launch; ``launch=False``: left a draft."""
    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign

    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("".join(f"{r[0]}\n" for r in rows))
    (folder / "references.txt").write_text("".join(f"{r[1]}\n" for r in rows))
    (folder / "summaries" / f"{system}.summary").write_text("".join(f"{r[2]}\n" for r in rows))
    (folder / "SCUs.txt").write_text("".join("\t".join(r[3]) + "\n" for r in rows))
    campaign = import_campaign(name=name, folder=folder).campaign
    if fields:
        Campaign.objects.filter(pk=campaign.pk).update(**fields)
    if launch:
        launch_campaign(campaign)
    campaign.refresh_from_db()
    return campaign


def database_url_for_workers() -> str:
    """The URL of the database the tests run on, for the worker processes a test starts."""
    from django.db import connection

    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user(username="rita", password="a-long-test-password")


@pytest.fixture
def other_researcher(django_user_model):
    return django_user_model.objects.create_user(username="oscar", password="a-long-test-password")


@pytest.fixture
def small_files(tmp_path):
    """A valid two-example campaign: references and two systems' summaries as JSONL."""
    refs = write_jsonl(
        tmp_path / "refs.jsonl",
        [
            {"id": "a", "reference": "The mayor opened a new park. Children played there all day.", "source": "Long text."},
            {"id": "b", "reference": "Storms closed the airport on Monday."},
        ],
    )
    sums = write_jsonl(
        tmp_path / "sums.jsonl",
        [
            {"id": "a", "system": "s1", "summary": "A park opened."},
            {"id": "b", "system": "s1", "summary": "The airport closed."},
            {"id": "a", "system": "s2", "summary": "The mayor opened a park."},
            {"id": "b", "system": "s2", "summary": "Storms hit."},
        ],
    )
    return refs, sums


def logged_in_worker(django_user_model, name: str):
    """A new worker account, logged in: (test client, worker)."""
    from django.test import Client

    from hits.services import worker_for_user

    user = django_user_model.objects.create_user(username=name, password="pw-for-tests-123")
    client = Client()
    client.force_login(user)
    return client, worker_for_user(user)
