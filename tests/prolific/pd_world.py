"""A small Prolific world for the sync, review, bonus, group and reconcile tests: a batch on Prolific with a
study published on the stand-in, participants who start it there, and their HITs here."""

from __future__ import annotations

import secrets
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from hits.handlers import register_task_handler
from hits.models import HIT, Assignment, Batch, TaskType, Worker
from hits.prolific import sync
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificSession, ProlificStudy

REWARD = Decimal("0.50")


class QuietHandler:
    """A task type handler that checks nothing (the tests here are about money and Prolific, not answers)."""

    template_name = ""

    def on_submitted(self, assignment):
        pass

    def grade_qualification(self, assignments):
        from hits.qualifications import TestGrade

        return TestGrade(score=1.0, passed=True)


def make_batch(slug="pd-label", reference=None) -> Batch:
    register_task_handler(slug, QuietHandler())  # a slug of its own: no other test sees this handler
    task_type, _ = TaskType.objects.get_or_create(slug=slug, defaults={"name": slug.title(), "assignment_duration": 600})
    batch = Batch.objects.create(name=f"batch {slug}", reference=reference or f"test:{secrets.token_hex(4)}",
                                 backend=Batch.Backend.PROLIFIC)
    batch.task_type = task_type
    return batch


def publish_study(standin, batch: Batch, places=5, kind=ProlificStudy.Kind.MAIN, reward=REWARD,
                  hits_per_submission=1) -> ProlificStudy:
    """A study created and published on the stand-in (pb's publishing does this in the product); by default its
    reward is one HIT's (sessions of one HIT)."""
    code = secrets.token_hex(4).upper()
    with Prolific() as client:
        created = client.request("POST", "/studies/", json={
            "name": "Label things", "internal_name": f"qapyr-{batch.key}-{kind}", "description": "Label things.",
            "external_study_url": "https://platform.example/prolific/start/", "estimated_completion_time": 4,
            "reward": int(reward * 100), "total_available_places": places,
            "completion_codes": [{"code": code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        })
        client.request("POST", f"/studies/{created['id']}/transition/", json={"action": "PUBLISH"}, safe=True)
    return ProlificStudy.objects.create(
        batch=batch, task_type=batch.task_type, kind=kind, internal_name=f"qapyr-{batch.key}-{kind}",
        prolific_id=created["id"], completion_code=code, status="ACTIVE", reward=reward, places=places,
        hits_per_submission=hits_per_submission,
    )


def start(standin, study: ProlificStudy, participant_id=None) -> ProlificSession:
    """A participant takes part on Prolific and arrives here (pc's start page does the arrival)."""
    body = {"study_id": study.prolific_id, **({"participant_id": participant_id} if participant_id else {})}
    started = standin.control("POST", "/__control/participants/", body)
    worker, _ = Worker.objects.get_or_create(prolific_pid=started["participant_id"], defaults={"external_id": f"prolific:{started['participant_id']}"})
    return ProlificSession.objects.create(study=study, participant_id=started["participant_id"],
                                          session_id=started["session_id"], worker=worker)


def forged(study: ProlificStudy, session_id=None) -> ProlificSession:
    pid = secrets.token_hex(12)
    worker = Worker.objects.create(external_id=f"prolific:{pid}", prolific_pid=pid)
    return ProlificSession.objects.create(study=study, participant_id=pid, session_id=session_id or secrets.token_hex(12), worker=worker)


def do_hits(session: ProlificSession, n: int, state=Assignment.State.PENDING, kind=HIT.Kind.REGULAR) -> list[Assignment]:
    """The participant's n HITs, stored (pending until the sync confirms the session)."""
    now = timezone.now()
    done = []
    for _ in range(n):
        hit = HIT.objects.create(batch=session.study.batch, task_type=session.study.task_type, payload={"n": 1},
                                 max_assignments=1, reward=REWARD, n_taken=1, kind=kind)
        done.append(Assignment.objects.create(
            hit=hit, worker=session.worker, state=state, accepted_at=now - timedelta(minutes=3),
            expires_at=now + timedelta(minutes=7), submitted_at=now, answers={"ok": True},
        ))
    return done


def complete(standin, session: ProlificSession) -> None:
    """The participant is sent back with the completion code (the session's end on the platform's pages)."""
    standin.control("POST", f"/__control/submissions/{session.session_id}/complete/", {"code": session.study.completion_code})
    ProlificSession.objects.filter(pk=session.pk).update(state=ProlificSession.State.COMPLETED, finished_at=timezone.now())


def run_sync(batch, **kwargs):
    with Prolific() as client:
        return sync.sync_batch(batch, client, **kwargs)


def paid_to(standin, participant_id) -> dict:
    """Cents the stand-in paid the participant: {"rewards", "bonuses"}."""
    return standin.state()["paid"].get(participant_id, {"rewards": 0, "bonuses": 0})


def submission(standin, session_id) -> dict:
    return next(s for s in standin.state()["submissions"] if s["id"] == session_id)


def approve_all(work) -> None:
    from hits import payments

    for assignment in Assignment.objects.filter(pk__in=[a.pk for a in work]):
        payments.approve_assignment(assignment, settle=False)


@pytest.fixture
def world(prolific_standin, settings):
    """The stand-in, a Prolific batch and its published study; no HIT approved by the delay unless a test says so."""
    settings.PROLIFIC_APPROVE_AFTER_HOURS = 1000
    batch = make_batch()
    return prolific_standin, batch, publish_study(prolific_standin, batch)


def finished_session(standin, study, n):
    """A participant who did n HITs and came back to Prolific with the completion code."""
    session = start(standin, study)
    work = do_hits(session, n)
    complete(standin, session)
    return session, work
