"""The stand-in as strict as MTurk (issue 30, item 8): funds held, worker ids, control characters, error shapes,
and the faults the control API injects per operation (throttling, ServiceFault, a reply lost after the call
took effect), all over HTTP with boto3 as the platform drives MTurk."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError

from hits.mturk.standin import StandIn
from tests.mturk.test_standin import (  # noqa: F401 - fixtures and helpers of the stand-in's own tests
    DAY,
    PAGE,
    QUESTION,
    _request,
    accept,
    advance,
    balance,
    create,
    get,
    mturk,
    post,
    refused,
    standin,
    state,
    submit,
    work,
)

PAST = datetime(2015, 1, 1, tzinfo=timezone.utc)


def single_try_client(url: str):
    """A boto3 client that sends each call exactly once (botocore retries nothing), to see every fault plainly."""
    return boto3.client(
        "mturk", region_name="us-east-1", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=10, connect_timeout=5),
    )


def on_hold(mturk) -> Decimal:
    return Decimal(mturk.get_account_balance()["OnHoldBalance"])


def raw_call(standin, operation: str, params: dict):
    """One requester call as raw HTTP: (status, JSON body, x-amzn-RequestId)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        standin.url + "/", json.dumps(params).encode(),
        {"X-Amz-Target": f"MTurkRequesterServiceV20170117.{operation}", "Content-Type": "application/x-amz-json-1.1"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), response.headers["x-amzn-RequestId"]
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), error.headers["x-amzn-RequestId"]


# ------------------------------------------------------------------------------------------------ funds held


def test_funds_are_held_for_every_place_and_released_as_each_place_closes(standin, mturk):
    post(standin, "/balance", balance="100.00")
    hit_id = create(mturk, Reward="0.50", MaxAssignments=3)["HITId"]  # 0.50 + 0.10 fee per place
    assert (balance(mturk), on_hold(mturk)) == (Decimal("98.20"), Decimal("1.80"))
    mturk.create_additional_assignments_for_hit(HITId=hit_id, NumberOfAdditionalAssignments=2)
    assert (balance(mturk), on_hold(mturk)) == (Decimal("97.00"), Decimal("3.00"))

    mturk.approve_assignment(AssignmentId=work(standin, hit_id, "AW1"))  # charged 0.60 from what was held
    assert (balance(mturk), on_hold(mturk)) == (Decimal("97.00"), Decimal("2.40"))
    mturk.reject_assignment(AssignmentId=work(standin, hit_id, "AW2"), RequesterFeedback="No.")  # released
    assert (balance(mturk), on_hold(mturk)) == (Decimal("97.60"), Decimal("1.80"))

    accept(standin, hit_id, "AW3")
    returning = accept(standin, hit_id, "AW4")
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=PAST)  # the unused place is released, work in progress not
    assert (balance(mturk), on_hold(mturk)) == (Decimal("98.20"), Decimal("1.20"))
    assert post(standin, "/worker/return", AssignmentId=returning)[0] == 200  # returned past expiry: released
    assert (balance(mturk), on_hold(mturk)) == (Decimal("98.80"), Decimal("0.60"))
    advance(standin, 601)  # AW3's 10 minutes pass: abandoned past expiry, released
    assert (balance(mturk), on_hold(mturk)) == (Decimal("99.40"), Decimal("0.00"))
    mturk.delete_hit(HITId=hit_id)
    assert state(standin)["total_charged"] == "0.60"
    assert Decimal(state(standin)["balance"]) == Decimal("100.00") - Decimal("0.60")  # the account reconciles


def test_a_deleted_or_disposed_hit_holds_nothing_and_held_money_pays_its_approvals(standin, mturk):
    post(standin, "/balance", balance="2.00")
    hit_id = create(mturk, Reward="0.50", MaxAssignments=3)["HITId"]
    assert balance(mturk) == Decimal("0.20")
    assert "insufficient" in refused(create, mturk=mturk, Reward="0.50", MaxAssignments=1)["Message"]  # 0.60 > 0.20
    submitted = work(standin, hit_id, "AW1")
    assert post(standin, "/dispose", HITId=hit_id)[0] == 200  # MTurk's deletion: submitted work approved, rest released
    assert (balance(mturk), on_hold(mturk)) == (Decimal("1.40"), Decimal("0.00"))
    [entry] = state(standin)["ledger"]
    assert (entry["AssignmentId"], entry["total"], entry["automatic"]) == (submitted, "0.60", True)
    create(mturk, Reward="0.50", MaxAssignments=2)  # 1.20 of the 1.40 now free
    assert balance(mturk) == Decimal("0.20")


def test_the_state_shows_available_on_hold_and_total_funds(standin, mturk):
    create(mturk, Reward="1.00", MaxAssignments=10)  # 40% fee on 10+ places: 1.40 each
    dump = state(standin)
    assert (dump["balance"], dump["on_hold"], dump["available_balance"]) == ("10000.00", "14.00", "9986.00")


# ------------------------------------------------------------------------------------------------ worker ids


@pytest.mark.parametrize("bad", ["W1", "aw1", "AW-1", "A", "A" + "B" * 64])
def test_worker_ids_are_checked_against_mturks_pattern_wherever_mturk_takes_one(standin, mturk, bad):
    hit_id = create(mturk, MaxAssignments=2)["HITId"]
    assignment_id = work(standin, hit_id, "AW1")
    mturk.approve_assignment(AssignmentId=assignment_id)
    type_id = mturk.create_qualification_type(Name="Trained", Description="d", QualificationTypeStatus="Active")[
        "QualificationType"]["QualificationTypeId"]
    calls = [
        (mturk.send_bonus, dict(WorkerId=bad, AssignmentId=assignment_id, BonusAmount="0.10", Reason="r")),
        (mturk.create_worker_block, dict(WorkerId=bad, Reason="r")),
        (mturk.delete_worker_block, dict(WorkerId=bad, Reason="r")),
        (mturk.associate_qualification_with_worker, dict(QualificationTypeId=type_id, WorkerId=bad, IntegerValue=1)),
        (mturk.disassociate_qualification_from_worker, dict(QualificationTypeId=type_id, WorkerId=bad)),
        (mturk.get_qualification_score, dict(QualificationTypeId=type_id, WorkerId=bad)),
        (mturk.notify_workers, dict(Subject="s", MessageText="m", WorkerIds=["AW1", bad])),
    ]
    for call, params in calls:
        error = refused(call, **params)
        assert error["Code"] == "RequestError" and error["TurkErrorCode"] is None, call
        assert "^A[A-Z0-9]+$" in error["Message"] and "WorkerId" in error["Message"], call
    for path, data in (
        ("/worker/accept", {"HITId": hit_id}), ("/worker/qualification", {"QualificationTypeId": type_id}),
    ):
        status, body = post(standin, path, WorkerId=bad, **data)
        assert (status, body["reason"]) == (400, "invalid") and "^A[A-Z0-9]+$" in body["error"]
    assert get(standin, "/worker/hits", WorkerId=bad)[0] == 400
    dump = state(standin)
    assert (dump["bonuses"], dump["blocks"], dump["notifications"], dump["qualifications"]) == ([], [], [], [])
    assert len(dump["ledger"]) == 1


# ------------------------------------------------------------------------------------------------ control characters


@pytest.mark.parametrize("code", [0, 7, 8, 11, 12, 14, 27, 31])
def test_control_characters_are_refused_in_feedback_bonus_reasons_and_notifications(standin, mturk, code):
    bad = f"Thanks{chr(code)}!"
    hit_id = create(mturk, MaxAssignments=3)["HITId"]
    first, second = work(standin, hit_id, "AW1"), work(standin, hit_id, "AW2")
    for call, params, field in (
        (mturk.approve_assignment, dict(AssignmentId=first, RequesterFeedback=bad), "RequesterFeedback"),
        (mturk.reject_assignment, dict(AssignmentId=second, RequesterFeedback=bad), "RequesterFeedback"),
    ):
        error = refused(call, **params)
        assert error["Code"] == "RequestError" and field in error["Message"] and f"ASCII {code} " in error["Message"]
    assert {a["AssignmentStatus"] for a in mturk.list_assignments_for_hit(HITId=hit_id)["Assignments"]} == {"Submitted"}
    mturk.approve_assignment(AssignmentId=first, RequesterFeedback="Tabs\tand\nnew lines\r\nare fine")
    error = refused(mturk.send_bonus, WorkerId="AW1", AssignmentId=first, BonusAmount="0.10", Reason=bad)
    assert "Reason" in error["Message"] and f"ASCII {code} " in error["Message"]
    assert "Subject" in refused(mturk.notify_workers, Subject=bad, MessageText="m", WorkerIds=["AW1"])["Message"]
    assert "MessageText" in refused(mturk.notify_workers, Subject="s", MessageText=bad, WorkerIds=["AW1"])["Message"]
    dump = state(standin)
    assert (dump["bonuses"], dump["notifications"], [e["kind"] for e in dump["ledger"]]) == ([], [], ["reward"])


# ------------------------------------------------------------------------------------------------ error shapes


def test_errors_are_request_errors_or_service_faults_with_the_request_id_and_only_documented_codes(standin, mturk):
    status, body, request_id = raw_call(standin, "GetHIT", {"HITId": "3NOSUCHHIT"})
    assert status == 400 and body["__type"] == "RequestError" and "TurkErrorCode" not in body
    assert "does not exist" in body["Message"] and request_id in body["Message"]

    mturk.create_qualification_type(Name="Trained", Description="d", QualificationTypeStatus="Active")
    status, body, request_id = raw_call(
        standin, "CreateQualificationType", {"Name": "Trained", "Description": "d", "QualificationTypeStatus": "Active"}
    )
    assert (status, body["__type"], body["TurkErrorCode"]) == (400, "RequestError", "AWS.MechanicalTurk.QualificationTypeAlreadyExists")

    nine = create(mturk, MaxAssignments=9)["HITId"]
    status, body, _ = raw_call(standin, "CreateAdditionalAssignmentsForHIT", {"HITId": nine, "NumberOfAdditionalAssignments": 1})
    assert body["TurkErrorCode"] == "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease"

    standin.inject("GetAccountBalance", "service_fault")
    status, body, request_id = raw_call(standin, "GetAccountBalance", {})
    assert (status, body["__type"]) == (500, "ServiceFault") and request_id in body["Message"]


# ------------------------------------------------------------------------------------------------ faults


def test_a_service_fault_is_answered_before_the_call_is_done(standin):
    client = single_try_client(standin.url)
    assignment_id = work(standin, create(client, MaxAssignments=2)["HITId"], "AW1")
    status, body = post(standin, "/faults", operation="SendBonus", kind="service_fault", count=1)
    assert status == 200 and body["faults"] == [
        {"operation": "SendBonus", "kind": "service_fault", "count": 1, "rate": 1.0, "fired": 0}
    ]
    bonus = dict(WorkerId="AW1", AssignmentId=assignment_id, BonusAmount="0.50", Reason="Good", UniqueRequestToken="b-1")
    with pytest.raises(ClientError) as caught:
        client.send_bonus(**bonus)
    assert caught.value.response["Error"]["Code"] == "ServiceFault"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert state(standin)["bonuses"] == []  # not done
    client.send_bonus(**bonus)  # the count is used up: the retry goes through, once
    assert len(state(standin)["bonuses"]) == 1 and get(standin, "/faults")[1]["faults"] == []


def test_a_lost_reply_comes_after_the_call_took_effect(standin):
    client = single_try_client(standin.url)
    standin.inject("CreateHIT", "lost_reply")
    with pytest.raises((ConnectionClosedError, EndpointConnectionError)):
        create(client, UniqueRequestToken="hit-1", RequesterAnnotation="hit-1")
    [made] = client.list_hits()["HITs"]  # it was created all the same
    assert made["RequesterAnnotation"] == "hit-1"
    error = refused(create, mturk=client, UniqueRequestToken="hit-1")
    assert error["TurkErrorCode"] == "AWS.MechanicalTurk.HitAlreadyExists" and made["HITId"] not in error["Message"]
    assert client.list_hits()["NumResults"] == 1
    assert standin.requests["CreateHIT"] == 2


def test_a_lost_bonus_reply_retried_25_hours_later_pays_twice(standin):
    """What MTurk itself does: the token is forgotten after 24 hours, so a blind re-send is a second bonus."""
    client = single_try_client(standin.url)
    assignment_id = work(standin, create(client, MaxAssignments=2)["HITId"], "AW1")
    client.approve_assignment(AssignmentId=assignment_id)
    standin.inject("SendBonus", "lost_reply")
    bonus = dict(WorkerId="AW1", AssignmentId=assignment_id, BonusAmount="1.20", Reason="Good", UniqueRequestToken="b-9")
    with pytest.raises((ConnectionClosedError, EndpointConnectionError)):
        client.send_bonus(**bonus)
    advance(standin, 25 * 3600)
    client.send_bonus(**bonus)
    assert [b["BonusAmount"] for b in client.list_bonus_payments(AssignmentId=assignment_id)["BonusPayments"]] == ["1.20", "1.20"]


def test_fault_after_does_the_call_then_answers_a_service_fault(standin):
    client = single_try_client(standin.url)
    hit_id = create(client, MaxAssignments=2)["HITId"]
    post(standin, "/faults", operation="CreateAdditionalAssignmentsForHIT", kind="fault_after")
    with pytest.raises(ClientError) as caught:
        client.create_additional_assignments_for_hit(HITId=hit_id, NumberOfAdditionalAssignments=3)
    assert caught.value.response["Error"]["Code"] == "ServiceFault"
    assert client.get_hit(HITId=hit_id)["HIT"]["MaxAssignments"] == 5  # done


def _throttled(seed: int, calls: int) -> list[bool]:
    with StandIn(port=0, seed=seed) as server:
        client = single_try_client(server.url)
        server.inject("*", "throttle", count=None, rate=0.5)
        seen = []
        for _ in range(calls):
            try:
                client.get_account_balance()
                seen.append(False)
            except ClientError as exc:
                error = exc.response["Error"]
                assert (error["Code"], error["Message"]) == ("ThrottlingException", "Rate exceeded")
                assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 400
                seen.append(True)
        assert server.requests["GetAccountBalance"] == calls
        return seen


def test_throttling_at_a_rate_is_deterministic_for_a_seed():
    first, again, other = _throttled(7, 80), _throttled(7, 80), _throttled(8, 80)
    assert first == again and first != other
    assert 0.3 < sum(first) / len(first) < 0.7


def test_faults_are_listed_counted_per_operation_and_cleared(standin):
    mturk = single_try_client(standin.url)
    post(standin, "/faults", operation="GetHIT", kind="throttle", count=2)
    post(standin, "/faults", operation="ListHITs", kind="service_fault", count=None)
    status, body = post(standin, "/faults", operation="GetHIT", kind="explode")
    assert status == 400 and "explode" in body["error"] and "throttle" in body["error"]
    status, body = post(standin, "/faults", operation="CreateHITWithHITType", kind="throttle")
    assert status == 400 and "CreateHITWithHITType" in body["error"]
    status, body = post(standin, "/faults", operation="GetHIT", kind="throttle", rate=1.5)
    assert status == 400 and "rate" in body["error"]
    hit_id = create(mturk)["HITId"]  # CreateHIT is not touched
    for _ in range(2):
        assert refused(mturk.get_hit, HITId=hit_id)["Code"] == "ThrottlingException"
    mturk.get_hit(HITId=hit_id)
    listed = get(standin, "/faults")[1]
    assert listed["faults"] == [{"operation": "ListHITs", "kind": "service_fault", "count": None, "rate": 1.0, "fired": 0}]
    assert listed["requests"]["GetHIT"] == 3 and listed["requests"]["CreateHIT"] == 1
    post(standin, "/faults", operation="GetHIT", kind="lost_reply", count=None)
    status, body = _request(f"{standin.url}/_standin/faults?operation=GetHIT", method="DELETE")
    assert (status, json.loads(body)) == (200, {"removed": 1})  # only GetHIT's
    assert [f["operation"] for f in get(standin, "/faults")[1]["faults"]] == ["ListHITs"]
    status, _ = _request(f"{standin.url}/_standin/faults", method="DELETE")
    assert status == 200 and get(standin, "/faults")[1]["faults"] == []
    assert mturk.list_hits()["NumResults"] == 1


def test_reopening_an_expired_hit_holds_its_unused_places_again_and_needs_the_funds(standin, mturk):
    post(standin, "/balance", balance="2.00")
    hit_id = create(mturk, Reward="0.50", MaxAssignments=3)["HITId"]  # 1.80 held
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=PAST)
    assert (balance(mturk), on_hold(mturk)) == (Decimal("2.00"), Decimal("0.00"))
    later = datetime.fromtimestamp(standin.now() + 2 * DAY, tz=timezone.utc).replace(microsecond=0)
    create(mturk, Reward="0.50", MaxAssignments=1)  # 0.60 of the 2.00: 1.40 left, not enough for three places
    assert "insufficient" in refused(mturk.update_expiration_for_hit, HITId=hit_id, ExpireAt=later)["Message"]
    assert mturk.get_hit(HITId=hit_id)["HIT"]["HITStatus"] == "Reviewable"  # still expired
    post(standin, "/balance", balance="1.80")
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=later)
    assert (balance(mturk), on_hold(mturk)) == (Decimal("0.00"), Decimal("2.40"))
