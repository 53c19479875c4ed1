"""Issue 40 in Chromium: a researcher previews a task type as a worker before launch.  The page shows the
campaign's real text and instructions, its Submit is disabled, and a forced POST records nothing."""

from __future__ import annotations

import pytest
from django.apps import apps

from annotation.models import Campaign, Predicate
from annotation.services.campaign_import import import_campaign
from annotation.services.roles import make_researcher
from tests.browser.conftest import log_in
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-40"


def all_rows() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for app in ("hits", "annotation", "auth") for m in apps.get_app_config(app).get_models()}


def test_preview_as_a_worker_shows_the_campaign_and_takes_no_answers(page, tmp_path, django_user_model):
    user = django_user_model.objects.create_user(username="vera", password=PASSWORD)
    make_researcher(user)
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Preview study", owner=user, references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(max_questions_per_predicate=4, writer_valid_threshold=0.9)
    assert Predicate.objects.filter(example__campaign=campaign).count() == 1
    log_in(page, "vera", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/pilot/")
    page.click("#worker-view-generation")
    page.wait_for_load_state()
    assert page.inner_text("#sentence") == "Police blamed the driver for the crash."
    assert page.inner_text("#sentence .predicate") == "blamed"
    instructions = page.inner_text("details.instructions")
    assert "(up to 4)" in instructions and "more than 90% of your question" in instructions
    assert page.locator("input[name^=q][name$=_a1]").count() == 4
    assert page.is_disabled("#submit")
    assert "Nothing can be submitted and nothing is recorded" in page.inner_text("#worker-view")

    before = all_rows()
    # The worker's own typing works (the page is theirs), but the answers go nowhere.
    page.fill("input[name=q1]", "Who blamed someone?")
    page.fill("input[name=q1_a1]", "Police")
    # Forced past the disabled button: the POST is refused and nothing changes.
    status = page.evaluate(
        """async () => {
            const form = document.getElementById('hit-form');
            const body = new FormData(form);
            body.set('action', 'submit');
            const reply = await fetch(form.action, {method: 'POST', body, credentials: 'same-origin'});
            return reply.status;
        }"""
    )
    assert status == 405
    page.evaluate("document.getElementById('submit').disabled = false")
    with page.expect_response(lambda r: r.request.method == "POST") as posted:
        page.click("#submit")
    assert posted.value.status == 405
    page.wait_for_load_state()
    assert "nothing was submitted or recorded" in page.inner_text("#worker-view-refused")
    assert all_rows() == before
