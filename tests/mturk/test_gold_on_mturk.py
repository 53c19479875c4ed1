"""Gold HITs on MTurk look like the regular HITs they sit among (issue 27): the same MaxAssignments, never more
places open at once, and more judges over time by growing in steps of that size, then by a copy of their own.
Run against the MTurk stand-in over HTTP with the real boto3 client."""

from __future__ import annotations

import pytest

from hits.models import HIT, Assignment, HITExclusion, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch
from hits.mturk.standin import WorkerRefused
from tests.mturk.conftest import make_hit, submitted_assignment
from tests.mturk.test_standin_campaign import standin  # noqa: F401 - the stand-in fixture

pytestmark = pytest.mark.django_db


def _on_mturk(server, published: MTurkHIT) -> dict:
    return server.call("GetHIT", {"HITId": published.mturk_hit_id})["HIT"]


def _judged_by(server, published: MTurkHIT, workers: list[str]) -> None:
    """Workers accept the HIT on MTurk and their work is stored and confirmed here (as the sync leaves it)."""
    for worker_id in workers:
        accepted = server.accept(published.mturk_hit_id, worker_id)
        worker = Worker.objects.create(external_id=f"mturk:{worker_id}", mturk_worker_id=worker_id)
        assignment = submitted_assignment(published.hit, worker)
        MTurkAssignment.objects.create(
            mturk_assignment_id=accepted["AssignmentId"], mturk_hit=published, assignment=assignment,
            mturk_worker_id=worker_id, submit_to=server.url, status=MTurkAssignment.Status.SUBMITTED,
        )


def test_a_gold_hit_has_the_places_of_the_regular_hits_and_grows_in_their_steps(standin, mturk_batch, task_type):  # noqa: F811
    regular = make_hit(mturk_batch, task_type)  # 3 places, as a presence HIT
    gold = make_hit(mturk_batch, task_type, kind=HIT.Kind.GOLD, max_assignments=32767, answer_key={"label": "yes"})
    assert publish_batch(mturk_batch).published == 2
    gold_on_mturk = MTurkHIT.objects.get(hit=gold)
    regular_view, gold_view = _on_mturk(standin, MTurkHIT.objects.get(hit=regular)), _on_mturk(standin, gold_on_mturk)
    assert gold_view["MaxAssignments"] == regular_view["MaxAssignments"] == 3
    assert gold_view["NumberOfAssignmentsAvailable"] == regular_view["NumberOfAssignmentsAvailable"] == 3

    # Each time all its places hold confirmed work, three more: never more than three open at once.
    for round_, total in ((1, 6), (2, 9)):
        _judged_by(standin, gold_on_mturk, [f"AG{round_}X{n}" for n in range(3)])
        assert _on_mturk(standin, gold_on_mturk)["NumberOfAssignmentsAvailable"] == 0
        report = publish_batch(mturk_batch)
        assert report.grown == 1
        view = _on_mturk(standin, gold_on_mturk)
        assert (view["MaxAssignments"], view["NumberOfAssignmentsAvailable"]) == (total, 3)
        assert publish_batch(mturk_batch).grown == 0  # nothing more until those places are used too

    # At 9, MTurk cannot take it to 10 or more: a copy of the gold HIT goes up as a HIT of its own, with 3 places,
    # closed to the nine workers who judged the first.
    _judged_by(standin, gold_on_mturk, [f"AG3X{n}" for n in range(3)])
    publish_batch(mturk_batch)  # the copy is made here ...
    publish_batch(mturk_batch)  # ... and published here (or already above: either way, once)
    assert _on_mturk(standin, gold_on_mturk)["MaxAssignments"] == 9
    copy = HIT.objects.get(batch=mturk_batch, kind=HIT.Kind.GOLD, payload__gold_copy_of=gold.pk)
    assert copy.answer_key == gold.answer_key
    copy_view = _on_mturk(standin, MTurkHIT.objects.get(hit=copy))
    assert (copy_view["MaxAssignments"], copy_view["NumberOfAssignmentsAvailable"]) == (3, 3)
    judges = set(Assignment.objects.filter(hit=gold).values_list("worker_id", flat=True))
    assert len(judges) == 9 and set(HITExclusion.objects.filter(hit=copy).values_list("worker_id", flat=True)) == judges
    assert HIT.objects.filter(batch=mturk_batch, kind=HIT.Kind.GOLD).count() == 2  # one copy, not one per publish


def test_gold_hits_are_expired_and_stop_growing_once_no_regular_work_of_their_type_is_open(standin, mturk_batch, task_type):  # noqa: F811
    """No gold without regular work (issue 27): once the batch's regular HITs of a type are done, its gold HITs on
    MTurk are expired by the sync (workers can no longer accept them), and neither grow nor get a copy; a gold HIT
    of a type whose regular work goes on stays up; regular work of the type coming back reopens them."""
    from hits.mturk.sync import sync_batch

    other_type = type(task_type).objects.create(
        slug="other", name="Other", description="Another thing.", keywords="other", assignment_duration=600
    )
    regular = make_hit(mturk_batch, task_type)
    gold = make_hit(mturk_batch, task_type, kind=HIT.Kind.GOLD, max_assignments=32767, answer_key={"label": "yes"})
    make_hit(mturk_batch, other_type)
    other_gold = make_hit(mturk_batch, other_type, kind=HIT.Kind.GOLD, max_assignments=32767, answer_key={"label": "no"})
    assert publish_batch(mturk_batch).published == 4
    gold_on_mturk = MTurkHIT.objects.get(hit=gold)
    assert _on_mturk(standin, gold_on_mturk)["HITStatus"] == "Assignable"

    HIT.objects.filter(pk=regular.pk).update(state=HIT.State.COMPLETED)
    _judged_by(standin, gold_on_mturk, [f"AG1X{n}" for n in range(3)])  # all its places hold confirmed work
    report = sync_batch(mturk_batch)
    assert report.failed == 0 and report.expired == 1
    assert _on_mturk(standin, gold_on_mturk)["HITStatus"] != "Assignable"
    with pytest.raises(WorkerRefused):
        standin.accept(gold_on_mturk.mturk_hit_id, "ALATECOMER")
    assert _on_mturk(standin, gold_on_mturk)["MaxAssignments"] == 3  # not grown
    assert _on_mturk(standin, MTurkHIT.objects.get(hit=other_gold))["HITStatus"] == "Assignable"
    # At 9 places used it would be copied: nothing is, and a second sync neither reopens nor grows it.
    for n in range(6):  # work accepted before the expiry, confirmed since
        worker = Worker.objects.create(external_id=f"mturk:AG2X{n}", mturk_worker_id=f"AG2X{n}")
        MTurkAssignment.objects.create(
            mturk_assignment_id=f"EARLIER{n}", mturk_hit=gold_on_mturk, assignment=submitted_assignment(gold, worker),
            mturk_worker_id=f"AG2X{n}", submit_to=standin.url, status=MTurkAssignment.Status.SUBMITTED,
        )
    report = sync_batch(mturk_batch)
    assert (report.reopened, report.expired) == (0, 0)
    assert _on_mturk(standin, gold_on_mturk)["MaxAssignments"] == 3
    assert not HIT.objects.filter(batch=mturk_batch, payload__gold_copy_of=gold.pk).exists()

    # Regular work of the type again (e.g. a later round): the gold HIT is offered again.
    HIT.objects.filter(pk=regular.pk).update(state=HIT.State.OPEN)
    assert sync_batch(mturk_batch).reopened == 1
