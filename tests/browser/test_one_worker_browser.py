"""The worker view in a browser (issue 40): opened from the workers list, it shows the worker's HITs, and work is
approved and a bonus paid from it, the page coming back to itself each time."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits.models import HIT, Assignment, LedgerEntry, Worker
from tests.browser.conftest import log_in
from tests.web.conftest import REFERENCES, SUMMARIES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-7"


def test_open_from_the_workers_list_then_approve_and_pay_a_bonus(page, tmp_path, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    (tmp_path / "r.jsonl").write_bytes(REFERENCES)
    (tmp_path / "s.jsonl").write_bytes(SUMMARIES)
    campaign = import_campaign(name="Seen", owner=rita, references=tmp_path / "r.jsonl", summaries=tmp_path / "s.jsonl").campaign
    launch_campaign(campaign)
    campaign.refresh_from_db()
    ann = Worker.objects.create(external_id="ann")
    now = timezone.now()
    hits = list(HIT.objects.filter(batch_id=campaign.batch_id).order_by("pk")[:2])
    first, second = (
        Assignment.objects.create(hit=hit, worker=ann, state="submitted", accepted_at=now, expires_at=now, submitted_at=now,
                                  work_seconds=30, answers={"questions": [{"question": f"Who did thing {i}?", "answers": ["The mayor"]}]})
        for i, hit in enumerate(hits)
    )

    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/workers/")
    page.click("#workers tr[data-worker=ann] a.worker-link")
    page.wait_for_url(f"**/campaigns/{campaign.slug}/workers/{ann.pk}/")
    assert page.inner_text("h1").endswith("worker ann")
    table = page.locator("#worker-hits")
    assert table.locator("tbody tr").count() == 2
    assert "Who did thing 0? → The mayor" in table.inner_text()

    # Approve the first HIT from here: the page comes back with it approved.
    row = table.locator(f"tr[data-assignment='{first.pk}']")
    row.locator("select[name=action]").select_option("approve")
    row.locator("input[name=message]").fill("Good questions")
    row.locator("button[type=submit]").click()
    page.wait_for_url(f"**/workers/{ann.pk}/")
    assert "approved" in page.locator(f"#worker-hits tr[data-assignment='{first.pk}'] .state").inner_text().lower()

    # A bonus on the same HIT: recorded, and the page shows it in the worker's money.
    row = page.locator(f"#worker-hits tr[data-assignment='{first.pk}']")
    row.locator("select[name=action]").select_option("bonus")
    row.locator("input[name=message]").fill("Thorough")
    row.locator("input[name=amount]").fill("0.50")
    row.locator("button[type=submit]").click()
    page.wait_for_url(f"**/workers/{ann.pk}/")
    assert page.inner_text("[data-field=bonuses]") == "$0.50"
    assert LedgerEntry.objects.filter(assignment=first, kind="bonus", amount=Decimal("0.50"), created_by=rita).exists()
    assert Assignment.objects.get(pk=first.pk).state == "approved"
    assert Assignment.objects.get(pk=second.pk).state == "submitted"
