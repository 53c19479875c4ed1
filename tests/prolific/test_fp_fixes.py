"""Reviewer's findings on the Prolific backend (task fp): submissions with no session here are rejected, study
transitions are retried and a finished campaign stops its studies, a discarded session does not lock out the
real participant, the MTurk sync leaves Prolific batches alone, and the dry run's bodies are the real ones."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from hits.prolific.models import ProlificSession, ProlificStranger
from hits.prolific.sync import STRANGER_CATEGORY, STRANGER_MESSAGE
from tests.prolific.pd_world import finished_session, run_sync, submission, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def test_a_submission_with_no_session_here_is_rejected_after_the_grace(world, settings):
    standin, batch, study = world
    settings.PROLIFIC_CONFIRM_GRACE = 600
    ours, _ = finished_session(standin, study, 1)
    # A participant who got the code elsewhere: starts on Prolific and submits it without opening our pages.
    leaked = standin.control("POST", "/__control/participants/", {"study_id": study.prolific_id})
    run_sync(batch)
    assert not ProlificStranger.objects.exists()  # ACTIVE: may be on the way to the study URL
    standin.control("POST", f"/__control/submissions/{leaked['session_id']}/complete/", {"code": study.completion_code})
    run_sync(batch)
    stranger = ProlificStranger.objects.get()
    assert (stranger.submission_id, stranger.participant_id, stranger.market_status) == (
        leaked["session_id"], leaked["participant_id"], "AWAITING REVIEW")
    assert stranger.rejected_at is None and submission(standin, leaked["session_id"])["status"] == "AWAITING REVIEW"
    report = run_sync(batch, now=timezone.now() + timedelta(seconds=601))
    rejected = submission(standin, leaked["session_id"])
    assert rejected["status"] == "REJECTED" and report.rejected >= 1
    stranger.refresh_from_db()
    assert stranger.rejected_at is not None and stranger.market_status == "REJECTED"
    assert len(STRANGER_MESSAGE) >= 100 and STRANGER_CATEGORY == "NO_DATA"
    # Our own participant's submission is not touched by it, and is known as a session, not a stranger.
    assert submission(standin, ours.session_id)["status"] == "AWAITING REVIEW"
    assert ProlificStranger.objects.count() == 1 and ProlificSession.objects.count() == 1
    run_sync(batch, now=timezone.now() + timedelta(seconds=1200))  # repeat-safe: listed REJECTED, nothing sent
    assert ProlificStranger.objects.get().rejected_at == stranger.rejected_at


def _published(study):
    from hits.prolific.models import ProlificStudy

    ProlificStudy.objects.filter(pk=study.pk).update(published_at=timezone.now())


def _market_status(standin, study) -> str:
    return next(s for s in standin.state()["studies"] if s["id"] == study.prolific_id)["status"]


def test_a_pause_that_failed_is_sent_by_the_next_sync(world, settings):
    from hits.models import Batch
    from hits.prolific.client import Prolific
    from hits.prolific.studies import follow_batch_state

    standin, batch, study = world
    _published(study)
    settings.PROLIFIC_MAX_RETRIES = 0
    Batch.objects.filter(pk=batch.pk).update(state=Batch.State.PAUSED)
    batch.refresh_from_db()
    standin.control("POST", "/__control/faults/", {"method": "POST", "path": "/transition/$", "kind": "error",
                                                   "status": 503, "times": 1})
    with Prolific() as client:
        errors = follow_batch_state(batch, client)
    assert len(errors) == 1 and "PAUSE failed" in errors[0] and _market_status(standin, study) == "ACTIVE"
    run_sync(batch)
    assert _market_status(standin, study) == "PAUSED"


def test_a_campaign_that_finishes_stops_its_studies(prolific_standin, tmp_path, django_capture_on_commit_callbacks):
    from decimal import Decimal

    from annotation.models import Campaign
    from annotation.services.pipeline import finish_campaign_if_done
    from hits.models import HIT, TaskType
    from tests.conftest import launched_scu_campaign
    from tests.prolific.pd_world import publish_study

    rows = [("e0", "Reference says a thing .", "Summary .", ["fact a", "fact b"])]
    campaign = launched_scu_campaign(tmp_path / "fin", "fin", rows, backend="prolific", gold_share=0.0,
                                      reward_presence=Decimal("0.30"))
    batch = campaign.batch
    batch.task_type = TaskType.objects.get(slug="presence")
    study = publish_study(prolific_standin, batch)
    _published(study)
    HIT.objects.filter(batch_id=batch.pk).update(state="completed")
    with django_capture_on_commit_callbacks(execute=True):
        assert finish_campaign_if_done(Campaign.objects.get(pk=campaign.pk))
    assert _market_status(prolific_standin, study) in ("AWAITING REVIEW", "COMPLETED")


def test_the_periodic_mturk_sync_leaves_prolific_batches_alone(monkeypatch):
    from hits.models import Batch
    from hits.mturk import sync as mturk_sync
    from hits.mturk.tasks import sync_all_task
    from tests.prolific.pd_world import make_batch

    prolific = make_batch()
    mturk = Batch.objects.create(name="on mturk", reference="test:mturk", backend=Batch.Backend.MTURK_SANDBOX)
    synced = []

    class Report:
        def as_dict(self):
            return {}

    monkeypatch.setattr(mturk_sync, "sync_batch", lambda batch: synced.append(batch.pk) or Report())
    assert prolific.state == Batch.State.ACTIVE
    sync_all_task()
    assert synced == [mturk.pk]
