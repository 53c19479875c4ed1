"""The adaptive presence rule under concurrency on PostgreSQL (issue 29): however many follow-ups of a completed
HIT run at once, and however the last two submissions race, a HIT whose judges disagree gets one place.  And the
routed HITs of a budgeted campaign (routed after the commit) follow the rule too."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.models import Campaign
from annotation.services.pipeline import after_presence_hits, launch_campaign
from annotation.web.hit_pages import presence_field
from hits.models import HIT, TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.conftest import launched_scu_campaign
from tests.hits.test_concurrency import _together

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = [("split", "A cow ate .", "A cow ate .", ["a cow ate", "a hen sang"])]


@pytest.fixture
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks (SELECT ... FOR UPDATE) are exercised on PostgreSQL")


def _data(labels):
    return {presence_field(k): "1" if v else "0" for k, v in enumerate(labels, start=1)}


def test_two_disagreeing_judges_submitting_at_once_open_one_place(postgres_only, tmp_path, eager_celery):
    campaign = launched_scu_campaign(tmp_path / "c", "Race", ROWS, presence_judges=Campaign.PresenceJudges.ADAPTIVE)
    presence = TaskType.objects.get(slug="presence")
    held = {}
    for name in ("r1", "r2"):
        worker = Worker.objects.create(external_id=name)
        held[worker] = accept_next(worker, presence)
    labels = {"r1": [True, True], "r2": [False, True]}

    go, finish = _together(list(held), lambda w: submit_assignment(w, held[w].pk, _data(labels[w.external_id])))
    go()
    assert finish() == []
    hit = HIT.objects.get(batch_id=campaign.batch_id)
    assert (hit.n_submitted, hit.max_assignments, hit.state) == (2, 3, "open")


def test_follow_ups_of_one_completed_hit_run_at_once_add_one_place(postgres_only, tmp_path, eager_celery):
    campaign = launched_scu_campaign(tmp_path / "c", "Follow-ups", ROWS, presence_judges=Campaign.PresenceJudges.ADAPTIVE)
    presence = TaskType.objects.get(slug="presence")
    for name, labels in (("f1", [True, True]), ("f2", [False, True])):
        worker = Worker.objects.create(external_id=name)
        submit_assignment(worker, accept_next(worker, presence).pk, _data(labels))
    hit = HIT.objects.get(batch_id=campaign.batch_id)
    assert hit.max_assignments == 3
    # As if the follow-ups had not run yet (with a broker they run after the commit, and may run more than once).
    HIT.objects.filter(pk=hit.pk).update(max_assignments=2, state=HIT.State.COMPLETED)

    go, finish = _together(list(range(6)), lambda _: after_presence_hits(campaign.batch_id, [hit.pk]))
    go()
    assert finish() == []
    hit.refresh_from_db()
    assert (hit.max_assignments, hit.state) == (3, "open")
    assert not HIT.objects.filter(batch_id=campaign.batch_id).exclude(pk=hit.pk).exists()


def test_routed_hits_of_a_budgeted_campaign_follow_the_campaign_rule(tmp_path, eager_celery):
    from annotation.services.hybrid import open_routed_hits
    from tests.judges.test_hybrid_campaign import budgeted_campaign

    campaign = budgeted_campaign(tmp_path, presence_judges=Campaign.PresenceJudges.ADAPTIVE)
    launch_campaign(campaign)
    campaign.refresh_from_db()
    posted = HIT.objects.filter(batch=campaign.batch_id, task_type__slug="presence").order_by("pk")
    assert posted.exists() and set(posted.values_list("max_assignments", flat=True)) == {2}
    routed = posted.first()
    n_units = len(routed.payload["units"])
    presence = TaskType.objects.get(slug="presence")
    for name, first in (("r1", True), ("r2", False)):
        worker = Worker.objects.create(external_id=name)
        assignment = accept_next(worker, presence, hit_id=routed.pk)
        labels = [first] + [True] * (n_units - 1)
        submit_assignment(worker, assignment.pk, {presence_field(k): "1" if v else "0" for k, v in enumerate(labels, start=1)})
    routed.refresh_from_db()
    assert (routed.max_assignments, routed.state) == (3, "open")
    campaign.refresh_from_db()
    assert open_routed_hits(campaign) == posted.count()  # the round waits for its third judge too
