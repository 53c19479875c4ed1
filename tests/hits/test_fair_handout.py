"""Workers go to the campaign that recruited them; other campaigns share a worker round-robin (issue 39)."""

from __future__ import annotations

import random

import pytest
from django.test import Client

from annotation.models import Campaign
from hits.invitations import create_invitation
from hits.models import HIT, Assignment, Batch
from hits.services import return_assignment, worker_for_user
from tests.conftest import launched_scu_campaign, logged_in_worker

pytestmark = pytest.mark.django_db

ROWS = [(f"d{i}", f"Reference {i} says a thing .", f"System summary {i} .", [f"fact a of {i}", f"fact b of {i}"]) for i in range(4)]


@pytest.fixture
def seeded(monkeypatch):
    import hits.handout

    monkeypatch.setattr(hits.handout, "rng", random.Random(39), raising=False)


def _campaign(tmp_path, name, owner, **fields):
    campaign = launched_scu_campaign(tmp_path / name, name, ROWS, **fields)
    Campaign.objects.filter(pk=campaign.pk).update(owner=owner)
    return campaign


def _start(client, worker):
    """Start working (no campaign named); the batch of the HIT handed out, then the worker hands it in."""
    client.post("/work/presence/start/")
    assignment = Assignment.objects.get(worker=worker, state=Assignment.State.ASSIGNED)
    Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.SUBMITTED)
    return assignment.hit.batch_id


def test_a_worker_who_joined_through_b_invitation_gets_b_work_while_a_older_hits_are_open(
    tmp_path, researcher, other_researcher, seeded
):
    a = _campaign(tmp_path, "A first", researcher)
    b = _campaign(tmp_path, "B second", other_researcher)
    assert HIT.objects.filter(batch_id=a.batch_id).order_by("pk").first().pk < HIT.objects.filter(batch_id=b.batch_id).first().pk
    invitation = create_invitation(batch=Batch.objects.get(pk=b.batch_id))
    client = Client()
    joined = client.post(f"/join/{invitation.token}/", {"username": "newcomer", "password1": "a-Long-pass-39", "password2": "a-Long-pass-39"})
    assert joined.status_code == 302
    worker = worker_for_user(joined.wsgi_request.user)
    served = [_start(client, worker) for _ in range(3)]
    assert served == [b.batch_id] * 3, "B's recruit was handed another researcher's HITs"
    assert HIT.objects.filter(batch_id=a.batch_id, state=HIT.State.OPEN, n_taken=0).exists()


def test_start_here_makes_that_campaign_the_worker_s_first_afterwards(tmp_path, researcher, other_researcher, django_user_model, seeded):
    _campaign(tmp_path, "A first", researcher)
    b = _campaign(tmp_path, "B second", other_researcher)
    client, worker = logged_in_worker(django_user_model, "chooser")
    client.post("/work/presence/start/", {"campaign": b.batch_id})
    Assignment.objects.filter(worker=worker).update(state=Assignment.State.SUBMITTED)
    assert [_start(client, worker) for _ in range(3)] == [b.batch_id] * 3


def test_campaigns_share_a_worker_who_chose_none_round_robin_and_a_redo_round_never_jumps_the_queue(
    tmp_path, researcher, other_researcher, django_user_model, seeded
):
    a = _campaign(tmp_path, "A first", researcher)
    b = _campaign(tmp_path, "B second", other_researcher)
    # A's redo round (priority -round) used to come before every other campaign's first round.
    HIT.objects.filter(batch_id=a.batch_id).update(priority=-1)
    client, worker = logged_in_worker(django_user_model, "anyone")
    served = [_start(client, worker) for _ in range(6)]
    assert sorted(served.count(x) for x in (a.batch_id, b.batch_id)) == [3, 3]
    assert all(x != y for x, y in zip(served, served[1:])), f"not round-robin: {served}"


def test_a_campaign_s_work_comes_in_a_random_order_not_in_id_order(tmp_path, researcher, django_user_model, seeded):
    a = _campaign(tmp_path, "A", researcher)
    ids = list(HIT.objects.filter(batch_id=a.batch_id, kind=HIT.Kind.REGULAR).order_by("pk").values_list("pk", flat=True))
    HIT.objects.filter(batch_id=a.batch_id).update(max_assignments=10)
    orders = set()
    for i in range(6):
        client, worker = logged_in_worker(django_user_model, f"w{i}")
        client.post("/work/presence/start/")
        orders.add(Assignment.objects.get(worker=worker).hit_id)
    assert len(ids) > 1 and len(orders) > 1, "every worker got the same first HIT"


def _gold_queue(tmp_path, researcher):
    a = _campaign(tmp_path, "Gold", researcher)
    template = HIT.objects.filter(batch_id=a.batch_id).first()
    labels = {"labels": {str(u): True for u in template.payload["units"]}}
    HIT.objects.bulk_create(
        [HIT(batch_id=a.batch_id, task_type=template.task_type, payload=template.payload, reward=template.reward,
             kind=HIT.Kind.GOLD, answer_key=labels, max_assignments=100) for _ in range(40)]
        + [HIT(batch_id=a.batch_id, task_type=template.task_type, payload=template.payload, reward=template.reward) for _ in range(20)]
    )
    Batch.objects.filter(pk=a.batch_id).update(gold_share=0.5)
    return a


def test_giving_a_hit_back_never_re_rolls_the_gold_draw(tmp_path, researcher, django_user_model, seeded):
    """Before, returning a HIT drew again: a worker who returned what looked like a check met far fewer checks."""
    _gold_queue(tmp_path, researcher)
    client, worker = logged_in_worker(django_user_model, "returner")
    done = []
    for _ in range(16):
        client.post("/work/presence/start/")
        held = Assignment.objects.get(worker=worker, state=Assignment.State.ASSIGNED)
        for _ in range(3):  # the dodge: give a gold check back and start again
            if held.hit.kind != HIT.Kind.GOLD:
                break
            return_assignment(worker, held.pk)
            client.post("/work/presence/start/")
            again = Assignment.objects.get(worker=worker, state=Assignment.State.ASSIGNED)
            assert again.hit_id != held.hit_id
            held = again
        done.append(held.hit.kind)
        Assignment.objects.filter(pk=held.pk).update(state=Assignment.State.SUBMITTED)
    # gold_share 0.5: about 8 of 16 whatever the worker does; re-rolling three times left about 1.
    assert done.count(HIT.Kind.GOLD) >= 4, done


def test_round_robin_reads_when_each_campaign_last_served_the_worker_from_a_row_kept_by_the_hand_out(
    tmp_path, researcher, other_researcher, django_user_model, seeded
):
    """The fair order's "served longest ago" is one row per (worker, campaign, task type), written by every
    hand-out: it does not read the worker's history (a judge with a thousand HITs costs what a new one does)."""
    from datetime import timedelta

    from django.utils import timezone

    from hits.models import LastServed

    a = _campaign(tmp_path, "A first", researcher)
    b = _campaign(tmp_path, "B second", other_researcher)
    client, worker = logged_in_worker(django_user_model, "regular")
    first = _start(client, worker)
    taken = Assignment.objects.get(worker=worker)
    row = LastServed.objects.get(worker=worker, batch_id=first)
    assert row.served_at == taken.accepted_at and row.task_type_id == taken.hit.task_type_id
    second = _start(client, worker)
    assert {first, second} == {a.batch_id, b.batch_id}
    # The row decides, not the assignments: say the second campaign served the worker a day ago, the first now.
    LastServed.objects.filter(worker=worker, batch_id=second).update(served_at=timezone.now() - timedelta(days=1))
    LastServed.objects.filter(worker=worker, batch_id=first).update(served_at=timezone.now())
    assert _start(client, worker) == second
    assert LastServed.objects.filter(worker=worker).count() == 2  # updated in place, one row per campaign


def test_the_migration_fills_the_last_served_rows_from_the_assignments_before_it(tmp_path, researcher, django_user_model, seeded):
    import importlib

    from django.apps import apps

    from hits.models import LastServed

    a = _campaign(tmp_path, "A", researcher)
    client, worker = logged_in_worker(django_user_model, "veteran")
    for _ in range(2):
        _start(client, worker)
    latest = Assignment.objects.filter(worker=worker).order_by("-accepted_at").first()
    LastServed.objects.all().delete()  # a database from before the table
    importlib.import_module("hits.migrations.0032_last_served").fill(apps, None)
    (row,) = LastServed.objects.all()
    assert (row.worker_id, row.batch_id, row.served_at) == (worker.pk, a.batch_id, latest.accepted_at)
