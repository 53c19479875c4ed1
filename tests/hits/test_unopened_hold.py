"""Auto-accept is off by default, and a HIT reserved for a worker who never opens it goes back to the pool quickly."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from hits import services
from hits.models import HIT, Assignment, Worker
from hits.services import expire_assignments
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from tests.conftest import write_jsonl
from tests.hits.test_worker_pages import launched  # noqa: F401

pytestmark = pytest.mark.django_db


def _client(django_user_model, name):
    user = django_user_model.objects.create_user(username=name, password="pw-for-tests-123")
    client = Client()
    client.force_login(user)
    return client


def test_auto_accept_is_off_for_a_new_worker(launched, django_user_model):  # noqa: F811
    client = _client(django_user_model, "newbie")
    home = client.get("/work/")
    assert Worker.objects.get(user__username="newbie").auto_accept_next is False
    box = home.content.split(b'name="auto_accept_next"')[1].split(b">")[0]
    assert b"checked" not in box


def test_an_accepted_hit_nobody_opens_returns_to_the_pool_within_two_minutes(launched, django_user_model):  # noqa: F811
    client = _client(django_user_model, "walker")
    client.post("/work/settings/", {"auto_accept_next": "on"})
    # Accepted (as auto-accept does after a submission), never opened: the worker has left.
    started = client.post("/work/generation/start/")
    assert started.status_code == 302
    assignment = Assignment.objects.get()
    held = (assignment.expires_at - assignment.accepted_at).total_seconds()
    assert held <= 120
    assert expire_assignments(now=timezone.now() + timedelta(seconds=121)) == 1
    assignment.refresh_from_db()
    assert assignment.state == Assignment.State.EXPIRED
    assert HIT.objects.get().n_taken == 0


def test_an_opened_hit_keeps_its_full_duration(launched, django_user_model):  # noqa: F811
    client = _client(django_user_model, "worker")
    started = client.post("/work/generation/start/")
    assert client.get(started["Location"]).status_code == 200
    assignment = Assignment.objects.select_related("hit__task_type").get()
    assert assignment.expires_at == assignment.accepted_at + timedelta(seconds=assignment.hit.task_type.assignment_duration)
    assert expire_assignments(now=timezone.now() + timedelta(seconds=121)) == 0
    submitted = client.post(started["Location"], {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Police"})
    assert submitted.status_code == 302


def test_auto_accepted_next_hit_is_held_briefly_until_opened(tmp_path, researcher, django_user_model):
    refs = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "e1", "reference": "Police blamed the driver for the crash."},
        {"id": "e2", "reference": "The mayor refused to comment."},
    ])
    sums = write_jsonl(tmp_path / "s.jsonl", [
        {"id": "e1", "system": "s", "summary": "Police blamed the driver."},
        {"id": "e2", "system": "s", "summary": "The mayor said nothing."},
    ])
    launch_campaign(import_campaign(name="Two", owner=researcher, references=refs, summaries=sums).campaign)
    client = _client(django_user_model, "eager")
    client.post("/work/settings/", {"auto_accept_next": "on"})
    started = client.post("/work/generation/start/")
    first = Assignment.objects.get()
    client.get(started["Location"])
    from annotation.web.hit_pages import sentence_item

    # The question names the HIT's verb (the server refuses one that does not): the hand-out's order inside a
    # campaign is random, so the HIT may be "blamed", "refused" or "comment".
    police = sentence_item(first.hit).predicate_text == "blamed"
    question, answer = ("Who blamed someone?", "Police") if police else ("Who refused to comment?", "The mayor")
    done = client.post(started["Location"], {"action": "submit", "q1": question, "q1_a1": answer, "q1_keep": "1"})
    nxt = Assignment.objects.exclude(pk=first.pk).get()
    assert done["Location"] == f"/work/assignments/{nxt.pk}/"
    assert nxt.state == Assignment.State.ASSIGNED
    assert (nxt.expires_at - nxt.accepted_at).total_seconds() <= 120
    # The worker does not come back: the place returns to the pool at the next expiry run.
    assert expire_assignments(now=timezone.now() + timedelta(seconds=121)) == 1
    assert nxt.hit.__class__.objects.get(pk=nxt.hit_id).n_taken == 0


def test_the_worker_pages_expire_due_assignments_without_a_scheduler(launched, django_user_model, monkeypatch):  # noqa: F811
    client = _client(django_user_model, "leaver")
    client.post("/work/generation/start/")
    Assignment.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    monkeypatch.setattr(services, "_last_expiry", float("-inf"))
    _client(django_user_model, "next").get("/work/")
    assert Assignment.objects.get().state == Assignment.State.EXPIRED
