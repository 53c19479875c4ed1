"""A researcher reviews work in Chromium: bulk approval with the amount confirmed, actions fitting each
assignment's state, a second bonus asked about first, and the page staying where it was after an action."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from hits.models import HIT, Assignment, Worker
from tests.browser.conftest import log_in
from tests.web.conftest import REFERENCES, SUMMARIES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-review-password-1"


@pytest.fixture
def reviewed(tmp_path, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    (tmp_path / "r.jsonl").write_bytes(REFERENCES)
    (tmp_path / "s.jsonl").write_bytes(SUMMARIES)
    campaign = import_campaign(name="Review study", owner=rita, references=tmp_path / "r.jsonl", summaries=tmp_path / "s.jsonl").campaign
    launch_campaign(campaign)
    campaign.refresh_from_db()
    hits = list(HIT.objects.filter(batch_id=campaign.batch_id, task_type__slug="generation").order_by("pk"))
    now = timezone.now()
    made = {}
    for name, hit_numbers in (("ann", (0, 1)), ("bob", (0,))):
        worker = Worker.objects.create(external_id=name)
        made[name] = [
            Assignment.objects.create(hit=hits[i], worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now,
                                      expires_at=now, submitted_at=now, answers={})
            for i in hit_numbers
        ]
    return campaign, hits, made


def test_bulk_approve_by_worker_states_the_amount_first(page, reviewed):
    campaign, hits, made = reviewed
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{campaign.slug}/review/")
    assert "3 submitted assignments wait" in page.inner_text("#bulk-review")
    page.select_option("#bulk-worker", "ann")
    page.click("#bulk-approve")
    amount = hits[0].reward + hits[1].reward
    assert f"Approving pays ${amount}" in page.inner_text("#bulk-amount")
    assert "2 assignments of ann" in page.inner_text("#bulk-confirmation")
    assert Assignment.objects.filter(state=Assignment.State.APPROVED).count() == 0  # nothing before confirming
    page.click("#bulk-confirm")
    page.wait_for_selector("text=2 assignments approved.")
    states = {a.pk: a.state for a in Assignment.objects.all()}
    assert [states[a.pk] for a in made["ann"]] == ["approved", "approved"]
    assert states[made["bob"][0].pk] == "submitted"
    # Rejecting in bulk needs a message, then states what is withheld.
    page.select_option("#bulk-worker", "bob")
    page.click("#bulk-reject")
    page.wait_for_selector("text=Say why the work is rejected")
    page.select_option("#bulk-worker", "bob")
    page.fill("#bulk-form input[name=message]", "Questions copied the sentence")
    page.click("#bulk-reject")
    assert f"Rejecting withholds ${hits[0].reward}" in page.inner_text("#bulk-amount")
    page.click("#bulk-confirm")
    page.wait_for_selector("text=1 assignment rejected.")
    assert Assignment.objects.get(pk=made["bob"][0].pk).review_message == "Questions copied the sentence"


def test_example_page_offers_what_each_state_allows_asks_before_a_second_bonus_and_keeps_its_place(page, reviewed):
    campaign, hits, made = reviewed
    from hits import payments

    payments.approve_assignment(made["ann"][0])
    example_id = campaign.examples.get(predicates__pk=hits[0].payload["predicate"]).pk
    log_in(page, "rita", PASSWORD)
    page.set_viewport_size({"width": 1000, "height": 360})
    page.goto(f"/campaigns/{campaign.slug}/review/{example_id}/")

    def options(assignment):
        return page.locator(f"tr[data-assignment='{assignment.pk}'] select[name=action] option").evaluate_all("os => os.map(o => o.value)")

    assert options(made["ann"][0]) == ["bonus"]                         # approved: a bonus only
    assert options(made["bob"][0]) == ["approve", "reject", "bonus"]    # submitted: everything
    row = page.locator(f"tr[data-assignment='{made['ann'][0].pk}']")
    row.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 40)")
    before = page.evaluate("window.scrollY")
    assert before > 100
    row.locator("input[name=amount]").fill("0.40")
    row.locator("input[name=message]").fill("Careful questions")
    row.locator("button[type=submit]").click()
    page.wait_for_selector("text=Bonus of $0.40")
    assert abs(page.evaluate("window.scrollY") - before) < 60
    assert Assignment.objects.get(pk=made["ann"][0].pk).bonus == Decimal("0.40")
    # A second bonus asks first: dismissed, nothing is paid; accepted, it is.
    row = page.locator(f"tr[data-assignment='{made['ann'][0].pk}']")
    assert "another bonus" in row.locator("select[name=action]").inner_text()
    seen = []
    page.once("dialog", lambda dialog: (seen.append(dialog.message), dialog.dismiss()))
    row.locator("input[name=amount]").fill("0.40")
    row.locator("input[name=message]").fill("Again")
    row.locator("button[type=submit]").click()
    page.wait_for_timeout(300)
    assert "already has a $0.40 bonus" in seen[0]
    assert Assignment.objects.get(pk=made["ann"][0].pk).bonus == Decimal("0.40")
    page.once("dialog", lambda dialog: dialog.accept())
    row.locator("button[type=submit]").click()
    page.wait_for_selector("text=Bonus of $0.40")
    assert Assignment.objects.get(pk=made["ann"][0].pk).bonus == Decimal("0.80")
