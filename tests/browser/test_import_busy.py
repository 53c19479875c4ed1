"""The import check says it is working while the server reads the files and finds predicates."""

from __future__ import annotations

import pytest

from annotation.services.roles import make_researcher
from tests.browser.conftest import log_in
from tests.browser.test_researcher_study import eager_jobs  # noqa: F401
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-busy-password-1"


def test_the_preview_shows_progress_while_the_server_checks(page, tmp_path, django_user_model, eager_jobs):  # noqa: F811
    refs = write_jsonl(tmp_path / "references.jsonl", [{"id": "n1", "reference": "Heavy rain flooded the old market."}])
    sums = write_jsonl(tmp_path / "summaries.jsonl", [{"id": "n1", "system": "lead", "summary": "Rain fell."}])
    user = django_user_model.objects.create_user(username="rosa", password=PASSWORD)
    make_researcher(user)
    log_in(page, "rosa", PASSWORD)
    page.goto("/campaigns/new/")
    assert page.locator("#import-busy").is_hidden()

    # Hold the form here once our handler has run (as a slow server would keep the page), to watch it.
    page.evaluate("document.getElementById('upload-form').addEventListener('submit', e => e.preventDefault())")
    page.fill("#id_name", "Market study")
    page.set_input_files("#id_references", str(refs))
    page.set_input_files("#id_summaries", str(sums))
    page.click("#preview")
    assert page.locator("#import-busy").is_visible() and "finding the predicates" in page.inner_text("#import-busy")
    assert page.locator("#preview").is_disabled()
    page.wait_for_function("() => document.getElementById('import-elapsed').textContent !== '0 s'", timeout=3000)


def test_the_tie_rule_choice_is_shown_whole(page, tmp_path, django_user_model):
    from annotation.services.campaign_import import import_campaign

    refs = write_jsonl(tmp_path / "references.jsonl", [{"id": "n1", "reference": "Heavy rain flooded the old market."}])
    sums = write_jsonl(tmp_path / "summaries.jsonl", [{"id": "n1", "system": "lead", "summary": "Rain fell."}])
    user = django_user_model.objects.create_user(username="rosa", password=PASSWORD)
    make_researcher(user)
    campaign = import_campaign(name="Ties", owner=user, references=refs, summaries=sums).campaign
    log_in(page, "rosa", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/settings/")
    select = page.locator("select[name=tie_rule]")
    longest = select.evaluate("s => Math.max(...Array.from(s.options).map(o => { const c = document.createElement('canvas').getContext('2d'); c.font = getComputedStyle(s).font; return c.measureText(o.text).width; }))")
    assert select.bounding_box()["width"] >= longest + 16  # room for the text and the arrow
