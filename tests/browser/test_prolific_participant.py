"""Issue 31 in Chromium: a Prolific participant arrives from the study URL, does a session of two HITs with the
keyboard, and lands on Prolific's completion page with the study's code.

With the Prolific stand-in (``hits.prolific.standin``) the participant starts on its "take part" page, which
sends the browser to the study URL with Prolific's three parameters, and the completion page is the stand-in's
(the submission then awaits review there with the code).  Without it, the browser opens the study URL itself and
the completion URL is a page of the test server."""

from __future__ import annotations

import importlib.util
from contextlib import contextmanager
from urllib.parse import urlencode

import pytest

from hits.models import HIT, Assignment, TaskType
from hits.prolific import STUDY_START_PATH, STUDY_URL_PARAMETERS
from hits.prolific.models import ProlificSession, ProlificStudy
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CODE = "C0DE2HIT"
PARTICIPANT = "60a1b2c3d4e5f60718293a4b"
HAS_STANDIN = importlib.util.find_spec("hits.prolific.standin") is not None


@contextmanager
def _study_link(live_server, settings):
    """(Prolific's id of a published study whose URL is the platform's, the link a participant starts from)."""
    study_url = f"{live_server.url}{STUDY_START_PATH}?{STUDY_URL_PARAMETERS}"
    if not HAS_STANDIN:
        settings.PROLIFIC_COMPLETION_URL = f"{live_server.url}/healthz"
        ids = {"PROLIFIC_PID": PARTICIPANT, "STUDY_ID": "5f0c1e2d3b4a59687766aa01", "SESSION_ID": "6500000000000000000000a1"}
        yield ids["STUDY_ID"], f"{live_server.url}{STUDY_START_PATH}?{urlencode(ids)}", None
        return
    from hits.prolific.client import Prolific
    from hits.prolific.standin import running_standin

    with running_standin(token="test-token") as standin, Prolific(standin.url, "test-token") as api:
        settings.PROLIFIC_COMPLETION_URL = f"{standin.url}/submissions/complete"
        study = api.request("POST", "/studies/", json={
            "name": "Judge summaries", "internal_name": "browser-test-study", "description": "Two presence HITs.",
            "external_study_url": study_url, "prolific_id_option": "url_parameters",
            "completion_codes": [{"code": CODE, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
            "total_available_places": 1, "estimated_completion_time": 5, "maximum_allowed_time": 30, "reward": 100,
            "device_compatibility": ["desktop"],
        })
        api.request("POST", f"/studies/{study['id']}/transition/", json={"action": "PUBLISH"}, safe=True)
        yield study["id"], f"{standin.url}/studies/{study['id']}/start?participant_id={PARTICIPANT}", standin


def test_a_participant_does_a_session_of_two_hits_and_lands_on_the_completion_page(page, live_server, settings, tmp_path):
    rows = [(f"e{i}", f"Reference {i} says a thing .", f"Summary {i} .", [f"fact a {i}", f"fact b {i}"]) for i in range(3)]
    campaign = launched_scu_campaign(tmp_path / "prolific", "Prolific browser study", rows, backend="prolific", gold_share=0.0)
    HIT.objects.filter(batch_id=campaign.batch_id).update(max_assignments=1)
    with _study_link(live_server, settings) as (study_id, link, standin):
        ProlificStudy.objects.create(
            batch_id=campaign.batch_id, task_type=TaskType.objects.get(slug="presence"), internal_name="browser-test-study",
            prolific_id=study_id, completion_code=CODE, hits_per_submission=2, status="ACTIVE",
        )
        page.goto(link)
        for n in (1, 2):
            page.wait_for_function(f"() => document.querySelector('#prolific-progress')?.textContent.includes('HIT {n} of 2')")
            page.wait_for_selector("#hit-form[data-draft]")
            page.wait_for_load_state("load")  # the form's keys work once its deferred script has run
            for _ in range(page.locator(".presence-row").count()):
                page.keyboard.press("p")  # present, and the focus moves on
            page.keyboard.press("Control+Enter")
        page.wait_for_url(lambda url: "cc=" in url)
        assert page.url == f"{settings.PROLIFIC_COMPLETION_URL}?cc={CODE}"
        if standin is not None:
            assert "Submission completed" in page.content()
            submission = next(s for s in standin.state()["submissions"] if s["participant_id"] == PARTICIPANT)
            assert (submission["status"], submission["study_code"]) == ("AWAITING REVIEW", CODE)
    session = ProlificSession.objects.get()
    assert (session.participant_id, session.state, session.hits_done) == (PARTICIPANT, "completed", 2)
    assert list(Assignment.objects.values_list("state", flat=True)) == ["pending", "pending"]
