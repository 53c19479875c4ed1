"""Choosing Prolific per campaign (settings page, API, import), its cost preview with Prolific's fee, and the
pay rule's figures (session length, times, hourly rate)."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.costs import campaign_cost_preview
from annotation.services.pipeline import task_type
from hits.models import HIT, Assignment, Batch, Worker
from hits.prolific import pricing
from tests.web.conftest import rita  # noqa: F401 - the researcher fixture
from tests.web.test_settings_predicates import settings_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(small_files, rita):
    refs, sums = small_files
    return import_campaign(name="Choice", slug="choice", owner=rita, references=refs, summaries=sums).campaign


def test_the_settings_page_offers_prolific_with_its_settings_and_rates(draft, rita):
    client = Client()
    client.force_login(rita)
    url = reverse("campaign-settings", args=[draft.slug])
    html = client.get(url).content.decode()
    assert '<option value="prolific">Prolific</option>' in html and "On Prolific" in html
    assert "HITs per Prolific submission" in html and "Prolific&#x27;s service fee" in html
    response = client.post(url, settings_data(draft, backend="prolific", prolific_hits_per_submission="8",
                                              prolific_fee_rate="0.4", action="save"))
    assert response.status_code == 302
    draft.refresh_from_db()
    assert (draft.backend, draft.prolific_hits_per_submission, draft.prolific_fee_rate) == ("prolific", 8, Decimal("0.4"))
    html = client.get(url).content.decode()
    # The rates the study would show, with the paper's presence reward below Prolific's minimum and what would pass.
    # A study's reward is the whole session's: 8 HITs (the setting) and their minutes.
    assert "presence: 8 HITs x $0.20 = $1.60 for about 16 min = $6.00/h (below $8.00/h: at least $0.27 per HIT)" in html
    assert "generation: 8 HITs x $0.32 = $2.56 for about 16 min = $9.60/h;" in html and 'id="cost-prolific"' in html
    # Out of bounds: refused, named.
    response = client.post(url, settings_data(draft, backend="prolific", prolific_hits_per_submission="0",
                                              prolific_fee_rate="1.5", action="save"))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert set(errors) == {"prolific_hits_per_submission", "prolific_fee_rate"}
    draft.refresh_from_db()
    assert draft.prolific_fee_rate == Decimal("0.4")


def test_the_api_sets_prolific_and_previews_its_fee(draft, rita):
    api = APIClient()
    api.force_authenticate(rita)
    url = f"/api/campaigns/{draft.slug}/"
    response = api.patch(url, {"backend": "prolific", "prolific_hits_per_submission": 5, "prolific_fee_rate": "0.3333"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["backend"] == "prolific" and response.json()["prolific_hits_per_submission"] == 5
    bad = api.patch(url, {"prolific_fee_rate": "2", "backend": "moon"}, format="json")
    assert bad.status_code == 400 and set(bad.json()) >= {"prolific_fee_rate", "backend"}
    preview = api.get(f"/api/campaigns/{draft.slug}/cost/", {"backend": "prolific"}).json()
    local = api.get(f"/api/campaigns/{draft.slug}/cost/", {"backend": "local"}).json()
    assert preview["backend"] == "prolific" and local["fees"] == "0.00"
    # A study's reward pays whole sessions of 5: the last session of each type is paid for HITs no work fills
    # (generation 3 places: 2 more; verification 6: 4 more; presence 18: 2 more), $1.72 more than the HITs.
    assert [(u["task_type"], u["sessions"], u["unused_hits"]) for u in preview["unused_sessions"]] == [
        ("generation", 1, 2), ("verification", 2, 4), ("presence", 4, 2)]
    assert Decimal(preview["rewards"]) == Decimal(local["rewards"]) + 2 * Decimal("0.32") + 4 * Decimal("0.17") + 2 * Decimal("0.20")
    # 3 + 2 generation places at $0.32 (fee $0.11 each), 6 + 4 verification at $0.17 ($0.06), 18 + 2 presence at $0.20 ($0.07).
    assert Decimal(preview["fees"]) == 5 * Decimal("0.11") + 10 * Decimal("0.06") + 20 * Decimal("0.07")


def test_cost_preview_charges_the_campaigns_fee_rate(draft):
    Campaign.objects.filter(pk=draft.pk).update(prolific_fee_rate=Decimal("0.5"), backend="prolific")
    draft.refresh_from_db()
    preview = campaign_cost_preview(draft)
    assert preview.backend == "prolific"
    for stage in preview.stages:
        # Half a cent rounds up ($0.17 x 50% = $0.085 -> $0.09), per paid place.
        fee = (stage.reward * Decimal("0.5")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        assert stage.fees == fee * stage.hits * stage.assignments_per_hit


def test_import_chooses_the_market(small_files, tmp_path, capsys):
    refs, sums = small_files
    for market, backend in (("prolific", "prolific"), ("mturk", "mturk-sandbox"), ("local", "local")):
        call_command("import_campaign", name=f"M {market}", references=str(refs), summaries=str(sums), market=market,
                     predicates="none")
        assert Campaign.objects.get(slug=f"m-{market}").backend == backend
    call_command("import_campaign", name="Default", references=str(refs), summaries=str(sums), predicates="none")
    assert Campaign.objects.get(slug="default").backend == "local"
    call_command("import_campaign", name="Sessions", references=str(refs), summaries=str(sums), predicates="none",
                 market="prolific", prolific_hits_per_submission=4, prolific_fee_rate="0.25")
    sessions = Campaign.objects.get(slug="sessions")
    assert (sessions.prolific_hits_per_submission, sessions.prolific_fee_rate) == (4, Decimal("0.25"))
    with pytest.raises(CommandError, match="prolific_fee_rate"):
        call_command("import_campaign", name="Bad fee", references=str(refs), summaries=str(sums), predicates="none",
                     prolific_fee_rate="3")
    # A folder's settings.json chooses the market by its name too; an unknown one is named.
    folder = tmp_path / "folder"
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("a\n")
    (folder / "references.txt").write_text("The mayor opened a park.\n")
    (folder / "summaries" / "s1.summary").write_text("A park opened.\n")
    (folder / "settings.json").write_text(json.dumps({"backend": "prolific"}))
    call_command("import_campaign", name="Folder", folder=str(folder), predicates="none")
    assert Campaign.objects.get(slug="folder").backend == "prolific"
    (folder / "settings.json").write_text(json.dumps({"backend": "moon"}))
    with pytest.raises(CommandError, match="'moon' is not a market: one of local, mturk, prolific"):
        call_command("import_campaign", name="Moon", folder=str(folder), predicates="none")


def test_session_length_times_and_rate_follow_the_typical_time(db, settings):
    generation, verification, presence = task_type("generation"), task_type("verification"), task_type("presence")
    # Before any work: the protocol's figures (2, 1 and 2 minutes), sessions of about 12 minutes.
    assert [pricing.hits_per_submission(t) for t in (generation, verification, presence)] == [6, 12, 6]
    assert pricing.hits_per_submission(generation, 4) == 4
    assert pricing.estimated_minutes(verification) == 1
    # The whole session at each HIT's own limit (20 min a generation HIT), under Prolific's one day, and never under
    # Prolific's least maximum for the estimate (2 + X + 2 sqrt(X): 30 min for an estimate of 16).
    assert pricing.maximum_allowed_minutes(generation, 6) == 120
    assert pricing.prolific_minimum_allowed(16) == 26 and pricing.prolific_minimum_allowed(12) == 21
    assert pricing.maximum_allowed_minutes(verification, 1, 16) == 26
    # A session never holds more HITs than fit in a day at the HIT's own limit (a setting of 100: 71 of 20 min).
    assert pricing.hits_per_submission(generation, 100) == 1439 // 20 == 71
    assert pricing.maximum_allowed_minutes(generation, 100) == pricing.MAX_ALLOWED_MINUTES == 1439
    # Measured on the campaign's own work once there is any (150 s, 2.5 minutes: 5 HITs a session of 13 minutes).
    batch = Batch.objects.create(name="b", reference="t:1")
    other = Batch.objects.create(name="other", reference="t:2")
    worker = Worker.objects.create(external_id="w")
    now = timezone.now()
    for seconds, where in ((100, batch), (150, batch), (400, batch), (900, other), (900, other), (900, other)):
        hit = HIT.objects.create(batch=where, task_type=presence, max_assignments=1, reward=Decimal("0.40"), payload={})
        Assignment.objects.create(hit=hit, worker=Worker.objects.create(external_id=f"w{seconds}-{where.pk}-{hit.pk}"),
                                  state=Assignment.State.SUBMITTED, accepted_at=now - timedelta(seconds=seconds),
                                  expires_at=now + timedelta(hours=1), submitted_at=now, work_seconds=seconds)
    assert pricing.hits_per_submission(presence, batch=batch) == 5
    assert pricing.estimated_minutes(presence, 5, batch) == 13 and pricing.estimated_minutes(presence, 1, batch) == 3
    # Another campaign's slow work does not count; with none of its own, the protocol's figure.
    assert pricing.hits_per_submission(presence) == 6 and pricing.estimated_minutes(presence, 6) == 12
    rate = pricing.hourly_rate(presence, Decimal("0.40"), batch=batch)
    assert (rate.hits, rate.session_reward, rate.minutes, rate.rate, rate.passes) == (
        5, Decimal("2.00"), 13, Decimal("9.23"), True)
    settings.PROLIFIC_MIN_HOURLY_USD = 9.5
    with pytest.raises(pricing.HourlyRateTooLow, match=r"presence: a session of 5 HIT\(s\) at \$0.40 pays \$2.00 for 13 "
                                                      r"min, \$9.23/h.*at least \$0.42 per HIT"):
        pricing.check_hourly_minimum([(presence, Decimal("0.40"))], batch=batch)
    # The check is a function of (amount, minutes, minimum): another minimum (currency) threads straight in.
    assert pricing.meets_minimum(Decimal("2.00"), 13, Decimal("9.23")) and not pricing.meets_minimum(Decimal("2.00"), 13, Decimal("9.24"))
    assert worker.pk  # the unused worker is harmless
