"""The local MTurk stand-in (hits.mturk.standin), driven by the real boto3 client as the platform drives MTurk.

Every test starts its own stand-in on a free port in a thread; workers act
through its worker endpoints (accept, return, the HIT page's externalSubmit)
and time passes through its control API, never by sleeping.
"""

from __future__ import annotations

import ast
import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from django.test import override_settings

from hits.mturk import standin as standin_module
from hits.mturk.client import MTurk, make_boto3_client
from hits.mturk.standin import LOCALE, PERCENT_APPROVED, StandIn

ROOT = Path(__file__).resolve().parents[2]
DAY = 24 * 3600
PAGE = "https://studio.example.org/work/mturk/hit/"
QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
    "<ExternalURL>{url}</ExternalURL><FrameHeight>900</FrameHeight></ExternalQuestion>"
)


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture
def standin():
    server = StandIn(port=0).start()
    yield server
    server.stop()


def boto_client(url: str):
    return boto3.client(
        "mturk", region_name="us-east-1", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )


@pytest.fixture
def mturk(standin):
    return boto_client(standin.url)


def create(mturk, **overrides) -> dict:
    params = dict(
        Title="Label it", Description="Label one thing.", Keywords="label", Reward="0.50", MaxAssignments=3,
        LifetimeInSeconds=7 * DAY, AssignmentDurationInSeconds=600, AutoApprovalDelayInSeconds=3 * DAY,
        Question=QUESTION.format(url=PAGE),
    )
    params.update(overrides)
    return mturk.create_hit(**params)["HIT"]


def _request(url: str, data: bytes | None = None, headers: dict | None = None, method: str | None = None):
    request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def post(standin, path: str, **data):
    status, body = _request(
        f"{standin.url}/_standin{path}", json.dumps(data).encode(), {"Content-Type": "application/json"}, "POST"
    )
    return status, json.loads(body)


def get(standin, path: str, **params):
    status, body = _request(f"{standin.url}/_standin{path}?{urllib.parse.urlencode(params)}")
    return status, json.loads(body)


def state(standin) -> dict:
    return get(standin, "/state")[1]


def accept(standin, hit_id: str, worker_id: str) -> str:
    status, body = post(standin, "/worker/accept", HITId=hit_id, WorkerId=worker_id)
    assert status == 200, body
    return body["AssignmentId"]


def submit(standin, assignment_id: str, fields=()):
    """The HIT page's form post to <turkSubmitTo>/mturk/externalSubmit; returns (HTTP status, page)."""
    form = urllib.parse.urlencode([("assignmentId", assignment_id), *fields]).encode()
    status, body = _request(
        f"{standin.url}/mturk/externalSubmit", form, {"Content-Type": "application/x-www-form-urlencoded"}, "POST"
    )
    return status, body.decode()


def work(standin, hit_id: str, worker_id: str, fields=(("label", "yes"),)) -> str:
    """A worker accepts the HIT and submits it; returns the assignment id."""
    assignment_id = accept(standin, hit_id, worker_id)
    status, page = submit(standin, assignment_id, fields)
    assert status == 200, page
    return assignment_id


def advance(standin, seconds: float) -> None:
    status, body = post(standin, "/advance", seconds=seconds)
    assert status == 200, body


def counts(mturk, hit_id: str) -> tuple:
    hit = mturk.get_hit(HITId=hit_id)["HIT"]
    return (
        hit["HITStatus"], hit["NumberOfAssignmentsAvailable"], hit["NumberOfAssignmentsPending"],
        hit["NumberOfAssignmentsCompleted"],
    )


def refused(call, **params) -> dict:
    """The RequestError a call gets: {"Code", "Message", "TurkErrorCode"}."""
    with pytest.raises(ClientError) as caught:
        call(**params)
    response = caught.value.response
    return {"Code": response["Error"]["Code"], "Message": response["Error"]["Message"], "TurkErrorCode": response.get("TurkErrorCode")}


def balance(mturk) -> Decimal:
    return Decimal(mturk.get_account_balance()["AvailableBalance"])


# ------------------------------------------------------------------------------------------------ protocol


def test_the_stand_in_serves_every_operation_the_platform_calls_with_mturks_required_parameters():
    import botocore.session

    model = botocore.session.get_session().get_component("data_loader").load_service_model("mturk", "service-2")
    for operation, required in standin_module.REQUIRED.items():
        shape = model["shapes"][model["operations"][operation]["input"]["shape"]]
        assert sorted(required) == sorted(shape.get("required", [])), operation
    called = set()
    for path in (ROOT / "hits" / "mturk").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("call", "pages") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    called.add(first.value)
    assert {"CreateHIT", "ListAssignmentsForHIT", "SendBonus", "NotifyWorkers", "DeleteHIT"} <= called
    assert called <= set(standin_module.REQUIRED)


def test_an_operation_the_stand_in_does_not_serve_is_refused_by_name(mturk):
    error = refused(mturk.list_hits_for_qualification_type, QualificationTypeId="3ABC")
    assert error["Code"] == "UnknownOperationException"
    assert "ListHITsForQualificationType" in error["Message"]


def test_a_missing_required_parameter_is_a_request_error_in_mturks_json_shape(standin):
    """botocore checks required parameters itself; a raw client gets MTurk's error body from the stand-in."""
    status, body = _request(
        standin.url + "/", b'{"AssignmentId": "3XYZ"}',
        {"X-Amz-Target": "MTurkRequesterServiceV20170117.RejectAssignment", "Content-Type": "application/x-amz-json-1.1"},
        "POST",
    )
    error = json.loads(body)
    assert status == 400
    assert error["__type"] == "RequestError" and "RequesterFeedback" in error["Message"]
    assert "TurkErrorCode" not in error  # MTurk documents no code for it: the stand-in invents none


def test_the_module_imports_neither_django_nor_the_annotation_app():
    code = (
        "import sys, hits.mturk.standin; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'annotation')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------------ money


def test_approvals_and_bonuses_are_charged_with_mturks_fee_to_the_cent(standin, mturk):
    small = create(mturk, Reward="0.50", MaxAssignments=3)  # fee 20%: 0.10
    large = create(mturk, Reward="0.50", MaxAssignments=10)  # 10+ assignments: 40%, 0.20
    tiny = create(mturk, Reward="0.02", MaxAssignments=1)  # 20% is 0.004: the minimum fee, 0.01
    held = Decimal("0.60") * 3 + Decimal("0.70") * 10 + Decimal("0.03")  # every place's reward + fee is held
    assert balance(mturk) == Decimal("10000.00") - held
    assert state(standin)["total_charged"] == "0.00"  # nothing is charged until work is approved
    done = {hit["HITId"]: work(standin, hit["HITId"], "AW1") for hit in (small, large, tiny)}
    assert balance(mturk) == Decimal("10000.00") - held  # submitted work is not paid yet
    for assignment_id in done.values():
        mturk.approve_assignment(AssignmentId=assignment_id, RequesterFeedback="Thanks")
    assert balance(mturk) == Decimal("10000.00") - held  # charged from what was held
    for hit in (small, large, tiny):
        mturk.update_expiration_for_hit(HITId=hit["HITId"], ExpireAt=datetime(2015, 1, 1, tzinfo=timezone.utc))
    assert balance(mturk) == Decimal("10000.00") - Decimal("0.60") - Decimal("0.70") - Decimal("0.03")
    mturk.send_bonus(WorkerId="AW1", AssignmentId=done[small["HITId"]], BonusAmount="0.02", Reason="Extra")  # fee 0.01
    mturk.send_bonus(WorkerId="AW1", AssignmentId=done[small["HITId"]], BonusAmount="1.00", Reason="Extra")  # fee 0.20
    assert balance(mturk) == Decimal("9997.44")

    dump = state(standin)
    assert dump["balance"] == dump["available_balance"] == "9997.44" and dump["total_charged"] == "2.56"
    assert [(e["kind"], e["HITId"], e["amount"], e["fee"]) for e in dump["ledger"]] == [
        ("reward", small["HITId"], "0.50", "0.10"),
        ("reward", large["HITId"], "0.50", "0.20"),
        ("reward", tiny["HITId"], "0.02", "0.01"),
        ("bonus", small["HITId"], "0.02", "0.01"),
        ("bonus", small["HITId"], "1.00", "0.20"),
    ]
    assert all(e["WorkerId"] == "AW1" and not e["automatic"] for e in dump["ledger"])
    assert [b["BonusAmount"] for b in mturk.list_bonus_payments(HITId=small["HITId"])["BonusPayments"]] == ["0.02", "1.00"]


def test_hits_and_bonuses_the_available_balance_cannot_cover_are_refused(standin, mturk):
    assert post(standin, "/balance", balance="1.00") == (200, {"balance": "1.00"})
    error = refused(create, mturk=mturk, Reward="0.30", MaxAssignments=3)  # (0.30 + 0.06) x 3 = 1.08
    assert error["Code"] == "RequestError" and error["TurkErrorCode"] is None and "insufficient" in error["Message"]
    assert mturk.list_hits()["NumResults"] == 0
    hit = create(mturk, Reward="0.30", MaxAssignments=2)  # 0.72 held: 0.28 left
    assert mturk.get_account_balance()["OnHoldBalance"] == "0.72" and balance(mturk) == Decimal("0.28")
    error = refused(mturk.create_additional_assignments_for_hit, HITId=hit["HITId"], NumberOfAdditionalAssignments=1)
    assert "insufficient" in error["Message"]  # 0.36 more than the 0.28 available
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["MaxAssignments"] == 2
    assignment_id = work(standin, hit["HITId"], "AW1")
    post(standin, "/balance", balance="0.00")
    mturk.approve_assignment(AssignmentId=assignment_id)  # its money was held: the approval always goes through
    assert mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Approved"
    bonus = dict(WorkerId="AW1", AssignmentId=assignment_id, BonusAmount="0.10", Reason="Thanks")
    assert "insufficient" in refused(mturk.send_bonus, **bonus)["Message"]  # a bonus is not held: 0.12 > 0.00
    assert balance(mturk) == Decimal("0.00") and [e["kind"] for e in state(standin)["ledger"]] == ["reward"]


def test_submitted_work_is_approved_and_charged_automatically_once_the_delay_has_passed(standin, mturk):
    hit = create(mturk, Reward="0.50", MaxAssignments=3, AutoApprovalDelayInSeconds=3 * DAY, LifetimeInSeconds=DAY)
    assignment_id = work(standin, hit["HITId"], "AW1")
    submitted = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert submitted["AutoApprovalTime"] == submitted["SubmitTime"] + timedelta(days=3)
    advance(standin, 3 * DAY - 60)
    assert mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Submitted"
    assert balance(mturk) == Decimal("9999.40")  # expired: its two unused places are released, the submitted one held
    assert state(standin)["total_charged"] == "0.00"
    advance(standin, 120)
    approved = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert approved["AssignmentStatus"] == "Approved" and approved["ApprovalTime"] == submitted["AutoApprovalTime"]
    assert balance(mturk) == Decimal("9999.40") and state(standin)["on_hold"] == "0.00"
    [entry] = state(standin)["ledger"]
    assert (entry["kind"], entry["amount"], entry["fee"], entry["automatic"]) == ("reward", "0.50", "0.10", True)
    # Approved is final: neither a rejection nor a second approval goes through.
    assert refused(mturk.reject_assignment, AssignmentId=assignment_id, RequesterFeedback="late")["Code"] == "RequestError"
    assert refused(mturk.approve_assignment, AssignmentId=assignment_id)["Code"] == "RequestError"
    assert balance(mturk) == Decimal("9999.40")


def test_the_clock_runs_time_scale_simulated_seconds_per_real_second():
    with StandIn(port=0, time_scale=36_000) as fast:
        mturk = boto_client(fast.url)
        hit = create(mturk, AutoApprovalDelayInSeconds=3600)
        assignment_id = work(fast, hit["HITId"], "AW1")
        time.sleep(0.2)  # 7,200 simulated seconds
        assert mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]["AssignmentStatus"] == "Approved"


# ------------------------------------------------------------------------------------------------ listing and counts


def test_only_submitted_approved_and_rejected_assignments_are_listed_page_by_page(standin, mturk):
    hit = create(mturk, MaxAssignments=6, AssignmentDurationInSeconds=600)
    abandoned = accept(standin, hit["HITId"], "AW6")
    advance(standin, 601)  # AW6 never submits: abandoned
    in_progress = accept(standin, hit["HITId"], "AW1")
    returned = accept(standin, hit["HITId"], "AW2")
    assert post(standin, "/worker/return", AssignmentId=returned)[0] == 200
    submitted = work(standin, hit["HITId"], "AW3")
    approved = work(standin, hit["HITId"], "AW4")
    rejected = work(standin, hit["HITId"], "AW5")
    mturk.approve_assignment(AssignmentId=approved)
    mturk.reject_assignment(AssignmentId=rejected, RequesterFeedback="Did not follow the instructions.")

    listed = mturk.list_assignments_for_hit(HITId=hit["HITId"], MaxResults=100)
    assert {(a["AssignmentId"], a["AssignmentStatus"]) for a in listed["Assignments"]} == {
        (submitted, "Submitted"), (approved, "Approved"), (rejected, "Rejected"),
    }
    only = mturk.list_assignments_for_hit(HITId=hit["HITId"], AssignmentStatuses=["Submitted"])["Assignments"]
    assert [a["AssignmentId"] for a in only] == [submitted]
    first = mturk.list_assignments_for_hit(HITId=hit["HITId"], MaxResults=2)
    second = mturk.list_assignments_for_hit(HITId=hit["HITId"], MaxResults=2, NextToken=first["NextToken"])
    assert first["NumResults"] == 2 and second["NumResults"] == 1 and "NextToken" not in second
    assert [a["AssignmentId"] for a in first["Assignments"] + second["Assignments"]] == [submitted, approved, rejected]
    for hidden in (in_progress, returned, abandoned):
        assert "does not exist" in refused(mturk.get_assignment, AssignmentId=hidden)["Message"]
    statuses = {a["AssignmentId"]: a["AssignmentStatus"] for a in state(standin)["assignments"]}
    assert (statuses[in_progress], statuses[returned], statuses[abandoned]) == ("Accepted", "Returned", "Abandoned")


def test_list_hits_pages_through_every_hit_with_the_platforms_own_pager(standin, mturk):
    created = [create(mturk, RequesterAnnotation=f"qapyr-hit-{n}")["HITId"] for n in range(12)]
    first = mturk.list_hits(MaxResults=5)
    assert first["NumResults"] == 5 and first["NextToken"]
    paged = list(MTurk(sandbox=True, client=mturk).pages("ListHITs", "HITs", MaxResults=5))
    assert [h["HITId"] for h in paged] == created
    assert paged[7]["RequesterAnnotation"] == "qapyr-hit-7" and paged[7]["HITStatus"] == "Assignable"


def test_get_hit_counts_follow_accepts_returns_abandonments_and_reviews(standin, mturk):
    hit = create(mturk, MaxAssignments=2, AssignmentDurationInSeconds=600)
    hit_id = hit["HITId"]
    assert (hit["HITStatus"], hit["MaxAssignments"], hit["NumberOfAssignmentsAvailable"]) == ("Assignable", 2, 2)
    first = accept(standin, hit_id, "AW1")
    assert counts(mturk, hit_id) == ("Assignable", 1, 1, 0)
    accept(standin, hit_id, "AW2")
    assert counts(mturk, hit_id) == ("Unassignable", 0, 2, 0)
    status, body = post(standin, "/worker/accept", HITId=hit_id, WorkerId="AW3")
    assert (status, body["reason"]) == (409, "full")
    assert post(standin, "/worker/return", AssignmentId=first)[0] == 200  # the place is free again
    assert counts(mturk, hit_id) == ("Assignable", 1, 1, 0)
    third = accept(standin, hit_id, "AW3")
    advance(standin, 300)
    assert submit(standin, third, [("label", "no")])[0] == 200
    assert counts(mturk, hit_id) == ("Unassignable", 0, 1, 0)
    advance(standin, 301)  # AW2 accepted 601 s ago with 600 s to work: abandoned, the place is free again
    assert counts(mturk, hit_id) == ("Assignable", 1, 0, 0)
    fourth = work(standin, hit_id, "AW4")
    assert counts(mturk, hit_id) == ("Reviewable", 0, 0, 0)  # every place submitted
    mturk.approve_assignment(AssignmentId=third)
    mturk.reject_assignment(AssignmentId=fourth, RequesterFeedback="Empty answer.")
    assert counts(mturk, hit_id) == ("Reviewable", 0, 0, 2)


# ------------------------------------------------------------------------------------------------ idempotency


def test_a_reused_create_hit_token_is_refused_with_the_first_request_id_and_no_hit_id(standin, mturk):
    first = mturk.create_hit(
        Title="Label it", Description="Label one thing.", Reward="0.50", MaxAssignments=3, LifetimeInSeconds=7 * DAY,
        AssignmentDurationInSeconds=600, Question=QUESTION.format(url=PAGE), UniqueRequestToken="qapyr-hit-1",
        RequesterAnnotation="qapyr-hit-1",
    )
    hit, first_request = first["HIT"], first["ResponseMetadata"]["RequestId"]
    error = refused(create, mturk=mturk, UniqueRequestToken="qapyr-hit-1", RequesterAnnotation="qapyr-hit-1")
    assert error["Code"] == "RequestError"
    assert error["TurkErrorCode"] == "AWS.MechanicalTurk.HitAlreadyExists"  # the one code CreateHIT's reference documents
    assert '"qapyr-hit-1" has already been processed' in error["Message"] and first_request in error["Message"]
    assert hit["HITId"] not in error["Message"]  # nothing to parse: the platform must read ListHITs
    assert [h["HITId"] for h in mturk.list_hits()["HITs"]] == [hit["HITId"]]
    advance(standin, DAY + 1)  # MTurk forgets a token after 24 hours: the same call makes a second HIT
    assert create(mturk, UniqueRequestToken="qapyr-hit-1")["HITId"] != hit["HITId"]
    assert mturk.list_hits()["NumResults"] == 2


def test_reused_bonus_and_extension_tokens_are_refused_without_a_code_and_pay_or_extend_once(standin, mturk):
    hit = create(mturk, MaxAssignments=2)
    assignment_id = work(standin, hit["HITId"], "AW1")
    mturk.approve_assignment(AssignmentId=assignment_id)
    bonus = dict(WorkerId="AW1", AssignmentId=assignment_id, BonusAmount="0.25", Reason="Well done", UniqueRequestToken="b-1")
    first_request = mturk.send_bonus(**bonus)["ResponseMetadata"]["RequestId"]
    error = refused(mturk.send_bonus, **bonus)
    assert error["Code"] == "RequestError" and error["TurkErrorCode"] is None  # no DuplicateRequest: MTurk documents none
    assert '"b-1" has already been processed' in error["Message"] and first_request in error["Message"]
    assert [(e["kind"], e["amount"]) for e in state(standin)["ledger"]] == [("reward", "0.50"), ("bonus", "0.25")]

    extend = dict(HITId=hit["HITId"], NumberOfAdditionalAssignments=2, UniqueRequestToken="x-1")
    mturk.create_additional_assignments_for_hit(**extend)
    error = refused(mturk.create_additional_assignments_for_hit, **extend)
    assert error["Code"] == "RequestError" and error["TurkErrorCode"] is None and '"x-1"' in error["Message"]
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["MaxAssignments"] == 4


def test_tokens_are_forgotten_after_24_hours_of_stand_in_time_so_a_late_retry_pays_twice(standin, mturk):
    hit = create(mturk, MaxAssignments=2)
    assignment_id = work(standin, hit["HITId"], "AW1")
    mturk.approve_assignment(AssignmentId=assignment_id)
    bonus = dict(WorkerId="AW1", AssignmentId=assignment_id, BonusAmount="1.20", Reason="Well done", UniqueRequestToken="b-7")
    mturk.send_bonus(**bonus)
    advance(standin, 23 * 3600)
    assert "already been processed" in refused(mturk.send_bonus, **bonus)["Message"]  # 23 h: still known
    advance(standin, 2 * 3600)  # 25 h after the first: forgotten, as MTurk warns
    mturk.send_bonus(**bonus)
    paid = mturk.list_bonus_payments(AssignmentId=assignment_id)["BonusPayments"]
    assert [b["BonusAmount"] for b in paid] == ["1.20", "1.20"]
    assert [(e["kind"], e["total"]) for e in state(standin)["ledger"]][1:] == [("bonus", "1.44"), ("bonus", "1.44")]

    extend = dict(HITId=hit["HITId"], NumberOfAdditionalAssignments=1, UniqueRequestToken="x-7")
    mturk.create_additional_assignments_for_hit(**extend)
    advance(standin, 25 * 3600)
    mturk.create_additional_assignments_for_hit(**extend)
    assert mturk.get_hit(HITId=hit["HITId"])["HIT"]["MaxAssignments"] == 4


def test_update_expiration_is_idempotent_on_hit_and_time_and_expires_or_extends(standin, mturk):
    hit_id = create(mturk, MaxAssignments=3)["HITId"]
    past = datetime(2015, 1, 1, tzinfo=timezone.utc)
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=past)
    assert counts(mturk, hit_id) == ("Reviewable", 0, 0, 0)
    status, body = post(standin, "/worker/accept", HITId=hit_id, WorkerId="AW1")
    assert (status, body["reason"]) == (409, "expired")
    error = refused(mturk.update_expiration_for_hit, HITId=hit_id, ExpireAt=past)  # the same (HIT, ExpireAt) again
    assert error["Code"] == "RequestError" and hit_id in error["Message"] and "already been processed" in error["Message"]

    later = (datetime.now(timezone.utc) + timedelta(days=2)).replace(microsecond=0)
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=later)
    hit = mturk.get_hit(HITId=hit_id)["HIT"]
    assert (hit["HITStatus"], hit["NumberOfAssignmentsAvailable"], hit["Expiration"]) == ("Assignable", 3, later)
    accept(standin, hit_id, "AW1")
    assert refused(mturk.update_expiration_for_hit, HITId=hit_id, ExpireAt=later)["Code"] == "RequestError"
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=later + timedelta(seconds=1))  # another time: a new call


# ------------------------------------------------------------------------------------------------ HIT rules


def test_a_hit_created_with_fewer_than_10_assignments_cannot_reach_10(standin, mturk):
    nine = create(mturk, MaxAssignments=9)["HITId"]
    error = refused(mturk.create_additional_assignments_for_hit, HITId=nine, NumberOfAdditionalAssignments=1)
    assert error["TurkErrorCode"] == "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease" and "10" in error["Message"]
    assert mturk.get_hit(HITId=nine)["HIT"]["MaxAssignments"] == 9
    five = create(mturk, MaxAssignments=5)["HITId"]
    mturk.create_additional_assignments_for_hit(HITId=five, NumberOfAdditionalAssignments=4)
    assert mturk.get_hit(HITId=five)["HIT"]["MaxAssignments"] == 9
    ten = create(mturk, MaxAssignments=10)["HITId"]
    mturk.create_additional_assignments_for_hit(HITId=ten, NumberOfAdditionalAssignments=5)
    assert counts(mturk, ten) == ("Assignable", 15, 0, 0)


def test_additional_assignments_reopen_a_full_hit_but_an_expired_one_only_with_a_new_expiration(standin, mturk):
    full = create(mturk, MaxAssignments=1)["HITId"]
    work(standin, full, "AW1")
    assert counts(mturk, full) == ("Reviewable", 0, 0, 0)
    mturk.create_additional_assignments_for_hit(HITId=full, NumberOfAdditionalAssignments=1)
    assert counts(mturk, full) == ("Assignable", 1, 0, 0)
    accept(standin, full, "AW2")

    expired = create(mturk, MaxAssignments=1, LifetimeInSeconds=3600)["HITId"]
    advance(standin, 3601)
    mturk.create_additional_assignments_for_hit(HITId=expired, NumberOfAdditionalAssignments=2)
    assert counts(mturk, expired) == ("Reviewable", 0, 0, 0)
    assert post(standin, "/worker/accept", HITId=expired, WorkerId="AW1")[1]["reason"] == "expired"
    mturk.update_expiration_for_hit(HITId=expired, ExpireAt=datetime.now(timezone.utc) + timedelta(days=5))
    assert counts(mturk, expired) == ("Assignable", 3, 0, 0)


def test_delete_hit_is_refused_until_the_hit_is_expired_and_every_assignment_reviewed(standin, mturk):
    hit_id = create(mturk, MaxAssignments=3)["HITId"]
    error = refused(mturk.delete_hit, HITId=hit_id)
    assert error["Code"] == "RequestError" and "Assignable" in error["Message"]
    working = accept(standin, hit_id, "AW1")
    done = work(standin, hit_id, "AW2")
    mturk.update_expiration_for_hit(HITId=hit_id, ExpireAt=datetime(2015, 1, 1, tzinfo=timezone.utc))
    assert "in progress" in refused(mturk.delete_hit, HITId=hit_id)["Message"]  # AW1 is still working
    assert submit(standin, working, [("label", "late")])[0] == 200  # an expired HIT's accepted work can still come in
    assert "not approved or rejected" in refused(mturk.delete_hit, HITId=hit_id)["Message"]
    mturk.approve_assignment(AssignmentId=working)
    mturk.reject_assignment(AssignmentId=done, RequesterFeedback="No.")
    mturk.delete_hit(HITId=hit_id)
    for call, params in (
        (mturk.get_hit, {"HITId": hit_id}),
        (mturk.list_assignments_for_hit, {"HITId": hit_id}),
        (mturk.delete_hit, {"HITId": hit_id}),
        (mturk.approve_assignment, {"AssignmentId": done, "OverrideRejection": True}),
    ):
        assert "does not exist" in refused(call, **params)["Message"]
    assert mturk.list_hits()["NumResults"] == 0


def test_mturks_automatic_deletion_forgets_a_hit_after_paying_what_is_due(standin, mturk):
    hit_id = create(mturk, MaxAssignments=2)["HITId"]
    assignment_id = work(standin, hit_id, "AW1")
    status, _ = post(standin, "/dispose", HITId=hit_id)
    assert status == 200
    assert "does not exist" in refused(mturk.get_hit, HITId=hit_id)["Message"]
    assert "does not exist" in refused(mturk.list_assignments_for_hit, HITId=hit_id)["Message"]
    assert [(e["AssignmentId"], e["automatic"]) for e in state(standin)["ledger"]] == [(assignment_id, True)]
    assert balance(mturk) == Decimal("9999.40")

    old = create(mturk)["HITId"]
    advance(standin, 120 * DAY)  # MTurk deletes HITs 120 days on
    assert "does not exist" in refused(mturk.get_hit, HITId=old)["Message"]
    assert [h["Deleted"] for h in state(standin)["hits"]] == [True, True]


def test_a_rejection_can_be_overridden_within_30_days_of_the_submission_only(standin, mturk):
    hit_id = create(mturk, MaxAssignments=3)["HITId"]
    first, second = work(standin, hit_id, "AW1"), work(standin, hit_id, "AW2")
    for assignment_id in (first, second):
        mturk.reject_assignment(AssignmentId=assignment_id, RequesterFeedback="Wrong labels.")
    assert refused(mturk.reject_assignment, AssignmentId=first, RequesterFeedback="again")["Code"] == "RequestError"
    assert "OverrideRejection" in refused(mturk.approve_assignment, AssignmentId=first)["Message"]
    advance(standin, 29 * DAY)
    mturk.approve_assignment(AssignmentId=first, OverrideRejection=True, RequesterFeedback="Sorry, our mistake.")
    approved = mturk.get_assignment(AssignmentId=first)["Assignment"]
    assert (approved["AssignmentStatus"], approved["RequesterFeedback"]) == ("Approved", "Sorry, our mistake.")
    assert balance(mturk) == Decimal("9999.40")
    advance(standin, 2 * DAY)  # 31 days after the submission
    assert "30 days" in refused(mturk.approve_assignment, AssignmentId=second, OverrideRejection=True)["Message"]
    assert mturk.get_assignment(AssignmentId=second)["Assignment"]["AssignmentStatus"] == "Rejected"
    assert balance(mturk) == Decimal("9999.40")


# ------------------------------------------------------------------------------------------------ workers


def test_notify_workers_reports_workers_it_cannot_reach(standin, mturk):
    hit_id = create(mturk, MaxAssignments=5)["HITId"]
    mturk.approve_assignment(AssignmentId=work(standin, hit_id, "AW1"))
    work(standin, hit_id, "AW2")  # submitted, never reviewed
    mturk.reject_assignment(AssignmentId=work(standin, hit_id, "AW5"), RequesterFeedback="No.")
    mturk.approve_assignment(AssignmentId=work(standin, hit_id, "AW4"))
    mturk.create_worker_block(WorkerId="AW4", Reason="Spam")
    failures = mturk.notify_workers(
        Subject="New HITs", MessageText="More work is up.", WorkerIds=["AW1", "AW2", "AW3", "AW4", "AW5"]
    )["NotifyWorkersFailureStatuses"]
    assert [(f["WorkerId"], f["NotifyWorkersFailureCode"]) for f in failures] == [
        ("AW2", "HardFailure"), ("AW3", "HardFailure"), ("AW4", "HardFailure"),
    ]
    assert "blocked" in failures[2]["NotifyWorkersFailureMessage"]
    [sent] = state(standin)["notifications"]
    assert (sent["Subject"], sent["delivered"]) == ("New HITs", ["AW1", "AW5"])


def test_qualification_requirements_decide_who_may_discover_preview_and_accept(standin, mturk):
    qualified = mturk.create_qualification_type(
        Name="qapyr Label it (label)", Description="Passed the test.", QualificationTypeStatus="Active"
    )["QualificationType"]["QualificationTypeId"]
    error = refused(mturk.create_qualification_type, Name="qapyr Label it (label)", Description="d", QualificationTypeStatus="Active")
    assert "already" in error["Message"].lower()
    hidden = {"ActionsGuarded": "DiscoverPreviewAndAccept"}
    regular = create(mturk, QualificationRequirements=[{"QualificationTypeId": qualified, "Comparator": "Exists", **hidden}])["HITId"]
    test = create(mturk, QualificationRequirements=[{"QualificationTypeId": qualified, "Comparator": "DoesNotExist", **hidden}])["HITId"]

    def discovered(worker_id):
        return {h["HITId"] for h in get(standin, "/worker/hits", WorkerId=worker_id)[1]["HITs"]}

    assert discovered("AW1") == {test}
    assert get(standin, "/worker/preview", HITId=regular, WorkerId="AW1")[0] == 403
    status, body = post(standin, "/worker/accept", HITId=regular, WorkerId="AW1")
    assert (status, body["reason"]) == (403, "qualification")
    mturk.associate_qualification_with_worker(QualificationTypeId=qualified, WorkerId="AW1", IntegerValue=1, SendNotification=False)
    assert discovered("AW1") == {regular}
    accept(standin, regular, "AW1")
    assert post(standin, "/worker/accept", HITId=test, WorkerId="AW1")[0] == 403  # qualified workers skip the test
    accept(standin, test, "AW2")
    mturk.disassociate_qualification_from_worker(QualificationTypeId=qualified, WorkerId="AW1", Reason="Failed gold")
    assert discovered("AW1") == {test}


def test_comparators_on_scores_locales_and_the_accept_only_guard(standin, mturk):
    scored = mturk.create_qualification_type(Name="score", Description="A score.", QualificationTypeStatus="Active")
    scored = scored["QualificationType"]["QualificationTypeId"]
    rate = create(mturk, QualificationRequirements=[
        {"QualificationTypeId": PERCENT_APPROVED, "Comparator": "GreaterThanOrEqualTo", "IntegerValues": [95]}])["HITId"]
    locale = create(mturk, QualificationRequirements=[
        {"QualificationTypeId": LOCALE, "Comparator": "In", "LocaleValues": [{"Country": "US"}, {"Country": "CA"}],
         "ActionsGuarded": "PreviewAndAccept"}])["HITId"]
    equal = create(mturk, QualificationRequirements=[
        {"QualificationTypeId": scored, "Comparator": "EqualTo", "IntegerValues": [2], "ActionsGuarded": "Accept"}])["HITId"]

    assert post(standin, "/worker/qualification", WorkerId="AW9", QualificationTypeId=PERCENT_APPROVED, IntegerValue=90)[0] == 200
    assert post(standin, "/worker/qualification", WorkerId="AW9", QualificationTypeId=LOCALE, LocaleValue={"Country": "DE"})[0] == 200
    mturk.associate_qualification_with_worker(QualificationTypeId=scored, WorkerId="AW9", IntegerValue=1)
    for hit_id in (rate, locale, equal):
        assert post(standin, "/worker/accept", HITId=hit_id, WorkerId="AW9")[0] == 403
    # "Accept" guards accepting only: AW9 still finds and previews that HIT; "PreviewAndAccept" hides the page too.
    assert equal in {h["HITId"] for h in get(standin, "/worker/hits", WorkerId="AW9")[1]["HITs"]}
    status, preview = get(standin, "/worker/preview", HITId=equal, WorkerId="AW9")
    assert status == 200 and "assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE" in preview["URL"]
    assert get(standin, "/worker/preview", HITId=locale, WorkerId="AW9")[0] == 403
    # A new worker has MTurk's defaults (100% approval, US); a score of 2 meets EqualTo 2.
    accept(standin, rate, "AW1")
    accept(standin, locale, "AW1")
    mturk.associate_qualification_with_worker(QualificationTypeId=scored, WorkerId="AW9", IntegerValue=2)
    accept(standin, equal, "AW9")
    assert mturk.get_qualification_score(QualificationTypeId=scored, WorkerId="AW9")["Qualification"]["IntegerValue"] == 2


def test_a_blocked_worker_can_neither_find_nor_accept_the_requesters_hits(standin, mturk):
    hit_id = create(mturk)["HITId"]
    mturk.create_worker_block(WorkerId="AW1", Reason="Random answers")
    status, body = post(standin, "/worker/accept", HITId=hit_id, WorkerId="AW1")
    assert (status, body["reason"]) == (403, "blocked")
    assert get(standin, "/worker/hits", WorkerId="AW1")[1]["HITs"] == []
    assert mturk.list_worker_blocks()["WorkerBlocks"] == [{"WorkerId": "AW1", "Reason": "Random answers"}]
    mturk.delete_worker_block(WorkerId="AW1", Reason="Appeal granted")
    accept(standin, hit_id, "AW1")


def test_accept_frames_the_external_question_as_mturk_does_and_refuses_a_second_place(standin, mturk):
    hit_id = create(mturk, Question=QUESTION.format(url="https://studio.example.org/work/mturk/hit/?lang=en&amp;v=2"))["HITId"]
    status, body = post(standin, "/worker/accept", HITId=hit_id, WorkerId="AW1")
    assert status == 200
    url = urllib.parse.urlsplit(body["URL"])
    assert (url.scheme, url.netloc, url.path) == ("https", "studio.example.org", "/work/mturk/hit/")
    assert urllib.parse.parse_qs(url.query) == {
        "lang": ["en"], "v": ["2"], "assignmentId": [body["AssignmentId"]], "hitId": [hit_id],
        "turkSubmitTo": [standin.url], "workerId": ["AW1"],
    }
    assert post(standin, "/worker/accept", HITId=hit_id, WorkerId="AW1")[1]["reason"] == "already"
    assert post(standin, "/worker/return", AssignmentId=body["AssignmentId"])[0] == 200
    again = accept(standin, hit_id, "AW1")  # a returned HIT may be accepted again, under a new assignment id
    assert again != body["AssignmentId"]
    assert post(standin, "/worker/accept", HITId="3NOSUCHHIT", WorkerId="AW1")[0] == 404
    assert post(standin, "/worker/accept", HITId=hit_id, WorkerId="not a worker")[0] == 400


def test_external_submit_stores_the_form_as_question_form_answers(standin, mturk):
    hit_id = create(mturk, AutoApprovalDelayInSeconds=DAY)["HITId"]
    assignment_id = accept(standin, hit_id, "AW1")  # the platform never heard of this assignment: MTurk records it anyway
    fields = [("label", "Zürich <b>&</b>"), ("comment", ""), ("span", "3"), ("span", "7")]
    status, page = submit(standin, assignment_id, fields)
    assert status == 200 and assignment_id in page
    assignment = mturk.get_assignment(AssignmentId=assignment_id)["Assignment"]
    assert assignment["AssignmentStatus"] == "Submitted" and assignment["WorkerId"] == "AW1"
    assert assignment["AutoApprovalTime"] - assignment["SubmitTime"] == timedelta(days=1)
    root = ET.fromstring(assignment["Answer"])
    ns = {"q": "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"}
    assert root.tag == f"{{{ns['q']}}}QuestionFormAnswers"
    stored = [(a.findtext("q:QuestionIdentifier", namespaces=ns), a.findtext("q:FreeText", namespaces=ns) or "")
              for a in root.findall("q:Answer", ns)]
    assert stored == fields  # every field but assignmentId, in order

    assert submit(standin, assignment_id, [("label", "again")])[0] == 400  # submitted already
    assert submit(standin, "3NOSUCHASSIGNMENT", [("label", "x")])[0] == 400
    assert submit(standin, "ASSIGNMENT_ID_NOT_AVAILABLE", [("label", "x")])[0] == 400
    returned = accept(standin, hit_id, "AW2")
    post(standin, "/worker/return", AssignmentId=returned)
    assert submit(standin, returned, [("label", "x")])[0] == 400
    late = accept(standin, hit_id, "AW3")
    advance(standin, 601)  # past the assignment's 600 s: abandoned
    assert submit(standin, late, [("label", "x")])[0] == 400
    assert [a["AssignmentId"] for a in mturk.list_assignments_for_hit(HITId=hit_id)["Assignments"]] == [assignment_id]


# ------------------------------------------------------------------------------------------------ state, control, command


def test_the_state_is_kept_in_its_file_and_loaded_at_the_next_start(tmp_path):
    path = tmp_path / "standin.json"
    with StandIn(port=0, state_path=path, balance="50.00") as first:
        mturk = boto_client(first.url)
        hit_id = create(mturk, UniqueRequestToken="qapyr-hit-7", AutoApprovalDelayInSeconds=2 * DAY)["HITId"]
        done = work(first, hit_id, "AW1", [("label", "cat")])
        waiting = work(first, hit_id, "AW2", [("label", "dog")])
        mturk.approve_assignment(AssignmentId=done)
        mturk.send_bonus(WorkerId="AW1", AssignmentId=done, BonusAmount="0.10", Reason="Good", UniqueRequestToken="bonus-1")
        mturk.create_worker_block(WorkerId="AW3", Reason="Spam")
        advance(first, DAY / 2)
        before = state(first)
    assert json.loads(path.read_text())["balance"] == "49.28"  # 50 - (0.50 + 0.10) - (0.10 + 0.02)

    with StandIn(port=0, state_path=path, balance="99.00") as second:  # a saved state wins over the balance
        mturk = boto_client(second.url)
        after = state(second)
        assert after["now"] >= before["now"]  # the clock never runs backwards
        assert (after["balance"], after["ledger"], after["hits"][0]["HITId"]) == ("49.28", before["ledger"], hit_id)
        listed = {a["AssignmentId"]: a for a in mturk.list_assignments_for_hit(HITId=hit_id)["Assignments"]}
        assert listed[done]["AssignmentStatus"] == "Approved" and "<FreeText>cat</FreeText>" in listed[done]["Answer"]
        assert "already been processed" in refused(create, mturk=mturk, UniqueRequestToken="qapyr-hit-7")["Message"]
        assert post(second, "/worker/accept", HITId=hit_id, WorkerId="AW3")[1]["reason"] == "blocked"
        advance(second, 1.5 * DAY)  # the rest of AW2's two days: approved automatically after the restart
        assert mturk.get_assignment(AssignmentId=waiting)["Assignment"]["AssignmentStatus"] == "Approved"
        assert state(second)["balance"] == "48.68"  # 49.28 - (0.50 + 0.10)
        assert balance(mturk) == Decimal("48.08")  # the third place (0.60) is still held


def test_control_api_sets_the_balance_and_resets_everything(standin, mturk):
    create(mturk)
    assert post(standin, "/balance", balance="12.34")[1] == {"balance": "12.34"}
    assert balance(mturk) == Decimal("12.34")
    assert post(standin, "/balance", balance="lots")[0] == 400
    assert post(standin, "/advance", seconds=-5)[0] == 400
    assert post(standin, "/reset")[0] == 200
    assert (mturk.list_hits()["NumResults"], balance(mturk)) == (0, Decimal("10000.00"))
    dump = state(standin)
    assert {"balance", "ledger", "total_charged", "hits", "assignments", "bonuses", "qualification_types",
            "qualifications", "blocks", "notifications", "now"} <= set(dump)
    assert get(standin, "/nothing")[0] == 404


def test_mturk_endpoint_url_sends_the_platforms_client_to_the_stand_in(standin, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    assert make_boto3_client(True).meta.endpoint_url == "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
    post(standin, "/balance", balance="77.70")
    with override_settings(MTURK_ENDPOINT_URL=standin.url, MTURK_MAX_RETRIES=0):
        for sandbox in (True, False):
            assert make_boto3_client(sandbox).meta.endpoint_url == standin.url
            assert MTurk(sandbox=sandbox, client=make_boto3_client(sandbox)).call("GetAccountBalance")["AvailableBalance"] == "77.70"


def test_the_management_command_runs_the_stand_in_until_interrupted():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mturk_standin", "--port", "0", "--balance", "42.00", "--quiet",
         "--fault", "GetAccountBalance:service_fault:1", "--seed", "3"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        url, lines, deadline = None, [], time.monotonic() + 60
        while url is None and time.monotonic() < deadline and process.poll() is None:
            if select.select([process.stdout], [], [], 1)[0]:
                lines.append(process.stdout.readline())
                if lines[-1].startswith("MTurk stand-in listening on "):
                    url = lines[-1].split(" on ", 1)[1].strip()
        assert url, "".join(lines)
        client = boto3.client(
            "mturk", region_name="us-east-1", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="x",
            config=Config(retries={"total_max_attempts": 1}),
        )
        assert refused(client.get_account_balance)["Code"] == "ServiceFault"  # the fault given on the command line
        assert client.get_account_balance()["AvailableBalance"] == "42.00"
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0, out
        assert "MTurk stand-in stopped." in out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
