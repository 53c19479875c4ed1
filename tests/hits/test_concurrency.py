"""Many workers asking for HITs at the same moment on PostgreSQL: no HIT over-filled, no duplicate."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connection, connections

from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.services import accept_next

pytestmark = pytest.mark.django_db(transaction=True)


def test_fifty_workers_clicking_at_once_never_overfill():
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE SKIP LOCKED) are exercised on PostgreSQL")
    task_type = TaskType.objects.create(slug="concurrent", name="Concurrent", assignment_duration=600)
    batch = Batch.objects.create(name="b", reference="test:concurrency")
    HIT.objects.bulk_create([HIT(batch=batch, task_type=task_type, max_assignments=3) for _ in range(40)])
    workers = Worker.objects.bulk_create([Worker(external_id=f"c{i}") for i in range(50)])
    barrier = threading.Barrier(len(workers))
    errors: list[BaseException] = []
    taken = Counter()

    def work(worker):
        try:
            barrier.wait(timeout=30)
            while True:
                assignment = accept_next(worker, task_type)
                if assignment is None:
                    break
                taken[worker.pk] += 1
                # Hand it in at once so the worker can take the next one.
                Assignment.objects.filter(pk=assignment.pk).update(state="submitted")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert sum(taken.values()) == 40 * 3
    per_hit = Counter(Assignment.objects.values_list("hit_id", flat=True))
    assert max(per_hit.values()) == 3 and len(per_hit) == 40
    pairs = Counter(Assignment.objects.values_list("hit_id", "worker_id"))
    assert max(pairs.values()) == 1
    assert all(h.n_taken == 3 for h in HIT.objects.all())
