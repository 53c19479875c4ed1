"""The review page of a Prolific campaign: Prolific's rejection rules shown, and a rejection refused (with what is
missing) unless it has a category and a message as long as Prolific requires."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.services.pipeline import launch_campaign
from hits.models import HIT, Assignment, Batch, Worker
from hits.prolific.models import ProlificSession, ProlificStudy

pytestmark = pytest.mark.django_db
WHY = "The answers were copied from the example on every question, which the instructions say not to do. " * 2


@pytest.fixture
def prolific_work(draft):
    launch_campaign(draft)
    draft.refresh_from_db()
    Batch.objects.filter(pk=draft.batch_id).update(backend=Batch.Backend.PROLIFIC)
    hit = HIT.objects.filter(batch_id=draft.batch_id).order_by("pk").first()
    worker = Worker.objects.create(external_id="prolific:p", prolific_pid="c" * 24)
    study = ProlificStudy.objects.create(batch_id=draft.batch_id, task_type=hit.task_type, internal_name="s",
                                         prolific_id="d" * 24, completion_code="C")
    session = ProlificSession.objects.create(study=study, participant_id="c" * 24, session_id="e" * 24, worker=worker)
    now = timezone.now()
    work = Assignment.objects.create(hit=hit, worker=worker, state="submitted", accepted_at=now, expires_at=now,
                                     submitted_at=now, answers={})
    return draft, session, work


def test_the_review_page_explains_prolifics_rules_and_offers_its_categories(client_rita, prolific_work):
    draft, _, _ = prolific_work
    page = client_rita.get(f"/campaigns/{draft.slug}/review/").content.decode()
    assert 'id="prolific-rejection-rules"' in page and "3 standard deviations" in page
    assert '<option value="FAILED_INSTRUCTIONS">' in page


@pytest.mark.parametrize("body,complaint", [
    ({"message": WHY}, "Prolific needs a rejection category"),
    ({"message": "Sloppy.", "rejection_category": "LOW_EFFORT"}, "at least 100 characters"),
])
def test_a_rejection_prolific_would_refuse_is_refused_here(client_rita, prolific_work, body, complaint):
    draft, _, work = prolific_work
    url = f"/campaigns/{draft.slug}/review/assignments/{work.pk}/"
    page = client_rita.post(url, {"action": "reject", **body}, follow=True).content.decode()
    assert complaint in page and Assignment.objects.get(pk=work.pk).state == "submitted"
    bulk = client_rita.post(f"/campaigns/{draft.slug}/review/bulk/", {"action": "reject", **body}, follow=True).content.decode()
    assert complaint in bulk


def test_a_complete_rejection_keeps_the_category_for_the_submission(client_rita, prolific_work):
    draft, session, work = prolific_work
    url = f"/campaigns/{draft.slug}/review/assignments/{work.pk}/"
    client_rita.post(url, {"action": "reject", "message": WHY, "rejection_category": "FAILED_INSTRUCTIONS"})
    assert Assignment.objects.get(pk=work.pk).state == "rejected"
    assert ProlificSession.objects.get(pk=session.pk).rejection_category == "FAILED_INSTRUCTIONS"
