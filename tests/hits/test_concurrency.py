"""Many workers asking for HITs at the same moment on PostgreSQL: no HIT over-filled, no duplicate."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections, transaction

from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.services import accept_next

pytestmark = pytest.mark.django_db(transaction=True)


def _together(workers, act):
    """A thread per worker running ``act(worker)``, all held until ``go()``; ``finish()`` waits for them and
    returns what they raised."""
    barrier = threading.Barrier(len(workers) + 1)
    errors: list[BaseException] = []

    def run(worker):
        try:
            barrier.wait(timeout=30)
            act(worker)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for t in threads:
        t.start()

    def finish():
        for t in threads:
            t.join(timeout=120)
        return errors

    return lambda: barrier.wait(timeout=30), finish


def test_fifty_workers_clicking_at_once_never_overfill():
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE SKIP LOCKED) are exercised on PostgreSQL")
    task_type = TaskType.objects.create(slug="concurrent", name="Concurrent", assignment_duration=600)
    batch = Batch.objects.create(name="b", reference="test:concurrency")
    HIT.objects.bulk_create([HIT(batch=batch, task_type=task_type, max_assignments=3) for _ in range(40)])
    workers = Worker.objects.bulk_create([Worker(external_id=f"c{i}") for i in range(50)])
    taken = Counter()

    def work(worker):
        while True:
            assignment = accept_next(worker, task_type)
            if assignment is None:
                break
            taken[worker.pk] += 1
            # Hand it in at once so the worker can take the next one.
            Assignment.objects.filter(pk=assignment.pk).update(state="submitted")

    go, finish = _together(workers, work)
    go()
    errors = finish()
    assert not errors, errors[:3]
    assert sum(taken.values()) == 40 * 3
    per_hit = Counter(Assignment.objects.values_list("hit_id", flat=True))
    assert max(per_hit.values()) == 3 and len(per_hit) == 40
    pairs = Counter(Assignment.objects.values_list("hit_id", "worker_id"))
    assert max(pairs.values()) == 1
    assert all(h.n_taken == 3 for h in HIT.objects.all())


def test_concurrent_accepts_of_a_test_item_with_places_left_all_succeed():
    """Twelve workers start a campaign's test at once: its first item has 32,767 places, so every one of them
    gets it, none hears "No HITs available" because another worker's hand-out held the item's row."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE SKIP LOCKED) are exercised on PostgreSQL")
    import time

    from hits.models import BatchChoice
    from hits.qualifications import qualification_rule
    from hits.handlers import register_eligibility_rule

    register_eligibility_rule(qualification_rule)  # (registered at start-up; a no-op then)
    task_type = TaskType.objects.create(slug="tested", name="Tested", assignment_duration=600)
    batch = Batch.objects.create(name="b", reference="test:tested")
    item = HIT.objects.create(batch=batch, task_type=task_type, kind=HIT.Kind.QUALIFICATION, max_assignments=32767)
    HIT.objects.create(batch=batch, task_type=task_type, max_assignments=3)  # the campaign's real work
    workers = Worker.objects.bulk_create([Worker(external_id=f"t{i}") for i in range(12)])
    BatchChoice.objects.bulk_create([BatchChoice(worker=w, batch=batch, how="invitation") for w in workers])
    got = {}

    def work(worker):
        got[worker.pk] = accept_next(worker, task_type)

    go, finish = _together(workers, work)
    # Another hand-out holds the item's row while all twelve ask (as one of them would, a moment longer).
    with transaction.atomic():
        assert list(HIT.objects.select_for_update().filter(pk=item.pk))
        go()
        time.sleep(1.0)
    errors = finish()
    assert not errors, errors[:3]
    assert all(a is not None and a.hit_id == item.pk for a in got.values()), {k: v and v.hit_id for k, v in got.items()}
    assert len(got) == 12
    item.refresh_from_db()
    assert item.n_taken == 12


def test_two_workers_with_crossed_kept_draws_and_campaigns_both_get_work_without_a_deadlock(monkeypatch):
    """Worker A's kept draw is in campaign X and A starts from Y; worker B's is in Y and B starts from X.
    Locking the kept HIT first and then waiting for the other campaign's HIT deadlocked (a 500 for one)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE SKIP LOCKED) are exercised on PostgreSQL")
    from datetime import timedelta

    from django.utils import timezone

    import hits.handout
    from hits.models import Draw

    task_type = TaskType.objects.create(slug="crossed", name="Crossed", assignment_duration=600)
    x = Batch.objects.create(name="x", reference="test:crossed-x")
    y = Batch.objects.create(name="y", reference="test:crossed-y")
    hx = HIT.objects.create(batch=x, task_type=task_type, max_assignments=1)
    hy = HIT.objects.create(batch=y, task_type=task_type, max_assignments=1)
    a, b = Worker.objects.create(external_id="crossed-a"), Worker.objects.create(external_id="crossed-b")
    later = timezone.now() + timedelta(hours=1)
    Draw.objects.create(worker=a, task_type=task_type, hit=hx, expires_at=later)
    Draw.objects.create(worker=b, task_type=task_type, hit=hy, expires_at=later)

    # Each hand-out's first HIT lookup is held until both have made theirs: the worst interleaving, every run.
    meet = threading.Barrier(2)
    real = hits.handout._next_hit
    seen = set()

    def next_hit(*args, **kwargs):
        found = real(*args, **kwargs)
        me = threading.get_ident()
        if me not in seen:
            seen.add(me)
            try:
                meet.wait(timeout=5)
            except threading.BrokenBarrierError:
                pass
        return found

    monkeypatch.setattr(hits.handout, "_next_hit", next_hit)
    got = {}
    go, finish = _together([(a, y), (b, x)], lambda pair: got.__setitem__(pair[0].pk, accept_next(pair[0], task_type, batch_id=pair[1].pk)))
    go()
    errors = finish()
    assert not errors, errors
    assert got[a.pk].hit_id == hy.pk and got[b.pk].hit_id == hx.pk


def _all_gold_batch(slug: str, n_regular: int):
    """A task type and a batch that wants gold beside every HIT (share 1): ``n_regular`` regular HITs and one
    gold HIT of many places; returns (task type, gold HIT)."""
    task_type = TaskType.objects.create(slug=slug, name=slug, assignment_duration=600)
    batch = Batch.objects.create(name="g", reference=f"test:{slug}", gold_share=1.0)
    HIT.objects.bulk_create([HIT(batch=batch, task_type=task_type, max_assignments=3) for _ in range(n_regular)])
    gold = HIT.objects.create(batch=batch, task_type=task_type, kind=HIT.Kind.GOLD, max_assignments=100, answer_key={"labels": {}})
    return task_type, gold


def test_gold_is_not_dropped_when_every_gold_hit_is_locked_for_a_moment():
    """A batch that wants gold in every HIT (share 1) and whose one gold HIT another hand-out holds for a moment:
    the worker gets it once it is free rather than silently a regular HIT (gold would fall below its share)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE SKIP LOCKED) are exercised on PostgreSQL")
    import time

    task_type, gold = _all_gold_batch("goldlock", n_regular=3)
    worker = Worker.objects.create(external_id="gold-waiter")
    held = threading.Event()

    def hold():
        try:
            with transaction.atomic():
                list(HIT.objects.select_for_update().filter(pk=gold.pk))
                held.set()
                time.sleep(0.2)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=30)
    assignment = accept_next(worker, task_type)
    holder.join(timeout=30)
    assert assignment.hit_id == gold.pk
    # The regular HIT looked at first was not taken.
    assert sum(HIT.objects.filter(kind=HIT.Kind.REGULAR).values_list("n_taken", flat=True)) == 0


def test_a_worker_who_met_every_gold_hit_gets_regular_work_without_the_retry_pauses(monkeypatch):
    """The gold draw finds no free gold HIT because the worker has taken each already (not because one is
    locked): the unlocked look says none is left, so no pause, and the regular HIT comes at once."""
    if connection.vendor != "postgresql":
        pytest.skip("the look for locked gold HITs runs where SKIP LOCKED can hide them (PostgreSQL)")
    import hits.handout

    task_type, gold = _all_gold_batch("goldgone", n_regular=2)
    worker = Worker.objects.create(external_id="gold-veteran")
    first = accept_next(worker, task_type)
    assert first.hit_id == gold.pk
    Assignment.objects.filter(pk=first.pk).update(state=Assignment.State.SUBMITTED)
    pauses = []
    monkeypatch.setattr(hits.handout.time, "sleep", pauses.append)
    second = accept_next(worker, task_type)
    assert second.hit.kind == HIT.Kind.REGULAR and pauses == []
