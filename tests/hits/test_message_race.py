"""Two "Send again" at the same moment (two researchers, a double click) send each copy once: the copies to send are
claimed under the message's row lock (``hits.messaging``)."""

from __future__ import annotations

import pytest
from django.db import connection

from hits import messaging
from hits.markets.base import Delivery
from hits.markets.local import LocalMarket
from hits.models import HIT, Assignment, Batch, MessageRecipient, TaskType, Worker
from tests.concurrently import at_once

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_resends_at_once_send_each_copy_once(monkeypatch, django_user_model):
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE) across connections are exercised on PostgreSQL")
    from django.utils import timezone

    batch = Batch.objects.create(name="b", reference="race:1")
    task_type = TaskType.objects.create(slug="race", name="Race")
    hit = HIT.objects.create(batch=batch, task_type=task_type, payload={})
    workers = [Worker.objects.create(external_id=f"w{i}") for i in range(5)]
    for worker in workers:
        Assignment.objects.create(hit=hit, worker=worker, accepted_at=timezone.now(), expires_at=timezone.now())
    sent = []

    def failing(self, batch, subject, body, workers):
        return {w.pk: Delivery("failed", "down") for w in workers}

    monkeypatch.setattr(LocalMarket, "send_message", failing)
    message = messaging.send_message(batch, None, "S", "B", messaging.batch_workers(batch))
    assert set(message.recipients.values_list("status", flat=True)) == {"failed"}

    def counting(self, batch, subject, body, workers):
        sent.extend(w.pk for w in workers)
        return {w.pk: Delivery("sent") for w in workers}

    monkeypatch.setattr(LocalMarket, "send_message", counting)
    results = at_once([lambda: messaging.resend(message), lambda: messaging.resend(message)])
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert sorted(sent) == sorted(w.pk for w in workers)  # each copy once, whichever call took it
    assert set(MessageRecipient.objects.values_list("status", flat=True)) == {"sent"}
