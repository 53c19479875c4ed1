"""The status an open HIT page polls: the worker's own assignment only, cheap, and what a pause or a cancel
means for the worker's pay."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.services.pipeline import cancel_campaign, pause_campaign
from hits.models import Assignment
from tests.hits.test_worker_pages import _client, launched  # noqa: F401

pytestmark = pytest.mark.django_db


def test_status_of_an_open_hit_then_paused_then_cancelled(launched, django_user_model):  # noqa: F811
    client = _client(django_user_model, "sam")
    page = client.post("/work/generation/start/")["Location"]
    client.get(page)
    assignment = Assignment.objects.get()
    url = f"/work/assignments/{assignment.pk}/status/"
    with CaptureQueriesContext(connection) as queries:
        status = client.get(url)
    assert status.status_code == 200 and status["Cache-Control"] == "no-store"
    body = status.json()
    assert body["state"] == "assigned" and body["campaign"] == "active" and body["can_submit"] and body["notice"] == ""
    assert 0 < body["seconds_left"] <= assignment.hit.task_type.assignment_duration
    # Session, user, worker, assignment: nothing written, nothing else read.
    assert len(queries) <= 4 and not any(q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT")) for q in queries)
    pause_campaign(launched)
    body = client.get(url).json()
    assert body["campaign"] == "paused" and body["can_submit"]
    assert "still submit this HIT and be paid" in body["notice"]
    cancel_campaign(launched)
    body = client.get(url).json()
    assert body["campaign"] == "cancelled" and not body["can_submit"]
    assert "can no longer be submitted" in body["notice"] and "nothing is owed" in body["notice"]


def test_status_of_someone_elses_assignment_is_not_found(launched, django_user_model):  # noqa: F811
    owner = _client(django_user_model, "olga")
    owner.post("/work/generation/start/")
    other = _client(django_user_model, "otto")
    assert other.get(f"/work/assignments/{Assignment.objects.get().pk}/status/").status_code == 404
