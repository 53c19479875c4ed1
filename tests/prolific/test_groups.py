"""Participant groups follow the platform's decisions per campaign: a passed screening test puts the participant
in the campaign's QUALIFIED group of the task type, a researcher's block in its BLOCKED group; another campaign's
groups never change."""

from __future__ import annotations

import pytest

from hits.models import Qualification, TaskType, Worker
from hits.prolific.client import Prolific
from hits.prolific.groups import group_for
from hits.prolific.models import ProlificGroupMember, ProlificParticipantGroup
from hits.qualifications import reinstate, revoke, set_batch_blocked
from tests.prolific.pd_world import make_batch

pytestmark = pytest.mark.django_db
Kind = ProlificParticipantGroup.Kind


def _on_prolific(standin, batch, kind, task_type=None):
    """The group as publishing creates it on Prolific (``hits.prolific.publishing``)."""
    group = group_for(batch, kind, task_type)
    with Prolific() as client:
        made = client.request("POST", "/participant-groups/", json={"name": group.name, "workspace_id": standin.state()["workspace_id"]})
    ProlificParticipantGroup.objects.filter(pk=group.pk).update(prolific_id=made["id"])
    return made["id"]


def _members(standin, group_id):
    return next(g for g in standin.state()["groups"] if g["id"] == group_id)["participant_ids"]


def test_passing_the_screening_test_and_a_block_change_this_campaigns_groups_only(prolific_standin, eager_celery, django_capture_on_commit_callbacks):
    sent = lambda: django_capture_on_commit_callbacks(execute=True)  # noqa: E731 - the calls go after the commit
    batch, other = make_batch(), make_batch()
    task_type = TaskType.objects.get(slug="pd-label")
    qualified = _on_prolific(prolific_standin, batch, Kind.QUALIFIED, task_type)
    blocked = _on_prolific(prolific_standin, batch, Kind.BLOCKED)
    others = _on_prolific(prolific_standin, other, Kind.QUALIFIED, task_type)
    pid = "a" * 24
    worker = Worker.objects.create(external_id="p1", prolific_pid=pid)
    with sent():
        reinstate(worker, task_type, batch, "passed the test")  # as grading a passed test does (state QUALIFIED)
    assert Qualification.objects.get(worker=worker, batch=batch).state == Qualification.State.QUALIFIED
    assert _members(prolific_standin, qualified) == [pid] and _members(prolific_standin, others) == []
    assert ProlificGroupMember.objects.get(group__prolific_id=qualified).added_at is not None
    with sent():
        reinstate(worker, task_type, batch, "again")  # repeat-safe
    assert _members(prolific_standin, qualified) == [pid]
    with sent():
        set_batch_blocked(worker, batch, True, "copied answers")
    assert _members(prolific_standin, blocked) == [pid]
    with sent():
        set_batch_blocked(worker, batch, False)
    with sent():
        revoke(worker, task_type, batch, "quality dropped")
    assert _members(prolific_standin, blocked) == [] and _members(prolific_standin, qualified) == []
    assert not ProlificGroupMember.objects.exists()


def test_a_failed_group_call_waits_for_the_sync(prolific_standin, eager_celery, django_capture_on_commit_callbacks):
    from tests.prolific.pd_world import run_sync

    batch = make_batch()
    blocked = _on_prolific(prolific_standin, batch, Kind.BLOCKED)
    worker = Worker.objects.create(external_id="p2", prolific_pid="b" * 24)
    prolific_standin.control("POST", "/__control/faults/", {"method": "POST", "path": "participant-groups/.*/participants", "kind": "error", "status": 503, "times": 10})
    with django_capture_on_commit_callbacks(execute=True):
        set_batch_blocked(worker, batch, True, "spam")
    prolific_standin.control("DELETE", "/__control/faults/")
    member = ProlificGroupMember.objects.get()
    assert member.added_at is None and member.last_error
    assert run_sync(batch).group_changes == 1 and _members(prolific_standin, blocked) == ["b" * 24]
