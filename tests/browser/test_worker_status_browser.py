"""The worker status page follows the crowd without a reload: a worker takes a HIT, then is paid below the floor."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits import payments
from hits.models import Assignment, TaskType, Worker
from hits.services import accept_next
from tests.browser.conftest import log_in
from tests.web.conftest import REFERENCES, SUMMARIES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-7"


def test_the_status_page_updates_itself(page, tmp_path, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    (tmp_path / "r.jsonl").write_bytes(REFERENCES)
    (tmp_path / "s.jsonl").write_bytes(SUMMARIES)
    campaign = import_campaign(name="Live", owner=rita, references=tmp_path / "r.jsonl", summaries=tmp_path / "s.jsonl").campaign
    launch_campaign(campaign)

    refused = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/workers/status/")
    assert page.locator("#no-workers").is_visible()
    assert page.locator("#floor-warning").is_hidden()
    # A mark on the window: it survives only if the page is never loaded again.
    page.evaluate("window.statusMark = 'same page'")

    # A worker takes a HIT: a row appears with one HIT held.
    ann = Worker.objects.create(external_id="ann")
    assignment = accept_next(ann, TaskType.objects.get(slug="generation"))
    row = page.locator("#worker-status-table tr[data-worker=ann]")
    row.wait_for(timeout=20_000)
    page.wait_for_function("() => document.querySelector('tr[data-worker=ann] [data-field=active]').textContent === '1'")
    assert page.inner_text("[data-field=active_workers]") == "1"
    assert page.locator("#no-workers").is_hidden()

    # She submits after ten minutes and is paid $0.32: $1.92 an hour, below the $12.00 floor.
    Assignment.objects.filter(pk=assignment.pk).update(
        state=Assignment.State.SUBMITTED, submitted_at=timezone.now(), work_seconds=600, answers={}
    )
    payments.approve_assignment(Assignment.objects.get(pk=assignment.pk), by=rita)
    page.locator("#floor-warning").wait_for(state="visible", timeout=20_000)
    assert "$1.92" in row.locator("[data-field=hourly]").inner_text()
    assert "below the floor" in row.inner_text()
    assert "below-floor" in (row.get_attribute("class") or "")
    assert row.locator("[data-field=active]").inner_text() == "0"
    assert page.evaluate("window.statusMark") == "same page"
    assert not refused, refused  # the polling script and its fetches pass the Content-Security-Policy
