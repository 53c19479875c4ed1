"""Issue 40's pilot in Chromium: the researcher starts a pilot from the campaign's page, workers take pilot HITs
from their own page, the researcher stops the pilot; each side's page says what happened."""

from __future__ import annotations

import pytest

from annotation.services.campaign_import import import_campaign
from annotation.services.roles import make_researcher
from tests.browser.conftest import log_in
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-pilot"


def _cells(page, task):
    """The pilot figures' row of ``task``: {column heading: cell text}."""
    headings = page.locator("#pilot-figures thead th").all_inner_texts()
    return dict(zip(headings, page.locator(f"#pilot-figures tr[data-task={task}] td").all_inner_texts()))


def _worker_page(chromium, live_server, name, django_user_model):
    django_user_model.objects.create_user(username=name, password=PASSWORD)
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800})
    page = context.new_page()
    page.set_default_timeout(45_000)
    log_in(page, name, PASSWORD)
    page.goto("/work/")
    return context, page


def _available(worker_page, task) -> str:
    """What the worker's page says is available of ``task`` ("0" when no row lists the task type)."""
    worker_page.goto("/work/")
    cell = worker_page.locator(f"#task-types tr[data-task={task}] td[data-label=Available]")
    return cell.inner_text().strip() if cell.count() else "0"


def test_start_take_and_stop_a_pilot(page, chromium, live_server, tmp_path, django_user_model):
    owner = django_user_model.objects.create_user(username="pia", password=PASSWORD)
    make_researcher(owner)
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Pilot in a browser", owner=owner, references=refs, summaries=sums).campaign
    contexts = []
    try:
        ann_context, ann = _worker_page(chromium, live_server, "ann", django_user_model)
        bea_context, bea = _worker_page(chromium, live_server, "bea", django_user_model)
        carl_context, carl = _worker_page(chromium, live_server, "carl", django_user_model)
        contexts = [ann_context, bea_context, carl_context]
        # Before the pilot the draft offers workers nothing.
        assert _available(ann, "generation") == "0"

        # The researcher starts it from the campaign's page.
        log_in(page, "pia", PASSWORD)
        page.goto(f"/campaigns/{campaign.slug}/")
        page.click("#pilot-link")
        page.wait_for_url(f"**/campaigns/{campaign.slug}/pilot/")
        page.fill("#pilot-size", "2")
        page.click("#pilot-start")
        page.wait_for_url(f"**/campaigns/{campaign.slug}/pilot/")
        assert "Pilot started: 1 generation HITs, 0 verification HITs, 0 presence HITs." in page.inner_text(".messages")
        state = page.inner_text("#pilot-state")
        assert "Pilot running since" in state and "2 HITs per task type" in state
        assert page.locator("#pilot-stop").is_visible() and page.locator("#pilot-start").count() == 0
        assert _cells(page, "generation")["Pilot HITs"] == "1" and _cells(page, "generation")["Still open"] == "1"

        # A worker sees the pilot HIT under the campaign's name, accepts it and writes two QA pairs.
        assert _available(ann, "generation") == "1"
        assert "Pilot in a browser" in ann.inner_text("#task-types tr[data-task=generation] td.campaigns")
        ann.click("tr[data-task=generation] button:has-text('Start working')")
        ann.wait_for_selector("#sentence")
        assert ann.inner_text("#predicate") == "blamed"
        ann.fill("#id_q1", "Who blamed someone?")
        ann.fill("#id_q1_a1", "Police")
        ann.fill("#id_q2", "Who did someone blame?")
        ann.fill("#id_q2_a1", "the driver")
        ann.click("#submit")
        ann.wait_for_load_state()
        assert "Submitted. Thank you!" in ann.content()
        assert _available(ann, "generation") == "0"

        # Her pairs open a pilot verification HIT (bea takes it, and is still at it) and a presence HIT (open).
        assert _available(bea, "verification") == "1"
        bea.click("tr[data-task=verification] button:has-text('Start working')")
        bea.wait_for_selector(".verify-row")
        assert bea.locator(".verify-row").count() == 2
        assert _available(carl, "presence") == "1"

        page.reload()
        generation = _cells(page, "generation")
        assert generation["Submitted"] == "1" and generation["Still open"] == "0"
        assert generation["Median time per HIT"].endswith(" s")  # measured (a second or so here)

        # The researcher stops the pilot: the untaken presence HIT is withdrawn, bea's work in progress is not.
        page.click("#pilot-stop")
        page.wait_for_url(f"**/campaigns/{campaign.slug}/pilot/")
        assert "Pilot stopped: HITs nobody had taken were withdrawn" in page.inner_text(".messages")
        assert page.inner_text("#pilot-state").startswith("Last pilot:")
        assert page.locator("#pilot-start").is_visible() and page.locator("#pilot-stop").count() == 0
        assert _available(carl, "presence") == "0"
        assert "None right now" in carl.inner_text("#task-types tr[data-task=presence] td.actions")

        rows = bea.locator(".verify-row")
        for i in range(2):
            rows.nth(i).get_by_label("Invalid").check()
        bea.click("#submit")
        bea.wait_for_load_state()
        assert "Submitted. Thank you!" in bea.content()

        page.reload()
        assert _cells(page, "verification")["Submitted"] == "1"
        assert _cells(page, "presence")["Submitted"] == "0" and _cells(page, "presence")["Still open"] == "0"
    finally:
        for context in contexts:
            context.close()
