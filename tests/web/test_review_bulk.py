"""Bulk review and the second-bonus guard, through the test client (the browser side is in tests/browser)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, Worker

pytestmark = pytest.mark.django_db


def _submitted(hit, name):
    now = timezone.now()
    worker, _ = Worker.objects.get_or_create(external_id=name)
    return Assignment.objects.create(hit=hit, worker=worker, state="submitted", accepted_at=now, expires_at=now, submitted_at=now, answers={})


def test_confirmed_bulk_decides_only_the_assignments_it_showed(client_rita, draft):
    launch_campaign(draft)
    draft.refresh_from_db()
    hits = list(HIT.objects.filter(batch_id=draft.batch_id).order_by("pk"))
    first = _submitted(hits[0], "ann")
    url = f"/campaigns/{draft.slug}/review/bulk/"
    page = client_rita.post(url, {"action": "approve", "worker": "ann"}).content.decode()
    assert f"Approving pays ${hits[0].reward}" in page and Assignment.objects.get(pk=first.pk).state == "submitted"
    late = _submitted(hits[1], "ann")  # arrives while the researcher reads the confirmation
    # Ids that are not ids ("²" passes str.isdigit, 30 digits overflow the column) are ignored, not a 500.
    response = client_rita.post(url, {"action": "approve", "confirmed": "1", "ids": [str(first.pk), "²", "9" * 30, "x"]})
    assert response.status_code == 302
    assert Assignment.objects.get(pk=first.pk).state == "approved"
    assert Assignment.objects.get(pk=late.pk).state == "submitted"


def test_a_second_bonus_needs_confirming(client_rita, draft):
    launch_campaign(draft)
    draft.refresh_from_db()
    assignment = _submitted(HIT.objects.filter(batch_id=draft.batch_id).first(), "ann")
    url = f"/campaigns/{draft.slug}/review/assignments/{assignment.pk}/"
    client_rita.post(url, {"action": "bonus", "amount": "0.30", "message": "good"})
    page = client_rita.post(url, {"action": "bonus", "amount": "0.30", "message": "good"}, follow=True).content.decode()
    assert "already has a bonus of $0.30" in page
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("0.30")
    client_rita.post(url, {"action": "bonus", "amount": "0.30", "message": "good", "confirm_second_bonus": "1"})
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("0.60")
