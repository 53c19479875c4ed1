"""The Prolific sync over HTTP against the stand-in: sessions confirmed, discarded, ended; study status mirrored;
a failing study not stopping the others; the command and the periodic task."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from hits.models import Assignment, Batch
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificSession, ProlificStudy
from tests.prolific.pd_world import complete, do_hits, forged, make_batch, publish_study, run_sync, start

pytestmark = pytest.mark.django_db


def test_a_listed_session_is_confirmed_and_its_work_counts(prolific_standin):
    batch = make_batch()
    study = publish_study(prolific_standin, batch)
    session = start(prolific_standin, study)
    work = do_hits(session, 2)
    report = run_sync(batch)
    session.refresh_from_db()
    assert report.confirmed == 1 and session.confirmed_at is not None and session.market_status == "ACTIVE"
    assert {a.state for a in Assignment.objects.filter(pk__in=[a.pk for a in work])} == {Assignment.State.SUBMITTED}
    assert run_sync(batch).confirmed == 0  # repeat-safe


def test_made_up_ids_are_discarded_after_the_grace_only(prolific_standin, settings):
    settings.PROLIFIC_CONFIRM_GRACE = 600
    batch = make_batch()
    study = publish_study(prolific_standin, batch)
    fake = forged(study)
    work = do_hits(fake, 1)
    assert run_sync(batch).discarded == 0  # still within the grace: Prolific may not list it yet
    report = run_sync(batch, now=timezone.now() + timedelta(seconds=601))
    fake.refresh_from_db()
    assert report.discarded == 1 and fake.state == ProlificSession.State.DISCARDED
    assert Assignment.objects.get(pk=work[0].pk).state == Assignment.State.DISCARDED


def test_a_session_id_listed_for_another_participant_is_discarded_at_once(prolific_standin):
    batch = make_batch()
    study = publish_study(prolific_standin, batch)
    real = start(prolific_standin, study)
    ProlificSession.objects.filter(pk=real.pk).update(session_id="x" + real.session_id)  # keep its id free
    thief = forged(study, session_id=real.session_id)
    do_hits(thief, 1)
    report = run_sync(batch)
    thief.refresh_from_db()
    assert report.discarded == 1 and thief.state == ProlificSession.State.DISCARDED and thief.confirmed_at is None


@pytest.mark.parametrize("action,state", [("return", ProlificSession.State.RETURNED), ("timeout", ProlificSession.State.TIMED_OUT)])
def test_returned_and_timed_out_sessions_are_ended(prolific_standin, action, state):
    batch = make_batch()
    study = publish_study(prolific_standin, batch)
    session = start(prolific_standin, study)
    do_hits(session, 1)
    prolific_standin.control("POST", f"/__control/submissions/{session.session_id}/{action}/")
    report = run_sync(batch)
    session.refresh_from_db()
    assert report.ended == 1 and session.state == state and session.confirmed_at is not None
    assert run_sync(batch).ended == 0


def test_study_status_is_mirrored_and_one_failing_study_does_not_stop_another(prolific_standin):
    batch = make_batch()
    good = publish_study(prolific_standin, batch)
    broken = ProlificStudy.objects.create(batch=batch, task_type=batch.task_type, kind=ProlificStudy.Kind.SCREENING,
                                          internal_name="gone", prolific_id="0" * 24, completion_code="X")
    session = start(prolific_standin, good)
    do_hits(session, 1)
    with Prolific() as client:  # the researcher paused it on Prolific
        client.request("POST", f"/studies/{good.prolific_id}/transition/", json={"action": "PAUSE"}, safe=True)
    report = run_sync(batch)
    good.refresh_from_db()
    broken.refresh_from_db()
    assert good.status == "PAUSED" and report.confirmed == 1
    assert report.failed == 1 and any(broken.prolific_id in e for e in report.errors) and broken.last_error


def test_prolific_sync_command(prolific_standin, capsys):
    from annotation.models import Campaign

    batch = make_batch()
    study = publish_study(prolific_standin, batch)
    session = start(prolific_standin, study)
    do_hits(session, 1)
    campaign = Campaign.objects.create(name="P", slug="p-sync", batch=batch, backend=Campaign.Backend.PROLIFIC)
    call_command("prolific_sync", "--campaign", campaign.slug, "--format", "json")
    figures = json.loads(capsys.readouterr().out)
    assert figures["confirmed"] == 1 and figures["studies"] == 1
    local = Campaign.objects.create(name="L", slug="l-sync", batch=Batch.objects.create(name="l", reference="l:1"))
    with pytest.raises(CommandError, match="no studies on Prolific"):
        call_command("prolific_sync", "--campaign", local.slug)


def test_the_periodic_task_syncs_running_prolific_batches_only(prolific_standin, settings):
    from hits.prolific.tasks import sync_all_task

    assert settings.CELERY_BEAT_SCHEDULE["prolific-sync"]["task"] == "hits.prolific.sync_all"
    batch = make_batch()
    study = publish_study(prolific_standin, batch)
    session = start(prolific_standin, study)
    do_hits(session, 1)
    finished = make_batch()
    Batch.objects.filter(pk=finished.pk).update(state=Batch.State.FINISHED)
    reviewing = make_batch("pd-label-2")  # finished, with a submission still to decide
    waiting = start(prolific_standin, publish_study(prolific_standin, reviewing))
    complete(prolific_standin, waiting)
    Batch.objects.filter(pk=reviewing.pk).update(state=Batch.State.FINISHED)
    local = Batch.objects.create(name="local", reference="local:9")
    done = sync_all_task()
    assert set(done) == {batch.pk, reviewing.pk} and done[batch.pk]["confirmed"] == 1
    assert local.pk not in done
