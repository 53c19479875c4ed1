"""The adaptive presence rule on MTurk (issue 29), against the MTurk stand-in over HTTP with the real boto3 client:
presence HITs go up with MaxAssignments 2 and grow to 3 (CreateAdditionalAssignmentsForHIT) only where the first
two judges disagree; a HIT under 10 assignments never grows to 10 or more: the place goes to a copy instead."""

from __future__ import annotations

import pytest

from annotation.models import Campaign, GoldPresence, SystemSummary
from annotation.web.hit_pages import presence_field
from hits.models import HIT, HITExclusion, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch
from hits.services import accept_next, submit_assignment
from tests.conftest import launched_scu_campaign
from tests.mturk.test_standin_campaign import standin  # noqa: F401 - the stand-in fixture

pytestmark = pytest.mark.django_db

ROWS = [
    ("agree", "A cat sat .", "A cat sat .", ["a cat sat", "a dog ran"]),
    ("split", "A cow ate .", "A cow ate .", ["a cow ate", "a hen sang"]),
]


def _campaign(tmp_path, rows, **fields) -> Campaign:
    campaign = launched_scu_campaign(
        tmp_path / "c", "On MTurk", rows, presence_judges=Campaign.PresenceJudges.ADAPTIVE, gold_share=0.0,
        backend=Campaign.Backend.MTURK_SANDBOX, **fields,
    )
    publish_batch(campaign.batch)  # what the commit would have triggered
    return campaign


def _on_mturk(server, hit: HIT) -> dict:
    return server.call("GetHIT", {"HITId": MTurkHIT.objects.get(hit=hit).mturk_hit_id})["HIT"]


def _judge_on_mturk(server, hit: HIT, worker_id: str, labels: list[bool]) -> None:
    """The worker accepts the HIT on MTurk, opens our framed page (a local place bound to the MTurk assignment,
    as ``hits.mturk.views`` takes it) and submits; MTurk has confirmed it."""
    published = MTurkHIT.objects.get(hit=hit)
    accepted = server.accept(published.mturk_hit_id, worker_id)
    worker = Worker.objects.get_or_create(mturk_worker_id=worker_id, defaults={"external_id": f"mturk:{worker_id}"})[0]
    assignment = accept_next(worker, hit.task_type, hit_id=hit.pk, via_mturk=True)
    assert assignment is not None, f"{worker_id} got no place on HIT {hit.pk}"
    MTurkAssignment.objects.create(
        mturk_assignment_id=accepted["AssignmentId"], mturk_hit=published, assignment=assignment,
        mturk_worker_id=worker_id, submit_to=server.url,
    )
    submit_assignment(worker, assignment.pk, {presence_field(k): "1" if v else "0" for k, v in enumerate(labels, start=1)})


def _hit(campaign, example: str) -> HIT:
    summary = SystemSummary.objects.get(system__campaign=campaign, example__external_id=example)
    return HIT.objects.filter(batch_id=campaign.batch_id, payload__summary=summary.pk).order_by("pk").first()


def test_the_third_place_is_added_on_mturk_only_where_the_first_two_disagree(standin, tmp_path, eager_celery):  # noqa: F811
    campaign = _campaign(tmp_path, ROWS)
    agreeing, split = _hit(campaign, "agree"), _hit(campaign, "split")
    assert _on_mturk(standin, agreeing)["MaxAssignments"] == _on_mturk(standin, split)["MaxAssignments"] == 2
    _judge_on_mturk(standin, agreeing, "AW1", [True, False])
    _judge_on_mturk(standin, agreeing, "AW2", [True, False])
    _judge_on_mturk(standin, split, "AW1", [True, True])
    _judge_on_mturk(standin, split, "AW2", [True, False])
    report = publish_batch(campaign.batch)
    assert report.grown == 1
    assert _on_mturk(standin, agreeing)["MaxAssignments"] == 2
    view = _on_mturk(standin, split)
    assert (view["MaxAssignments"], view["NumberOfAssignmentsAvailable"]) == (3, 1)
    assert publish_batch(campaign.batch).grown == 0  # one call, not one per publish
    _judge_on_mturk(standin, split, "AW3", [False, True])
    assert publish_batch(campaign.batch).grown == 0
    assert _on_mturk(standin, split)["MaxAssignments"] == 3
    labels = dict(GoldPresence.objects.filter(summary_id=split.payload["summary"], origin="majority").values_list("unit__index", "present"))
    assert labels == {0: True, 1: True}
    assert Campaign.objects.get(pk=campaign.pk).state == "finished"


def test_a_hit_under_ten_assignments_never_grows_to_ten_on_mturk_a_copy_takes_the_place(standin, tmp_path, eager_celery):  # noqa: F811
    """With 11 judges planned the adaptive rule posts 6 and adds one at a time: 7, 8, 9 on the MTurk HIT, then
    the 10th place goes to a copy of the HIT (closed to its nine judges), as MTurk refuses 9 -> 10."""
    campaign = _campaign(tmp_path, ROWS[1:], assignments_presence=11)
    hit = _hit(campaign, "split")
    assert _on_mturk(standin, hit)["MaxAssignments"] == 6
    # The first unit splits evenly as long as possible; the second is "absent" for everyone.
    for n in range(9):
        _judge_on_mturk(standin, hit, f"AJ{n}", [n % 2 == 0, False])
        publish_batch(campaign.batch)
        publish_batch(campaign.batch)  # a copy is made in one publish and published in the next (or at once)
        if n >= 5:
            assert _on_mturk(standin, hit)["MaxAssignments"] == min(n + 2, 9)
    hit.refresh_from_db()
    copy = HIT.objects.get(batch_id=campaign.batch_id, payload__adds_to=hit.pk)
    assert _on_mturk(standin, hit)["MaxAssignments"] == 9 and hit.max_assignments == 9
    assert _on_mturk(standin, copy)["MaxAssignments"] == 1 and copy.max_assignments == 1
    judges = set(hit.assignments.values_list("worker_id", flat=True))
    assert len(judges) == 9 and judges <= set(HITExclusion.objects.filter(hit=copy).values_list("worker_id", flat=True))
    # The 10th judge (5-4 -> 6-4) decides the majority of 11: nothing more is posted, and the campaign is done.
    _judge_on_mturk(standin, copy, "AJ9", [True, False])
    publish_batch(campaign.batch)
    assert HIT.objects.filter(batch_id=campaign.batch_id).count() == 2
    gold = dict(GoldPresence.objects.filter(summary_id=hit.payload["summary"], origin="majority").values_list("unit__index", "present"))
    assert gold == {0: True, 1: False}
    assert Campaign.objects.get(pk=campaign.pk).state == "finished"
