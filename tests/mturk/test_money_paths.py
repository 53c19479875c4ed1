"""MTurk failure paths that cost money (issue 17), each checked against the exact calls with botocore's Stubber."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import Batch
from hits.mturk import fees
from hits.mturk.client import MTurk, MTurkError, make_boto3_client
from hits.mturk.models import MTurkHIT
from hits.mturk.publishing import publish_batch, request_token
from tests.mturk.conftest import make_hit
from tests.mturk.test_publishing import created, expected_create, public_url  # noqa: F401  (autouse settings)

pytestmark = pytest.mark.django_db

HIT_ALREADY_EXISTS = {"TurkErrorCode": "AWS.MechanicalTurk.HitAlreadyExists"}


def test_duplicate_token_is_told_by_turk_error_code_not_by_message_text(stubbed, mturk_batch, task_type):
    """A refusal whose message merely says "already exists" (here a bad parameter) is not a used token:
    publishing stops with the error instead of adopting some other HIT."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message="A qualification type with this name already exists",
        modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.InvalidParameterValue"},
        expected_params=expected_create(hit),
    )
    with pytest.raises(MTurkError) as error:
        publish_batch(mturk_batch)
    assert error.value.turk_code == "AWS.MechanicalTurk.InvalidParameterValue"
    assert not MTurkHIT.objects.exists()


def test_used_token_recovers_the_hit_by_the_id_in_the_message(stubbed, mturk_batch, task_type):
    """MTurk's refusal names the HIT the first call created: one GetHIT finds it, no listing of the account."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message='The HIT with ID "3AAAAAAAAAAAAAAAAAAAAAAAAAAAAA" already exists.',
        modeled_fields=HIT_ALREADY_EXISTS, expected_params=expected_create(hit),
    )
    stubbed.add_response(
        "get_hit",
        {"HIT": {"HITId": "3AAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "HITTypeId": "T", "RequesterAnnotation": request_token(hit)}},
        {"HITId": "3AAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
    )
    report = publish_batch(mturk_batch)
    assert report.published == 1 and report.recovered == 1
    assert MTurkHIT.objects.get().mturk_hit_id == "3AAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


def test_a_named_hit_that_is_not_ours_is_never_adopted(stubbed, mturk_batch, task_type):
    """The HIT the message names carries another annotation (another installation's): it is not recorded as
    ours; the account is searched by our annotation, and without a match publishing stops."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message='The HIT with ID "3BBBBBBBBBBBBBBBBBBBBBBBBBBBBB" already exists.',
        modeled_fields=HIT_ALREADY_EXISTS, expected_params=expected_create(hit),
    )
    stubbed.add_response(
        "get_hit", {"HIT": {"HITId": "3BBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "RequesterAnnotation": "other-install-1"}},
        {"HITId": "3BBBBBBBBBBBBBBBBBBBBBBBBBBBBB"},
    )
    stubbed.add_response("list_hits", {"NumResults": 0, "HITs": []}, {"MaxResults": 100})
    with pytest.raises(MTurkError):
        publish_batch(mturk_batch)
    assert not MTurkHIT.objects.exists()


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
