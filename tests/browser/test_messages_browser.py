"""Messages to workers in a browser (issue 40): the researcher ticks two workers on the workers page, sends, and
reads the log; a worker reads the message on her work page and marks it read."""

from __future__ import annotations

import pytest

from tests.browser.conftest import log_in, researcher_with_campaign
from tests.web.test_messages import WORKER_PASSWORD, workers_who_worked

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-7"


def test_tick_two_workers_send_read_the_log_and_the_worker_reads_it(page, tmp_path, django_user_model):
    _, campaign = researcher_with_campaign(django_user_model, tmp_path, "rita", PASSWORD, "Talk")
    workers_who_worked(campaign, "ann", "bob", "cid", django_user_model=django_user_model)

    refused = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None)
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/workers/")
    page.check("tr[data-worker=ann] input[name=workers]")
    page.check("tr[data-worker=bob] input[name=workers]")
    page.fill("#message-form input[name=subject]", "Thank you")
    page.fill("#message-form textarea[name=body]", "Your summaries helped a lot.")
    page.click("#message-form button.message-ticked")

    page.wait_for_url(f"**/campaigns/{campaign.slug}/messages/**")
    log = page.locator(".message-log").first
    assert log.locator("h3").inner_text() == "Thank you"
    assert log.locator(".sender").inner_text() == "rita"
    assert sorted(log.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.worker)")) == ["ann", "bob"]
    assert "sent to 2 worker(s)" in page.inner_text("ul.messages")
    assert "2 sent" in log.inner_text()

    page.context.clear_cookies()
    log_in(page, "ann", WORKER_PASSWORD)
    page.goto("/work/")
    notice = page.locator("#worker-messages li.notice")
    assert notice.locator(".subject").inner_text() == "Thank you"
    assert "Your summaries helped a lot." in notice.inner_text()
    assert "unread" in (notice.get_attribute("class") or "")
    notice.locator("button", has_text="Mark as read").click()
    page.wait_for_load_state()
    assert "unread" not in (page.locator("#worker-messages li.notice").get_attribute("class") or "")

    page.context.clear_cookies()
    log_in(page, "cid", WORKER_PASSWORD)
    page.goto("/work/")
    assert page.locator("#worker-messages").count() == 0
    assert not refused, refused
