"""The live worker status page: per worker HITs held now, returned, timed out, median time, and effective hourly
pay against the campaign's hourly floor (a setting of the settings page and the API)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign
from annotation.services.pipeline import launch_campaign
from hits import payments
from hits.models import HIT, Assignment, Worker

pytestmark = pytest.mark.django_db


def _assignment(hit, worker, state, seconds=None, expires_in=timedelta(minutes=30)):
    now = timezone.now()
    done = state in Assignment.DONE_STATES
    return Assignment.objects.create(
        hit=hit, worker=worker, state=state, accepted_at=now - timedelta(seconds=seconds or 0), expires_at=now + expires_in,
        submitted_at=now if done else None, work_seconds=seconds, answers={} if done else None,
    )


def crowd_at_work(campaign, rita):
    """Ann: holds one HIT, returned one, let one time out, did two (60 s approved, 240 s awaiting review).
    Bob: one approved HIT that took him ten minutes, and one past its time (not swept yet)."""
    launch_campaign(campaign)
    campaign.refresh_from_db()
    hits = list(HIT.objects.filter(batch_id=campaign.batch_id, kind=HIT.Kind.REGULAR).order_by("pk"))
    ann, bob = Worker.objects.create(external_id="ann"), Worker.objects.create(external_id="bob")
    _assignment(hits[2], ann, Assignment.State.ASSIGNED)
    _assignment(hits[0], ann, Assignment.State.RETURNED)
    _assignment(hits[1], ann, Assignment.State.EXPIRED)
    payments.approve_assignment(_assignment(hits[0], ann, Assignment.State.SUBMITTED, seconds=60), by=rita)
    _assignment(hits[1], ann, Assignment.State.SUBMITTED, seconds=240)
    payments.approve_assignment(_assignment(hits[0], bob, Assignment.State.SUBMITTED, seconds=600), by=rita)
    _assignment(hits[1], bob, Assignment.State.ASSIGNED, expires_in=-timedelta(minutes=1))
    return hits[0].reward


def test_status_per_worker_with_the_hourly_floor(client_rita, draft, rita):
    reward = crowd_at_work(draft, rita)
    assert reward == Decimal("0.32")
    data = client_rita.get(reverse("campaign-worker-status-data", args=[draft.slug]))
    assert data.status_code == 200 and data["Cache-Control"] == "no-store"
    body = data.json()
    rows = {r["worker"]: r for r in body["workers"]}
    ann, bob = rows["ann"], rows["bob"]
    assert (ann["active"], ann["returned"], ann["timed_out"], ann["done"]) == (1, 1, 1, 2)
    assert ann["median_seconds"] == 150
    # Earned: the approved reward (ledger) and the one awaiting review, over 5 minutes: $7.68 an hour.
    assert ann["earned"] == "0.64" and ann["hourly"] == "7.68" and ann["below_floor"]
    # Bob: $0.32 for 10 minutes is $1.92 an hour, below the default floor of $12.00.
    assert bob["hourly"] == "1.92" and bob["below_floor"] and (bob["active"], bob["timed_out"]) == (0, 1)
    assert body["floor"] == "12.00" and body["below_floor"] == 2
    assert body["active_workers"] == 1 and body["active_assignments"] == 1

    page = client_rita.get(reverse("campaign-worker-status", args=[draft.slug])).content.decode()
    assert 'id="floor-warning"' in page and "2</span> worker(s) earn less than $12.00 per hour" in page
    assert '<tr data-worker="bob" class="below-floor">' in page and '<tr data-worker="ann" class="below-floor">' in page
    assert "$1.92 <strong class=\"warning\">below the floor</strong>" in page
    assert 'src="/static/js/worker_status.js"' in page

    # A lower floor clears the warning.
    Campaign.objects.filter(pk=draft.pk).update(hourly_pay_floor=Decimal("1.50"))
    body = client_rita.get(reverse("campaign-worker-status-data", args=[draft.slug])).json()
    assert body["below_floor"] == 0 and not any(r["below_floor"] for r in body["workers"])


def test_no_floor_and_no_work(client_rita, draft):
    Campaign.objects.filter(pk=draft.pk).update(hourly_pay_floor=0)
    page = client_rita.get(reverse("campaign-worker-status", args=[draft.slug]))
    assert page.status_code == 200 and "No worker has taken a HIT" in page.content.decode()
    assert client_rita.get(reverse("campaign-worker-status-data", args=[draft.slug])).json()["workers"] == []


def test_only_the_campaigns_researchers_see_its_workers(draft, rita, django_user_model):
    from annotation.services.roles import make_researcher

    crowd_at_work(draft, rita)
    other = django_user_model.objects.create_user("olga")
    make_researcher(other)
    worker = django_user_model.objects.create_user("wendy")
    for user in (other, worker):
        client = Client()
        client.force_login(user)
        for name in ("campaign-worker-status", "campaign-worker-status-data"):
            assert client.get(reverse(name, args=[draft.slug])).status_code == 404


def test_the_floor_is_a_bounded_setting_of_the_page(client_rita, draft):
    from tests.web.test_settings_predicates import settings_data

    url = reverse("campaign-settings", args=[draft.slug])
    page = client_rita.get(url).content.decode()
    assert 'name="hourly_pay_floor"' in page and "our default: 12.00" in page
    response = client_rita.post(url, settings_data(draft, hourly_pay_floor="9999", action="save"))
    assert response.status_code == 400 and 'value="9999"' in response.content.decode()
    draft.refresh_from_db()
    assert draft.hourly_pay_floor == Decimal("12.00")
    assert client_rita.post(url, settings_data(draft, hourly_pay_floor="15.50", action="save")).status_code == 302
    draft.refresh_from_db()
    assert draft.hourly_pay_floor == Decimal("15.50")


def test_hourly_pay_waits_for_five_minutes_of_measured_work(client_rita, draft, rita):
    """Issue 40: two HITs done in a second each gave "$15,588/h" and a median of "0 s / HIT"."""
    launch_campaign(draft)
    draft.refresh_from_db()
    hits = list(HIT.objects.filter(batch_id=draft.batch_id, kind=HIT.Kind.REGULAR).order_by("pk"))
    fast = Worker.objects.create(external_id="fast")
    for hit in hits[:2]:
        payments.approve_assignment(_assignment(hit, fast, Assignment.State.SUBMITTED, seconds=0), by=rita)
    row = client_rita.get(reverse("campaign-worker-status-data", args=[draft.slug])).json()["workers"][0]
    assert (row["done"], row["hourly"], row["below_floor"]) == (2, None, False)
    assert row["hourly_note"] == "not stated before 5 min of measured work"
    page = client_rita.get(reverse("campaign-worker-status", args=[draft.slug])).content.decode()
    assert '<td class="num" data-field="median_seconds">&lt; 1</td>' in page
    assert "— <span class=\"meta\">(not stated before 5 min of measured work)</span>" in page
    # Five minutes measured: the rate is stated.
    payments.approve_assignment(_assignment(hits[2], fast, Assignment.State.SUBMITTED, seconds=300), by=rita)
    row = client_rita.get(reverse("campaign-worker-status-data", args=[draft.slug])).json()["workers"][0]
    assert row["hourly"] is not None and row["hourly_note"] == ""
