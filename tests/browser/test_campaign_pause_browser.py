"""A researcher pauses and resumes a running campaign from its progress page in Chromium; workers notice."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from annotation.models import Campaign
from annotation.services.roles import make_researcher
from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.services import accept_next
from tests.browser.conftest import log_in
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-5"


def _hit_states(campaign):
    return set(HIT.objects.filter(batch_id=campaign.batch_id).values_list("state", flat=True))


def _worker_client(django_user_model, name):
    user = django_user_model.objects.create_user(username=name, password="pw-for-tests-123")
    client = Client()
    client.force_login(user)
    return client


def _presence_row(client):
    """The presence row of the worker's task list, as HTML."""
    html = client.get("/work/").content.decode()
    row = re.search(r'<tr data-task="presence">.*?</tr>', html, re.S)
    assert row, "the worker's task list has no presence row"
    return row.group(0)


def test_pause_then_resume_from_the_progress_page(page, tmp_path, django_user_model):
    user = django_user_model.objects.create_user(username="paula", password=PASSWORD)
    make_researcher(user)
    rows = [(f"e{i}", "A cat sat on the mat.", "A cat sat.", ["A cat sat.", "It was on the mat."]) for i in range(3)]
    campaign = launched_scu_campaign(tmp_path / "pausable", "Pausable", rows, owner=user)
    assert campaign.state == "running" and campaign.owner_id == user.pk
    assert _hit_states(campaign) == {"open"}
    n_hits = HIT.objects.filter(batch_id=campaign.batch_id).count()
    assert n_hits > 0
    presence = TaskType.objects.get(slug="presence")
    worker_page = _worker_client(django_user_model, "wanda")
    assert "Start working" in _presence_row(worker_page)  # something to do before the pause

    log_in(page, "paula", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/progress/")
    assert page.inner_text("#campaign-state") == "Running"
    assert page.locator("button[name=action][value=resume]").count() == 0
    # Should the buttons ever ask for confirmation, the researcher confirms.
    page.on("dialog", lambda dialog: dialog.accept())

    # Pause: the page says so, and the campaign's HITs are set aside.
    page.click("button[name=action][value=pause]")
    page.wait_for_selector("#campaign-state:has-text('Paused')")
    assert "Campaign paused: no new HITs are handed out." in page.inner_text(".messages")
    assert page.locator("button[name=action][value=pause]").count() == 0
    assert page.locator("button[name=action][value=resume]").is_visible()
    campaign.refresh_from_db()
    assert campaign.state == "paused"
    assert Batch.objects.get(pk=campaign.batch_id).state == "paused"
    assert _hit_states(campaign) == {"paused"}
    assert not HIT.objects.filter(batch_id=campaign.batch_id, state="open").exists()

    # No worker is handed a HIT while the campaign is paused.
    row = _presence_row(worker_page)
    assert "None right now" in row and "Start working" not in row
    response = worker_page.post("/work/presence/start/", follow=True)
    assert f"No {presence.name} HITs are available right now" in response.content.decode()
    assert accept_next(Worker.objects.create(external_id="svc-paused"), presence) is None
    assert not Assignment.objects.exists()

    # Resume: running again, HITs open, and a worker gets one of this campaign's HITs.
    page.click("button[name=action][value=resume]")
    page.wait_for_selector("#campaign-state:has-text('Running')")
    assert "Campaign resumed." in page.inner_text(".messages")
    assert page.locator("button[name=action][value=pause]").is_visible()
    assert page.locator("button[name=action][value=resume]").count() == 0
    campaign.refresh_from_db()
    assert campaign.state == "running"
    assert Batch.objects.get(pk=campaign.batch_id).state == "active"
    assert _hit_states(campaign) == {"open"}
    assert "Start working" in _presence_row(worker_page)
    response = worker_page.post("/work/presence/start/")
    assert response.status_code == 302 and "/work/" in response["Location"]
    handed = Assignment.objects.get(worker__user__username="wanda")
    assert handed.hit.batch_id == campaign.batch_id
    assert response["Location"].rstrip("/").endswith(str(handed.pk))
    assignment = accept_next(Worker.objects.create(external_id="svc-resumed"), presence)
    assert assignment is not None and assignment.hit.batch_id == campaign.batch_id
