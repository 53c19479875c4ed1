"""Marking local workers' payouts paid from the payout page: one worker or many, with who, when and how much
in the ledger; never twice; never on MTurk, which pays its workers itself."""

from __future__ import annotations

import re
import threading
from decimal import Decimal

import pytest
from django.db import connection, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.services.pipeline import launch_campaign
from hits import payments
from hits.models import HIT, Assignment, Batch, LedgerEntry
from hits.services import worker_for_user

pytestmark = pytest.mark.django_db


def _submitted(hit, worker):
    now = timezone.now()
    return Assignment.objects.create(
        hit=hit, worker=worker, state=Assignment.State.SUBMITTED, accepted_at=now, expires_at=now, submitted_at=now, answers={}
    )


def _owed_work(campaign, rita, django_user_model):
    """Ann is owed a reward and a $1.00 bonus, Bob a reward."""
    launch_campaign(campaign)
    campaign.refresh_from_db()
    hits = list(HIT.objects.filter(batch_id=campaign.batch_id).order_by("pk"))
    users = {name: django_user_model.objects.create_user(username=name, password="pw-for-tests-123") for name in ("ann", "bob")}
    ann, bob = (worker_for_user(users[name]) for name in ("ann", "bob"))
    approved = payments.approve_assignment(_submitted(hits[0], ann), by=rita)
    payments.pay_bonus(approved, Decimal("1.00"), "Careful work", by=rita)
    payments.approve_assignment(_submitted(hits[0], bob), by=rita)
    return hits, users, ann, bob


def _page(client, campaign) -> str:
    return client.get(reverse("campaign-payouts", args=[campaign.slug])).content.decode()


def _upto(page: str) -> str:
    return re.search(r'name="upto" value="(\d+)"', page).group(1)


def _mark(client, campaign, **data):
    return client.post(reverse("campaign-payouts-mark-paid", args=[campaign.slug]), data, follow=True)


def test_mark_one_worker_then_all_with_an_audit_trail(client_rita, draft, rita, django_user_model):
    hits, users, ann, bob = _owed_work(draft, rita, django_user_model)
    reward = hits[0].reward
    page = _page(client_rita, draft)
    assert f'<strong id="total-owed">${2 * reward + Decimal("1.00")}</strong>' in page
    assert 'name="only" value="ann"' in page and "No payment marked yet." in page

    response = _mark(client_rita, draft, only="ann", upto=_upto(page), note="PayPal 7Q2")
    html = response.content.decode()
    assert f"Marked paid: ${reward + Decimal('1.00')} to 1 worker (2 ledger entries)." in html
    entries = LedgerEntry.objects.filter(worker=ann)
    assert {e.state for e in entries} == {"paid"}
    assert all(e.settled_by == rita and e.settled_at is not None and e.settlement_note == "PayPal 7Q2" for e in entries)
    assert LedgerEntry.objects.get(worker=bob).state == "owed"
    # The record: when, who, which worker (a link to their worker view), how much, and the note.
    record = re.search(r'<tr data-worker="ann"><td>[\d-]+ [\d:]+</td><td>rita</td><td><a href="/campaigns/[^"]+/workers/\d+/" class="worker-link">ann</a></td>\s*<td class="num">\$([\d.]+)</td>', html)
    assert record and Decimal(record.group(1)) == reward + Decimal("1.00") and "PayPal 7Q2" in html
    # Ann's own earnings page says the same: nothing owed any more, all of it paid.
    ann_client = Client()
    ann_client.force_login(users["ann"])
    assert '<strong id="owed">$0.00</strong>' in ann_client.get("/work/history/").content.decode()

    # A second click on Ann's button (the same page) marks nothing and counts nothing twice.
    again = _mark(client_rita, draft, only="ann", upto=_upto(page)).content.decode()
    assert "Nothing to mark" in again
    assert again.count(f'<td>rita</td><td><a href="/campaigns/{draft.slug}/workers/{ann.pk}/" class="worker-link">ann</a></td>') == 1
    # "Mark all" pays what is left: Bob's reward; the paid total counts each entry once.
    done = _mark(client_rita, draft, all="1", upto=_upto(page)).content.decode()
    assert f"Marked paid: ${reward} to 1 worker (1 ledger entry)." in done
    assert '<strong id="total-owed">$0.00</strong>' in done
    assert f"${2 * reward + Decimal('1.00')} paid" in done


def test_ticked_workers_and_only_the_money_the_page_showed(client_rita, draft, rita, django_user_model):
    hits, _, ann, bob = _owed_work(draft, rita, django_user_model)
    page = _page(client_rita, draft)
    # Work approved after the page was drawn: not marked paid with what the researcher saw.
    late = payments.approve_assignment(_submitted(hits[1], bob), by=rita)
    assert "Tick the workers" in _mark(client_rita, draft, upto=_upto(page)).content.decode()
    _mark(client_rita, draft, worker=["ann", "bob"], upto=_upto(page))
    assert LedgerEntry.objects.get(assignment=late).state == "owed"
    assert set(LedgerEntry.objects.exclude(assignment=late).values_list("state", flat=True)) == {"paid"}


def test_mturk_payouts_are_refused(client_rita, draft, rita, django_user_model):
    _owed_work(draft, rita, django_user_model)
    draft.refresh_from_db()
    Batch.objects.filter(pk=draft.batch_id).update(backend=Batch.Backend.MTURK_SANDBOX)
    page = _page(client_rita, draft)
    assert 'id="mark-paid"' not in page and "MTurk pays these workers itself" in page
    response = _mark(client_rita, draft, all="1")
    assert "Nothing was marked paid: MTurk pays this campaign&#x27;s workers itself" in response.content.decode()
    assert not LedgerEntry.objects.filter(state="paid").exists()
    with pytest.raises(payments.PaymentError, match="MTurk pays"):
        payments.mark_paid(Batch.objects.get(pk=draft.batch_id), rita)


def test_only_the_campaigns_researchers_mark_paid(draft, rita, django_user_model):
    from annotation.services.roles import make_researcher

    _owed_work(draft, rita, django_user_model)
    olga = django_user_model.objects.create_user("olga")
    make_researcher(olga)
    for user in (olga, django_user_model.objects.get(username="ann")):
        client = Client()
        client.force_login(user)
        assert client.post(reverse("campaign-payouts-mark-paid", args=[draft.slug]), {"all": "1"}).status_code == 404
    assert not LedgerEntry.objects.filter(state="paid").exists()


@pytest.mark.django_db(transaction=True)
def test_two_researchers_marking_at_once_pay_each_entry_once(draft, rita, django_user_model):
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE) are exercised on PostgreSQL")
    _owed_work(draft, rita, django_user_model)
    batch = Batch.objects.get(pk=draft.batch_id)
    owed = sum(LedgerEntry.objects.filter(batch=batch, state="owed").values_list("amount", flat=True))
    barrier = threading.Barrier(4)
    results, errors = [], []

    def mark():
        try:
            barrier.wait(timeout=30)
            results.append(payments.mark_paid(batch, rita))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=mark) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors[:3]
    assert sum(r.amount for r in results) == owed
    assert sum(r.entries for r in results) == LedgerEntry.objects.filter(batch=batch).count() == 3


def test_the_api_marks_paid_and_shows_the_worker_status(draft, rita, django_user_model):
    from rest_framework.test import APIClient

    hits, _, ann, bob = _owed_work(draft, rita, django_user_model)
    api = APIClient()
    api.force_authenticate(rita)
    url = f"/api/campaigns/{draft.slug}/mark-paid/"
    assert api.post(url, {"workers": "ann"}, format="json").status_code == 400  # a list of external ids
    done = api.post(url, {"workers": ["ann"], "note": "PayPal 7Q2"}, format="json").json()
    assert done == {"entries": 2, "amount": str(hits[0].reward + Decimal("1.00")), "workers": ["ann"]}
    assert api.post(url, {"workers": ["ann"]}, format="json").json()["entries"] == 0  # never twice
    assert set(LedgerEntry.objects.filter(worker=ann).values_list("settled_by__username", "settlement_note")) == {("rita", "PayPal 7Q2")}
    status = api.get(f"/api/campaigns/{draft.slug}/worker-status/").json()
    assert status["floor"] == "12.00" and {w["worker"] for w in status["workers"]} == {"ann", "bob"}
    Batch.objects.filter(pk=Batch.objects.get(campaign=draft).pk).update(backend=Batch.Backend.MTURK_SANDBOX)
    refused = api.post(url, {}, format="json")
    assert refused.status_code == 409 and "MTurk pays" in refused.json()["detail"]
    assert LedgerEntry.objects.get(worker=bob).state == "owed"
