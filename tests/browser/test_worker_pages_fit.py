"""Every worker page fits a 390 px phone and a 1280 px screen, with a failed test, a long history, a
cancelled campaign's HIT and figures on the standing page (issue 39)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Campaign
from annotation.services.pipeline import cancel_campaign
from hits.invitations import create_invitation
from hits.models import HIT, Assignment, Batch, Qualification, Worker
from hits.services import accept_next
from tests.browser.conftest import log_in
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-39"
ROWS = [(f"d{i}", f"Reference {i} says a rather long thing about the committee's unexpectedly contested decision .",
         f"System summary {i} .", [f"fact a of {i}", f"fact b of {i}"]) for i in range(6)]
PAGES = ("/work/", "/work/history/", "/work/quality/")


@pytest.fixture
def worker_world(tmp_path, django_user_model):
    user = django_user_model.objects.create_user(username="wide-worker", password=PASSWORD)
    worker = Worker.objects.create(external_id="wide-worker", user=user)
    names = ["A campaign with a rather long descriptive name for its judges", "Cancelled later", "Tested"]
    campaigns = [launched_scu_campaign(tmp_path / f"c{i}", name, ROWS) for i, name in enumerate(names)]
    presence = HIT.objects.filter(batch_id=campaigns[0].batch_id).first().task_type
    now = timezone.now()
    for hit in HIT.objects.filter(batch_id=campaigns[0].batch_id)[:5]:
        Assignment.objects.create(hit=hit, worker=worker, accepted_at=now - timedelta(minutes=9), expires_at=now, submitted_at=now,
                                  state=Assignment.State.SUBMITTED, work_seconds=95, answers={"labels": []},
                                  review_message="A long review message from the researcher about the judgments of this HIT.")
    held = accept_next(worker, presence, batch_id=campaigns[1].batch_id)
    cancel_campaign(Campaign.objects.get(pk=campaigns[1].pk))
    Qualification.objects.create(worker=worker, task_type=presence, batch=Batch.objects.get(pk=campaigns[2].batch_id),
                                 state=Qualification.State.FAILED, score=0.5, attempts=1, last_attempt_at=now,
                                 reason="did not pass the test (score 0.50)")
    invitation = create_invitation(batch=Batch.objects.get(pk=campaigns[0].batch_id))
    return {"worker": worker, "held": held, "join": f"/join/{invitation.token}/"}


def _width(page):
    return page.evaluate("document.documentElement.scrollWidth")


@pytest.mark.parametrize("width", [390, 1280])
def test_every_worker_page_fits_the_screen(page, worker_world, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(worker_world["join"])
    assert _width(page) <= width, "join"
    log_in(page, "wide-worker", PASSWORD)
    for url in PAGES:
        page.goto(url)
        assert _width(page) <= width, url


def test_the_pages_say_a_failed_test_once_and_a_cancelled_hit_is_owed_nothing(page, worker_world):
    log_in(page, "wide-worker", PASSWORD)
    page.goto("/work/")
    note = page.locator(".held-back li").first.inner_text()
    assert note.startswith("Tested: you did not pass its qualification test (score 0.50); you may try again after "), note
    assert note.count("did not pass") == 1
    page.goto("/work/history/")
    row = page.locator("#hits tbody tr").first
    assert row.locator("td.state").inner_text() == "Cancelled"
    assert row.locator("td.reward").inner_text() == "$0.00"
