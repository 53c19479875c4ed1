"""Issue 38, finding 9 in Chromium: a study link opens one browser.  The participant starts the study on the
Prolific stand-in's "take part" page in one browser; the same study URL opened in a second browser (another
browser context: its own cookies) shows a page saying the session is open elsewhere and signs nobody in there;
the move code the first browser's HIT page shows moves the session to the second one, and the first one can no
longer submit."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlencode

import pytest

from hits.models import HIT, Assignment, TaskType
from hits.prolific import STUDY_START_PATH
from hits.prolific.models import ProlificSession, ProlificStudy
from hits.prolific.standin import running_standin
from tests.browser.test_prolific_participant import CODE, PARTICIPANT, _published_study
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_study_link_in_a_second_browser_needs_the_move_code_and_signs_the_first_out(page, chromium, live_server,
                                                                                       settings, tmp_path):
    rows = [(f"e{i}", f"Reference {i} says a thing .", f"Summary {i} .", [f"fact a {i}", f"fact b {i}"]) for i in range(3)]
    campaign = launched_scu_campaign(tmp_path / "prolific", "Prolific one browser", rows, backend="prolific", gold_share=0.0,
                                      reward_presence=Decimal("0.30"))
    HIT.objects.filter(batch_id=campaign.batch_id).update(max_assignments=1)
    second = chromium.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800})
    other = second.new_page()
    other.set_default_timeout(45_000)
    try:
        with running_standin(token="test-token") as standin:
            settings.PROLIFIC_COMPLETION_URL = f"{standin.url}/submissions/complete"
            settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = standin.url, "test-token"
            study_id = _published_study(standin, live_server)
            ProlificStudy.objects.create(
                batch_id=campaign.batch_id, task_type=TaskType.objects.get(slug="presence"),
                internal_name="browser-test-study", prolific_id=study_id, completion_code=CODE, hits_per_submission=2,
                status="ACTIVE",
            )
            page.goto(f"{standin.url}/studies/{study_id}/start?participant_id={PARTICIPANT}")
            page.wait_for_function("() => document.querySelector('#prolific-progress')?.textContent.includes('HIT 1 of 2')")
            hit_url = page.url
            code = page.locator("#prolific-move-code strong").inner_text()
            session = ProlificSession.objects.get()
            link = STUDY_START_PATH + "?" + urlencode(
                {"PROLIFIC_PID": PARTICIPANT, "STUDY_ID": study_id, "SESSION_ID": session.session_id})

            # The full link in the second browser: a clear page, no HIT, no code, and nobody signed in there.
            other.goto(link)
            assert other.locator("#prolific-title").inner_text() == "This study link is open in another browser"
            assert code not in other.content() and other.locator("#hit-form").count() == 0
            other.goto(hit_url)
            assert "/accounts/login/" in other.url

            # With the move code from the first browser: the same HIT, here.
            other.goto(link)
            other.fill("#move-code", code)
            other.click("#prolific-move button[type=submit]")
            other.wait_for_function("() => document.querySelector('#prolific-progress')?.textContent.includes('HIT 1 of 2')")
            assert other.url == hit_url
            assert "Your session is in this browser now" in other.content()

            # The first browser's open HIT page can no longer submit: it says the session moved.
            page.wait_for_load_state("load")
            for _ in range(page.locator(".presence-row").count()):
                page.keyboard.press("p")
            page.keyboard.press("Control+Enter")
            page.wait_for_selector("text=Your session moved to another browser")
            assert Assignment.objects.get().state == "assigned"
    finally:
        second.close()
