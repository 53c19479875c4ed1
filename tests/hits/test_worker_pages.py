"""Worker pages through the test client: start, preview, errors keep input, history, security."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.test import Client
from django.utils import timezone

from annotation.models import ContentUnit
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, Invitation, Worker
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def launched(tmp_path, researcher):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Pages", owner=researcher, references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    return campaign


def _client(django_user_model, name):
    user = django_user_model.objects.create_user(username=name, password="pw-for-tests-123")
    client = Client()
    client.force_login(user)
    return client


def test_worker_starts_sees_highlighted_predicate_and_errors_keep_what_was_typed(launched, django_user_model):
    client = _client(django_user_model, "wendy")
    home = client.get("/work/")
    assert b"Write questions and answers" in home.content and b"Start working" in home.content
    response = client.post("/work/generation/start/")
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert b'<mark class="predicate" id="predicate">blamed</mark>' in page.content
    assert page.content.count(b'name="q') >= 5 * 4  # 5 questions with 3 answers each
    bad = client.post(response["Location"], {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Policemen", "feedback": "hello"})
    assert bad.status_code == 400
    assert b'value="Who blamed someone?"' in bad.content and b'value="Policemen"' in bad.content
    assert b"copied from the sentence" in bad.content and b">hello</textarea>" in bad.content
    good = client.post(response["Location"], {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Police"})
    assert good.status_code == 302
    assert ContentUnit.objects.get().question == "Who blamed someone?"


def test_preview_then_accept_and_history_shows_earnings(launched, django_user_model):
    client = _client(django_user_model, "paula")
    preview = client.get("/work/generation/preview/")
    assert preview.status_code == 200 and b"Preview:" in preview.content and b"Accept this HIT" in preview.content
    assert Assignment.objects.count() == 0  # previewing accepts nothing
    hit = HIT.objects.get()
    accepted = client.post("/work/generation/start/", {"hit": hit.pk})
    assignment = Assignment.objects.get()
    assert accepted["Location"] == f"/work/assignments/{assignment.pk}/"
    client.post("/work/settings/", {})  # auto-accept off
    client.post(accepted["Location"], {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Police"})
    history = client.get("/work/history/")
    # Submitted work is awaiting review, not owed yet: only approval (the ledger) makes it owed.
    assert b'<span id="n-done">1</span>' in history.content and b'<strong id="owed">$0.00</strong>' in history.content
    assert b'<span id="awaiting">$0.32</span>' in history.content


def test_another_workers_assignment_is_not_found(launched, django_user_model):
    owner = _client(django_user_model, "owner")
    location = owner.post("/work/generation/start/")["Location"]
    intruder = _client(django_user_model, "intruder")
    assert intruder.get(location).status_code == 404
    assert intruder.post(location, {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Police"}).status_code == 404
    assert Assignment.objects.get().state == "assigned"


def test_forms_require_csrf(launched, django_user_model):
    django_user_model.objects.create_user(username="csrf", password="pw-for-tests-123")
    client = Client(enforce_csrf_checks=True)
    client.login(username="csrf", password="pw-for-tests-123")
    assert client.post("/work/generation/start/").status_code == 403
    assert not Assignment.objects.exists()


def test_worker_text_is_escaped_on_the_verifier_page(launched, django_user_model):
    writer = _client(django_user_model, "writer")
    location = writer.post("/work/generation/start/")["Location"]
    writer.post("/work/settings/", {})
    response = writer.post(location, {"action": "submit", "q1": "Who <script>alert(1)</script> blamed someone?", "q1_a1": "Police"})
    assert response.status_code == 302
    verifier = _client(django_user_model, "verifier")
    page = verifier.get(verifier.post("/work/verification/start/")["Location"])
    assert b"<script>alert(1)</script>" not in page.content
    assert b"Who &lt;script&gt;alert(1)&lt;/script&gt; blamed someone?" in page.content


def test_expired_assignment_is_refused_with_a_message_and_the_next_hit_offered(launched, django_user_model):
    client = _client(django_user_model, "late")
    location = client.post("/work/generation/start/")["Location"]
    Assignment.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    response = client.post(location, {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Police"}, follow=True)
    assert b"expired and can no longer be submitted" in response.content
    assert Assignment.objects.get().state == "expired"


def test_skip_and_return(launched, django_user_model):
    client = _client(django_user_model, "skipper")
    location = client.post("/work/generation/start/")["Location"]
    response = client.post(location, {"action": "return"}, follow=True)
    assert b"HIT returned." in response.content
    assert Assignment.objects.get().state == "returned" and HIT.objects.get().n_taken == 0


def test_progress_page_is_for_the_campaigns_researchers_only(launched, researcher, other_researcher, django_user_model):
    owner = Client()
    owner.force_login(researcher)
    page = owner.get("/campaigns/pages/progress/")
    assert page.status_code == 200 and b'data-stage="generation"' in page.content
    other = Client()
    other.force_login(other_researcher)
    assert other.get("/campaigns/pages/progress/").status_code == 404
    worker = _client(django_user_model, "nosy")
    assert worker.get("/campaigns/pages/progress/").status_code == 404
    assert other.post("/campaigns/pages/control/", {"action": "pause"}).status_code == 404
    owner.post("/campaigns/pages/control/", {"action": "pause"})
    launched.refresh_from_db()
    assert launched.state == "paused"
    assert _client(django_user_model, "idle").post("/work/generation/start/", follow=True).content.count(b"No Write questions") == 1


def test_invitation_link_signs_up_a_worker(client):
    invitation = Invitation.objects.create(note="Welcome, pilot crowd", max_uses=1)
    page = client.get(f"/join/{invitation.token}/")
    assert b"Welcome, pilot crowd" in page.content
    response = client.post(f"/join/{invitation.token}/", {"username": "newbie", "password1": "correct-horse-battery", "password2": "correct-horse-battery"})
    assert response.status_code == 302 and response["Location"] == "/work/"
    assert Worker.objects.filter(user__username="newbie").exists()
    assert Client().get(f"/join/{invitation.token}/").status_code == 404  # used up
    assert Client().get("/join/not-a-token/").status_code == 404


def test_home_shows_reward_time_campaign_and_why_a_task_is_not_available(launched, django_user_model):
    from hits.models import Qualification, TaskType

    client = _client(django_user_model, "hana")
    html = client.get("/work/").content.decode()
    row = html.split('data-task="generation"')[1].split("</tr>")[0]
    # Before any submission, the protocol's figure (the same on the join page).
    assert "$0.32" in row and launched.name in row and "about 2 min" in row
    # After some work, the typical time is the median of the submissions.
    started = client.post("/work/generation/start/")
    client.post(started["Location"], {"action": "submit", "q1": "Who blamed someone?", "q1_a1": "Police"})
    Assignment.objects.update(work_seconds=150)
    row = client.get("/work/").content.decode().split('data-task="generation"')[1].split("</tr>")[0]
    assert "about 2 min" in row or "about 3 min" in row
    # A worker who may not do a task type is told why.
    worker = Worker.objects.get(user__username="hana")
    Worker.objects.filter(pk=worker.pk).update(blocked=True, blocked_reason="copied answers")
    html = client.get("/work/").content.decode()
    assert "Not available to you: your account is blocked: copied answers" in html
    Worker.objects.filter(pk=worker.pk).update(blocked=False)
    task = TaskType.objects.get(slug="presence")
    TaskType.objects.filter(pk=task.pk).update(requires_qualification=True)
    # Qualification is per campaign: a failed test there is named with its campaign, beside what is left elsewhere.
    launched.refresh_from_db()
    Qualification.objects.update_or_create(
        worker=worker, task_type=task, batch=launched.batch, defaults={"state": "failed", "score": 0.5, "reason": "did not pass the test (score 0.50)"}
    )
    row = client.get("/work/").content.decode().split('data-task="presence"')[1].split("</tr>")[0]
    assert f"{launched.batch.name}: you did not pass its qualification test (score 0.50); you may try again after " in row
    assert row.count("did not pass") == 1  # said once (issue 39: "...test (did not pass the test (score 0.50))")


def test_history_tells_skipped_from_returned(launched, django_user_model):
    client = _client(django_user_model, "sid")
    page = client.post("/work/generation/start/")["Location"]
    client.post(page, {"action": "skip"})
    history = client.get("/work/history/").content.decode()
    assert '<td class="state">Skipped</td>' in history and '<td class="state">Returned</td>' not in history


def test_join_page_says_what_the_work_is_pays_and_takes(launched, client):
    invitation = Invitation.objects.create(note="Summaries study")
    html = client.get(f"/join/{invitation.token}/").content.decode()
    assert 'id="the-work"' in html and "qualification test" in html
    row = html.split('data-task="generation"')[1].split("</tr>")[0]
    assert "$0.32" in row and "about 2 min" in row


def test_join_and_home_say_the_same_reward_and_time_even_with_nothing_open(launched, django_user_model):
    """Issue 39: the join page hid the reward of a task type with nothing open, and said "a few minutes" where
    the home page said "about 1 min"."""
    from hits.models import HIT

    HIT.objects.filter(task_type__slug="generation").update(n_taken=F("max_assignments"))
    invitation = Invitation.objects.create(note="Summaries study")
    join = Client().get(f"/join/{invitation.token}/").content.decode().split('data-task="generation"')[1].split("</tr>")[0]
    home = _client(django_user_model, "hugo").get("/work/").content.decode().split('data-task="generation"')[1].split("</tr>")[0]
    for row in (join, home):
        assert "$0.32" in row and "about 2 min" in row, row


def _accepted(client):
    started = client.post("/work/generation/start/")
    assert started.status_code == 302
    return started["Location"]


def test_a_submission_after_the_campaign_is_cancelled_is_refused_and_shows_the_text_back(launched, django_user_model):
    from annotation.services.pipeline import cancel_campaign

    client = _client(django_user_model, "carla")
    page = _accepted(client)
    cancel_campaign(launched)
    hits_before = HIT.objects.count()
    refused = client.post(page, {"action": "submit", "q1": "Who blamed someone? <kept>", "q1_a1": "Police"})
    assert refused.status_code == 409
    assert b'id="refused"' in refused.content and b"was cancelled by its researchers" in refused.content
    assert b'value="Who blamed someone? &lt;kept&gt;"' in refused.content and b'id="submit"' not in refused.content
    assert Assignment.objects.get().submitted_at is None and HIT.objects.count() == hits_before
    assert not ContentUnit.objects.exists()


def test_a_nul_character_in_an_answer_is_refused_with_the_text_shown_back(launched, django_user_model):
    """The 400 for a NUL character must not cost the worker their answers (the page's draft is dropped on submit)."""
    client = _client(django_user_model, "nadia")
    page = _accepted(client)
    refused = client.post(page, {"action": "submit", "q1": "Who blamed\x00 someone? <b>", "q1_a1": "Police", "feedback": "long\nnote"})
    assert refused.status_code == 400
    text = refused.content.decode()
    assert "Nothing was saved or submitted" in text and "go back to the HIT" in text
    assert "Who blamed someone? &lt;b&gt;" in text and ">Police</pre>" in text and "long\nnote" in text
    assert "csrfmiddlewaretoken" not in text and "\x00" not in text
    assert Assignment.objects.get().state == "assigned" and not ContentUnit.objects.exists()
    # Elsewhere the plain page stays (nothing a worker typed into a HIT to give back).
    other = client.post("/work/settings/", {"next": "/work/\x00"})
    assert other.status_code == 400 and b"nul-typed" not in other.content


@pytest.fixture
def tested(tmp_path, researcher):
    """A launched campaign that tests every task type (the demo's tests and gold items)."""
    import json

    from annotation.services.qualification_tests import define_qualifications
    from tests.conftest import DEMO_DIR

    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Tested", owner=researcher, references=refs, summaries=sums).campaign
    define_qualifications(campaign, json.loads((DEMO_DIR / "qualifications.json").read_text()))
    launch_campaign(campaign)
    return campaign


def test_join_page_shows_money_as_money_and_counts_open_test_items(tested, client):
    """Issue 28: "$0.320000000000000" and "Open now 0 / —" while a campaign's tests were open."""
    import re

    invitation = Invitation.objects.create()
    html = client.get(f"/join/{invitation.token}/").content.decode()
    generation = html.split('data-task="generation"')[1].split("</tr>")[0]
    assert re.search(r"\$0\.32(?!\d)", generation) and "0.3200" not in generation
    assert "1 HIT · 4 test items" in generation and "unpaid test" in generation
    # No verification HIT yet, but its test is open: the row says so instead of "0" and "—".
    verification = html.split('data-task="verification"')[1].split("</tr>")[0]
    assert "0 HITs · 4 test items" in verification and "unpaid test" in verification and "—" not in verification


def _chose(username, campaign):
    """The worker chose the campaign (a campaign's test is offered only then: issue 27)."""
    from django.contrib.auth import get_user_model

    from hits.models import BatchChoice
    from hits.services import record_choice, worker_for_user

    worker = worker_for_user(get_user_model().objects.get(username=username))
    record_choice(worker, campaign.batch, BatchChoice.How.START)


def test_home_labels_test_items_unpaid_instead_of_listing_them_at_zero(tested, django_user_model):
    client = _client(django_user_model, "tess")
    _chose("tess", tested)
    html = client.get("/work/").content.decode()
    row = html.split('data-task="generation"')[1].split("</tr>")[0]
    # A newcomer is handed only the test items: they are unpaid, not "$0.00"; what the work pays after the test
    # is said as on the join page (issue 39).
    assert "unpaid test" in row and "$0.00" not in row and "$0.32 · " in row


def test_history_labels_a_test_item_unpaid(tested, django_user_model):
    client = _client(django_user_model, "tom")
    _chose("tom", tested)
    page = client.post("/work/generation/start/")["Location"]
    client.post(page, {"action": "submit", "q1": "Who opened something?", "q1_a1": "The mayor"})
    history = client.get("/work/history/").content.decode().split('id="hits"')[1]
    assert "unpaid test" in history and "$0.00" not in history


def test_a_reason_typed_with_its_full_stop_is_not_shown_with_two(launched, django_user_model):
    """Issue 28: a reason ending ".." (the page added its own full stop to the researcher's)."""
    from hits.models import BatchBlock

    client = _client(django_user_model, "rory")
    client.get("/work/")
    worker = Worker.objects.get(user__username="rory")
    Worker.objects.filter(pk=worker.pk).update(blocked=True, blocked_reason="Copied answers.")
    home = client.get("/work/").content.decode()
    assert "your account is blocked: Copied answers. <a" in home and ".." not in home.replace("...", "")
    Worker.objects.filter(pk=worker.pk).update(blocked=False, blocked_reason="")
    client.post("/work/generation/start/")  # worked on the campaign: its standing page lists it
    launched.refresh_from_db()
    BatchBlock.objects.create(worker=worker, batch=launched.batch, reason="Too fast.")
    standing = client.get("/work/quality/").content.decode()
    assert "stopped your work on it: Too fast.</p>" in standing
    BatchBlock.objects.filter(worker=worker).update(reason="too fast")
    assert "stopped your work on it: too fast.</p>" in client.get("/work/quality/").content.decode()


def test_a_campaigns_join_page_shows_that_campaigns_work_only(tested, tmp_path, researcher, client):
    """A link to one campaign advertised every campaign's open test items, though another campaign's test is
    offered only to workers who chose it (issue 27): newcomers of this link would never be handed them."""
    refs = write_jsonl(tmp_path / "r2.jsonl", [{"id": "f1", "reference": "The council closed the bridge."}])
    sums = write_jsonl(tmp_path / "s2.jsonl", [{"id": "f1", "system": "s", "summary": "The bridge closed."}])
    other = import_campaign(name="Untested", owner=researcher, references=refs, summaries=sums).campaign
    launch_campaign(other)
    other.refresh_from_db()
    link = Invitation.objects.create(batch=other.batch)
    generation = client.get(f"/join/{link.token}/").content.decode().split('data-task="generation"')[1].split("</tr>")[0]
    assert "test item" not in generation and "unpaid test" not in generation
    # The tested campaign's own link still shows its test items.
    tested.refresh_from_db()
    own = Invitation.objects.create(batch=tested.batch)
    generation = client.get(f"/join/{own.token}/").content.decode().split('data-task="generation"')[1].split("</tr>")[0]
    assert "4 test items" in generation
