"""A researcher inspects units in Chromium (issue 40): filters and search narrow the list, a unit's link opens its
review, where its gold label is overridden with a note; the inspector then marks it "overridden"."""

from __future__ import annotations

import pytest

from annotation.models import ContentUnit, GoldOverride, GoldPresence
from annotation.services.roles import make_researcher
from tests.browser.conftest import log_in
from tests.web.test_unit_inspector import build_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-units-password-1"


def test_filters_search_and_an_override_with_a_note(page, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    campaign, keys = build_world(rita)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/")
    page.click("#units-link")
    assert page.locator("#units-table tbody tr").count() == 8
    assert "8 units" in page.inner_text("#unit-count")

    page.select_option("#filter-agreement", "split")
    page.click("#filter-apply")
    page.wait_for_selector("text=1 unit")
    row = page.locator("#units-table tbody tr")
    assert row.count() == 1 and "The harbour reopened" in row.inner_text() and "disagrees" in row.inner_text()

    page.select_option("#filter-agreement", "")
    page.fill("#filter-q", "roads")
    page.select_option("#filter-system", "beta")
    page.click("#filter-apply")
    page.wait_for_selector("text=1 unit")
    row = page.locator("#units-table tbody tr")
    assert "Roads were closed" in row.inner_text() and "overridden" in row.inner_text()

    # Another unit: open its review and override the crowd's "present" with a note.
    unit, summary = keys[(0, "alpha")]
    page.fill("#filter-q", "harbour")
    page.select_option("#filter-system", "alpha")
    page.click("#filter-apply")
    page.wait_for_selector("text=1 unit")
    page.click("#units-table .review-link")
    cell = page.locator(f"#override-{unit}-{summary}")
    cell.locator("select[name=label]").select_option("absent")
    cell.locator("button").click()  # no note: the browser asks for one, nothing is sent
    assert not GoldOverride.objects.exists()
    cell.locator("input[name=note]").fill("The summary says the harbour stayed shut.")
    cell.locator("button").click()
    page.wait_for_selector("text=set to not present (logged)")
    cell = page.locator(f"#override-{unit}-{summary}")
    assert "The summary says the harbour stayed shut." in cell.inner_text()
    assert GoldPresence.objects.get(unit_id=unit, summary_id=summary, origin="override").present is False

    page.goto(f"/campaigns/{campaign.slug}/units/?decided=researcher")
    rows = page.locator("#units-table tbody tr")
    assert rows.count() == 2
    mine = page.locator(f'#units-table tr[data-unit="{unit}"][data-summary="{summary}"]')
    assert "overridden" in mine.inner_text() and "not present" in mine.locator(".gold").inner_text()
    assert ContentUnit.objects.get(pk=unit).text == "The harbour reopened"
