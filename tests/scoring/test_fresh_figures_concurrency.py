"""Issue 49, bad input: a recomputation and a worker's exclusion while HITs are being submitted (PostgreSQL, real
threads, one database connection each).  Nothing is lost (every judgment stored, every completed HIT's units
labelled) and no figure is left stale: once the follow-ups have run, every view equals a full rebuild."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test import Client

from annotation.models import GoldPresence, PresenceJudgment
from annotation.services.quality import exclude_worker
from annotation.services.roles import make_researcher
from annotation.services.scores import recompute_gold
from annotation.web.hit_pages import presence_field
from hits.models import HIT, Assignment, TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.concurrently import at_once
from tests.scoring.test_fresh_figures import WORKERS, same, study, views

pytestmark = pytest.mark.django_db(transaction=True)


def judge(name: str, seed: int, rounds: int):
    """A worker taking and submitting presence HITs one after the other; returns how many judgments it stored."""

    def work():
        rng = random.Random(seed)
        worker = Worker.objects.get_or_create(external_id=name)[0]
        presence = TaskType.objects.get(slug="presence")
        stored = 0
        for _ in range(rounds):
            assignment = accept_next(worker, presence)
            if assignment is None:
                break
            n = len(assignment.hit.payload["units"])
            submit_assignment(worker, assignment.pk, {presence_field(k): rng.choice("01") for k in range(1, n + 1)})
            stored += n
        return stored

    return work


def test_a_recompute_and_an_exclusion_while_hits_are_submitted_lose_nothing_and_leave_nothing_stale(
        tmp_path, django_user_model, eager_celery):
    if connection.vendor != "postgresql":
        pytest.skip("row locks across connections are exercised on PostgreSQL")
    owner = django_user_model.objects.create_user("rita", password="a-long-test-password")
    make_researcher(owner)
    campaign = study(tmp_path / "data", owner)
    # A first round of work, so that the exclusion has judgments to take out.
    at_once([judge(name, k, 2) for k, name in enumerate(WORKERS[:3])])
    first = Worker.objects.get(external_id=WORKERS[0])

    def recompute():
        for _ in range(3):
            recompute_gold(campaign)
        return "recomputed"

    results = at_once([judge(name, 10 + k, 4) for k, name in enumerate(WORKERS)]
                      + [recompute, lambda: exclude_worker(campaign, first, replace=False)])
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == [], [str(e) for e in errors]
    submitted = sum(results[:len(WORKERS)])
    # Nothing lost: every judgment submitted is stored, every completed HIT's units have the crowd's label.
    assert PresenceJudgment.objects.filter(summary__system__campaign=campaign).count() >= submitted > 0
    completed = HIT.objects.filter(batch_id=campaign.batch_id, state=HIT.State.COMPLETED, kind=HIT.Kind.REGULAR,
                                   task_type__slug="presence")
    for hit in completed:
        labelled = set(GoldPresence.objects.filter(summary_id=hit.payload["summary"], origin="majority")
                       .values_list("unit_id", flat=True))
        assert labelled == set(hit.payload["units"]), hit.pk
    assert Assignment.objects.filter(hit__batch_id=campaign.batch_id, state__in=Assignment.DONE_STATES).exists()
    # Nothing stale: the views equal a full rebuild.
    client = Client()
    client.force_login(owner)
    shown = views(client, campaign, tmp_path / "export")
    recompute_gold(campaign)
    assert same(shown, views(client, campaign, tmp_path / "export")) == []
