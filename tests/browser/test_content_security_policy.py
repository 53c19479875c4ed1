"""Under the Content-Security-Policy (issue 19) the pages still work in Chromium: no script or style is
refused, the auto-accept switch still submits itself, and "Cancel campaign" still asks first."""

from __future__ import annotations

import pytest

from annotation.models import Campaign
from annotation.services.roles import make_researcher
from hits.models import Worker
from tests.browser.conftest import log_in
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-19"


def test_pages_work_under_the_policy(page, tmp_path, django_user_model):
    refused = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None)
    user = django_user_model.objects.create_user(username="cora", password=PASSWORD)
    make_researcher(user)
    rows = [(f"e{i}", "A cat sat on the mat.", "A cat sat.", ["A cat sat.", "It was on the mat."]) for i in range(2)]
    campaign = launched_scu_campaign(tmp_path / "csp", "Policy", rows, owner=user)
    log_in(page, "cora", PASSWORD)
    for url in ("/", f"/campaigns/{campaign.slug}/progress/", f"/campaigns/{campaign.slug}/settings/",
                f"/campaigns/{campaign.slug}/predicates/", f"/campaigns/{campaign.slug}/workers/", "/api/docs/"):
        response = page.goto(url)
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"], url
        page.wait_for_load_state("networkidle")
    assert page.locator("#swagger-ui .information-container").count() == 1  # Swagger UI rendered from its own script

    # "Skip this step for the whole campaign" (duplicate review) asks first: dismissed, the step stays on.
    Campaign.objects.filter(pk=campaign.pk).update(review_duplicates=True)
    page.goto(f"/campaigns/{campaign.slug}/duplicates/")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#skip-review")
    page.wait_for_timeout(300)
    assert asked and "duplicate review off" in asked[0]
    assert Campaign.objects.get(pk=campaign.pk).review_duplicates is True

    # "Cancel campaign" asks first: dismissed, nothing happens; confirmed, the campaign is cancelled.
    page.goto(f"/campaigns/{campaign.slug}/progress/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("button[name=action][value=cancel]")
    page.wait_for_timeout(300)
    campaign.refresh_from_db()
    assert campaign.state == "running"
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.click("button[name=action][value=cancel]")
    assert Campaign.objects.get(pk=campaign.pk).state == "cancelled"

    # The worker's auto-accept switch submits its form by itself.
    Worker.objects.get_or_create(user=user, defaults={"external_id": "cora"})
    page.goto("/work/")
    before = Worker.objects.get(user=user).auto_accept_next
    with page.expect_navigation():
        page.click("input[name=auto_accept_next]")
    assert Worker.objects.get(user=user).auto_accept_next is (not before)
    assert refused == []
