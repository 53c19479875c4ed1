"""A person does one HIT of each type in Chromium, by clicking, selecting and using the keyboard."""

from __future__ import annotations

import pytest

from annotation.models import ContentUnit, PresenceJudgment, Verification
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.browser.conftest import log_in
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-1"


@pytest.fixture
def campaign(tmp_path, django_user_model):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "The driver was blamed by police."}])
    campaign = import_campaign(name="Browser", references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    django_user_model.objects.create_user(username="ann", password=PASSWORD)
    return campaign


def _service_worker(name):
    return Worker.objects.get_or_create(external_id=name)[0]


def _write_by_service(writer="writer"):
    worker = _service_worker(writer)
    assignment = accept_next(worker, TaskType.objects.get(slug="generation"))
    submit_assignment(worker, assignment.pk, {"q1": "Who blamed someone?", "q1_a1": "Police", "q2": "Who did someone blame?", "q2_a1": "the driver"})


def _verify_by_service(name):
    worker = _service_worker(name)
    assignment = accept_next(worker, TaskType.objects.get(slug="verification"))
    data = {}
    for unit in ContentUnit.objects.filter(pk__in=assignment.hit.payload["units"]):
        data[f"v_{unit.pk}"] = "valid"
        data[f"v_{unit.pk}_a1"] = unit.answers[0]
    submit_assignment(worker, assignment.pk, data)


def test_generation_hit_by_clicking_words(page, campaign):
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click("tr[data-task=generation] button:has-text('Start working')")
    page.wait_for_selector("#sentence")
    assert page.inner_text("#predicate") == "blamed"
    # A typed answer that is not in the sentence is flagged at once, and refused by the server with the text kept.
    page.fill("#id_q1", "Who blamed someone?")
    page.fill("#id_q1_a1", "Policemen")
    assert "mismatch" in page.get_attribute("#id_q1_a1", "class")
    page.click("#submit")
    page.wait_for_selector(".errors-summary")
    assert page.input_value("#id_q1") == "Who blamed someone?"
    assert page.input_value("#id_q1_a1") == "Policemen"
    assert "copied from the sentence" in page.inner_text(".qa-row[data-row='1']")
    # Select answers in the sentence: click a word; click then shift-click for a phrase.
    page.click("#id_q1_a1")
    page.click("#sentence .tok:text-is('Police')")
    assert page.input_value("#id_q1_a1") == "Police"
    page.fill("#id_q2", "Who did someone blame?")
    page.click("#id_q2_a1")
    page.click("#sentence .tok:text-is('the') >> nth=0")
    page.click("#sentence .tok:text-is('driver')", modifiers=["Shift"])
    assert page.input_value("#id_q2_a1") == "the driver"
    page.click("#submit")
    page.wait_for_load_state()
    assert "Submitted. Thank you!" in page.content()
    units = {u.question: u.answers for u in ContentUnit.objects.all()}
    assert units == {"Who blamed someone?": ["Police"], "Who did someone blame?": ["the driver"]}


def test_verification_hit_with_valid_invalid_and_selected_answers(page, campaign):
    _write_by_service()
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click("tr[data-task=verification] button:has-text('Start working')")
    rows = page.locator(".verify-row")
    assert rows.count() == 2
    rows.nth(0).get_by_label("Valid", exact=True).check()
    rows.nth(0).locator("input.answer").first.click()
    page.click("#sentence .tok:text-is('Police')")
    rows.nth(1).get_by_label("Invalid").check()
    page.click("#submit")
    page.wait_for_load_state()
    verdicts = {v.unit.question: (v.valid, v.answers) for v in Verification.objects.select_related("unit")}
    assert verdicts == {"Who blamed someone?": (True, ["Police"]), "Who did someone blame?": (False, [])}


def test_presence_hit_with_the_keyboard(page, campaign):
    _write_by_service()
    _verify_by_service("v1")
    _verify_by_service("v2")
    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click("tr[data-task=presence] button:has-text('Start working')")
    assert "The driver was blamed by police." in page.inner_text("#candidate")
    assert page.locator(".reference mark.predicate").inner_text() == "blamed"
    first, second = page.locator(".presence-row").nth(0), page.locator(".presence-row").nth(1)
    first.get_by_label("Present", exact=True).focus()
    page.keyboard.press("Space")
    second.get_by_label("Not present").focus()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.click("#submit")
    page.wait_for_load_state()
    labels = sorted(PresenceJudgment.objects.values_list("present", flat=True))
    assert labels == [False, True]
