"""A worker takes the presence qualification test in Chromium and reads their standing."""

from __future__ import annotations

import json

import pytest

from annotation.services import qualification_tests
from hits.models import HIT, Qualification
from tests.browser.conftest import log_in
from tests.conftest import DEMO_DIR, launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-2"


def test_presence_qualification_test_then_standing_page(page, tmp_path, django_user_model):
    # A campaign with presence work open: its presence test is offered to a worker who starts from it.
    rows = [(f"d{i}", f"Reference {i} says a thing .", f"System summary {i} .", [f"fact a of {i}", f"fact b of {i}"]) for i in range(2)]
    campaign = launched_scu_campaign(tmp_path / "scu", "Qual browser", rows, gold_share=0.0)
    qualification_tests.define_qualifications(campaign, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    django_user_model.objects.create_user(username="quinn", password=PASSWORD)
    log_in(page, "quinn", PASSWORD)
    page.goto("/work/")
    # Auto-accept is off for a new worker; this one turns it on.
    with page.expect_navigation():
        page.check("input[name=auto_accept_next]")
    assert "Auto-accept is on." in page.inner_text(".messages")
    # The campaign asks for its test first; the worker chooses to take it.
    page.click(f"tr[data-task=presence] form.campaign-test[data-campaign='{campaign.batch_id}'] button")
    for n in range(4):
        # Auto-accept is on: each submission leads straight to the next HIT of the test.
        page.wait_for_selector(".presence-row")
        hit = HIT.objects.get(pk=HIT.objects.filter(assignments__worker__user__username="quinn", assignments__state="assigned").values("pk")[:1])
        assert hit.kind == "qualification"
        # A test says it is one, and how far the worker is.
        assert page.inner_text("#test-item").startswith(f"Qualification test: item {n + 1} of 4")
        assert "Preview" not in page.inner_text("main")
        labels = hit.answer_key["labels"]
        for k, pair in enumerate(hit.payload["inline"]["pairs"], start=1):
            row = page.locator(f".presence-row[data-unit='{k}']")
            row.get_by_label("Present" if labels[pair["id"]] else "Not present", exact=True).check()
        page.click("#submit")
        page.wait_for_load_state()
    qualification = Qualification.objects.get(worker__user__username="quinn", task_type__slug="presence")
    assert qualification.state == "qualified"
    assert "you passed the" in page.inner_text(".messages")
    page.goto("/work/quality/")
    row = page.locator("tr[data-task=presence]")
    assert "Qualified" in row.inner_text() and "passed the test" in row.inner_text()
    # A test not taken yet is called that, never "pending".
    generation = page.locator("tr[data-task=generation]").inner_text()
    assert "Test not taken yet" in generation and "ending" not in generation
