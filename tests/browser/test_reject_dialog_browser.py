"""In Chromium: choosing "Reject" on the review page asks what becomes of the work's data, excluded checked
by default; the choice is applied and the page states what followed (issue 40)."""

from __future__ import annotations

import pytest

from annotation.models import PresenceJudgment
from annotation.services.roles import make_researcher
from annotation.web.hit_pages import presence_field
from hits.models import HIT, Assignment, TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.browser.conftest import log_in
from tests.conftest import launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-reject-password-1"


@pytest.fixture
def judged(tmp_path, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    campaign = launched_scu_campaign(tmp_path / "c", "Reject dialog", [("e1", "A cat sat .", "A cat sat .", ["a cat sat", "a dog ran"])],
                                     owner=rita)
    made = {}
    for name in ("ann", "bob", "cid"):
        worker = Worker.objects.create(external_id=name)
        assignment = accept_next(worker, TaskType.objects.get(slug="presence"))
        submit_assignment(worker, assignment.pk, {presence_field(1): "1", presence_field(2): "0"})
        made[name] = assignment
    return campaign, made


def test_rejecting_asks_keep_or_exclude_and_states_what_follows(page, judged):
    campaign, made = judged
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/review/{campaign.examples.get().pk}/")
    row = page.locator(f'tr[data-assignment="{made["ann"].pk}"]')
    choice = row.locator("fieldset.reject-data")
    assert not choice.is_visible()  # approving asks nothing about the data
    row.locator("select[name=action]").select_option("reject")
    assert choice.is_visible()
    assert row.locator("input[name=data][value=exclude]").is_checked()
    assert "excluded" in choice.inner_text() and "kept" in choice.inner_text()
    row.locator("input[name=data][value=keep]").check()
    row.locator("input[name=message]").fill("You did not read the summary.")
    row.locator("button[type=submit]").click()
    page.wait_for_selector("text=Its data is kept: it counts in the gold labels, scores and agreement as before.")
    assert Assignment.objects.get(pk=made["ann"].pk).state == "rejected"
    assert not PresenceJudgment.objects.filter(excluded=True).exists()
    assert page.locator(f'tr[data-assignment="{made["ann"].pk}"] fieldset.reject-data').count() == 0  # decided

    # The default, excluded: the judgments stop counting and a place reopens.
    row = page.locator(f'tr[data-assignment="{made["bob"].pk}"]')
    row.locator("select[name=action]").select_option("reject")
    row.locator("input[name=message]").fill("Answers at random.")
    row.locator("button[type=submit]").click()
    page.wait_for_selector("text=2 presence judgments excluded")
    assert "a place reopened for another worker" in page.inner_text(".messages")
    assert set(PresenceJudgment.objects.filter(assignment=made["bob"]).values_list("excluded", flat=True)) == {True}
    assert HIT.objects.get(pk=made["bob"].hit_id).max_assignments == 4
    assert page.locator(".mark.excluded").count() == 2

    # The way back, on the same page: bob's row offers to re-include his data, saying no money moves; the
    # judgments count again and the untaken replacement place is withdrawn. ann's kept data offers nothing.
    assert page.locator(f'tr[data-assignment="{made["ann"].pk}"] .reinclude-form').count() == 0
    back = page.locator(f'tr[data-assignment="{made["bob"].pk}"] .reinclude-form')
    assert "Nothing is paid or charged: the work stays rejected." in back.inner_text()
    back.locator("button").click()
    page.wait_for_selector("text=2 presence judgments count again")
    assert "the replacement place nobody had taken was withdrawn" in page.inner_text(".messages")
    assert page.locator(".mark.excluded").count() == 0 and page.locator(".reinclude-form").count() == 0
    assert "Rejected" in page.inner_text(f'tr[data-assignment="{made["bob"].pk}"] td.state')
    assert HIT.objects.get(pk=made["bob"].hit_id).max_assignments == 3
