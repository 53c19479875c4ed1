"""Bonuses of one assignment (issue 27, L2): MAX_BONUS bounds their total, an idempotency key makes a
retried call pay once, and concurrent calls (API or the review form) are serialised by the assignment's
row lock.  The races run on PostgreSQL (``DATABASE_URL``); SQLite serialises every write anyway."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client

from hits.models import Assignment, LedgerEntry
from tests.api.conftest import api_world, client_for, submitted_assignment  # noqa: F401 - fixture used by name
from tests.concurrently import at_once


def _url(assignment):
    return f"/api/campaigns/parks/assignments/{assignment.pk}/bonus/"


def _bonuses(assignment):
    return list(LedgerEntry.objects.filter(assignment=assignment, kind=LedgerEntry.Kind.BONUS))


@pytest.mark.django_db
def test_a_retried_bonus_with_the_same_key_pays_once(api_world):
    assignment = submitted_assignment(api_world)
    client = client_for(api_world, "owner")
    body = {"amount": "1.50", "reason": "Careful work"}
    first = client.post(_url(assignment), body, format="json", HTTP_IDEMPOTENCY_KEY="retry-7f3a")
    again = client.post(_url(assignment), body, format="json", HTTP_IDEMPOTENCY_KEY="retry-7f3a")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and (first["Idempotent-Replayed"], again["Idempotent-Replayed"]) == ("false", "true")
    # The key may also come in the body.
    assert client.post(_url(assignment), {**body, "idempotency_key": "retry-7f3a"}, format="json").json() == first.json()
    # Reusing the key for another bonus is refused, and pays nothing.
    for other in ({"amount": "1.00", "reason": "Careful work"}, {"amount": "1.50", "reason": "Other reason"}):
        response = client.post(_url(assignment), other, format="json", HTTP_IDEMPOTENCY_KEY="retry-7f3a")
        assert response.status_code == 409 and "already used for a different bonus" in response.json()["detail"]
    mine = submitted_assignment(api_world, "crowd2")
    elsewhere = client.post(_url(mine), body, format="json", HTTP_IDEMPOTENCY_KEY="retry-7f3a")
    assert elsewhere.status_code == 409 and _bonuses(mine) == []
    assignment.refresh_from_db()
    assert assignment.bonus == Decimal("1.50") and len(_bonuses(assignment)) == 1
    # Another key is another bonus.
    assert client.post(_url(assignment), body, format="json", HTTP_IDEMPOTENCY_KEY="retry-8b21").status_code == 201
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("3.00")
    bad = client.post(_url(assignment), body, format="json", HTTP_IDEMPOTENCY_KEY="x" * 256)
    assert bad.status_code == 400 and "idempotency_key" in bad.json()


def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent bonuses are serialised by row locks (SELECT ... FOR UPDATE) on PostgreSQL")


@pytest.mark.django_db(transaction=True)
def test_six_concurrent_api_bonuses_pay_only_what_max_bonus_allows(api_world, settings):
    _postgresql_only()
    settings.MAX_BONUS = "4.00"
    assignment = submitted_assignment(api_world)
    clients = [client_for(api_world, "owner") for _ in range(6)]
    results = at_once([lambda c=c: c.post(_url(assignment), {"amount": "1.00", "reason": "Thanks"}, format="json") for c in clients])
    codes = sorted(getattr(r, "status_code", repr(r)) for r in results)
    assert codes == [201] * 4 + [409] * 2, codes
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("4.00") and len(_bonuses(assignment)) == 4
    # Six concurrent calls with one idempotency key: one bonus.
    other = submitted_assignment(api_world, "crowd2")
    results = at_once(
        [lambda c=c: c.post(_url(other), {"amount": "1.00", "reason": "Thanks"}, format="json", HTTP_IDEMPOTENCY_KEY="once") for c in clients]
    )
    assert sorted(getattr(r, "status_code", repr(r)) for r in results) == [201] * 6
    assert len({r.json()["id"] for r in results}) == 1
    assert Assignment.objects.get(pk=other.pk).bonus == Decimal("1.00") and len(_bonuses(other)) == 1


@pytest.mark.django_db(transaction=True)
def test_six_concurrent_review_form_bonuses_pay_one_unless_confirmed(api_world, settings):
    _postgresql_only()
    assignment = submitted_assignment(api_world)
    url = f"/campaigns/parks/review/assignments/{assignment.pk}/"
    clients = []
    for _ in range(6):
        client = Client()
        client.force_login(api_world["users"]["owner"])
        clients.append(client)
    body = {"action": "bonus", "amount": "1.00", "message": "Thanks"}
    results = at_once([lambda c=c: c.post(url, body) for c in clients])
    assert all(getattr(r, "status_code", None) == 302 for r in results), results
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("1.00") and len(_bonuses(assignment)) == 1


@pytest.mark.django_db(transaction=True)
def test_one_key_sent_at_once_for_two_assignments_pays_once_and_refuses_the_other(api_world):
    """Each call locks only its own assignment, so both used to find no earlier entry, both inserted the
    same (unique) request token and the loser answered 500.  Now the loser is a 409: key already used."""
    _postgresql_only()
    first, second = submitted_assignment(api_world), submitted_assignment(api_world, "crowd2")
    clients = [client_for(api_world, "owner") for _ in range(6)]
    body = {"amount": "1.00", "reason": "Thanks"}
    results = at_once(
        [
            lambda c=c, a=(first if i % 2 else second): c.post(_url(a), body, format="json", HTTP_IDEMPOTENCY_KEY="shared")
            for i, c in enumerate(clients)
        ]
    )
    codes = [getattr(r, "status_code", repr(r)) for r in results]
    assert sorted(codes) == [201] * 3 + [409] * 3, codes
    paid = [a for a in (first, second) if _bonuses(a)]
    assert len(paid) == 1 and len(_bonuses(paid[0])) == 1
    assert sum(Assignment.objects.get(pk=a.pk).bonus for a in (first, second)) == Decimal("1.00")
    refused = [r for r in results if r.status_code == 409]
    assert all("already used for a different bonus" in r.json()["detail"] for r in refused)
