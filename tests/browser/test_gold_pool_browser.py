"""Issue 39's gold pool check in Chromium: the settings page warns before launch when the planned gold pool is too
small for workers not to share items, and the progress page (and settings) once workers are found sharing them;
a pool large enough shows its figures without the warning."""

from __future__ import annotations

import pytest

from annotation.models import ContentUnit, GoldPresence, SystemSummary
from hits.models import HIT
from tests.annotation.test_gold_pool import ROWS, _do, _gold_campaign
from tests.browser.conftest import log_in
from tests.conftest import launched_scu_campaign, logged_in_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-gold"


def _draft_with_labels(tmp_path, name, gold_share):
    """A draft SCU campaign of eight presence HITs whose every unit has an imported gold label: the settings plan
    ``gold_share`` of its presence HITs as gold checks."""
    campaign = launched_scu_campaign(tmp_path / name, name, ROWS, launch=False, gold_share=gold_share)
    GoldPresence.objects.bulk_create([
        GoldPresence(unit=unit, summary=summary, present=True, origin=GoldPresence.Origin.IMPORTED)
        for summary in SystemSummary.objects.filter(system__campaign=campaign)
        for unit in ContentUnit.objects.filter(example=summary.example)
    ])
    return campaign


def _pool(page, url):
    """(the gold pool paragraph's text, its warning's text or None) on the page at ``url``."""
    page.goto(url)
    warning = page.locator("#gold-pool-warning")
    return page.inner_text("#gold-pool"), (warning.inner_text() if warning.count() else None)


def test_settings_page_warns_of_a_planned_pool_too_small(page, tmp_path, django_user_model):
    # 20% of 8 presence HITs: 2 gold items; floor(sqrt(2) x 0.8 / 0.2) = 5 regular HITs a worker, of the 6 there are.
    small = _draft_with_labels(tmp_path, "Small pool", 0.2)
    # 10%: 1 gold item, but floor(1 x 0.9 / 0.1) = 9 covers all 7 regular HITs.
    enough = _draft_with_labels(tmp_path, "Pool enough", 0.1)
    django_user_model.objects.create_superuser("admin", password=PASSWORD)
    log_in(page, "admin", PASSWORD)

    text, warning = _pool(page, f"/campaigns/{small.slug}/settings/")
    assert "2 gold items at a gold share of 20%" in text and "up to 5 regular presence HITs" in text
    assert warning is not None and warning.startswith("2 gold items are few: a worker doing more than 5 regular HITs")
    assert "notice" in page.get_attribute("#gold-pool", "class")

    text, warning = _pool(page, f"/campaigns/{enough.slug}/settings/")
    assert "1 gold item at a gold share of 10%" in text and "up to 9 regular presence HITs" in text
    assert warning is None and "notice" not in page.get_attribute("#gold-pool", "class")


def test_progress_page_warns_when_workers_share_gold_items(page, tmp_path, django_user_model):
    shared, task_type = _gold_campaign(tmp_path, 2, "Shared pool")
    own, _ = _gold_campaign(tmp_path, 40, "Own pool")
    for i in range(3):
        worker = logged_in_worker(django_user_model, f"w{i}")[1]
        # In "Shared pool" every worker meets both gold items; in "Own pool" two items of their own.
        own_gold = list(HIT.objects.filter(batch_id=own.batch_id, kind=HIT.Kind.GOLD).order_by("pk"))[2 * i:2 * i + 2]
        for campaign, gold in ((shared, list(HIT.objects.filter(batch_id=shared.batch_id, kind=HIT.Kind.GOLD))), (own, own_gold)):
            for hit in gold + list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR)):
                _do(worker, task_type, hit)
    django_user_model.objects.create_superuser("admin", password=PASSWORD)
    log_in(page, "admin", PASSWORD)

    for url in (f"/campaigns/{shared.slug}/progress/", f"/campaigns/{shared.slug}/settings/"):
        text, warning = _pool(page, url)
        assert "So far 3 workers; two of them have 2.0 gold items in common on average" in text
        assert warning is not None and "one worker did 8 regular HITs (the pool covers 5 per worker)" in warning

    text, warning = _pool(page, f"/campaigns/{own.slug}/progress/")
    assert "40 gold items" in text and "two of them have 0.0 gold items in common" in text
    assert warning is None and "notice" not in page.get_attribute("#gold-pool", "class")
