"""Issue 18 in Chromium: a researcher creates an invite link, a new worker joins with it, takes that
campaign's test and works; another researcher's campaign with other tests, and a finished campaign with a
one-item test, change nothing for them."""

from __future__ import annotations

import json

import pytest

from annotation.models import Campaign
from annotation.services import qualification_tests
from annotation.services.roles import make_researcher
from hits.models import HIT, Batch, Qualification
from tests.browser.conftest import log_in
from tests.conftest import DEMO_DIR, launched_scu_campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-18"


def _rows(prefix):
    return [(f"{prefix}{i}", f"Reference {i} of {prefix} says a thing .", f"Summary {i} of {prefix} .", [f"fact a {i}", f"fact b {i}"]) for i in range(3)]


def test_invited_worker_joins_takes_the_campaigns_test_and_works(page, chromium, live_server, tmp_path, django_user_model):
    demo = json.loads((DEMO_DIR / "qualifications.json").read_text())
    rita = django_user_model.objects.create_user("rita", password=PASSWORD)
    oscar = django_user_model.objects.create_user("oscar", password=PASSWORD)
    for user in (rita, oscar):
        make_researcher(user)
    ritas = launched_scu_campaign(tmp_path / "a", "Rita study", _rows("a"), gold_share=0.0)
    Campaign.objects.filter(pk=ritas.pk).update(owner=rita)
    qualification_tests.define_qualifications(ritas, {"presence": demo["presence"]})
    # Oscar's running campaign tests another task type; an old finished campaign had a one-item presence test.
    oscars = launched_scu_campaign(tmp_path / "b", "Oscar study", _rows("b"), gold_share=0.0)
    Campaign.objects.filter(pk=oscars.pk).update(owner=oscar)
    qualification_tests.define_qualifications(oscars, {"generation": demo["generation"]})
    old = launched_scu_campaign(tmp_path / "c", "Old study", _rows("c"), gold_share=0.0)
    qualification_tests.define_qualifications(old, {"presence": demo["presence"][:1]})
    Campaign.objects.filter(pk=old.pk).update(state=Campaign.State.FINISHED)
    Batch.objects.filter(pk=old.batch_id).update(state=Batch.State.FINISHED)

    # The researcher makes a one-use link and copies it.
    log_in(page, "rita", PASSWORD)
    page.goto(f"/campaigns/{ritas.slug}/invitations/")
    page.fill("#id_max_uses", "1")
    page.fill("#id_expires_in_days", "3")
    page.click("#new-invitation button[type=submit]")
    page.wait_for_selector("#invitations .invite-url")
    link = page.input_value("#invitations .invite-url")
    assert "/join/" in link and "0 of 1" in page.inner_text("#invitations")
    page.click("#invitations .copy-link")
    page.wait_for_function("() => document.querySelector('#invitations .copy-link').textContent === 'Copied'")

    # A new worker, in a browser of their own, joins with it.
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800})
    worker_page = context.new_page()
    worker_page.set_default_timeout(45_000)
    worker_page.goto(link.replace("http://127.0.0.1:8000", live_server.url))
    worker_page.fill("#id_username", "invited-ivy")
    worker_page.fill("#id_password1", PASSWORD)
    worker_page.fill("#id_password2", PASSWORD)
    worker_page.click("button[type=submit]")
    worker_page.wait_for_selector("tr[data-task=presence]")
    # Auto-accept is off for new workers: this one turns it on, to go from test item to test item.
    with worker_page.expect_navigation():
        worker_page.check("input[name=auto_accept_next]")
    worker_page.click("tr[data-task=presence] button:has-text('Start working')")
    for n in range(4):
        worker_page.wait_for_selector(".presence-row")
        hit = HIT.objects.get(pk=HIT.objects.filter(assignments__worker__user__username="invited-ivy", assignments__state="assigned").values("pk")[:1])
        assert hit.kind == "qualification" and hit.batch_id == ritas.batch_id
        assert worker_page.inner_text("#test-item").startswith(f"Qualification test: item {n + 1} of 4")
        labels = hit.answer_key["labels"]
        for k, pair in enumerate(hit.payload["inline"]["pairs"], start=1):
            row = worker_page.locator(f".presence-row[data-unit='{k}']")
            row.get_by_label("Present" if labels[pair["id"]] else "Not present", exact=True).check()
        worker_page.click("#submit")
        worker_page.wait_for_load_state()
    assert "you passed the" in worker_page.inner_text(".messages")
    # Real work of the campaign follows at once (auto-accept), with no test banner.
    worker_page.wait_for_selector(".presence-row")
    assert worker_page.locator("#test-item").count() == 0
    hit = HIT.objects.get(pk=HIT.objects.filter(assignments__worker__user__username="invited-ivy", assignments__state="assigned").values("pk")[:1])
    assert hit.kind == "regular" and hit.batch_id == ritas.batch_id
    for k in range(1, worker_page.locator(".presence-row").count() + 1):
        worker_page.locator(f".presence-row[data-unit='{k}']").get_by_label("Present", exact=True).check()
    worker_page.click("#submit")
    worker_page.wait_for_load_state()
    assert HIT.objects.filter(pk=hit.pk, assignments__worker__user__username="invited-ivy", assignments__state="submitted").exists()
    assert Qualification.objects.get(worker__user__username="invited-ivy", batch_id=ritas.batch_id, task_type__slug="presence").state == "qualified"
    assert not Qualification.objects.filter(worker__user__username="invited-ivy").exclude(batch_id=ritas.batch_id).exists()

    # Their standing: qualified in rita's campaign; oscar's generation test is "not taken yet", never "pending".
    worker_page.goto("/work/quality/")
    mine = worker_page.locator(f"table[data-campaign='{ritas.slug}'] tr[data-task=presence]").inner_text()
    assert "Qualified" in mine and "passed the test" in mine
    theirs = worker_page.locator(f"table[data-campaign='{oscars.slug}'] tr[data-task=generation]").inner_text()
    assert "Test not taken yet" in theirs and "ending" not in theirs
    context.close()

    # The link is spent: the researcher's list says so.
    page.goto(f"/campaigns/{ritas.slug}/invitations/")
    assert "1 of 1" in page.inner_text("#invitations") and "used up" in page.inner_text("#invitations")
