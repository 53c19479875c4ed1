"""A Prolific participant's way through a study (issue 31, point 2): arrival from the study URL and its refusals,
a session of HITs on the platform's own pages ending on Prolific's completion page, resume, identity, pending
work until the sync confirms or discards the session, a returned or timed-out session freeing its HIT, and a
hand-out that keeps Prolific work inside its sessions."""

from __future__ import annotations

from decimal import Decimal

import html
import json
import re
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign, PresenceJudgment
from annotation.services import qualification_tests
from hits.models import HIT, Assignment, Batch, Qualification, TaskType, Worker
from hits.prolific import STUDY_START_PATH
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificSession, ProlificStudy
from hits.prolific.sessions import PROLIFIC_ID, confirm_session, discard_session, end_session
from hits.services import accept_next, worker_for_user
from tests.conftest import DEMO_DIR, launched_scu_campaign

pytestmark = pytest.mark.django_db

COMPLETION = "https://app.prolific.test/submissions/complete"
OTHER_STUDY = "5f0c1e2d3b4a59687766aa02"
PID = "60a1b2c3d4e5f60718293a4b"
PID2 = "60a1b2c3d4e5f60718293a4c"
SESSION = "6500000000000000000000a1"
SESSION2 = "6500000000000000000000a2"


def _rows(prefix, n):
    return [(f"{prefix}{i}", f"Reference {i} of {prefix} says a thing .", f"Summary {i} of {prefix} .", [f"fact a {i}", f"fact b {i}"])
            for i in range(n)]


#: The test's Prolific (the stand-in): its studies (the first is the default of ``_arrive``) and the real
#: submissions (SESSION_IDs) of participants who started them there.
WORLD: dict = {}


@pytest.fixture(autouse=True)
def prolific_settings(settings, prolific_standin):
    WORLD.clear()
    WORLD.update(standin=prolific_standin, studies=[], sessions={})
    settings.PROLIFIC_COMPLETION_URL = COMPLETION
    settings.SUBMIT_RATE_LIMIT = "1000/60"
    yield
    WORLD.clear()


def real_session(pid=PID, study_id=None) -> str:
    """The SESSION_ID of ``pid``'s submission in the study on Prolific (the participant starts it there once)."""
    study_id = study_id or WORLD["studies"][0]
    key = (pid, study_id)
    if key not in WORLD["sessions"]:
        started = WORLD["standin"].control("POST", "/participants/", {"study_id": study_id, "participant_id": pid})
        WORLD["sessions"][key] = started["session_id"]
    return WORLD["sessions"][key]


def _campaign(tmp_path, name, n, backend="prolific", one_place=True):
    campaign = launched_scu_campaign(tmp_path / name, name, _rows(name, n), backend=backend, gold_share=0.0,
                                      reward_presence=Decimal("0.30"))  # $9/h at 2 min: above Prolific's minimum
    if one_place:  # one judge per summary: each HIT is done once, so "no work left" comes after n HITs
        HIT.objects.filter(batch_id=campaign.batch_id).update(max_assignments=1)
    return campaign


def _study(campaign, *, n=3, kind=ProlificStudy.Kind.MAIN, code="C0MPL3TE"):
    """The study published on Prolific (the stand-in) and recorded here."""
    with Prolific() as api:
        prolific_id = api.request("POST", "/studies/", json={
            "name": "Judge", "internal_name": f"qapyramid-{campaign.pk}-{kind}", "description": "Judge summaries.",
            "external_study_url": "https://platform.example/prolific/start/", "estimated_completion_time": 5,
            "reward": 100, "total_available_places": 10,
            "completion_codes": [{"code": code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        })["id"]
        api.request("POST", f"/studies/{prolific_id}/transition/", json={"action": "PUBLISH"}, safe=True)
    WORLD["studies"].append(prolific_id)
    return ProlificStudy.objects.create(
        batch_id=campaign.batch_id, task_type=TaskType.objects.get(slug="presence"), kind=kind,
        internal_name=f"qapyramid-{prolific_id}", prolific_id=prolific_id, completion_code=code, hits_per_submission=n,
        status="ACTIVE",
    )


@pytest.fixture
def study(tmp_path):
    return _study(_campaign(tmp_path, "pro", 4))


def _arrive(client, pid=PID, study_id=None, session_id=None, **extra):
    """The study URL opened with these ids (by default: the first study, and ``pid``'s real submission in it)."""
    study_id = study_id or WORLD["studies"][0]
    if session_id is None:
        real = study_id in WORLD["studies"] and pid and PROLIFIC_ID.match(pid)
        session_id = real_session(pid, study_id) if real else SESSION
    params = {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id, **extra}
    return client.get(STUDY_START_PATH + "?" + urlencode({k: v for k, v in params.items() if v is not None}))


def _answers(assignment):
    """Every pair of the presence HIT judged present (a test item names its pairs inline)."""
    payload = assignment.hit.payload
    n = len(payload["inline"]["pairs"]) if payload.get("inline") else len(payload["units"])
    return {"action": "submit", **{f"p_{k}": "1" for k in range(1, n + 1)}}


def _submit(client, page_url):
    assignment = Assignment.objects.select_related("hit").get(pk=int(page_url.rstrip("/").rsplit("/", 1)[1]))
    return client.post(page_url, _answers(assignment))


def _move_code(page) -> str:
    """The move code a holding browser's HIT page shows."""
    match = re.search(r'id="prolific-move-code".*?<strong>([A-Z0-9-]+)</strong>', page.content.decode())
    assert match, "the HIT page shows no move code"
    return match.group(1)


def _arrive_moving(client, code, pid=PID):
    """The study link's page in a browser that does not hold the session: its form sent with ``code``."""
    query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": WORLD["studies"][0], "SESSION_ID": real_session(pid)})
    return client.post(STUDY_START_PATH + "?" + query, {"move_code": code})


def _completion(study):
    return f"{COMPLETION}?cc={study.completion_code}"


def test_the_study_url_path_is_the_start_view():
    assert reverse("prolific:start") == STUDY_START_PATH


@pytest.mark.parametrize("params, named", [
    ({"PROLIFIC_PID": None}, "PROLIFIC_PID is missing"),
    ({"STUDY_ID": "not-an-id"}, "STUDY_ID 'not-an-id' is not a Prolific id"),
    ({"SESSION_ID": SESSION + "0"}, "SESSION_ID"),
    ({"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"}, "PROLIFIC_PID '{{%PROLIFIC_PID%}}' is not a Prolific id"),
])
def test_malformed_parameters_are_refused_naming_what_is_wrong(client, study, params, named):
    response = _arrive(client, **{k.lower().replace("prolific_pid", "pid"): v for k, v in params.items()})
    assert response.status_code == 400
    assert named in html.unescape(response.content.decode())
    assert not ProlificSession.objects.exists() and not Worker.objects.filter(prolific_pid__isnull=False).exists()


def test_unknown_study_is_refused(client, study):
    response = _arrive(client, study_id=OTHER_STUDY)
    assert response.status_code == 404 and "not one of this platform" in response.content.decode()
    assert not ProlificSession.objects.exists()


def test_a_session_id_bound_to_another_participant_or_study_is_refused(client, study, tmp_path):
    assert _arrive(client).status_code == 302
    other_study = _study(_campaign(tmp_path, "two", 1))
    for attempt in ({"pid": PID2}, {"study_id": other_study.prolific_id}):
        response = _arrive(Client(), session_id=real_session(), **attempt)
        assert response.status_code == 403 and "belongs to another participant or study" in response.content.decode()
    assert ProlificSession.objects.count() == 1 and Worker.objects.filter(prolific_pid=PID2).count() == 0


def test_a_second_session_of_a_participant_in_a_study_is_refused(client, study):
    assert _arrive(client).status_code == 302
    response = _arrive(Client(), session_id=SESSION2)
    assert response.status_code == 409 and "already have another session in this study" in response.content.decode()
    assert list(ProlificSession.objects.values_list("session_id", flat=True)) == [real_session()]


def test_a_full_session_ends_on_prolifics_completion_page_and_its_work_waits_for_confirmation(client, study):
    response = _arrive(client)
    session = ProlificSession.objects.get()
    assert (session.participant_id, session.study, session.state) == (PID, study, "active")
    worker = session.worker
    assert worker.prolific_pid == PID and not worker.user.has_usable_password()
    for n in (1, 2, 3):
        page_url = response["Location"]
        page = client.get(page_url)
        assert page.status_code == 200
        assert f"HIT {n} of 3 in this Prolific session" in page.content.decode()
        response = _submit(client, page_url)
    assert response.status_code == 302 and response["Location"] == _completion(study)
    session.refresh_from_db()
    assert session.state == "completed" and session.finished_at is not None and session.hits_done == 3
    done = Assignment.objects.filter(worker=worker)
    assert done.count() == 3 and set(done.values_list("state", flat=True)) == {"pending"}
    assert HIT.objects.filter(batch_id=study.batch_id, kind="regular", n_submitted__gt=0).count() == 0
    # The same link again (the participant reloads Prolific's link): sent back with the code, nothing new.
    assert _arrive(client)["Location"] == _completion(study)
    assert Assignment.objects.filter(worker=worker).count() == 3
    # Work counts only once the sync confirms the session (Prolific lists the submission).
    assert not PresenceJudgment.objects.exists()
    assert confirm_session(session) == 3
    assert set(done.values_list("state", flat=True)) == {"submitted"} and PresenceJudgment.objects.count() == 6
    assert HIT.objects.filter(batch_id=study.batch_id, n_submitted=1).count() == 3
    assert confirm_session(session) == 0  # idempotent
    session.refresh_from_db()
    assert session.confirmed_at is not None


def test_no_work_left_sends_back_with_the_code_after_one_hit_and_asks_to_return_with_none(client, tmp_path):
    study = _study(_campaign(tmp_path, "small", 1), n=10)
    first = _arrive(client)
    response = _submit(client, first["Location"])
    assert response["Location"] == _completion(study)  # 1 HIT of 10: no work left
    assert ProlificSession.objects.get().state == "completed"
    # Another participant finds nothing to do: a page asking to return the study, and no code.
    other = Client()
    response = _arrive(other, pid=PID2)
    assert response.status_code == 200
    text = response.content.decode()
    assert "return the study on Prolific" in text and "no completion code" in text and study.completion_code not in text
    assert ProlificSession.objects.get(participant_id=PID2).state == "active"
    assert not Assignment.objects.filter(worker__prolific_pid=PID2).exists()


def test_the_same_link_resumes_the_session_with_its_hit_and_drafts(client, study):
    first_page = _arrive(client)["Location"]
    _submit(client, first_page)
    second_page = client.get(_arrive(client)["Location"])  # back to the session: its next HIT
    held = second_page.wsgi_request.path
    # Later, in another browser: the same three parameters resume the same session only with the move code
    # shown in the first one, on the same HIT (drafts are kept by assignment: the page names the same one).
    again = Client()
    assert _arrive(again).status_code == 409
    response = _arrive_moving(again, _move_code(second_page))
    assert response["Location"] == held
    page = again.get(held)
    assert "HIT 2 of 3 in this Prolific session" in page.content.decode()
    assert f'data-draft="{held.rstrip("/").rsplit("/", 1)[1]}"' in page.content.decode()
    assert ProlificSession.objects.count() == 1 and Assignment.objects.filter(state="assigned").count() == 1


def test_another_participant_in_the_same_browser_switches_it_and_the_first_ones_pages_refuse(client, study):
    first_page = _arrive(client)["Location"]
    assert client.get(first_page).status_code == 200
    second = _arrive(client, pid=PID2)
    assert second.status_code == 302 and second["Location"] != first_page
    refused = client.get(first_page)
    assert refused.status_code == 403 and "not part of your current Prolific session" in refused.content.decode()
    assert client.post(first_page, _answers(Assignment.objects.get(worker__prolific_pid=PID))).status_code == 403
    assert Assignment.objects.get(worker__prolific_pid=PID).state == "assigned"
    # The first participant's own link switches back, to the same HIT.
    assert _arrive(client)["Location"] == first_page
    # A browser signed in as the participant but holding no session (its session data lost) is refused.
    stranger = Client()
    stranger.force_login(Worker.objects.get(prolific_pid=PID).user)
    response = stranger.get(first_page)
    assert response.status_code == 403 and "open the study from Prolific again" in response.content.decode()
    assert stranger.get(reverse("prolific:session")).status_code == 403


def test_discarded_session_counts_nothing_and_frees_its_places(client, study):
    done_page = _arrive(client)["Location"]
    _submit(client, done_page)
    live_page = client.get(reverse("prolific:session"))["Location"]
    session = ProlificSession.objects.get()
    assert discard_session(session, "Prolific lists no such submission") == 1
    session.refresh_from_db()
    assert session.state == "discarded" and session.finished_at is not None
    states = dict(Assignment.objects.values_list("pk", "state"))
    assert sorted(states.values()) == ["discarded", "returned"]
    assert HIT.objects.filter(batch_id=study.batch_id, n_taken__gt=0).count() == 0
    assert not PresenceJudgment.objects.exists()
    assert confirm_session(session) == 0 and not PresenceJudgment.objects.exists()
    assert client.get(live_page).status_code == 410
    # A discarded session binds nothing: these ids, which Prolific confirms (ACTIVE, this participant), open a
    # new session; the discarded one and its work stay as they are.
    assert _arrive(client).status_code == 302
    assert sorted(ProlificSession.objects.values_list("state", flat=True)) == ["active", "discarded"]


@pytest.mark.parametrize("state, freed_as", [("returned", "returned"), ("timed_out", "expired")])
def test_a_returned_or_timed_out_session_frees_its_hit_and_keeps_finished_work(client, study, state, freed_as):
    _submit(client, _arrive(client)["Location"])
    live_page = client.get(reverse("prolific:session"))["Location"]
    session = ProlificSession.objects.get()
    assert end_session(session, state) == 1
    session.refresh_from_db()
    assert session.state == state and session.finished_at is not None
    assert sorted(Assignment.objects.values_list("state", flat=True)) == sorted(["pending", freed_as])
    assert HIT.objects.filter(batch_id=study.batch_id, n_taken__gt=0).count() == 1  # the finished HIT only
    page = client.get(live_page)
    assert page.status_code == 410 and "This Prolific session is over" in page.content.decode()
    assert client.post(live_page, {"action": "submit", "p_1": "1", "p_2": "1"}).status_code == 410
    assert _arrive(client).status_code == 410
    assert confirm_session(session) == 1  # the finished HIT is the sync's to count and pay
    with pytest.raises(ValueError, match="'returned' or 'timed_out'"):
        end_session(session, "completed")


def test_prolific_work_is_handed_out_only_inside_its_sessions(client, study, tmp_path, django_user_model):
    local = _campaign(tmp_path, "loc", 2, backend="local")
    presence = TaskType.objects.get(slug="presence")
    # A local worker: the Prolific study's HITs are neither listed nor handed out.
    user = django_user_model.objects.create_user("lena", password="pw-for-tests-123")
    lena = worker_for_user(user)
    taken = [accept_next(lena, presence), None]
    assert taken[0].hit.batch_id == local.batch_id
    from hits.services import submit_assignment

    submit_assignment(lena, taken[0].pk, _answers(taken[0]))
    taken[1] = accept_next(lena, presence)
    submit_assignment(lena, taken[1].pk, _answers(taken[1]))
    assert taken[1].hit.batch_id == local.batch_id
    assert accept_next(lena, presence) is None  # the Prolific study's 4 HITs stay for its participants
    assert accept_next(lena, presence, hit_id=HIT.objects.filter(batch_id=study.batch_id).first().pk, via_mturk=True) is None
    # A Prolific participant: only the study's HITs, and the platform's own lists send them to their session.
    HIT.objects.filter(batch_id=local.batch_id).update(max_assignments=3, state="open")
    response = _arrive(client)
    for _ in range(3):
        assert Assignment.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1])).hit.batch_id == study.batch_id
        response = _submit(client, response["Location"])
    assert response["Location"] == _completion(study)
    for url in ("/work/", "/work/history/", "/work/presence/preview/"):
        assert client.get(url)["Location"] == reverse("prolific:session")
    assert client.post("/work/presence/start/")["Location"] == reverse("prolific:session")
    assert not Assignment.objects.filter(worker__prolific_pid=PID, hit__batch_id=local.batch_id).exists()
    assert set(Batch.objects.values_list("backend", flat=True)) == {"local", "prolific"}


def test_a_screening_study_hands_out_the_test_items_and_the_main_study_waits_for_it(client, tmp_path):
    campaign = _campaign(tmp_path, "tested", 2, one_place=False)
    demo = json.loads((DEMO_DIR / "qualifications.json").read_text())
    qualification_tests.define_qualifications(campaign, {"presence": demo["presence"]})
    items = HIT.objects.filter(batch_id=campaign.batch_id, kind="qualification").count()
    assert items >= 2
    main = _study(campaign)
    screening = _study(campaign, kind=ProlificStudy.Kind.SCREENING, n=items)
    # Not qualified yet: the main study has no work for them.
    response = _arrive(client)
    assert response.status_code == 200 and "return the study on Prolific" in response.content.decode()
    # The screening study: the test items, one after the other, then back to Prolific.
    browser = Client()
    response = _arrive(browser, study_id=screening.prolific_id)
    kinds = []
    while response["Location"].startswith("/work/assignments/"):
        assignment = Assignment.objects.select_related("hit").get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
        kinds.append(assignment.hit.kind)
        page = browser.get(response["Location"])
        assert f"HIT {len(kinds)} of {items} in this Prolific session" in page.content.decode()
        response = browser.post(response["Location"], _answers(assignment))
    assert kinds == ["qualification"] * items and response["Location"] == _completion(screening)
    # Graded once the sync confirms the screening session.
    assert not Qualification.objects.filter(worker__prolific_pid=PID).exclude(state="pending").exists()
    confirm_session(ProlificSession.objects.get(study=screening))
    assert Qualification.objects.filter(worker__prolific_pid=PID, batch_id=campaign.batch_id).exclude(state="pending").exists()
    assert main.pk != screening.pk and Campaign.objects.get(pk=campaign.pk).backend == "prolific"


@pytest.mark.parametrize("forgery", ["invented session", "another participant's", "another study's", "returned"])
def test_ids_prolific_does_not_confirm_are_refused_at_arrival(client, study, tmp_path, forgery):
    """Ids in a URL are no secret: the study URL asks Prolific for the submission before signing anyone in."""
    other = _study(_campaign(tmp_path, "other", 1))
    session_id = {
        "invented session": SESSION2,
        "another participant's": real_session(PID2),
        "another study's": real_session(PID, other.prolific_id),
        "returned": real_session(),
    }[forgery]
    if forgery == "returned":
        WORLD["standin"].control("POST", f"/submissions/{session_id}/return/")
    response = _arrive(client, session_id=session_id)
    assert response.status_code == 403
    text = html.unescape(response.content.decode())
    assert f"submission {session_id}" in text and "Please open the study from Prolific" in text
    assert not ProlificSession.objects.exists() and not Worker.objects.filter(prolific_pid__isnull=False).exists()
    assert "_auth_user_id" not in client.session and not Assignment.objects.exists()


def _prolific_down(times=50):
    WORLD["standin"].control("POST", "/faults/", {"method": "GET", "path": "^/api/v1/submissions/", "kind": "error",
                                                  "status": 503, "times": times})


def test_unreachable_prolific_lets_in_pending_and_the_code_waits_for_its_confirmation(client, study, settings):
    settings.PROLIFIC_MAX_RETRIES = 0
    _prolific_down()
    response = _arrive(client)
    session = ProlificSession.objects.get()
    assert response.status_code == 302 and session.market_status == ""
    for _ in range(3):
        response = _submit(client, response["Location"])
    # Still unreachable: no code, a page saying it comes once Prolific confirms (reloading it asks again).
    assert response["Location"] == reverse("prolific:session")
    page = client.get(reverse("prolific:session"))
    text = page.content.decode()
    assert page.status_code == 200 and "comes once Prolific confirms" in text and study.completion_code not in text
    assert ProlificSession.objects.get().state == "completed"
    WORLD["standin"].control("DELETE", "/faults/")
    page = client.get(reverse("prolific:session"))
    assert page.status_code == 410 and _completion(study) in html.unescape(page.content.decode())
    assert _arrive(client)["Location"] == _completion(study)
    assert ProlificSession.objects.get().market_status == "ACTIVE"


def test_forged_ids_let_in_while_prolific_was_unreachable_never_get_the_code(client, study, settings):
    settings.PROLIFIC_MAX_RETRIES = 0
    _prolific_down(times=1)  # the arrival's check only
    response = _arrive(client, session_id=SESSION2)  # made up, for a study Prolific has
    assert response.status_code == 302
    for _ in range(3):
        response = _submit(client, response["Location"])
    assert response.status_code == 403 and study.completion_code not in response.content.decode()
    assert "Nothing done in this session counts" in html.unescape(response.content.decode())
    assert ProlificSession.objects.get().state == "discarded"
    assert set(Assignment.objects.values_list("state", flat=True)) == {"discarded"}
    assert _arrive(client, session_id=SESSION2).status_code == 403  # Prolific reachable again: refused at once


@pytest.mark.parametrize("forged_with", ["the participant's PROLIFIC_PID", "the participant's SESSION_ID"])
def test_a_discarded_session_does_not_lock_out_the_real_participant(client, study, forged_with):
    real = real_session()
    # Someone got in with made-up ids while Prolific could not be asked, using one of the real participant's ids;
    # the sync discarded that session.
    if forged_with == "the participant's PROLIFIC_PID":
        fake = ProlificSession.objects.create(study=study, participant_id=PID, session_id=SESSION2,
                                              worker=Worker.objects.create(external_id=f"prolific:{PID}", prolific_pid=PID))
    else:
        fake = ProlificSession.objects.create(study=study, participant_id=PID2, session_id=real,
                                              worker=Worker.objects.create(external_id=f"prolific:{PID2}", prolific_pid=PID2))
    discard_session(fake, "Prolific lists no such submission")
    response = _arrive(client, session_id=real)
    assert response.status_code == 302 and response["Location"].startswith("/work/assignments/")
    session = ProlificSession.objects.get(state="active")
    assert (session.participant_id, session.session_id) == (PID, real)
    assert ProlificSession.objects.get(pk=fake.pk).state == "discarded"


def test_a_signed_in_researcher_or_worker_is_asked_before_the_study_link_signs_them_out(study, django_user_model):
    user = django_user_model.objects.create_user("rita", password="pw-for-tests-123")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    page = _arrive(browser)
    text = html.unescape(page.content.decode())
    assert page.status_code == 200 and 'id="prolific-switch"' in text and "signed in as rita" in text
    assert browser.session["_auth_user_id"] == str(user.pk) and not ProlificSession.objects.exists()
    # Confirmed (the form's POST, with its CSRF token): signed in as the participant, on to the first HIT.
    token = page.context["csrf_token"]
    url = page.context["confirm"]
    response = browser.post(url, {"csrfmiddlewaretoken": str(token)})
    assert response.status_code == 302 and response["Location"].startswith("/work/assignments/")
    assert browser.session["_auth_user_id"] == str(Worker.objects.get(prolific_pid=PID).user_id)


def _tested_campaign(tmp_path):
    campaign = _campaign(tmp_path, "tested", 2, one_place=False)
    demo = json.loads((DEMO_DIR / "qualifications.json").read_text())
    qualification_tests.define_qualifications(campaign, {"presence": demo["presence"]})
    return campaign, HIT.objects.filter(batch_id=campaign.batch_id, kind="qualification").count()


def test_a_screening_item_given_back_ends_the_test_without_the_code_and_asks_to_return_the_submission(client, tmp_path):
    campaign, items = _tested_campaign(tmp_path)
    screening = _study(campaign, kind=ProlificStudy.Kind.SCREENING, n=items)
    _study(campaign)
    response = _arrive(client)  # the first study: the screening one
    for _ in range(items - 1):  # every item but the last one done
        response = _submit(client, response["Location"])
    last = response["Location"]
    assert last.startswith("/work/assignments/")
    response = client.post(last, {"action": "return"})
    text = html.unescape(response.content.decode())
    assert response.status_code == 200 and "Return submission" in text and "no completion code" in text
    assert screening.completion_code not in text
    # Back to the session (a reload, the study link again): still no code and no item handed out again.
    for again in (client.get(reverse("prolific:session")), _arrive(client)):
        assert again.status_code == 200 and screening.completion_code not in again.content.decode()
    assert ProlificSession.objects.get(study=screening).state == "active"
    mine = Assignment.objects.filter(worker__prolific_pid=PID)
    assert sorted(mine.values_list("state", flat=True)) == ["pending"] * (items - 1) + ["returned"]


def test_a_hit_given_back_in_a_main_session_is_replaced_and_the_code_comes_after_the_sessions_size(client, tmp_path):
    study = _study(_campaign(tmp_path, "back", 5), n=3)
    response = _submit(client, _arrive(client)["Location"])
    given_back = response["Location"]
    response = client.post(given_back, {"action": "return"})
    assert response["Location"].startswith("/work/assignments/") and response["Location"] != given_back
    response = _submit(client, response["Location"])
    assert response["Location"].startswith("/work/assignments/")  # 2 of 3 done: no code yet
    response = _submit(client, response["Location"])
    assert response["Location"] == _completion(study)
    assert Assignment.objects.filter(worker__prolific_pid=PID, state="pending").count() == 3


def test_a_main_session_gets_the_code_short_of_its_size_only_when_the_work_ran_out(client, tmp_path):
    study = _study(_campaign(tmp_path, "short", 2), n=3)
    response = _submit(client, _arrive(client)["Location"])
    response = client.post(response["Location"], {"action": "return"})  # the only other HIT given back
    assert response["Location"] == _completion(study)  # nothing else left for them: the code for the 1 HIT done
    assert Assignment.objects.filter(worker__prolific_pid=PID, state="pending").count() == 1


def _text(response) -> str:
    return html.unescape(response.content.decode())


def test_a_study_link_opened_in_another_browser_does_not_sign_it_in(client, study):
    """Issue 38, finding 9: the full study URL is no bearer credential; the second browser gets a clear page."""
    hit_page = _arrive(client)["Location"]
    first = client.get(hit_page)
    code = _move_code(first)
    other = Client()
    response = _arrive(other)
    text = _text(response)
    assert response.status_code == 409 and "This study link is open in another browser" in text
    assert "move code" in text and 'id="prolific-move"' in text and code not in text
    assert "_auth_user_id" not in other.session
    # The second browser can neither see nor submit the participant's HIT, nor reach the session's next step.
    assert other.get(hit_page)["Location"].startswith("/accounts/login/")
    assert other.post(hit_page, _answers(Assignment.objects.get()))["Location"].startswith("/accounts/login/")
    assert other.get(reverse("prolific:session")).status_code == 403
    # A wrong code changes nothing.
    wrong = _arrive_moving(other, "ABCD-EFGH" if code != "ABCD-EFGH" else "EFGH-ABCD")
    assert wrong.status_code == 409 and "That code is not this session's" in _text(wrong)
    assert "_auth_user_id" not in other.session
    assert Assignment.objects.get().state == "assigned" and not Assignment.objects.filter(state="pending").exists()
    # The first browser goes on as before, with the same code.
    page = client.get(hit_page)
    assert page.status_code == 200 and _move_code(page) == code
    assert _submit(client, hit_page)["Location"].startswith("/work/assignments/")


def test_the_move_code_moves_the_session_and_signs_the_first_browser_out(client, study):
    hit_page = _arrive(client)["Location"]
    code = _move_code(client.get(hit_page))
    other = Client()
    moved = _arrive_moving(other, code.lower().replace("-", " "))  # typed loosely: still the code
    assert moved.status_code == 302 and moved["Location"] == hit_page
    page = other.get(hit_page)
    assert page.status_code == 200 and "HIT 1 of 3 in this Prolific session" in page.content.decode()
    assert "Your session is in this browser now" in _text(page)
    new_code = _move_code(page)
    assert new_code != code
    # The first browser can no longer submit: a page saying the session moved, and it is signed out.
    refused = _submit(client, hit_page)
    assert refused.status_code == 409 and "Your session moved to another browser" in _text(refused)
    assert Assignment.objects.get().state == "assigned" and "_auth_user_id" not in client.session
    assert client.get(hit_page)["Location"].startswith("/accounts/login/")
    # The code was for one move: the old one no longer takes the session back.
    again = _arrive_moving(client, code)
    assert again.status_code == 409 and "That code is not this session's" in _text(again)
    # The second browser works in the session.
    assert _submit(other, hit_page)["Location"].startswith("/work/assignments/")
    assert Assignment.objects.filter(worker__prolific_pid=PID, state="pending").count() == 1


def test_wrong_move_codes_replace_the_code_the_first_browser_shows(client, study):
    hit_page = _arrive(client)["Location"]
    code = _move_code(client.get(hit_page))
    other = Client()
    for n in range(1, 6):
        answer = _arrive_moving(other, f"ZZZZ-ZZZ{n + 1}")
    assert answer.status_code == 409 and "the code was replaced" in _text(answer)
    replaced = _move_code(client.get(hit_page))
    assert replaced != code
    assert _arrive_moving(other, code).status_code == 409  # the old code moves nothing now
    assert _arrive_moving(other, replaced)["Location"] == hit_page


def test_another_browser_gets_no_completion_code_from_the_link(client, study):
    response = _arrive(client)
    for _ in range(3):
        response = _submit(client, response["Location"])
    assert response["Location"] == _completion(study)
    other = Client()
    page = _arrive(other)
    assert page.status_code == 409 and "open in another browser" in _text(page)
    assert study.completion_code not in page.content.decode() and "_auth_user_id" not in other.session
    assert _arrive(client)["Location"] == _completion(study)  # the browser that did the work still gets it


def test_a_released_session_is_held_by_the_next_browser_that_opens_the_link(client, study):
    from django.core.management import call_command

    hit_page = _arrive(client)["Location"]
    assert client.get(hit_page).status_code == 200
    call_command("prolific_release_browser", real_session())  # the participant lost this browser
    other = Client()
    assert _arrive(other)["Location"] == hit_page
    assert other.get(hit_page).status_code == 200
    refused = client.get(hit_page)
    assert refused.status_code == 409 and "Your session moved to another browser" in _text(refused)
    assert _arrive(Client()).status_code == 409  # held again: one browser only


def test_a_released_session_signs_its_old_browser_out_until_the_link_is_opened_again(client, study):
    from django.core.management import call_command

    hit_page = _arrive(client)["Location"]
    call_command("prolific_release_browser", real_session())
    refused = client.get(hit_page)
    assert refused.status_code == 403 and "no longer holds this Prolific session" in _text(refused)
    assert _arrive(client)["Location"] == hit_page  # its own link again: it holds the session once more


PID3 = "60a1b2c3d4e5f60718293a4d"


def test_a_session_reserves_the_hits_its_reward_pays_for_and_no_other_session_takes_them(client, tmp_path):
    # Four HITs of one place each, sessions of three (the study's reward pays three).
    study = _study(_campaign(tmp_path, "reserve", 4), n=3)
    first = _arrive(client)
    assert ProlificSession.objects.get(participant_id=PID).reserved_hits == 3
    # The second participant finds one HIT no session reserved; the third finds none (asked to return, no code).
    second_browser, third_browser = Client(), Client()
    second = _arrive(second_browser, pid=PID2)
    assert ProlificSession.objects.get(participant_id=PID2).reserved_hits == 1
    third = _arrive(third_browser, pid=PID3)
    assert third.status_code == 200 and "return the study on Prolific" in third.content.decode()
    assert ProlificSession.objects.get(participant_id=PID3).reserved_hits == 0
    # The second participant's session ends after its one HIT, cut short by the platform, though two HITs the
    # first reserved are still open: they are the first's.
    response = _submit(second_browser, second["Location"])
    assert response["Location"] == _completion(study)
    assert HIT.objects.filter(batch_id=study.batch_id, n_taken=0).count() == 2
    # The first participant does the three HITs its reward pays for, then gets the code.
    response = _submit(client, first["Location"])
    response = _submit(client, response["Location"])
    assert response["Location"].startswith("/work/assignments/")
    response = _submit(client, response["Location"])
    assert response["Location"] == _completion(study)
    assert Assignment.objects.filter(worker__prolific_pid=PID, state="pending").count() == 3
    assert not Assignment.objects.filter(worker__prolific_pid=PID3).exists()


def test_a_session_short_of_work_takes_more_as_it_appears_up_to_its_size(client, tmp_path):
    campaign = _campaign(tmp_path, "topup", 3)
    study = _study(campaign, n=3)
    held = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR).order_by("pk"))
    HIT.objects.filter(pk__in=[h.pk for h in held[1:]]).update(state=HIT.State.PAUSED)  # only one HIT open
    first = _arrive(client)
    session = ProlificSession.objects.get(participant_id=PID)
    assert session.reserved_hits == 1
    HIT.objects.filter(pk__in=[h.pk for h in held[1:]]).update(state=HIT.State.OPEN)  # more work appears
    response = _submit(client, first["Location"])
    assert response["Location"].startswith("/work/assignments/")  # reserved again, up to the study's size
    session.refresh_from_db()
    assert session.reserved_hits == 3
