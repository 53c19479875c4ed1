"""A worker's keyboard and mouse on HIT pages, in Chromium: Enter never submits, selections fill only the focused
answer box, verdict shortcuts, words reachable by keyboard, focus on the first error, and a draft kept until the
submission is accepted."""

from __future__ import annotations

import pytest

from annotation.models import ContentUnit, PresenceJudgment, Verification
from hits.models import Assignment
from tests.browser.conftest import log_in
from tests.browser.test_hit_pages import PASSWORD, _verify_by_service, _write_by_service, campaign  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _start(page, task):
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click(f"tr[data-task={task}] button:has-text('Start working')")
    page.wait_for_selector("#hit-form[data-draft]")
    # The form is in the page before its deferred script has run: keys pressed earlier reach no handler
    # (seen on a loaded machine).
    page.wait_for_load_state("load")


def _drag(page, first, last):
    """Press on one word and release on another, as a person selects with the mouse."""
    page.locator("#sentence").scroll_into_view_if_needed()
    a, b = page.locator(first).bounding_box(), page.locator(last).bounding_box()
    page.mouse.move(a["x"] + 2, a["y"] + a["height"] / 2)
    page.mouse.down()
    page.mouse.move((a["x"] + b["x"]) / 2, b["y"] + b["height"] / 2, steps=5)
    page.mouse.move(b["x"] + b["width"] - 2, b["y"] + b["height"] / 2, steps=5)
    page.mouse.up()


def test_enter_never_submits_and_ctrl_enter_submits_after_the_same_checks(page, campaign):  # noqa: F811
    _start(page, "generation")
    url = page.url
    page.fill("#id_q1", "Who blamed someone?")
    page.fill("#id_q1_a1", "Policemen")
    for field in ("#id_q1_a1", "#id_q1"):
        page.focus(field)
        page.keyboard.press("Enter")
    page.wait_for_timeout(500)
    assert page.url == url
    assert Assignment.objects.get().state == Assignment.State.ASSIGNED
    assert "Ctrl" in page.inner_text("#submit-hint")
    # Ctrl+Enter goes through the Submit button: the server's checks refuse the answer that is not in the sentence.
    page.focus("#id_q1_a1")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#errors-summary")
    assert Assignment.objects.get().state == Assignment.State.ASSIGNED
    assert page.input_value("#id_q1_a1") == "Policemen"
    page.fill("#id_q1_a1", "Police")
    page.keyboard.press("Meta+Enter")
    page.wait_for_selector("text=Submitted. Thank you!")
    assert Assignment.objects.get().state == Assignment.State.SUBMITTED
    assert list(ContentUnit.objects.values_list("question", flat=True)) == ["Who blamed someone?"]


def test_drag_click_and_shift_click_fill_only_the_focused_box(page, campaign):  # noqa: F811
    _start(page, "generation")
    # Nothing focused yet: a drag fills no box (it used to fill question 1's first box).
    _drag(page, "#sentence .tok:text-is('Police')", "#sentence .tok:text-is('blamed')")
    assert [page.input_value(f"#id_q{i}_a1") for i in (1, 2)] == ["", ""]
    assert "answer box first" in page.inner_text("#selection-hint")
    # A drag across words fills the focused box, and only it; the click that ends the drag does not refill one word.
    page.click("#id_q2_a1")
    _drag(page, "#sentence .tok:text-is('the') >> nth=0", "#sentence .tok:text-is('driver')")
    assert page.input_value("#id_q2_a1") == "the driver"
    assert page.input_value("#id_q1_a1") == ""
    # Click then shift-click extends within the box that has the focus.
    page.click("#id_q1_a2")
    page.click("#sentence .tok:text-is('the') >> nth=1")
    page.click("#sentence .tok:text-is('crash')", modifiers=["Shift"])
    assert page.input_value("#id_q1_a2") == "the crash"
    assert page.input_value("#id_q2_a1") == "the driver"
    assert page.input_value("#id_q1_a1") == ""


def test_sentence_words_by_keyboard(page, campaign):  # noqa: F811
    _start(page, "generation")
    page.click("#id_q1_a1")
    # The words are one tab stop before the questions: Shift+Tab twice from the answer box reaches them.
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.id") == "sentence"
    page.keyboard.press("Home")
    page.keyboard.press("Space")
    assert page.input_value("#id_q1_a1") == "Police"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+Space")
    assert page.input_value("#id_q1_a1") == "Police blamed the driver"
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") == "id_q1_a1"


def test_presence_verdict_shortcuts_are_shown_and_work(page, campaign):  # noqa: F811
    _write_by_service()
    _verify_by_service("v1")
    _verify_by_service("v2")
    _start(page, "presence")
    legend = page.inner_text("#shortcuts")
    assert "P" in legend and "N" in legend and "present" in legend
    page.keyboard.press("p")   # nothing focused: the first unanswered pair
    page.keyboard.press("n")   # focus moved on to the second pair
    rows = page.locator(".presence-row")
    assert rows.nth(0).get_by_label("Present", exact=True).is_checked()
    assert rows.nth(1).get_by_label("Not present").is_checked()
    assert page.evaluate("document.activeElement.id") == "submit"
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("text=Submitted. Thank you!")
    assert sorted(PresenceJudgment.objects.values_list("present", flat=True)) == [False, True]


def test_verification_shortcuts_then_focus_on_the_first_error(page, campaign):  # noqa: F811
    _write_by_service()
    _start(page, "verification")
    assert "V" in page.inner_text("#shortcuts")
    rows = page.locator(".verify-row")
    # The second question is judged; the first one is left: the refused page puts the focus on it.
    rows.nth(1).get_by_label("Invalid").focus()
    page.keyboard.press("i")
    page.click("#submit")
    page.wait_for_selector("#errors-summary")
    assert page.evaluate("document.activeElement.name") == page.locator(".verify-row").nth(0).locator("input[type=radio]").first.get_attribute("name")
    page.keyboard.press("v")   # valid, then the focus is in its first answer box
    assert page.evaluate("document.activeElement.classList.contains('answer')")
    page.click("#sentence .tok:text-is('Police')")
    page.click("#submit")
    page.wait_for_selector("text=Submitted. Thank you!")
    verdicts = {v.unit.question: v.valid for v in Verification.objects.select_related("unit")}
    assert verdicts == {"Who blamed someone?": True, "Who did someone blame?": False}


def test_refused_submit_focuses_the_first_error_and_keeps_boxes_in_line(page, campaign):  # noqa: F811
    _start(page, "generation")

    def lefts():
        return [round(page.locator(f"#id_q1_a{j}").bounding_box()["x"]) for j in (1, 2, 3)]

    def tops():
        return {round(page.locator(f"#id_q1_a{j}").bounding_box()["y"]) for j in (1, 2, 3)}

    before = lefts()
    page.fill("#id_q1", "Who blamed someone?")
    page.fill("#id_q1_a1", "a policeman from a faraway town who is not in the sentence at all")
    page.click("#submit")
    page.wait_for_selector("#errors-summary")
    assert page.evaluate("document.activeElement.id") == "id_q1_a1"
    assert lefts() == before
    assert len(tops()) == 1


def test_a_draft_survives_a_reload_until_submit(page, campaign):  # noqa: F811
    _start(page, "generation")
    key = "hit-draft:" + page.get_attribute("#hit-form", "data-draft")
    page.fill("#id_q1", "Who blamed someone?")
    page.click("#id_q1_a1")
    page.click("#sentence .tok:text-is('Police')")
    page.fill("#id_feedback", "fine")
    page.reload()
    assert page.input_value("#id_q1") == "Who blamed someone?"
    assert page.input_value("#id_q1_a1") == "Police"
    assert page.input_value("#id_feedback") == "fine"
    assert "restored" in page.inner_text("#selection-hint")
    page.click("#submit")
    page.wait_for_selector("text=Submitted. Thank you!")
    # Dropped once the server has taken the answers (the next page asks the HIT's status).
    page.wait_for_function(f"() => window.localStorage.getItem({key!r}) === null")


def test_generation_page_fits_a_390px_screen_with_a_grammatical_example(page, campaign):  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 844})
    _start(page, "generation")
    assert page.get_attribute("#id_q1", "placeholder") == "e.g. Who blames something?"
    box = page.locator("table.slots").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    # Each slot's name stays beside its hint.
    name = page.locator("table.slots th").nth(0).bounding_box()
    hint = page.locator("table.slots td").nth(0).bounding_box()
    assert abs(name["y"] - hint["y"]) < 2 and hint["x"] > name["x"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
