"""MTurk failure paths that cost money (issue 17), each checked against the exact calls with botocore's Stubber."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import Assignment, Batch, TaskType, Worker
from hits.mturk import fees
from hits.mturk.client import MTurk, MTurkError, make_boto3_client
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.mturk.publishing import publish_batch, request_token
from hits.mturk.sync import UNKNOWN_SUBMISSION_FEEDBACK, past_expiry, sync_batch
from hits.payments import reject_assignment
from tests.mturk.conftest import assignments_listing as _listing, make_hit, published_on_mturk as _published, submitted_assignment
from tests.mturk.conftest import submitted_on_mturk as _submitted_on_mturk
from tests.mturk.test_publishing import created, expected_create, public_url  # noqa: F401  (autouse settings)

pytestmark = pytest.mark.django_db

HIT_ALREADY_EXISTS = {"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"}


def test_duplicate_token_is_told_by_turk_error_code_not_by_message_text(stubbed, mturk_batch, task_type):
    """A refusal whose message merely says "already exists" (here a bad parameter) is not a used token:
    the HIT keeps the error (issue 30: a lasting refusal stops only its HIT) instead of adopting some other HIT."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message="A qualification type with this name already exists",
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.InvalidParameterValue"},
        expected_params=expected_create(hit),
    )
    assert publish_batch(mturk_batch).published == 0
    hit.refresh_from_db()
    assert "AWS.MechanicalTurk.InvalidParameterValue" in hit.publish_error
    assert not MTurkHIT.objects.exists()


def test_used_token_recovers_the_hit_by_its_annotation_never_by_the_message(stubbed, mturk_batch, task_type):
    """MTurk's documented HitAlreadyExists: the HIT is looked up by its RequesterAnnotation (ListHITs); the id the
    message names is never read (here it names another HIT: it is not the one adopted)."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message='The HIT with ID "3AAAAAAAAAAAAAAAAAAAAAAAAAAAAA" already exists.',
        modeled_fields=HIT_ALREADY_EXISTS, expected_params=expected_create(hit),
    )
    stubbed.add_response("list_hits", {"NumResults": 2, "HITs": [
        {"HITId": "3AAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "RequesterAnnotation": "other-install-1"},
        {"HITId": "3CCCCCCCCCCCCCCCCCCCCCCCCCCCCC", "HITTypeId": "T", "RequesterAnnotation": request_token(hit)},
    ]}, {"MaxResults": 100})
    report = publish_batch(mturk_batch)
    assert report.published == 1 and report.recovered == 1
    assert MTurkHIT.objects.get().mturk_hit_id == "3CCCCCCCCCCCCCCCCCCCCCCCCCCCCC"


def test_a_named_hit_that_is_not_ours_is_never_adopted(stubbed, mturk_batch, task_type):
    """The refusal names a HIT, but no HIT on the account carries our annotation: nothing is adopted.  Still,
    HitAlreadyExists says our HIT was created: it is not filed as refused (no Retry that could make it twice)
    but tracked as on MTurk, its HITId read by a later sync."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message='The HIT with ID "3BBBBBBBBBBBBBBBBBBBBBBBBBBBBB" already exists.',
        modeled_fields=HIT_ALREADY_EXISTS, expected_params=expected_create(hit),
    )
    stubbed.add_response("list_hits", {"NumResults": 1, "HITs": [{"HITId": "3BBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "RequesterAnnotation": "other-install-1"}]}, {"MaxResults": 100})
    report = publish_batch(mturk_batch)
    assert report.published == 0 and not report.refused and [m["hit"] for m in report.made] == [hit.pk]
    assert not MTurkHIT.objects.exists()
    hit.refresh_from_db()
    assert hit.publish_error == ""


def test_request_tokens_cannot_collide_across_database_resets(task_type):
    """Two databases both start their ids at 1: the batches' random keys keep their tokens apart."""
    first = Batch.objects.create(name="A", reference="a", backend=Batch.Backend.MTURK_SANDBOX)
    hit = make_hit(first, task_type)
    token_before_reset = request_token(hit)
    Batch.objects.all().delete()
    second = Batch.objects.create(name="A", reference="a", backend=Batch.Backend.MTURK_SANDBOX)
    again = make_hit(second, task_type)
    again.pk = hit.pk  # as if the ids had started again
    assert request_token(again) != token_before_reset
    assert len(request_token(again)) <= 64 and request_token(again) == request_token(again)


@pytest.mark.parametrize(
    "reward, assignments, fee",
    [("0.03", 3, "0.01"), ("0.01", 9, "0.01"), ("0.02", 10, "0.01"), ("0.20", 3, "0.04"), ("0.20", 10, "0.08")],
)
def test_commission_is_never_below_one_cent(reward, assignments, fee):
    assert fees.mturk_fee(Decimal(reward), assignments) == Decimal(fee)
    assert fees.hit_commitment(Decimal(reward), assignments) == (Decimal(reward) + Decimal(fee)) * assignments


def test_bonus_commission_is_never_below_one_cent():
    assert fees.bonus_fee(Decimal("0.02")) == Decimal("0.01")
    assert fees.bonus_fee(Decimal("1.00")) == Decimal("0.20")


def test_the_client_signs_for_mturks_only_region(settings):
    assert not hasattr(settings, "MTURK_REGION")
    assert make_boto3_client(True).meta.region_name == "us-east-1"
    assert MTurk(sandbox=True, client=make_boto3_client(True)).sandbox


# --- the sync: one failure never stops the rest --------------------------------------------------


def _refusal(code: str, message: str = "refused") -> dict:
    return dict(service_error_code="RequestError", service_message=message, http_status_code=400, modeled_fields={"TurkErrorCode": code})


def test_a_failing_publish_and_listing_do_not_stop_reviews_or_money(stubbed, mturk_batch, task_type, settings):
    """CreateHIT of a new HIT and the listing of HIT1 fail; HIT2's work is still approved, a local rejection
    on HIT1 is still sent, and both failures are recorded and retried by the next sync."""
    settings.MTURK_APPROVE_AFTER_HOURS = 0
    first = _published(mturk_batch, task_type, "HIT1")
    second = _published(mturk_batch, task_type, "HIT2")
    [rejected] = _submitted_on_mturk(first, 1)
    [approved] = _submitted_on_mturk(second, 1, first=2)
    reject_assignment(rejected, "Copied answers.")
    waiting = make_hit(mturk_batch, task_type)  # not on MTurk yet
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error("create_hit", **_refusal("AWS.MechanicalTurk.InvalidParameterValue", "bad title"),
                             expected_params=expected_create(waiting))
    stubbed.add_client_error("list_assignments_for_hit", **_refusal("AWS.MechanicalTurk.InvalidParameterValue", "bad token"),
                             expected_params={"HITId": "HIT1", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
    _listing(stubbed, "HIT2", [("A2", "W2", "Submitted")])
    stubbed.add_response("approve_assignment", {}, {"AssignmentId": "A2", "RequesterFeedback": "Thank you for your work."})
    stubbed.add_response("reject_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Copied answers."})
    report = sync_batch(mturk_batch)
    assert (report.published, report.approved, report.rejected, report.failed) == (0, 1, 1, 2)
    assert any("publishing" in e for e in report.errors) and any("HIT1" in e for e in report.errors)
    assert Assignment.objects.get(pk=approved.pk).paid
    assert MTurkHIT.objects.get(mturk_hit_id="HIT1").failures == 1
    assert "bad token" in MTurkHIT.objects.get(mturk_hit_id="HIT1").last_error
    assert MTurkAssignment.objects.get(mturk_assignment_id="A1").status == "Rejected"


def test_a_failed_rejection_is_retried_before_mturk_can_auto_approve_it(stubbed, mturk_batch, task_type, settings):
    settings.MTURK_MAX_RETRIES = 0
    published = _published(mturk_batch, task_type, "HIT1")
    [work] = _submitted_on_mturk(published, 1)
    reject_assignment(work, "Not the task.")
    _listing(stubbed, "HIT1", [("A1", "W1", "Submitted")])
    stubbed.add_client_error("reject_assignment", service_error_code="ServiceUnavailable", service_message="down",
                             http_status_code=503, expected_params={"AssignmentId": "A1", "RequesterFeedback": "Not the task."})
    first = sync_batch(mturk_batch)
    assert (first.rejected, first.failed) == (0, 1)
    _listing(stubbed, "HIT1", [("A1", "W1", "Submitted")])
    stubbed.add_response("reject_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "Not the task."})
    assert sync_batch(mturk_batch).rejected == 1
    assert MTurkAssignment.objects.get().status == "Rejected"


def test_a_hit_mturk_no_longer_has_is_marked_gone_and_left_alone(stubbed, mturk_batch, task_type):
    published = _published(mturk_batch, task_type, "HIT1")
    stubbed.add_client_error("list_assignments_for_hit", **_refusal("AWS.MechanicalTurk.HITDoesNotExist", "Hit HIT1 does not exist."),
                             expected_params={"HITId": "HIT1", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
    report = sync_batch(mturk_batch)
    assert report.gone == 1 and report.failed == 0
    assert MTurkHIT.objects.get(pk=published.pk).gone_at is not None
    # The next syncs ask MTurk nothing about it (the Stubber would fail on any call).
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.FINISHED)
    assert sync_batch(mturk_batch).failed == 0


# --- expiry: distinct past times, and a stop that sticks ------------------------------------------


def test_every_expiry_of_a_hit_uses_its_own_past_time(stubbed, mturk_batch, task_type):
    """Pause, resume, pause: MTurk refuses the same (HIT, ExpireAt) twice, so the second expiry uses another time;
    a refusal as a repeat (the first call went through) counts as expired."""
    from datetime import datetime, timedelta, timezone as dt_timezone

    published = _published(mturk_batch, task_type, "HIT1")
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.PAUSED)
    _listing(stubbed, "HIT1", [])
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": past_expiry(1)})
    assert sync_batch(mturk_batch).expired == 1
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.ACTIVE)
    now = datetime(2030, 5, 1, tzinfo=dt_timezone.utc)
    _listing(stubbed, "HIT1", [])
    stubbed.add_response("update_expiration_for_hit", {}, {"HITId": "HIT1", "ExpireAt": now + timedelta(days=7)})
    assert sync_batch(mturk_batch, now=now).reopened == 1
    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.PAUSED)
    _listing(stubbed, "HIT1", [])
    stubbed.add_client_error("update_expiration_for_hit", service_error_code="RequestError", http_status_code=400,
                             service_message="Request 9d1e was processed before (any wording, no TurkErrorCode)",
                             expected_params={"HITId": "HIT1", "ExpireAt": past_expiry(2)})
    # No code to go by: GetHIT shows the HIT's expiration is past, so the expiry went through.
    stubbed.add_response("get_hit", {"HIT": {"HITId": "HIT1", "Expiration": past_expiry(2)}}, {"HITId": "HIT1"})
    report = sync_batch(mturk_batch)
    assert report.expired == 1 and report.failed == 0
    assert MTurkHIT.objects.get(pk=published.pk).expired_at is not None
    assert past_expiry(1) != past_expiry(2) and past_expiry(2) < now


def test_mturk_expire_pauses_the_campaign_so_the_next_sync_does_not_reopen(stubbed, small_files, settings):
    """``mturk_expire`` without --keep: the running campaign is paused (the stop sticks), its HITs are
    expired, and the HITs whose places are still open locally are not deleted (they could never finish)."""
    from django.core.management import call_command

    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    refs, sums = small_files
    campaign = import_campaign(name="Stop", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX)
    campaign.refresh_from_db()
    launch_campaign(campaign)  # its publish would run after the commit; the test's transaction never commits
    campaign.refresh_from_db()
    hits = list(campaign.batch.hits.order_by("pk")[:2])
    for i, hit in enumerate(hits, start=1):
        MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id=f"HIT{i}", request_token=request_token(hit),
                                max_assignments=hit.max_assignments, reward=hit.reward)
    for i in (1, 2):
        stubbed.add_response("update_expiration_for_hit", {}, {"HITId": f"HIT{i}", "ExpireAt": past_expiry(1)})
    call_command("mturk_expire", campaign=campaign.slug)
    campaign.refresh_from_db()
    assert campaign.state == Campaign.State.PAUSED and campaign.batch.state == Batch.State.PAUSED
    assert MTurkHIT.objects.filter(expired_at__isnull=False).count() == 2
    assert not MTurkHIT.objects.filter(deleted_at__isnull=False).exists()  # open places: kept (expired)
    # The next sync keeps them expired: no UpdateExpirationForHIT with a future time (the Stubber would fail).
    for i in (1, 2):
        _listing(stubbed, f"HIT{i}", [])
    report = sync_batch(campaign.batch)
    assert report.reopened == 0 and report.expired == 0


def test_the_researcher_sees_unknown_submissions_and_what_the_sync_could_not_do(stubbed, small_files, django_user_model):
    from django.test import Client

    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import ensure_batch
    from annotation.services.roles import make_researcher

    rita = django_user_model.objects.create_user("rita", password="pw-rita-123456")
    make_researcher(rita)
    refs, sums = small_files
    campaign = import_campaign(name="Seen", references=refs, summaries=sums, owner=rita).campaign
    batch = ensure_batch(campaign)
    Batch.objects.filter(pk=batch.pk).update(backend=Batch.Backend.MTURK_SANDBOX, state=Batch.State.PAUSED)
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.MTURK_SANDBOX)
    task_type_hit = make_hit(batch, TaskType.objects.create(slug="t", name="T"))
    published = MTurkHIT.objects.create(hit=task_type_hit, sandbox=True, mturk_hit_id="HIT1", request_token="t-1",
                                        max_assignments=3, reward=Decimal("0.20"), expired_at=task_type_hit.created_at)
    second = MTurkHIT.objects.create(hit=make_hit(batch, task_type_hit.task_type), sandbox=True, mturk_hit_id="HIT2",
                                     request_token="t-2", max_assignments=3, reward=Decimal("0.20"), expired_at=task_type_hit.created_at)
    _listing(stubbed, "HIT1", [("FORGED1", "W7", "Submitted")])
    stubbed.add_client_error("list_assignments_for_hit", **_refusal("AWS.MechanicalTurk.InvalidParameterValue", "throttled badly"),
                             expected_params={"HITId": "HIT2", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
    stubbed.add_client_error("reject_assignment", **_refusal("AWS.MechanicalTurk.InvalidState", "try later"),
                             expected_params={"AssignmentId": "FORGED1", "RequesterFeedback": UNKNOWN_SUBMISSION_FEEDBACK})
    sync_batch(Batch.objects.get(pk=batch.pk))
    assert published.unknown_submissions.get().error and MTurkHIT.objects.get(pk=second.pk).failures == 1
    client = Client()
    client.force_login(rita)
    page = client.get(f"/campaigns/{campaign.slug}/progress/").content.decode()
    assert "On Mechanical Turk" in page and "FORGED1" in page and "W7" in page and "try later" in page
    assert "HIT HIT2 (1 failed in a row)" in page and "throttled badly" in page
    api = client.get(f"/api/campaigns/{campaign.slug}/progress/").json()
    assert api["mturk"]["unknown_total"] == 1 and api["mturk"]["unknown_submissions"][0]["assignment"] == "FORGED1"
    assert api["mturk"]["failing_hits"] == [{"hit": "HIT2", "failures": 1, "error": "ListAssignmentsForHIT: MTurk ListAssignmentsForHIT failed: RequestError (AWS.MechanicalTurk.InvalidParameterValue): throttled badly"}]


def test_workers_mturk_could_not_notify_are_reported(stubbed, mturk_batch, task_type):
    from django.db.models import Value
    from django.db.models.functions import Concat

    from hits.mturk.sync import notify_workers

    published = _published(mturk_batch, task_type, "HIT1")
    _submitted_on_mturk(published, 2)
    MTurkAssignment.objects.filter(mturk_hit=published).update(mturk_worker_id=Concat(Value("A"), "mturk_worker_id"))
    stubbed.add_response("notify_workers", {"NotifyWorkersFailureStatuses": [
        {"NotifyWorkersFailureCode": "HardFailure", "NotifyWorkersFailureMessage": "no reviewed work", "WorkerId": "AW2"},
    ]}, {"Subject": "More", "MessageText": "New HITs.", "WorkerIds": ["AW1", "AW2"]})
    result = notify_workers(mturk_batch, "More", "New HITs.")
    assert (result.sent, result.reached) == (2, 1)
    assert result.failures == [{"worker": "AW2", "code": "HardFailure", "message": "no reviewed work"}]


def test_a_rejection_can_be_overridden_on_mturk_only_within_30_days(mturk_batch, task_type):
    from datetime import timedelta

    from django.utils import timezone

    from hits.payments import PaymentError, approve_assignment

    published = _published(mturk_batch, task_type, "HIT1")
    recent, old = _submitted_on_mturk(published, 2)
    for work in (recent, old):
        reject_assignment(work, "Wrong.", settle=False)
    Assignment.objects.filter(pk=old.pk).update(submitted_at=timezone.now() - timedelta(days=31))
    assert approve_assignment(recent, "Our mistake.", settle=False).state == "approved"
    with pytest.raises(PaymentError, match="within 30 days"):
        approve_assignment(Assignment.objects.get(pk=old.pk), "Too late.", settle=False)
    assert Assignment.objects.get(pk=old.pk).state == "rejected"


# --- replacements of excluded work on MTurk --------------------------------------------------------


def test_replacement_places_grow_the_mturk_hit_under_ten(stubbed, mturk_batch, task_type):
    from hits.services import add_places

    published = _published(mturk_batch, task_type, "HIT1")  # 3 assignments on MTurk
    before = fees.committed(mturk_batch)
    assert add_places(published.hit, 1).pk == published.hit_id
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_additional_assignments_for_hit", {}, {
        "HITId": "HIT1", "NumberOfAdditionalAssignments": 1, "UniqueRequestToken": f"{published.request_token}-4",
    })
    report = publish_batch(mturk_batch)
    assert report.grown == 1
    assert MTurkHIT.objects.get(pk=published.pk).max_assignments == 4
    assert fees.committed(mturk_batch) - before == Decimal("0.24")  # the extra place: reward + commission
    assert publish_batch(mturk_batch).grown == 0  # no second call


def test_replacement_places_that_would_reach_ten_go_to_a_new_hit(stubbed, mturk_batch, task_type):
    """MTurk refuses to take a HIT from under 10 assignments to 10 or more: the place goes to a new HIT,
    which the workers of the first may not take, published as its own MTurk HIT."""
    from hits.models import HIT
    from hits.services import add_places

    published = _published(mturk_batch, task_type, "HIT1", max_assignments=9)
    [first_worker_assignment] = _submitted_on_mturk(published, 1)
    sibling = add_places(published.hit, 1)
    assert sibling.pk != published.hit_id and sibling.max_assignments == 1 and sibling.payload["replaces"] == published.hit_id
    assert sibling.exclusions.filter(worker=first_worker_assignment.worker).exists()
    assert HIT.objects.get(pk=published.hit_id).max_assignments == 9
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA2"), expected_create(sibling, MaxAssignments=1))
    assert publish_batch(mturk_batch).published == 1
    assert MTurkHIT.objects.get(hit=sibling).max_assignments == 1


def test_replacement_places_of_a_deleted_mturk_hit_go_to_a_new_hit(mturk_batch, task_type):
    from django.utils import timezone

    from hits.services import add_places

    published = _published(mturk_batch, task_type, "HIT1")
    MTurkHIT.objects.filter(pk=published.pk).update(deleted_at=timezone.now())
    assert add_places(published.hit, 2).max_assignments == 2


def test_replacements_that_would_pass_the_budget_cap_are_refused_and_nothing_changes(mturk_batch, task_type):
    from hits.models import HIT
    from hits.services import PlacesRefused, add_places

    published = _published(mturk_batch, task_type, "HIT1")
    Batch.objects.filter(pk=mturk_batch.pk).update(budget_cap=fees.committed(mturk_batch) + Decimal("0.20"))
    with pytest.raises(PlacesRefused, match="budget cap"):
        add_places(HIT.objects.get(pk=published.hit_id), 1)  # $0.24 more
    assert HIT.objects.get(pk=published.hit_id).max_assignments == 3


def test_one_hit_that_cannot_grow_does_not_stop_publishing(stubbed, mturk_batch, task_type):
    from hits.services import add_places

    first = _published(mturk_batch, task_type, "HIT1")
    add_places(first.hit, 1)
    waiting = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error("create_additional_assignments_for_hit", **_refusal("AWS.MechanicalTurk.InvalidState", "busy"),
                             expected_params={"HITId": "HIT1", "NumberOfAdditionalAssignments": 1, "UniqueRequestToken": f"{first.request_token}-4"})
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("create_hit", created("AAA2"), expected_create(waiting))
    report = publish_batch(mturk_batch)
    assert (report.grown, report.published) == (0, 1) and "HIT1" in report.stopped
    assert MTurkHIT.objects.get(pk=first.pk).failures == 1 and MTurkHIT.objects.get(pk=first.pk).max_assignments == 3


def test_places_of_a_hit_mturk_lost_move_to_a_new_hit_at_publish(stubbed, mturk_batch, task_type):
    """Places were added while the MTurk HIT could grow; MTurk deleted it before the publish: the places move
    to a HIT of their own instead of waiting forever."""
    from django.utils import timezone

    from hits.models import HIT
    from hits.services import add_places

    first = _published(mturk_batch, task_type, "HIT1")
    add_places(first.hit, 2)
    MTurkHIT.objects.filter(pk=first.pk).update(gone_at=timezone.now())
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    # The new HIT is created during the publish, so its CreateHIT parameters are checked after it.
    stubbed.add_response("create_hit", created("AAA2"))
    report = publish_batch(mturk_batch)
    twin = HIT.objects.get(payload__replaces=first.hit_id)
    assert report.moved == 2 and twin.max_assignments == 2 and HIT.objects.get(pk=first.hit_id).max_assignments == 3
    assert MTurkHIT.objects.get(hit=twin).mturk_hit_id == "AAA2"


def test_budget_check_counts_places_not_yet_on_mturk(mturk_batch, task_type):
    """Two exclusions in a row, each affordable alone: the second counts the first's places, which are not on
    MTurk yet, and is refused."""
    from hits.models import HIT
    from hits.services import PlacesRefused, add_places

    published = _published(mturk_batch, task_type, "HIT1")
    Batch.objects.filter(pk=mturk_batch.pk).update(budget_cap=fees.committed(mturk_batch) + Decimal("0.30"))
    add_places(HIT.objects.get(pk=published.hit_id), 1)  # $0.24
    with pytest.raises(PlacesRefused, match="waiting to be published"):
        add_places(HIT.objects.get(pk=published.hit_id), 1)
    assert HIT.objects.get(pk=published.hit_id).max_assignments == 4


def test_mturks_own_approval_is_recorded_whatever_the_age_of_a_local_rejection(stubbed, mturk_batch, task_type):
    """MTurk auto-approved work rejected here long ago (the rejection never reached it): the ledger books the
    payment; the 30-day window binds researchers only, and the sync goes on."""
    from datetime import timedelta

    from django.utils import timezone

    from hits.models import LedgerEntry

    published = _published(mturk_batch, task_type, "HIT1")
    [work] = _submitted_on_mturk(published, 1)
    reject_assignment(work, "No.", settle=False)
    Assignment.objects.filter(pk=work.pk).update(submitted_at=timezone.now() - timedelta(days=40))
    _listing(stubbed, "HIT1", [("A1", "W1", "Approved")])
    report = sync_batch(mturk_batch)
    assert report.failed == 0
    assert Assignment.objects.get(pk=work.pk).state == "approved"
    assert LedgerEntry.objects.filter(kind="reward", state="paid").count() == 1
