"""The payout report (page and CSV) and each worker's earnings page show the same money: a test sums both."""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from annotation.services.pipeline import launch_campaign
from hits import payments
from hits.models import HIT, Assignment
from hits.services import worker_for_user

pytestmark = pytest.mark.django_db


def _worker_client(django_user_model, name):
    user = django_user_model.objects.create_user(username=name, password="pw-for-tests-123")
    client = Client()
    client.force_login(user)
    return client, worker_for_user(user)


def _submitted(hit, worker):
    now = timezone.now()
    return Assignment.objects.create(
        hit=hit, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now, expires_at=now, submitted_at=now, answers={}
    )


def _owed_on_page(client) -> Decimal:
    body = client.get("/work/history/").content.decode()
    return Decimal(re.search(r'<strong id="owed">\$([\d.]+)</strong>', body).group(1))


def _csv(client_rita, slug) -> dict[str, dict]:
    response = client_rita.get(f"/campaigns/{slug}/payouts/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return {row["worker"]: row for row in csv.DictReader(io.StringIO(response.content.decode()))}


def test_report_and_earnings_pages_agree_and_add_up(draft, client_rita, rita, django_user_model):
    launch_campaign(draft)
    draft.refresh_from_db()
    hits = list(HIT.objects.filter(batch_id=draft.batch_id).order_by("pk"))
    assert len(hits) >= 3
    reward = hits[0].reward
    ann_client, ann = _worker_client(django_user_model, "ann")
    bob_client, bob = _worker_client(django_user_model, "bob")
    # Ann: one approved, one approved with a bonus, one not reviewed yet.
    payments.approve_assignment(_submitted(hits[0], ann), by=rita)
    second = payments.approve_assignment(_submitted(hits[1], ann), by=rita)
    payments.pay_bonus(second, Decimal("1.00"), "Clear, complete questions", by=rita)
    _submitted(hits[2], ann)
    # Bob: one rejected, one approved with two bonuses.
    payments.reject_assignment(_submitted(hits[0], bob), "Answers not from the sentence", by=rita)
    approved = payments.approve_assignment(_submitted(hits[1], bob), by=rita)
    payments.pay_bonus(approved, Decimal("0.50"), "Thanks", by=rita)
    payments.pay_bonus(approved, Decimal("0.25"), "And again", by=rita)

    rows = _csv(client_rita, draft.slug)
    # Work awaiting review is not owed (the earnings page used to count it: $3.32 there, $1.32 in the ledger).
    assert Decimal(rows["ann"]["owed"]) == 2 * reward + Decimal("1.00")
    assert Decimal(rows["ann"]["awaiting_amount"]) == reward and rows["ann"]["awaiting_review"] == "1"
    assert Decimal(rows["bob"]["owed"]) == reward + Decimal("0.75") and rows["bob"]["rejected"] == "1"
    # Each worker's own page says the same, and the report's total is the sum of its rows.
    assert _owed_on_page(ann_client) == Decimal(rows["ann"]["owed"])
    assert _owed_on_page(bob_client) == Decimal(rows["bob"]["owed"])
    assert Decimal(rows["TOTAL"]["owed"]) == Decimal(rows["ann"]["owed"]) + Decimal(rows["bob"]["owed"])
    page = client_rita.get(f"/campaigns/{draft.slug}/payouts/").content.decode()
    assert f'<strong id="total-owed">${rows["TOTAL"]["owed"]}</strong>' in page
    assert 'data-worker="ann"' in page and 'data-worker="bob"' in page
    # The worker sees each bonus with its message, and the campaign of every HIT.
    history = ann_client.get("/work/history/").content.decode()
    assert "Clear, complete questions" in history and "$1.00" in history
    assert history.count(draft.name) >= 4


def test_payout_report_is_for_the_campaigns_researchers_only(draft, django_user_model):
    client, _ = _worker_client(django_user_model, "eve")
    assert client.get(f"/campaigns/{draft.slug}/payouts/").status_code in (403, 404)
    assert client.get(f"/campaigns/{draft.slug}/payouts/?format=csv").status_code in (403, 404)
