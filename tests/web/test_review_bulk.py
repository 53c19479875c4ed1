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


def test_a_bulk_decision_on_mturk_settles_once(client_rita, draft, monkeypatch, django_capture_on_commit_callbacks):
    """Approving many assignments of an MTurk campaign queues one settlement of the batch, not one per assignment."""
    from hits import outbox
    from hits.models import Batch

    launch_campaign(draft)
    draft.refresh_from_db()
    Batch.objects.filter(pk=draft.batch_id).update(backend=Batch.Backend.MTURK_SANDBOX)
    hits = list(HIT.objects.filter(batch_id=draft.batch_id).order_by("pk"))
    chosen = [_submitted(hits[0], "ann"), _submitted(hits[1], "ann")]
    sent = []
    monkeypatch.setattr(outbox, "send_now", lambda name, args, countdown=None: sent.append((name, args)) or True)
    with django_capture_on_commit_callbacks(execute=True):
        client_rita.post(f"/campaigns/{draft.slug}/review/bulk/",
                         {"action": "approve", "confirmed": "1", "ids": [str(a.pk) for a in chosen]})
    assert all(Assignment.objects.get(pk=a.pk).state == "approved" for a in chosen)
    assert [s for s in sent if s[0] == "hits.mturk.settle_batch"] == [("hits.mturk.settle_batch", [draft.batch_id])]


def test_a_refused_bulk_reject_keeps_the_chosen_filters(client_rita, draft):
    """Issue 28: a bulk reject refused for want of a message came back with every filter reset."""
    launch_campaign(draft)
    draft.refresh_from_db()
    hit = HIT.objects.filter(batch_id=draft.batch_id).first()
    _submitted(hit, "ann")
    _submitted(HIT.objects.filter(batch_id=draft.batch_id).last(), "bob")
    url = f"/campaigns/{draft.slug}/review/bulk/"
    response = client_rita.post(url, {"action": "reject", "worker": "bob", "task": hit.task_type.slug, "message": ""},
                                follow=True)
    page = response.content.decode()
    assert "Say why the work is rejected" in page
    assert '<option value="bob" selected>' in page and '<option value="ann">' in page
    assert f'<option value="{hit.task_type.slug}" selected>' in page
    assert Assignment.objects.filter(state="submitted").count() == 2


def test_a_bonus_over_the_limit_is_refused_in_plain_words(client_rita, draft, settings):
    """Issue 28: "(MAX_BONUS)", a setting's name, in a message to the researcher."""
    settings.MAX_BONUS = "2.00"
    launch_campaign(draft)
    draft.refresh_from_db()
    assignment = _submitted(HIT.objects.filter(batch_id=draft.batch_id).first(), "ann")
    url = f"/campaigns/{draft.slug}/review/assignments/{assignment.pk}/"
    page = client_rita.post(url, {"action": "bonus", "amount": "2.50", "message": "good"}, follow=True).content.decode()
    assert "a bonus may be at most $2.00 (the platform" in page.replace("&#x27;", "'").lower()
    assert "MAX_BONUS" not in page and Assignment.objects.get(pk=assignment.pk).bonus == 0
