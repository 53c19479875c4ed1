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
