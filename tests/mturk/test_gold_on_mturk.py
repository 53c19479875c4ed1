"""Gold HITs on MTurk look like the regular HITs they sit among (issue 27): the same MaxAssignments, never more
places open at once, and more judges over time by growing in steps of that size, then by a copy of their own.
Run against the MTurk stand-in over HTTP with the real boto3 client."""

from __future__ import annotations

import pytest

from hits.models import HIT, Assignment, HITExclusion, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch
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
        _judged_by(standin, gold_on_mturk, [f"G{round_}X{n}" for n in range(3)])
        assert _on_mturk(standin, gold_on_mturk)["NumberOfAssignmentsAvailable"] == 0
        report = publish_batch(mturk_batch)
        assert report.grown == 1
        view = _on_mturk(standin, gold_on_mturk)
        assert (view["MaxAssignments"], view["NumberOfAssignmentsAvailable"]) == (total, 3)
        assert publish_batch(mturk_batch).grown == 0  # nothing more until those places are used too

    # At 9, MTurk cannot take it to 10 or more: a copy of the gold HIT goes up as a HIT of its own, with 3 places,
    # closed to the nine workers who judged the first.
    _judged_by(standin, gold_on_mturk, [f"G3X{n}" for n in range(3)])
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
