"""HIT pages that never lose or misplace work (issue 28, point 5), in Chromium: keyboard picking goes only into
the box the worker chose, drafts outlive a refused submission, pause and cancel reach an open HIT page, a
countdown in local time, the session's progress, keys for Skip and Return, a failed test explained item by
item, and pages that fit a phone."""

from __future__ import annotations

import pytest

from tests.browser.conftest import log_in
from tests.browser.test_hit_keyboard import _start
from tests.browser.test_hit_pages import PASSWORD, campaign  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _active(page):
    return page.evaluate("document.activeElement.id")


def test_keyboard_picking_goes_into_the_chosen_box_only(page, campaign):  # noqa: F811
    _start(page, "generation")
    page.fill("#id_q1_a1", "Police")
    page.click("#id_q2_a1")
    # Which box receives the words is shown, in the sentence's box and on the box itself.
    assert "answer 1 of question 2" in page.inner_text("#selection-hint")
    assert "receiving" in page.get_attribute("#id_q2_a1", "class")
    # Shift+Tab back to the sentence passes through question 1's boxes: they must not take over.
    for _ in range(12):
        page.keyboard.press("Shift+Tab")
        if _active(page) == "sentence":
            break
    assert _active(page) == "sentence"
    assert "receiving" in page.get_attribute("#id_q2_a1", "class")
    assert "receiving" not in page.get_attribute("#id_q1_a1", "class")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")
    assert page.input_value("#id_q2_a1") == "the"
    assert page.input_value("#id_q1_a1") == "Police"
    # Escape goes back to the chosen box; Alt+Up from a box goes to the sentence (and chooses that box).
    page.keyboard.press("Escape")
    assert _active(page) == "id_q2_a1"
    page.click("#id_q1_a2")
    page.keyboard.press("Alt+ArrowUp")
    assert _active(page) == "sentence"
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")
    assert page.input_value("#id_q1_a2") == "driver"
    page.keyboard.press("Alt+ArrowDown")
    assert _active(page) == "id_q1_a2"
    # Forward Tab from the chosen box reaches the sentence, and Tab goes on from there to the next field.
    page.keyboard.press("Tab")
    assert _active(page) == "sentence"
    page.keyboard.press("Tab")
    assert _active(page) == "id_q1_a3"
    assert "Alt" in page.inner_text("#selection-hint")


def _draft(page, key):
    return page.evaluate(f"window.localStorage.getItem({key!r})")


def test_a_refused_submission_keeps_the_draft_until_the_server_accepts(page, campaign):  # noqa: F811
    _start(page, "generation")
    url = page.url
    key = "hit-draft:" + page.get_attribute("#hit-form", "data-draft")
    page.fill("#id_q1", "Who blamed someone?")
    page.fill("#id_q1_a1", "a policeman who is not in the sentence")
    page.fill("#id_feedback", "hard one")
    page.click("#submit")
    page.wait_for_selector("#errors-summary")
    assert "nothing you typed was lost" in page.inner_text("#errors-summary")
    # The worker leaves and comes back: the fields are as they were sent.
    page.goto("/work/")
    page.wait_for_load_state("load")
    page.goto(url)
    page.wait_for_load_state("load")
    assert page.input_value("#id_q1") == "Who blamed someone?"
    assert page.input_value("#id_q1_a1") == "a policeman who is not in the sentence"
    assert page.input_value("#id_feedback") == "hard one"
    # Accepted: only now does the draft go (on the page that follows, once the server says the HIT is done).
    page.fill("#id_q1_a1", "Police")
    page.click("#submit")
    page.wait_for_selector("text=Submitted. Thank you!")
    page.wait_for_function(f"() => window.localStorage.getItem({key!r}) === null")


def test_pause_and_cancel_reach_an_open_hit_page_without_a_reload(page, campaign, settings):  # noqa: F811
    from annotation.services.pipeline import cancel_campaign, pause_campaign, resume_campaign

    settings.HIT_STATUS_POLL_SECONDS = 1
    _start(page, "generation")
    assert page.locator("#hit-status").is_hidden()
    page.fill("#id_q1", "Who blamed someone?")
    pause_campaign(campaign)
    page.wait_for_selector("#hit-status:has-text('paused')")
    assert "still submit this HIT and be paid" in page.inner_text("#hit-status")
    assert page.is_enabled("#submit")
    resume_campaign(campaign)
    page.wait_for_selector("#hit-status", state="hidden")
    cancel_campaign(campaign)
    page.wait_for_selector("#hit-status:has-text('cancelled')")
    notice = page.inner_text("#hit-status")
    assert "can no longer be submitted" in notice and "nothing is owed" in notice
    assert not page.is_enabled("#submit")
    # Nothing typed went away.
    assert page.input_value("#id_q1") == "Who blamed someone?"


def test_the_deadline_in_local_time_with_a_countdown(chromium, live_server, campaign):  # noqa: F811
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    from hits.models import Assignment

    context = chromium.new_context(base_url=live_server.url, timezone_id="Asia/Kolkata", locale="en-GB")
    page = context.new_page()
    try:
        _start(page, "generation")
        expires = Assignment.objects.get().expires_at.astimezone(ZoneInfo("Asia/Kolkata"))
        shown = page.inner_text("#deadline")
        assert "UTC" not in shown and "your time" in shown
        # Kolkata is UTC+5:30: the minutes alone tell local time from UTC (a second either way for the rounding).
        assert any((expires - timedelta(seconds=s)).strftime("%H:%M") in shown for s in (0, 2))
        first = page.inner_text("#countdown")
        assert first.endswith("left")
        page.wait_for_timeout(2200)
        second = page.inner_text("#countdown")

        def seconds(text):
            parts = [int(p) for p in text.split()[0].split(":")]
            return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))

        assert 1 <= seconds(first) - seconds(second) <= 4
    finally:
        context.close()


@pytest.fixture
def three_hits(tmp_path, django_user_model):
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign
    from tests.conftest import write_jsonl

    refs = write_jsonl(tmp_path / "r.jsonl", [
        {"id": "e1", "reference": "Police blamed the driver for the crash."},
        {"id": "e2", "reference": "The mayor refused to comment."},
        {"id": "e3", "reference": "Rain flooded the streets."},
    ])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": e, "system": "s", "summary": "Something happened."} for e in ("e1", "e2", "e3")])
    campaign = import_campaign(name="Three", references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    django_user_model.objects.create_user(username="ann", password=PASSWORD)
    return campaign


def test_session_progress_and_keys_for_skip_and_return(page, three_hits):
    from hits.models import Assignment, Worker

    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    Worker.objects.filter(user__username="ann").update(auto_accept_next=True)
    page.click("tr[data-task=generation] button:has-text('Start working')")
    page.wait_for_selector("#hit-form[data-draft]")
    page.wait_for_load_state("load")
    assert "0 HITs submitted" in page.inner_text("#session-progress")
    first = Assignment.objects.get()
    page.fill("#id_q1", "Who " + page.inner_text("#predicate") + " something?")
    page.click("#id_q1_a1")
    page.click("#sentence .tok >> nth=0")
    page.click("#submit")
    page.wait_for_selector("text=Submitted. Thank you!")
    page.wait_for_load_state("load")
    # The next HIT (auto-accept) shows what this session has brought so far.
    progress = page.inner_text("#session-progress")
    assert "1 HIT submitted" in progress and f"${first.hit.reward}" in progress
    # The keys are on the buttons; typed into a box, "s" is a letter and nothing else.
    assert "S" in page.inner_text("#skip") and "R" in page.inner_text("#return")
    second = Assignment.objects.get(state=Assignment.State.ASSIGNED)
    page.click("#id_q1")
    page.keyboard.type("Who s")
    page.wait_for_timeout(300)
    assert page.input_value("#id_q1") == "Who s"
    assert Assignment.objects.get(pk=second.pk).state == Assignment.State.ASSIGNED
    # Outside a box, with something written: S asks to be pressed again, then skips.
    page.click("h1")
    page.keyboard.press("s")
    page.wait_for_selector("#key-confirm:has-text('again')")
    assert Assignment.objects.get(pk=second.pk).state == Assignment.State.ASSIGNED
    page.keyboard.press("s")
    page.wait_for_selector("text=Skipped. Here is another one.")
    page.wait_for_load_state("load")
    assert Assignment.objects.get(pk=second.pk).state == Assignment.State.RETURNED
    # Nothing written on this one: R returns it at once.
    page.keyboard.press("r")
    page.wait_for_selector("text=HIT returned.")
    assert not Assignment.objects.filter(state=Assignment.State.ASSIGNED).exists()


def test_a_failed_test_is_explained_item_by_item_and_gold_checks_never(page, tmp_path, django_user_model, client):
    from annotation.services import qualification_tests
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign
    from hits.models import HIT, Batch, Qualification
    from hits.qualifications import reinstate
    from hits.services import worker_for_user
    from tests.conftest import write_jsonl

    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Police blamed the driver."}])
    campaign = import_campaign(name="Feedback", references=refs, summaries=sums).campaign
    pair = {"question": "Who approved something?", "answer": "Council members"}
    qualification_tests.define_qualifications(campaign, {
        "presence": [{"candidate": "The council voted for a new bridge.", "reference": "Council members approved a bridge.",
                      "predicate": "approved", "pairs": [{**pair, "present": True},
                                                         {"question": "What did someone approve?", "answer": "a tunnel", "present": False}]}],
        "presence_gold": [{"candidate": "A storm cut power to homes.", "reference": "Homes lost power in a storm.",
                           "predicate": "lost", "pairs": [{"question": "What lost something?", "answer": "Homes", "present": True}]}],
    })
    launch_campaign(campaign)
    campaign.refresh_from_db()
    # Presence work of the campaign's own: its presence test is offered (to a worker who chooses the campaign),
    # and gold checks are handed out beside it (issue 27).
    presence = HIT.objects.filter(kind=HIT.Kind.GOLD).first().task_type
    HIT.objects.create(batch_id=campaign.batch_id, task_type=presence, payload={}, max_assignments=3)
    django_user_model.objects.create_user(username="quinn", password=PASSWORD)
    log_in(page, "quinn", PASSWORD)
    page.goto("/work/")
    page.click(f"tr[data-task=presence] form.campaign-test[data-campaign='{campaign.batch_id}'] button")
    page.wait_for_selector(".presence-row")
    page.wait_for_load_state("load")
    # Both pairs the wrong way round.
    page.locator(".presence-row[data-unit='1']").get_by_label("Not present").check()
    page.locator(".presence-row[data-unit='2']").get_by_label("Present", exact=True).check()
    page.click("#submit")
    page.wait_for_selector("text=you did not pass")
    assert Qualification.objects.get(worker__user__username="quinn").state == Qualification.State.FAILED
    # A short list, one line per pair with its mark, and the retry date on the page itself (issue 39).
    explained = page.locator(".messages li.test-item.wrong").all_inner_texts()
    assert any(line.startswith("✗ Wrong: “Who approved something? Council members” in") and "expected present; you said not present" in line
               for line in explained), explained
    assert any("“What did someone approve? a tunnel”" in line and "expected not present; you said present" in line for line in explained)
    assert "You may try again after " in page.inner_text(".messages li.warning")

    # A gold check answered wrongly says nothing of its key: it must look like any other HIT.
    user = django_user_model.objects.create_user(username="gil", password=PASSWORD)
    batch = Batch.objects.get(hits__kind=HIT.Kind.GOLD)
    Batch.objects.filter(pk=batch.pk).update(gold_share=1.0)
    reinstate(worker_for_user(user), HIT.objects.filter(kind=HIT.Kind.GOLD).first().task_type, batch)
    client.force_login(user)
    start = client.post("/work/presence/start/", follow=True)
    assert start.context["hit"].kind == HIT.Kind.GOLD
    done = client.post(start.redirect_chain[-1][0], {"action": "submit", "p_1": "0"}, follow=True)
    shown = " ".join(str(m) for m in done.context["messages"])
    assert "Submitted. Thank you!" in shown
    assert "expected" not in shown and "Test item" not in shown and "Homes" not in shown


def _fits(page):
    return page.evaluate("document.documentElement.scrollWidth")


def _sentence_in_view(page):
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_timeout(200)
    box = page.locator("#sentence").bounding_box()
    height = page.viewport_size["height"]
    return box["y"] >= 0 and box["y"] + box["height"] <= height


def _open(page, task):
    """Start working on a task type, already logged in."""
    page.goto("/work/")
    page.click(f"tr[data-task={task}] button:has-text('Start working')")
    page.wait_for_selector("#hit-form[data-draft]")
    page.wait_for_load_state("load")


def test_pages_fit_a_phone_and_the_sentence_stays_in_view(page, campaign):  # noqa: F811
    from tests.browser.test_hit_pages import _verify_by_service, _write_by_service

    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    assert _fits(page) <= 390
    _open(page, "generation")
    assert _fits(page) <= 390
    assert _sentence_in_view(page)
    # Every box and button can be reached without scrolling sideways.
    for selector in ("#id_q1_a3", "#submit", "#return", "#id_feedback"):
        box = page.locator(selector).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, selector
    page.click("#return")
    page.wait_for_selector("text=HIT returned.")
    _write_by_service()
    _open(page, "verification")
    assert _fits(page) <= 390
    assert _sentence_in_view(page)
    page.click("#return")
    page.wait_for_selector("text=HIT returned.")
    _verify_by_service("v1")
    _verify_by_service("v2")
    _open(page, "presence")
    assert _fits(page) <= 390
