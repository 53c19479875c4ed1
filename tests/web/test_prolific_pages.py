"""A Prolific campaign's pages: the review page shows Prolific's rejection rules and refuses a rejection (with what is
missing) unless it has a category and a message as long as Prolific requires; the payout page shows Prolific and the
bulk bonuses to check."""

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


def test_the_payout_page_shows_prolific_and_the_bulk_bonuses_to_check(client_rita, prolific_work):
    from decimal import Decimal

    from hits.prolific.bonuses import FLAG
    from hits.prolific.models import ProlificBonus

    draft, session, _ = prolific_work
    ProlificBonus.objects.create(
        batch_id=draft.batch_id, study=session.study, csv_bonuses=f"{session.participant_id},0.50", amount=Decimal("0.50"),
        state=ProlificBonus.State.UNKNOWN, prolific_id="f" * 24, last_error=f"{FLAG}: the pay call of bulk bonus {'f' * 24} was lost",
    )
    page = client_rita.get(f"/campaigns/{draft.slug}/payouts/").content.decode()
    assert 'id="prolific-pays"' in page and "Prolific fees" in page and 'id="mark-paid"' not in page
    assert 'id="flagged-bonuses"' in page and f"bulk bonus {'f' * 24}" in page
    assert "Reconciliation with Prolific" in page and "prolific_reconcile --campaign" in page


def test_the_examples_review_offers_prolifics_categories_beside_each_submitted_hit(client_rita, prolific_work):
    from annotation.models import Example

    draft, _, work = prolific_work
    example = Example.objects.filter(campaign=draft).order_by("position").first()
    page = client_rita.get(f"/campaigns/{draft.slug}/review/{example.pk}/").content.decode()
    assert 'id="prolific-rejection-rules"' in page and f'data-assignment="{work.pk}"' in page
    assert 'name="rejection_category"' in page


def test_a_bulk_rejection_carries_the_category_through_its_confirmation(client_rita, prolific_work):
    draft, session, work = prolific_work
    url = f"/campaigns/{draft.slug}/review/bulk/"
    body = {"action": "reject", "message": WHY, "rejection_category": "LOW_EFFORT"}
    page = client_rita.post(url, body).content.decode()
    assert 'name="rejection_category" value="LOW_EFFORT"' in page
    client_rita.post(url, {**body, "confirmed": "1", "ids": [str(work.pk)]})
    assert Assignment.objects.get(pk=work.pk).state == "rejected"
    assert ProlificSession.objects.get(pk=session.pk).rejection_category == "LOW_EFFORT"


def test_the_payout_page_shows_submissions_with_no_work_here(client_rita, prolific_work):
    from hits.prolific.models import ProlificStranger

    draft, session, _ = prolific_work
    ProlificStranger.objects.create(study=session.study, submission_id="f" * 24, participant_id="a" * 24,
                                    market_status="REJECTED", first_seen_at=timezone.now(), rejected_at=timezone.now())
    page = client_rita.get(f"/campaigns/{draft.slug}/payouts/").content.decode()
    assert 'id="prolific-strangers"' in page and f'data-submission="{"f" * 24}"' in page and "a" * 24 in page
