"""Issue 30, items 2-5: MTurk refusing, deleting, paying on its own and refusing characters, each kept to itself."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from hits.models import HIT, Assignment, Batch, LedgerEntry, TaskType, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT, MTurkUnknownSubmission
from hits.mturk.publishing import publish_batch, request_token
from hits.mturk.sync import notify_workers, settle_batch, sync_batch
from hits.mturk.text import mturk_safe_text
from hits.payments import pay_bonus, reject_assignment
from tests.mturk.conftest import assignments_listing as _listing, make_hit, published_on_mturk as _published, submitted_assignment
from tests.mturk.conftest import submitted_on_mturk
from tests.mturk.test_publishing import created, expected_create, public_url  # noqa: F401 - same settings

pytestmark = pytest.mark.django_db

STATUSES = ["Submitted", "Approved", "Rejected"]
CONTROL = "".join(chr(c) for c in [*range(0, 9), 11, 12, *range(14, 32)])


def _on_mturk(published: MTurkHIT, n: int, first: int = 1) -> list[Assignment]:
    return submitted_on_mturk(published, n, first, prefix="AW")


# --- 5. characters MTurk refuses -------------------------------------------------------------------


def test_mturk_safe_text_removes_exactly_the_refused_control_characters():
    assert mturk_safe_text(f"Good{CONTROL} work\tand\r\nthanks") == "Good work\tand\r\nthanks"
    assert mturk_safe_text("a\x00" * 10, limit=5) == "aaaaa"  # cut after cleaning


def test_feedback_and_bonus_reasons_reach_mturk_without_control_characters(stubbed, mturk_batch, task_type):
    published = _published(mturk_batch, task_type, "HIT1")
    first, second = _on_mturk(published, 2)
    MTurkAssignment.objects.update(status=MTurkAssignment.Status.SUBMITTED)
    reject_assignment(first, "Copied\x0b answers\x1b[0m", settle=False)
    entry = pay_bonus(second, Decimal("0.10"), "Careful\x07 work")
    LedgerEntry.objects.filter(pk=entry.pk).update(state=LedgerEntry.State.PENDING)
    stubbed.add_response("reject_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Copied answers[0m"})
    stubbed.add_response("send_bonus", {}, {
        "WorkerId": "AW2", "BonusAmount": "0.10", "AssignmentId": "A2", "Reason": "Careful work",
        "UniqueRequestToken": entry.request_token,
    })
    report = settle_batch(mturk_batch)
    assert report.rejected == 1 and report.bonuses == 1 and not report.errors


def test_notify_workers_sends_clean_text_and_a_failing_call_of_100_stops_only_itself(stubbed, mturk_batch, task_type, settings):
    settings.MTURK_MAX_RETRIES = 0
    published = _published(mturk_batch, task_type, "HIT1", max_assignments=250)
    for i in range(1, 251):
        worker = Worker.objects.create(external_id=f"mturk:AW{i:03d}", mturk_worker_id=f"AW{i:03d}")
        assignment = submitted_assignment(published.hit, worker)
        MTurkAssignment.objects.create(mturk_assignment_id=f"A{i}", mturk_hit=published, assignment=assignment,
                                       mturk_worker_id=f"AW{i:03d}", submit_to="https://workersandbox.mturk.com")
    ids = [f"AW{i:03d}" for i in range(1, 251)]
    call = {"Subject": "New HITs", "MessageText": "More are up.\nThanks."}
    stubbed.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []}, {**call, "WorkerIds": ids[:100]})
    for _ in range(2):  # the second call of 100 fails, and again when tried on its own
        stubbed.add_client_error("notify_workers", service_error_code="ServiceFault", service_message="boom", http_status_code=500,
                                 expected_params={**call, "WorkerIds": ids[100:200]})
    stubbed.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []}, {**call, "WorkerIds": ids[200:]})
    result = notify_workers(mturk_batch, "New\x00 HITs", "More are up.\x1f\nThanks.")
    assert (result.sent, result.reached, result.failed_calls) == (250, 150, 1)
    assert {f["worker"] for f in result.failures} == set(ids[100:200]) and result.failures[0]["code"] == "ServiceFault"


def test_a_notify_call_that_fails_once_is_tried_again_on_its_own(stubbed, mturk_batch, task_type, settings):
    settings.MTURK_MAX_RETRIES = 0
    _on_mturk(_published(mturk_batch, task_type, "HIT1"), 2)
    call = {"Subject": "S", "MessageText": "M", "WorkerIds": ["AW1", "AW2"]}
    stubbed.add_client_error("notify_workers", service_error_code="ServiceFault", service_message="boom", http_status_code=500,
                             expected_params=call)
    stubbed.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []}, call)
    result = notify_workers(mturk_batch, "S", "M")
    assert (result.reached, result.failures, result.failed_calls) == (2, [], 0)


# --- 3. one refused HIT stops only itself -------------------------------------------------------------


def _refused_create(stub, hit, message="Value of AssignmentDurationInSeconds is out of range"):
    stub.add_client_error("create_hit", service_error_code="RequestError", service_message=message, http_status_code=400,
                          expected_params=expected_create(hit))


def test_a_create_hit_refused_for_good_stops_only_its_hit(stubbed, mturk_batch, task_type):
    hits = [make_hit(mturk_batch, task_type) for _ in range(6)]
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    for number, hit in enumerate(hits, start=1):
        if number == 2:
            _refused_create(stubbed, hit)
        else:
            stubbed.add_response("create_hit", created(f"AAA{number}"), expected_create(hit))
    report = publish_batch(mturk_batch)
    assert report.published == 5 and [r["hit"] for r in report.refused] == [hits[1].pk]
    assert MTurkHIT.objects.count() == 5 and not MTurkHIT.objects.filter(hit=hits[1]).exists()
    hits[1].refresh_from_db()
    assert "RequestError" in hits[1].publish_error and "AssignmentDurationInSeconds" in hits[1].publish_error
    # The next publish does not send it again blind (the Stubber would fail on any call).
    assert publish_batch(mturk_batch).published == 0


def test_the_progress_page_shows_the_refusal_and_a_retry_publishes_it(stubbed, mturk_campaign, django_capture_on_commit_callbacks):
    campaign, batch, client = mturk_campaign
    kind = TaskType.objects.create(slug="t", name="Label it", description="Label one thing.", keywords="label, test", assignment_duration=600)
    first, second = make_hit(batch, kind), make_hit(batch, kind)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA1"), expected_create(first))
    _refused_create(stubbed, second, "Reward is not valid")
    assert publish_batch(batch).published == 1

    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "Refused by MTurk (1)" in page and f"HIT {second.pk}: MTurk CreateHIT failed: RequestError: Reward is not valid" in page
    assert f'action="/campaigns/{campaign.slug}/mturk/retry/"' in page
    api = client.get(f"/api/campaigns/{campaign.slug}/progress/").json()
    assert api["mturk"]["refused_hits"][0]["hit"] == second.pk

    # Retry: the error is cleared and the HIT is published (the follow-up publish runs after the commit).
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA2"), expected_create(second))
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/campaigns/{campaign.slug}/mturk/retry/", {"hit": str(second.pk)})
    assert answer.status_code == 302
    second.refresh_from_db()
    assert second.publish_error == "" and MTurkHIT.objects.get(hit=second).mturk_hit_id == "AAA2"
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "Refused by MTurk" not in page


# --- 2. overrides only while MTurk can make them --------------------------------------------------------


@pytest.fixture
def mturk_campaign(small_files, django_user_model):
    """A researcher's campaign running on the MTurk sandbox, its batch active and without HITs of its own."""
    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import ensure_batch
    from annotation.services.roles import make_researcher

    rita = django_user_model.objects.create_user("rita", password="pw-rita-123456")
    make_researcher(rita)
    refs, sums = small_files
    campaign = import_campaign(name="On MTurk", references=refs, summaries=sums, owner=rita).campaign
    batch = ensure_batch(campaign)
    Batch.objects.filter(pk=batch.pk).update(backend=Batch.Backend.MTURK_SANDBOX, state=Batch.State.ACTIVE)
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX)
    batch.refresh_from_db()
    HIT.objects.filter(batch=batch).delete()
    client = Client()
    client.force_login(rita)
    return campaign, batch, client


def _rejected_on_mturk(published: MTurkHIT, days_ago: float) -> Assignment:
    (work,) = _on_mturk(published, 1)
    Assignment.objects.filter(pk=work.pk).update(submitted_at=timezone.now() - timedelta(days=days_ago))
    reject_assignment(work, "Wrong answers.", settle=False)
    MTurkAssignment.objects.filter(assignment=work).update(status=MTurkAssignment.Status.REJECTED)
    HIT.objects.filter(pk=published.hit_id).update(state=HIT.State.COMPLETED)
    return Assignment.objects.get(pk=work.pk)


def test_a_hit_with_a_rejection_is_deleted_only_after_the_30_day_override_window(stubbed, mturk_batch, task_type):
    from hits.mturk.sync import expire_batch

    published = _published(mturk_batch, task_type, "HIT1")
    work = _rejected_on_mturk(published, days_ago=2)
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.FINISHED)
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": sync_past_expiry(1)})
    report = expire_batch(mturk_batch)
    assert (report.expired, report.deleted) == (1, 0)  # expired, kept: the rejection may still be overridden
    assert expire_batch(mturk_batch).deleted == 0  # and still on the next run (no DeleteHIT: the Stubber would fail)

    # 30 days after the submission MTurk can no longer override it: the HIT is deleted.
    Assignment.objects.filter(pk=work.pk).update(submitted_at=timezone.now() - timedelta(days=30, minutes=1))
    stubbed.add_response("delete_hit", {}, {"HITId": "HIT1"})
    assert expire_batch(mturk_batch).deleted == 1
    assert MTurkHIT.objects.get(pk=published.pk).deleted_at is not None


def sync_past_expiry(n):
    from hits.mturk.sync import past_expiry

    return past_expiry(n)


def test_an_override_after_mturk_deleted_the_hit_is_refused_at_once_on_the_page_and_the_api(mturk_campaign):
    campaign, batch, client = mturk_campaign
    kind = TaskType.objects.create(slug="t", name="T")
    published = _published(batch, kind, "HIT1")
    work = _rejected_on_mturk(published, days_ago=3)
    MTurkHIT.objects.filter(pk=published.pk).update(deleted_at=timezone.now())

    answer = client.post(f"/campaigns/{campaign.slug}/review/assignments/{work.pk}/", {"action": "approve", "message": "Sorry."}, follow=True)
    assert "MTurk no longer has this assignment&#x27;s HIT (deleted)" in answer.content.decode()
    api = client.post(f"/api/campaigns/{campaign.slug}/assignments/{work.pk}/approve/", {"message": "Sorry."})
    assert api.status_code == 409 and "only while the HIT exists" in api.json()["detail"]
    work.refresh_from_db()
    assert work.state == Assignment.State.REJECTED and not LedgerEntry.objects.exists()  # nothing pending


def test_an_override_waiting_when_mturk_deleted_the_hit_is_withdrawn_not_left_pending(stubbed, mturk_batch, task_type):
    from hits.payments import approve_assignment

    published = _published(mturk_batch, task_type, "HIT1")
    work = _rejected_on_mturk(published, days_ago=3)
    approve_assignment(work, "Our mistake.", settle=False)  # asked while the HIT existed
    assert LedgerEntry.objects.filter(state=LedgerEntry.State.PENDING).count() == 2
    stubbed.add_client_error("approve_assignment", service_error_code="RequestError", http_status_code=400,
                             service_message="Assignment A1 does not exist. (1700000000000)",
                             modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.AssignmentDoesNotExist"},
                             expected_params={"AssignmentId": "A1", "RequesterFeedback": "Our mistake.", "OverrideRejection": True})
    report = settle_batch(mturk_batch)
    work.refresh_from_db()
    assert work.state == Assignment.State.REJECTED and not LedgerEntry.objects.exists()
    assert any("withdrawn" in e for e in report.errors)
    settle_batch(mturk_batch)  # nothing left to send: no call (the Stubber would fail)


# --- 4. everything MTurk paid is in the ledger -----------------------------------------------------------


def _booked(assignment_ids=None):
    entries = LedgerEntry.objects.all() if assignment_ids is None else LedgerEntry.objects.filter(assignment_id__in=assignment_ids)
    return sorted((e.kind, str(e.amount), e.state, e.paid_by_mturk) for e in entries)


def test_a_submission_never_seen_that_mturk_approved_is_booked_once_and_flagged(stubbed, mturk_campaign):
    campaign, batch, client = mturk_campaign
    published = _published(batch, TaskType.objects.create(slug="t", name="T"), "HIT1")
    for _ in range(2):  # the second sync books nothing more
        _listing(stubbed, "HIT1", [("DIRECT1", "AWORKER9", "Approved")])
        report = sync_batch(batch)
        assert report.unknown == 1 and not report.errors
    assert _booked() == [("fee", "0.04", "paid", True), ("reward", "0.20", "paid", True)]
    entry = LedgerEntry.objects.get(kind="reward")
    assert entry.worker.mturk_worker_id == "AWORKER9" and entry.assignment.hit_id == published.hit_id
    assert entry.assignment.state == Assignment.State.DISCARDED  # counts as no work, holds no place
    assert MTurkUnknownSubmission.objects.get().paid == Decimal("0.24")

    page = client.get(f"/campaigns/{campaign.slug}/payouts/").content.decode()
    assert "Paid by MTurk without a review here (1)" in page and "mturk:AWORKER9" in page
    assert 'id="total-owed">$0.00' in page and "$0.20 rewards" in page and "$0.04 MTurk fees" in page


def test_work_mturk_auto_approved_before_a_review_is_booked_paid_once_and_flagged(stubbed, mturk_batch, task_type, settings):
    settings.MTURK_APPROVE_AFTER_HOURS = 1000  # the platform would not have approved it yet
    published = _published(mturk_batch, task_type, "HIT1")
    (work,) = _on_mturk(published, 1)
    for _ in range(2):
        _listing(stubbed, "HIT1", [("A1", "AW1", "Approved")])
        sync_batch(mturk_batch)
    assert _booked() == [("fee", "0.04", "paid", True), ("reward", "0.20", "paid", True)]
    work.refresh_from_db()
    assert work.state == Assignment.State.APPROVED and work.paid


def test_work_stored_while_syncs_were_down_and_paid_by_mturk_is_booked_once(stubbed, mturk_batch, settings):
    """Syncs were down for days: the submission our page stored was never confirmed, and MTurk auto-approved it."""
    from hits.handlers import register_task_handler

    class Quiet:
        template_name = ""

        def on_submitted(self, assignment):
            pass

    task_type = TaskType.objects.create(slug="quiet-label", name="Label it", description="d", keywords="k")
    register_task_handler(task_type.slug, Quiet())  # a slug of its own: no other test sees this handler
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    settings.MTURK_CONFIRM_GRACE = 10 ** 9
    published = _published(mturk_batch, task_type, "HIT1")
    (work,) = _on_mturk(published, 1)
    Assignment.objects.filter(pk=work.pk).update(state=Assignment.State.PENDING)
    HIT.objects.filter(pk=published.hit_id).update(n_submitted=0)
    for _ in range(2):
        _listing(stubbed, "HIT1", [("A1", "AW1", "Approved")])
        sync_batch(mturk_batch)
    assert _booked() == [("fee", "0.04", "paid", True), ("reward", "0.20", "paid", True)]
    work.refresh_from_db()
    assert work.state == Assignment.State.APPROVED and work.paid


def test_the_standin_receives_notifications_without_control_characters(mturk_batch, task_type, settings):
    """Over HTTP, as MTurk would receive it: what the stand-in recorded has no refused character left."""
    from hits.mturk.client import MTurk
    from hits.mturk.standin import StandIn
    from tests.mturk.test_standin import boto_client, state

    settings.MTURK_RETRY_BASE_SECONDS = 0.0
    published = _published(mturk_batch, task_type, "HIT1")
    for i in (1, 2):
        worker = Worker.objects.create(external_id=f"mturk:AW{i}", mturk_worker_id=f"AW{i}")
        MTurkAssignment.objects.create(mturk_assignment_id=f"A{i}", mturk_hit=published, assignment=submitted_assignment(published.hit, worker),
                                       mturk_worker_id=f"AW{i}", submit_to="https://workersandbox.mturk.com")
    server = StandIn(port=0).start()
    try:
        result = notify_workers(mturk_batch, "New\x07 HITs\x1b", "More\x00 are up.\nThanks\x0c.",
                                mturk=MTurk(sandbox=True, client=boto_client(server.url)))
        (sent,) = state(server)["notifications"]
    finally:
        server.stop()
    assert (sent["Subject"], sent["MessageText"]) == ("New HITs", "More are up.\nThanks.")
    assert result.sent == 2 and result.failed_calls == 0  # (the stand-in refuses workers with no reviewed work: reported)


def test_a_done_hit_with_unknown_work_not_yet_rejected_is_listed_again_and_not_deleted(mturk_batch, task_type):
    """Work posted straight to MTurk on a HIT complete here, whose rejection failed: MTurk may approve (and charge)
    it on its own, so the HIT is listed again each sync (to book that payment) and never deleted before."""
    from hits.mturk.sync import needs_listing

    published = _published(mturk_batch, task_type, "HITU1")
    now = timezone.now()
    HIT.objects.filter(pk=published.hit_id).update(state=HIT.State.COMPLETED, completed_at=now - timedelta(hours=1))
    MTurkHIT.objects.filter(pk=published.pk).update(last_synced_at=now)
    assert published not in needs_listing(mturk_batch)  # done and listed since: nothing can change
    unknown = MTurkUnknownSubmission.objects.create(
        mturk_hit=published, mturk_assignment_id="AUNKNOWN1", mturk_worker_id="AW9", status="Submitted",
        error="RejectAssignment throttled",
    )
    assert published in needs_listing(mturk_batch)
    MTurkUnknownSubmission.objects.filter(pk=unknown.pk).update(paid=Decimal("0.24"))
    assert published not in needs_listing(mturk_batch)  # booked: nothing left to see
