"""The standing page never moves with one gold HIT: its gold figure is released in batches (issue 27)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from hits.models import HIT, Assignment
from hits.services import worker_for_user
from tests.conftest import launched_scu_campaign

pytestmark = pytest.mark.django_db

ROWS = [(f"d{i}", f"Reference {i} says a thing .", f"System summary {i} .", [f"fact a of {i}", f"fact b of {i}"]) for i in range(2)]


def _gold_row(client) -> str:
    page = client.get("/work/quality/").content.decode()
    row = re.search(r"<tr><td>Accuracy on check items</td>(.*?)</tr>", page)
    assert row, page
    return re.sub(r"\s+", " ", row.group(1))


def test_one_gold_hit_never_moves_the_standing_page_and_releases_come_in_batches(tmp_path, django_user_model, settings):
    settings.GOLD_FEEDBACK_EVERY = 3
    campaign = launched_scu_campaign(tmp_path / "fb", "Feedback", ROWS)
    template = HIT.objects.filter(batch_id=campaign.batch_id).order_by("pk").first()
    units = [str(u) for u in template.payload["units"]]
    user = django_user_model.objects.create_user(username="watcher", password="pw-for-tests-123")
    worker = worker_for_user(user)
    client = Client()
    client.force_login(user)
    clock = timezone.now() - timedelta(hours=1)

    def submit(kind, present=True):
        nonlocal clock
        clock += timedelta(seconds=30)
        hit = HIT.objects.create(
            batch_id=campaign.batch_id, task_type=template.task_type, payload=template.payload, kind=kind,
            answer_key={"labels": {u: False for u in units}} if kind == HIT.Kind.GOLD else None, max_assignments=5, n_taken=1,
        )
        Assignment.objects.create(
            hit=hit, worker=worker, accepted_at=clock, expires_at=clock + timedelta(minutes=30), submitted_at=clock,
            state=Assignment.State.SUBMITTED, answers={"labels": [{"unit": int(u), "present": present} for u in units]},
        )

    for _ in range(3):
        submit(HIT.Kind.REGULAR)
    before = _gold_row(client)
    # One gold HIT, answered wrong ("present" where the key says "not present"), then one right: the page's
    # figure must not move after either, however many regular HITs follow the first alone.
    submit(HIT.Kind.GOLD, present=True)
    assert _gold_row(client) == before
    for _ in range(3):
        submit(HIT.Kind.REGULAR)
        assert _gold_row(client) == before  # a release would show that one gold HIT's result alone
    submit(HIT.Kind.GOLD, present=False)
    assert _gold_row(client) == before
    submit(HIT.Kind.REGULAR)
    submit(HIT.Kind.REGULAR)
    assert _gold_row(client) == before
    # The next multiple of 3 regular HITs releases both gold answers at once: 2 of 4 labels right.
    submit(HIT.Kind.REGULAR)
    after = _gold_row(client)
    assert after != before and ">0.50<" in after and '<td class="num">4</td>' in after
