"""A researcher adds a predicate by selecting its words in the sentence, and removes one, in Chromium."""

from __future__ import annotations

import pytest

from annotation.models import Predicate, ReferenceSentence
from annotation.services.roles import make_researcher
from annotation.services.campaign_import import import_campaign
from tests.browser.conftest import log_in
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-4"


def test_select_a_span_to_add_a_predicate_then_remove_it(page, tmp_path, django_user_model):
    user = django_user_model.objects.create_user(username="pia", password=PASSWORD)
    make_researcher(user)
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "A day and a night passed, and a day more."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "Time passed."}])
    campaign = import_campaign(name="Spans", owner=user, references=refs, summaries=sums).campaign
    sentence = ReferenceSentence.objects.get(example__campaign=campaign)
    second_day = sentence.text.rindex("day")
    log_in(page, "pia", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/predicates/")
    # Select the second "day" with the mouse's selection API, as a drag would.
    page.evaluate(
        """([start, end]) => {
            const p = document.querySelector('.selectable-text');
            const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
            let offset = 0, node, range = document.createRange(), started = false;
            while ((node = walker.nextNode())) {
                const len = node.textContent.length;
                if (!started && start <= offset + len) { range.setStart(node, start - offset); started = true; }
                if (started && end <= offset + len) { range.setEnd(node, end - offset); break; }
                offset += len;
            }
            const selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
            p.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
        }""",
        [second_day - 1, second_day + 3],  # with the space before it: trimmed by the page
    )
    form = page.locator("form.add-predicate")
    assert form.locator("input[name=span]").input_value() == "day"
    assert form.locator("input[name=start]").input_value() == str(second_day)
    form.locator("button").click()
    page.wait_for_load_state()
    added = Predicate.objects.get(sentence=sentence, text="day")
    assert added.start == second_day and added.origin == "researcher"
    page.click("button[aria-label='Remove predicate day']")
    page.wait_for_load_state()
    assert "Predicate 'day' removed." in page.inner_text(".messages")
    assert not Predicate.objects.filter(pk=added.pk).exists()
    # One click removed it: the page offers it back, and stays where it was.
    page.click("#undo-remove button")
    page.wait_for_selector("text=Predicate 'day' added")
    back = Predicate.objects.get(sentence=sentence, text="day")
    assert back.start == second_day


def test_removing_a_chip_keeps_the_page_where_it_was(page, tmp_path, django_user_model):
    user = django_user_model.objects.create_user(username="pia", password=PASSWORD)
    make_researcher(user)
    refs = write_jsonl(tmp_path / "r.jsonl", [
        {"id": f"e{i}", "reference": f"The council approved plan {i}. Residents welcomed it and builders started work."}
        for i in range(12)
    ])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": f"e{i}", "system": "s", "summary": "Plans."} for i in range(12)])
    campaign = import_campaign(name="Many", owner=user, references=refs, summaries=sums).campaign
    log_in(page, "pia", PASSWORD)
    page.set_viewport_size({"width": 1000, "height": 500})
    page.goto(f"/campaigns/{campaign.slug}/predicates/")
    chip = page.locator("section[data-example=e9] button.chip").first
    chip.scroll_into_view_if_needed()
    before = page.evaluate("window.scrollY")
    assert before > 300
    chip.click()
    page.wait_for_selector("#undo-remove")
    assert abs(page.evaluate("window.scrollY") - before) < 80
