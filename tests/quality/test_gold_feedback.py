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
    # figure must not move after either, however many HITs follow the first alone.  Releases come after every
    # 3rd HIT, gold and regular counted alike (issue 39), and only with two gold answers not shown before.
    submit(HIT.Kind.GOLD, present=True)  # 4th
    assert _gold_row(client) == before
    for _ in range(3):  # 5th to 7th: the 6th is a release point, with one gold answer only
        submit(HIT.Kind.REGULAR)
        assert _gold_row(client) == before  # a release would show that one gold HIT's result alone
    submit(HIT.Kind.GOLD, present=False)  # 8th
    assert _gold_row(client) == before
    # The 9th HIT releases both gold answers at once: 2 of 4 labels right.
    submit(HIT.Kind.REGULAR)
    after = _gold_row(client)
    assert after != before and ">0.50<" in after and '<td class="num">4</td>' in after


def test_a_gold_check_revokes_only_at_a_release_point_and_tells_the_worker_no_gold_counts(
    tmp_path, django_user_model, settings, eager_celery, django_capture_on_commit_callbacks
):
    from annotation.models import Campaign
    from hits.models import Batch, Qualification, QualificationEvent
    from hits.services import accept_next, submit_assignment

    settings.GOLD_FEEDBACK_EVERY = 3
    campaign = launched_scu_campaign(tmp_path / "rv", "Revoking", ROWS)
    Campaign.objects.filter(pk=campaign.pk).update(grace_period_items=2)
    Batch.objects.filter(pk=campaign.batch_id).update(gold_share=0.5)
    template = HIT.objects.filter(batch_id=campaign.batch_id).order_by("pk").first()
    units = template.payload["units"]
    user = django_user_model.objects.create_user(username="careless", password="pw-for-tests-123")
    worker = worker_for_user(user)
    client = Client()
    client.force_login(user)

    def submit(kind):
        hit = HIT.objects.create(
            batch_id=campaign.batch_id, task_type=template.task_type, payload=template.payload, kind=kind, reward=template.reward,
            answer_key={"labels": {str(u): False for u in units}} if kind == HIT.Kind.GOLD else None, max_assignments=1,
        )
        assignment = accept_next(worker, template.task_type, hit_id=hit.pk)
        with django_capture_on_commit_callbacks(execute=True):
            # Every label "present": each gold answer is wrong.
            submit_assignment(worker, assignment.pk, {f"p_{k}": "1" for k in range(1, len(units) + 1)})

    def state():
        q = Qualification.objects.filter(worker=worker, batch_id=campaign.batch_id, task_type=template.task_type).first()
        return q.state if q else None

    for _ in range(2):
        submit(HIT.Kind.REGULAR)
    # Two gold HITs, all wrong, past the grace period: nothing happens at either submission (the 3rd HIT is a
    # release point, with one gold answer only).
    submit(HIT.Kind.GOLD)
    assert state() != Qualification.State.REVOKED
    submit(HIT.Kind.GOLD)
    assert state() != Qualification.State.REVOKED
    submit(HIT.Kind.REGULAR)
    assert state() != Qualification.State.REVOKED
    # The release point (the 6th HIT, gold and regular alike) releases both gold answers, and the check acts then.
    submit(HIT.Kind.REGULAR)
    assert state() == Qualification.State.REVOKED
    qualification = Qualification.objects.get(worker=worker, batch_id=campaign.batch_id, task_type=template.task_type)
    assert "accuracy on check items is not above 90%" in qualification.reason and "figures as of" in qualification.reason
    assert not re.search(r"\d+ items|0\.\d\d", qualification.reason), qualification.reason
    for page in (client.get("/work/").content.decode(), client.get("/work/quality/").content.decode()):
        assert "accuracy on check items is not above 90%" in page and "over 4 items" not in page
    # Researchers keep the exact figures.
    event = QualificationEvent.objects.get(worker=worker, action="revoke")
    assert "accuracy on gold items is 0.00 (needs to be above 0.90, over 4 items)" in event.reason
    assert event.figures["gold_accuracy"]["n"] == 4
