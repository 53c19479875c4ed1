"""What a writer and a verifier see of the QA-SRL rules in Chromium, and a refused question keeping its text."""

from __future__ import annotations

import pytest

from annotation.models import ContentUnit
from tests.browser.conftest import log_in
from tests.browser.test_hit_pages import PASSWORD, _write_by_service, campaign  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_generation_page_states_the_rules_and_refuses_a_bad_question_keeping_the_text(page, campaign):  # noqa: F811
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click("tr[data-task=generation] button:has-text('Start working')")
    page.wait_for_selector("#sentence")
    rules = page.inner_text("details.instructions")
    assert "as many questions as apply to the verb (up to 5)" in rules
    assert "Who blamed the corruption scandal on local officials?" in rules
    assert "starts with a question word" in rules and "contains the verb" in rules
    assert "more than 85% of your question–answer pairs kept by the verifiers" in page.inner_text("#writer-thresholds")
    assert "at least 2 questions per verb" in page.inner_text("#writer-thresholds")
    assert page.locator("table.slots").is_visible()
    # A question without a question word and one without the verb are refused; the text stays.
    page.fill("#id_q1", "Someone blamed whom?")
    page.fill("#id_q1_a1", "the driver")
    page.fill("#id_q2", "Who accused someone?")
    page.fill("#id_q2_a1", "Police")
    page.click("#submit")
    page.wait_for_selector(".errors-summary")
    assert page.input_value("#id_q1") == "Someone blamed whom?" and page.input_value("#id_q1_a1") == "the driver"
    assert page.input_value("#id_q2") == "Who accused someone?" and page.input_value("#id_q2_a1") == "Police"
    assert "Start the question with a question word" in page.inner_text(".qa-row[data-row='1']")
    assert "Use the highlighted verb “blamed”" in page.inner_text(".qa-row[data-row='2']")
    assert not ContentUnit.objects.exists()
    # A question naming another participant is flagged; the writer may confirm it as an exception.
    page.fill("#id_q1", "Who did someone blame?")
    page.fill("#id_q2", "Who blamed the driver?")
    page.click("#submit")
    page.wait_for_selector(".errors-summary")
    row = page.locator(".qa-row[data-row='2']")
    assert "repeats “driver” from the sentence" in row.inner_text()
    row.get_by_label("Keep as written").check()
    page.click("#submit")
    page.wait_for_load_state()
    assert "Submitted. Thank you!" in page.content()
    assert set(ContentUnit.objects.values_list("question", flat=True)) == {"Who did someone blame?", "Who blamed the driver?"}


def test_verification_page_shows_the_whole_rule_set(page, campaign):  # noqa: F811
    _write_by_service()
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click("tr[data-task=verification] button:has-text('Start working')")
    page.wait_for_selector(".verify-row")
    rules = page.inner_text("details.instructions")
    for text in (
        "a question that breaks any of them is Invalid",
        "stand for every other participant",
        "get stuck in",
        "What is an example?",
        "Who is out?",
        "Verb relevance",
        "Who blamed the corruption scandal on local officials?",
    ):
        assert text in rules, text
    assert page.locator("details.instructions table.slots").is_visible()
    assert "more than 85% agreement" in page.inner_text("#verifier-thresholds")
