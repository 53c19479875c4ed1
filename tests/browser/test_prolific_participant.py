"""Issue 31 in Chromium: a Prolific participant starts a study on the Prolific stand-in's "take part" page, which
sends the browser to the study URL with Prolific's three parameters, does a session of two HITs with the
keyboard, and lands on the stand-in's completion page with the study's code (the submission then awaits review
there, with that code)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import HIT, Assignment, TaskType
from hits.prolific import STUDY_START_PATH, STUDY_URL_PARAMETERS
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificSession, ProlificStudy
from hits.prolific.standin import running_standin
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "C0DE2HIT"
PARTICIPANT = "60a1b2c3d4e5f60718293a4b"


def _published_study(standin, live_server) -> str:
    """A study published on the stand-in whose URL is the platform's study URL; returns its id."""
    with Prolific(standin.url, "test-token") as api:
        study = api.request("POST", "/studies/", json={
            "name": "Judge summaries", "internal_name": "browser-test-study", "description": "Two presence HITs.",
            "external_study_url": f"{live_server.url}{STUDY_START_PATH}?{STUDY_URL_PARAMETERS}",
            "prolific_id_option": "url_parameters",
            "completion_codes": [{"code": CODE, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
            "total_available_places": 1, "estimated_completion_time": 5, "maximum_allowed_time": 30, "reward": 100,
            "device_compatibility": ["desktop"],
        })
        api.request("POST", f"/studies/{study['id']}/transition/", json={"action": "PUBLISH"}, safe=True)
    return study["id"]


def test_a_participant_does_a_session_of_two_hits_and_lands_on_the_completion_page(page, live_server, settings, tmp_path):
    rows = [(f"e{i}", f"Reference {i} says a thing .", f"Summary {i} .", [f"fact a {i}", f"fact b {i}"]) for i in range(3)]
    campaign = launched_scu_campaign(tmp_path / "prolific", "Prolific browser study", rows, backend="prolific", gold_share=0.0,
                                      reward_presence=Decimal("0.30"))  # above Prolific's minimum
    HIT.objects.filter(batch_id=campaign.batch_id).update(max_assignments=1)
    with running_standin(token="test-token") as standin:
        settings.PROLIFIC_COMPLETION_URL = f"{standin.url}/submissions/complete"
        # The study URL asks Prolific (here the stand-in) for the participant's submission.
        settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = standin.url, "test-token"
        study_id = _published_study(standin, live_server)
        ProlificStudy.objects.create(
            batch_id=campaign.batch_id, task_type=TaskType.objects.get(slug="presence"), internal_name="browser-test-study",
            prolific_id=study_id, completion_code=CODE, hits_per_submission=2, status="ACTIVE",
        )
        page.goto(f"{standin.url}/studies/{study_id}/start?participant_id={PARTICIPANT}")
        for n in (1, 2):
            page.wait_for_function(f"() => document.querySelector('#prolific-progress')?.textContent.includes('HIT {n} of 2')")
            page.wait_for_selector("#hit-form[data-draft]")
            page.wait_for_load_state("load")  # the form's keys work once its deferred script has run
            for _ in range(page.locator(".presence-row").count()):
                page.keyboard.press("p")  # present, and the focus moves on
            page.keyboard.press("Control+Enter")
        page.wait_for_url(lambda url: "cc=" in url)
        assert page.url == f"{standin.url}/submissions/complete?cc={CODE}"
        assert "Submission completed" in page.content()
        submission = next(s for s in standin.state()["submissions"] if s["participant_id"] == PARTICIPANT)
        assert (submission["status"], submission["study_code"]) == ("AWAITING REVIEW", CODE)
    session = ProlificSession.objects.get()
    assert (session.participant_id, session.session_id, session.state, session.hits_done) == (PARTICIPANT, submission["id"], "completed", 2)
    assert list(Assignment.objects.values_list("state", flat=True)) == ["pending", "pending"]
