"""The local Prolific stand-in (hits.prolific.standin), driven over HTTP by the platform's own client.

One stand-in serves the module (the ``prolific_standin`` fixture empties it before each test); participants
act through its control API or its participant pages, and time passes through its clock, never by sleeping.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.management import load_command_class

from hits.prolific.client import Prolific, ProlificError
from hits.prolific.standin import Refused

ROOT = Path(__file__).resolve().parents[2]
CODE = "C0DE42"
STUDY_URL = ("https://studio.example.org/prolific/start/?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
             "&SESSION_ID={{%SESSION_ID%}}")
REASON = ("The answers do not follow the instructions of the task: several questions were left empty and the "
          "attention check was failed.")


@pytest.fixture
def api(prolific_standin):
    slept: list[float] = []
    client = Prolific(sleep=slept.append)  # the settings the fixture set: the stand-in's URL and token
    client.slept = slept
    yield client
    client.close()


def study_body(**overrides) -> dict:
    body = {
        "name": "Label it", "internal_name": "qapyramid:test:1", "description": "Label one thing.",
        "external_study_url": STUDY_URL, "prolific_id_option": "url_parameters",
        "completion_codes": [{"code": CODE, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}],
        "total_available_places": 3, "estimated_completion_time": 10, "maximum_allowed_time": 30,
        "reward": 150, "device_compatibility": ["desktop"],
    }
    body.update(overrides)
    return body


def published(api, **overrides) -> dict:
    study = api.request("POST", "/studies/", json=study_body(**overrides))
    return api.request("POST", f"/studies/{study['id']}/transition/", json={"action": "PUBLISH"})


def participant(n: int) -> str:
    return f"{n:024x}"


def started(standin, study, n: int) -> dict:
    return standin.control("POST", "participants/", {"study_id": study["id"], "participant_id": participant(n)})


def completed(standin, study, n: int) -> dict:
    who = started(standin, study, n)
    standin.control("POST", f"submissions/{who['session_id']}/complete/", {"code": CODE})
    return who


def balance(api) -> dict:
    workspace = next(api.paginate("/workspaces/"))
    assert api.get("/users/me/")["current_workspace_id"] == workspace["id"]
    return api.get(f"/workspaces/{workspace['id']}/balance/")


# ------------------------------------------------------------------------------------------- auth, listings


def test_token_is_required_and_checked(prolific_standin):
    with httpx.Client(base_url=prolific_standin.url) as http:
        for headers in ({}, {"Authorization": "Token wrong"}, {"Authorization": "Bearer test-token"}):
            answer = http.get("/api/v1/studies/", headers=headers)
            assert answer.status_code == 401
            assert answer.json()["error"]["status"] == 401
        ok = http.get("/api/v1/studies/", headers={"Authorization": "Token test-token"})
        assert ok.status_code == 200 and ok.json()["results"] == []
    with pytest.raises(ProlificError) as refused:
        Prolific(token="not-it").get("/users/me/")
    assert refused.value.status == 401 and not refused.value.ambiguous


def test_listings_are_paginated_with_next_links(api):
    for i in range(12):
        api.request("POST", "/studies/", json=study_body(internal_name=f"s{i}"))
    first = api.get("/studies/")
    assert len(first["results"]) == 5 and first["meta"]["count"] == 12
    assert first["_links"]["next"]["href"].endswith("page=2")
    names = [s["internal_name"] for s in api.paginate("/studies/")]
    assert names == [f"s{i}" for i in range(12)]
    assert api.get("/studies/", {"page": 3})["_links"]["next"]["href"] is None
    assert len(list(api.paginate("/studies/", {"page_size": 100}))) == 12
    assert api.get("/studies/", {"page_size": 100})["_links"]["next"]["href"] is None


def test_errors_are_shaped_like_prolifics(api):
    with pytest.raises(ProlificError) as refused:
        api.request("POST", "/studies/", json=study_body(reward=None, completion_codes=None))
    error = refused.value.detail["error"]
    assert refused.value.status == 400 and error["status"] == 400 and error["title"]
    assert set(error["detail"]) == {"reward", "completion_codes"}
    with pytest.raises(ProlificError) as missing:
        api.get("/studies/0123456789abcdef01234567/")
    assert missing.value.status == 404 and "0123456789abcdef01234567" in missing.value.detail["error"]["detail"]
    with httpx.Client(base_url=api.base_url, headers={"Authorization": "Token test-token"}) as http:
        not_json = http.post("/api/v1/studies/", content=b"{nope")
        assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["detail"]
        assert http.delete("/api/v1/studies/").status_code == 405


# ------------------------------------------------------------------------------------------------ studies


def test_study_transitions_and_refusals(api, prolific_standin):
    study = api.request("POST", "/studies/", json=study_body())
    assert study["status"] == "UNPUBLISHED"
    path = f"/studies/{study['id']}/transition/"
    with pytest.raises(ProlificError) as refused:
        api.request("POST", path, json={"action": "PAUSE"})
    assert refused.value.status == 400 and "UNPUBLISHED" in str(refused.value)
    assert api.request("POST", path, json={"action": "PUBLISH"})["status"] == "ACTIVE"
    with pytest.raises(ProlificError):  # already there: refused, the caller reads the study
        api.request("POST", path, json={"action": "PUBLISH"})
    assert api.request("POST", path, json={"action": "PAUSE"})["status"] == "PAUSED"
    with pytest.raises(Refused) as paused:
        started(prolific_standin, study, 1)
    assert paused.value.status == 409 and "PAUSED" in str(paused.value)
    assert api.request("POST", path, json={"action": "START"})["status"] == "ACTIVE"
    completed(prolific_standin, study, 1)
    assert api.request("POST", path, json={"action": "STOP"})["status"] == "AWAITING REVIEW"
    submission = api.get(f"/studies/{study['id']}/submissions/")["results"][0]
    api.request("POST", f"/submissions/{submission['id']}/transition/", json={"action": "APPROVE"})
    assert api.get(f"/studies/{study['id']}/")["status"] == "COMPLETED"
    with pytest.raises(ProlificError):
        api.request("POST", path, json={"action": "STOP"})


def test_places_only_grow_and_a_full_study_awaits_review(api, prolific_standin):
    study = published(api, total_available_places=1)
    with pytest.raises(ProlificError) as fewer:
        api.request("PATCH", f"/studies/{study['id']}/", json={"total_available_places": 0})
    assert fewer.value.status == 400
    first = started(prolific_standin, study, 1)
    with pytest.raises(Refused) as full:
        started(prolific_standin, study, 2)
    assert full.value.status == 409 and "no free place" in str(full.value)
    prolific_standin.control("POST", f"submissions/{first['session_id']}/complete/", {"code": CODE})
    assert api.get(f"/studies/{study['id']}/")["status"] == "AWAITING REVIEW"
    assert api.request("PATCH", f"/studies/{study['id']}/", json={"total_available_places": 2})["status"] == "ACTIVE"
    started(prolific_standin, study, 2)


def test_publish_is_refused_when_the_balance_cannot_cover_rewards_and_fees(api, prolific_standin):
    # 3 places x (150 + 50 fee) = 600 cents: $5.99 is a cent short, $6.00 is enough.
    prolific_standin.control("POST", "balance/", {"balance": "5.99"})
    study = api.request("POST", "/studies/", json=study_body())
    with pytest.raises(ProlificError) as refused:
        api.request("POST", f"/studies/{study['id']}/transition/", json={"action": "PUBLISH"})
    assert refused.value.status == 400 and "600" in str(refused.value) and "599" in str(refused.value)
    prolific_standin.control("POST", "balance/", {"balance": "6.00"})
    api.request("POST", f"/studies/{study['id']}/transition/", json={"action": "PUBLISH"})
    assert balance(api)["available_balance"] == 0 and balance(api)["total_balance"] == 600


# ------------------------------------------------------------------------------------------- submissions


def test_participant_start_fills_the_study_url(api, prolific_standin):
    study = published(api)
    who = started(prolific_standin, study, 7)
    assert who["url"] == (f"https://studio.example.org/prolific/start/?PROLIFIC_PID={participant(7)}"
                          f"&STUDY_ID={study['id']}&SESSION_ID={who['session_id']}")
    with pytest.raises(Refused) as again:
        started(prolific_standin, study, 7)
    assert again.value.status == 409 and "already" in str(again.value)
    with pytest.raises(Refused) as forged:
        prolific_standin.control("POST", "participants/", {"study_id": study["id"], "participant_id": "A1B2"})
    assert forged.value.status == 400
    submission = api.get(f"/submissions/{who['session_id']}/")
    assert submission["status"] == "ACTIVE" and submission["participant"] == participant(7)


def test_submission_statuses_and_review_rules(api, prolific_standin):
    study = published(api, total_available_places=5)
    done, returned, late = (completed(prolific_standin, study, 1), started(prolific_standin, study, 2),
                            started(prolific_standin, study, 3))
    prolific_standin.control("POST", f"submissions/{returned['session_id']}/return/")
    prolific_standin.control("POST", f"submissions/{late['session_id']}/timeout/")
    with pytest.raises(Refused) as wrong_code:
        prolific_standin.control("POST", f"submissions/{started(prolific_standin, study, 4)['session_id']}/complete/",
                                 {"code": "NOPE"})
    assert wrong_code.value.status == 409
    statuses = {s["participant_id"]: s["status"] for s in api.paginate(f"/studies/{study['id']}/submissions/")}
    assert statuses == {participant(1): "AWAITING REVIEW", participant(2): "RETURNED", participant(3): "TIMED-OUT",
                        participant(4): "ACTIVE"}
    assert api.get(f"/submissions/{done['session_id']}/")["entered_code"] == CODE
    transition = f"/submissions/{returned['session_id']}/transition/"
    with pytest.raises(ProlificError) as not_waiting:
        api.request("POST", transition, json={"action": "APPROVE"})
    assert not_waiting.value.status == 400 and "RETURNED" in str(not_waiting.value)
    reject = f"/submissions/{done['session_id']}/transition/"
    for body, field in (({"action": "REJECT", "rejection_category": "LOW_EFFORT"}, "message"),
                        ({"action": "REJECT", "message": "too short", "rejection_category": "LOW_EFFORT"}, "message"),
                        ({"action": "REJECT", "message": REASON, "rejection_category": "BAD"}, "rejection_category")):
        with pytest.raises(ProlificError) as refused:
            api.request("POST", reject, json=body)
        assert field in refused.value.detail["error"]["detail"]
    body = {"action": "REJECT", "message": REASON, "rejection_category": "FAILED_INSTRUCTIONS"}
    assert api.request("POST", reject, json=body)["status"] == "REJECTED"
    assert api.request("POST", reject, json=body)["status"] == "REJECTED"  # the same again: ignored
    with pytest.raises(ProlificError):
        api.request("POST", reject, json={"action": "APPROVE"})
    # Returned, timed-out and rejected submissions freed their places: 1 taken (the active one) of 5.
    assert api.get(f"/studies/{study['id']}/")["places_taken"] == 1


def test_bulk_approve_is_all_or_nothing(api, prolific_standin):
    study = published(api)
    one, two, three = (completed(prolific_standin, study, n) for n in (1, 2, 3))
    with pytest.raises(ProlificError) as refused:
        api.request("POST", "/submissions/bulk-approve/",
                    json={"study_id": study["id"], "participant_ids": [participant(1), participant(9)]})
    assert participant(9) in str(refused.value)
    assert api.get(f"/submissions/{one['session_id']}/")["status"] == "AWAITING REVIEW"
    api.request("POST", "/submissions/bulk-approve/",
                json={"study_id": study["id"], "participant_ids": [participant(1), participant(2)]})
    api.request("POST", "/submissions/bulk-approve/", json={"submission_ids": [three["session_id"], two["session_id"]]})
    assert {s["status"] for s in api.paginate(f"/studies/{study['id']}/submissions/")} == {"APPROVED"}
    assert prolific_standin.state()["totals"]["rewards"] == 450


def test_active_submissions_time_out_with_the_clock(api, prolific_standin):
    study = published(api)  # maximum_allowed_time 30 minutes
    who = started(prolific_standin, study, 1)
    prolific_standin.control("POST", "clock/", {"advance_seconds": 29 * 60})
    assert api.get(f"/submissions/{who['session_id']}/")["status"] == "ACTIVE"
    prolific_standin.control("POST", "clock/", {"advance_seconds": 60})
    assert api.get(f"/submissions/{who['session_id']}/")["status"] == "TIMED-OUT"


# ------------------------------------------------------------------------------------------ money


def test_balance_and_fees_to_the_cent(api, prolific_standin):
    # Fee 33.33% rounded half up: 150 -> 50 (49.995), 125 -> 42 (41.6625).
    prolific_standin.control("POST", "balance/", {"balance": "20.00"})
    study = published(api, total_available_places=4, reward=125)
    assert balance(api) == {
        "currency_code": "USD", "total_balance": 2000, "available_balance": 2000 - 4 * 167,
        "balance_breakdown": balance(api)["balance_breakdown"],
        "available_balance_breakdown": balance(api)["available_balance_breakdown"],
    }
    who = completed(prolific_standin, study, 1)
    api.request("POST", f"/submissions/{who['session_id']}/transition/", json={"action": "APPROVE"})
    money = balance(api)
    assert money["total_balance"] == 2000 - 167 and money["available_balance"] == 2000 - 4 * 167
    api.request("POST", f"/studies/{study['id']}/transition/", json={"action": "STOP"})
    assert balance(api)["available_balance"] == 2000 - 167  # nothing awaits review: nothing held
    state = prolific_standin.state()
    assert state["paid"] == {participant(1): {"rewards": 125, "bonuses": 0}}
    assert state["totals"] == {"rewards": 125, "bonuses": 0, "fees": 42, "vat": 0, "spent": 167}


def test_bonus_is_created_then_paid_asynchronously_and_a_second_pay_pays_again(api, prolific_standin):
    study = published(api)
    one, two = completed(prolific_standin, study, 1), completed(prolific_standin, study, 2)
    csv = f"{participant(1)},0.40\n{two['session_id']},1.20"
    bonus = api.request("POST", "/submissions/bonus-payments/", json={"study_id": study["id"], "csv_bonuses": csv})
    # 160 cents, fee 53.328 -> 53.
    assert (bonus["amount"], bonus["fees"], bonus["vat"], bonus["total_amount"]) == (160, 53, 0, 213)
    before = balance(api)
    api.request("POST", f"/bulk-bonus-payments/{bonus['id']}/pay/")
    assert api.get(f"/submissions/{one['session_id']}/")["bonus_payments"] == []  # not yet: paid asynchronously
    assert balance(api)["total_balance"] == before["total_balance"]
    assert balance(api)["available_balance"] == before["available_balance"] - 213
    prolific_standin.control("POST", "clock/", {"advance_seconds": 61})
    assert api.get(f"/submissions/{one['session_id']}/")["bonus_payments"] == [40]
    assert balance(api)["total_balance"] == before["total_balance"] - 213
    api.request("POST", f"/bulk-bonus-payments/{bonus['id']}/pay/")  # not idempotent: pays again
    prolific_standin.control("POST", "clock/", {"advance_seconds": 61})
    assert api.get(f"/submissions/{two['session_id']}/")["bonus_payments"] == [120, 120]
    state = prolific_standin.state()
    assert state["paid"][participant(1)]["bonuses"] == 80 and state["totals"]["bonuses"] == 320
    assert state["totals"]["fees"] == 2 * 53
    assert balance(api)["total_balance"] == before["total_balance"] - 2 * 213


def test_a_studys_list_shows_submissions_as_the_reference_does_and_only_the_submission_its_bonus_payments(api, prolific_standin):
    """Prolific's reference: the study's list ("List study submissions", SubmissionShort) carries who, status, times
    and the code entered; ``bonus_payments`` are on the submission itself ("Retrieve a submission")."""
    study = published(api)
    who = completed(prolific_standin, study, 1)
    made = api.request("POST", "/submissions/bonus-payments/", json={"study_id": study["id"], "csv_bonuses": f"{participant(1)},0.40"})
    api.request("POST", f"/bulk-bonus-payments/{made['id']}/pay/")
    prolific_standin.control("POST", "clock/", {"advance_seconds": 61})
    (listed,) = api.paginate(f"/studies/{study['id']}/submissions/")
    assert set(listed) == {"id", "participant_id", "status", "started_at", "completed_at", "has_siblings", "study_code",
                           "return_requested"}
    assert (listed["id"], listed["participant_id"], listed["status"], listed["study_code"]) == (
        who["session_id"], participant(1), "AWAITING REVIEW", CODE)
    detail = api.get(f"/submissions/{who['session_id']}/")
    assert set(detail) == {"id", "started_at", "status", "study_id", "completed_at", "entered_code", "participant",
                           "parent_study_id", "bonus_payments", "return_requested"}
    assert (detail["participant"], detail["study_id"], detail["bonus_payments"]) == (participant(1), study["id"], [40])


def test_bonus_refusals_name_what_is_wrong(api, prolific_standin):
    study = published(api)
    completed(prolific_standin, study, 1)
    for csv, words in ((f"{participant(5)},1.00", participant(5)), (f"{participant(1)},1.234", "1.234"),
                       (f"{participant(1)};1.00", "line 1")):
        with pytest.raises(ProlificError) as refused:
            api.request("POST", "/submissions/bonus-payments/", json={"study_id": study["id"], "csv_bonuses": csv})
        assert refused.value.status == 400 and words in str(refused.value.detail)
    with pytest.raises(ProlificError) as unknown:
        api.request("POST", "/bulk-bonus-payments/0123456789abcdef01234567/pay/")
    assert unknown.value.status == 404
    bonus = api.request("POST", "/submissions/bonus-payments/",
                        json={"study_id": study["id"], "csv_bonuses": f"{participant(1)},3.00"})  # 300 + 100 fee
    money = balance(api)
    held = money["total_balance"] - money["available_balance"]  # the study's places
    prolific_standin.control("POST", "balance/", {"balance": f"{(held + 399) / 100:.2f}"})  # 399 cents available
    with pytest.raises(ProlificError) as short:
        api.request("POST", f"/bulk-bonus-payments/{bonus['id']}/pay/")
    assert short.value.status == 400 and "400" in str(short.value) and "399" in str(short.value)
    prolific_standin.control("POST", "clock/", {"advance_seconds": 3600})
    assert prolific_standin.state()["totals"]["bonuses"] == 0


# ------------------------------------------------------------------------------------------ faults


def test_lost_reply_performs_the_request_without_answering(api, prolific_standin):
    study = published(api)
    completed(prolific_standin, study, 1)
    bonus = api.request("POST", "/submissions/bonus-payments/",
                        json={"study_id": study["id"], "csv_bonuses": f"{participant(1)},1.00"})
    prolific_standin.control("POST", "faults/", {"method": "POST", "path": "/pay/$", "kind": "lost_reply"})
    with pytest.raises(ProlificError) as lost:
        api.request("POST", f"/bulk-bonus-payments/{bonus['id']}/pay/")
    assert lost.value.status is None and lost.value.ambiguous and lost.value.attempts == 1
    prolific_standin.control("POST", "clock/", {"advance_seconds": 61})
    assert prolific_standin.state()["paid"][participant(1)]["bonuses"] == 100  # it was paid all the same


def test_error_fault_does_nothing_and_throttle_is_honoured_by_the_client(api, prolific_standin):
    prolific_standin.control("POST", "faults/", {"method": "POST", "path": "^/api/v1/studies/$", "kind": "error",
                                                 "status": 502})
    with pytest.raises(ProlificError) as failed:
        api.request("POST", "/studies/", json=study_body())
    assert failed.value.status == 502 and failed.value.ambiguous
    assert api.get("/studies/")["results"] == []  # an error fault answers without doing anything
    prolific_standin.control("POST", "faults/", {"path": "^/api/v1/studies/$", "kind": "throttle", "times": 2,
                                                 "retry_after": 3})
    study = api.request("POST", "/studies/", json=study_body())  # 429 twice, then created once
    assert api.slept[-2:] == [3.0, 3.0]
    assert [s["id"] for s in api.paginate("/studies/")] == [study["id"]]
    assert prolific_standin.control("GET", "faults/")["faults"] == []


# ------------------------------------------------------------------------------------------ groups


def test_groups_and_filters_decide_who_may_start(api, prolific_standin):
    me = api.get("/users/me/")
    passed = api.request("POST", "/participant-groups/",
                         json={"name": "passed", "workspace_id": me["current_workspace_id"],
                               "participant_ids": [participant(1), participant(2)]})
    blocked = api.request("POST", "/participant-groups/", json={"name": "blocked", "workspace_id": me["current_workspace_id"]})
    members = f"/participant-groups/{blocked['id']}/participants/"
    api.request("POST", members, json={"participant_ids": [participant(2)]})
    api.request("POST", members, json={"participant_ids": [participant(2)]})  # repeat-safe
    assert [m["participant_id"] for m in api.paginate(members)] == [participant(2)]
    assert {g["name"] for g in api.paginate("/participant-groups/")} == {"passed", "blocked"}
    study = published(api, filters=[
        {"filter_id": "participant_group_allowlist", "selected_values": [passed["id"]]},
        {"filter_id": "participant_group_blocklist", "selected_values": [blocked["id"]]},
    ])
    started(prolific_standin, study, 1)
    for n, why in ((2, "blocklist"), (3, "allowlist")):
        with pytest.raises(Refused) as refused:
            started(prolific_standin, study, n)
        assert refused.value.status == 409 and why in str(refused.value)
    api.request("DELETE", members, json={"participant_ids": [participant(2)]})
    started(prolific_standin, study, 2)
    with pytest.raises(ProlificError) as unknown_group:
        api.request("POST", "/studies/", json=study_body(filters=[
            {"filter_id": "participant_group_allowlist", "selected_values": ["0" * 24]}]))
    assert "0" * 24 in str(unknown_group.value.detail)


# ------------------------------------------------------------------------------------------ participant pages


def test_participant_pages_start_and_complete(api, prolific_standin):
    study = published(api)
    with httpx.Client(base_url=prolific_standin.url) as browser:
        start = browser.get(f"/studies/{study['id']}/start", params={"participant_id": participant(4)})
        assert start.status_code == 302
        location = start.headers["location"]
        assert f"PROLIFIC_PID={participant(4)}" in location and f"STUDY_ID={study['id']}" in location
        session = location.rsplit("SESSION_ID=", 1)[1]
        wrong = browser.get("/submissions/complete", params={"cc": "WRONG"})
        assert wrong.status_code == 400 and "not valid" in wrong.text
        assert api.get(f"/submissions/{session}/")["status"] == "ACTIVE"
        done = browser.get("/submissions/complete", params={"cc": CODE})
        assert done.status_code == 200 and "Submission completed" in done.text
    submission = api.get(f"/submissions/{session}/")
    assert submission["status"] == "AWAITING REVIEW" and submission["entered_code"] == CODE
    stranger = httpx.get(prolific_standin.url + "/submissions/complete", params={"cc": CODE})
    assert stranger.status_code == 400 and "start the study" in stranger.text


def test_reset_empties_everything(api, prolific_standin):
    published(api)
    prolific_standin.control("POST", "faults/", {"path": "x", "kind": "error"})
    prolific_standin.control("POST", "reset/")
    state = prolific_standin.state()
    assert state["studies"] == [] and state["faults"] == [] and state["balance"]["total_balance"] == 1_000_000


# ------------------------------------------------------------------------------------------ the command


def test_command_help_and_a_real_start():
    # The command's own parser (ManagementUtility.execute() would run django.setup() again, pointing logging at this
    # test's captured stderr, which is closed after it: a later log line then killed the test run).
    out = load_command_class("hits", "prolific_standin").create_parser("manage.py", "prolific_standin").format_help()
    assert "--balance" in out and "--token" in out and "--settle-seconds" in out
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "manage.py", "prolific_standin", "--port", str(port), "--token", "tok",
                                "--balance", "12.50", "--quiet"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(4)]
        assert f"PROLIFIC_API_URL=http://127.0.0.1:{port}" in "".join(lines)
        assert "PROLIFIC_API_TOKEN=tok" in "".join(lines)
        with Prolific(f"http://127.0.0.1:{port}", "tok") as client:
            me = client.get("/users/me/")
            assert client.get(f"/workspaces/{me['current_workspace_id']}/balance/")["total_balance"] == 1250
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=20)
    assert process.returncode == 0 and "stopped" in out


def test_a_timed_out_submission_completes_late_only_while_nobody_took_its_place(api, prolific_standin):
    study = published(api, total_available_places=1)
    late = started(prolific_standin, study, 1)
    prolific_standin.control("POST", f"submissions/{late['session_id']}/timeout/")
    prolific_standin.control("POST", f"submissions/{late['session_id']}/complete/", {"code": CODE})
    assert api.get(f"/submissions/{late['session_id']}/")["status"] == "AWAITING REVIEW"
    other = published(api, total_available_places=1)
    gone = started(prolific_standin, other, 2)
    prolific_standin.control("POST", f"submissions/{gone['session_id']}/timeout/")
    started(prolific_standin, other, 3)  # the freed place is taken
    with pytest.raises(Refused) as refused:
        prolific_standin.control("POST", f"submissions/{gone['session_id']}/complete/", {"code": CODE})
    assert refused.value.status == 409 and api.get(f"/submissions/{gone['session_id']}/")["status"] == "TIMED-OUT"


# ------------------------------------------------------------------------------------------- currency and VAT


def test_a_gbp_workspace_states_its_currency_and_charges_vat_on_the_fee(gbp_standin):
    api = Prolific(sleep=lambda _: None)
    workspace = next(api.paginate("/workspaces/"))
    assert workspace["currency_code"] == "GBP"
    assert balance(api)["currency_code"] == "GBP"
    study = published(api, total_available_places=2, reward=150)
    assert study["currency_code"] == "GBP"
    # Fee 33.33% of 150 -> 50, VAT 20% of the fee -> 10: a place costs 210 pence.
    assert api.request("POST", "/study-cost-calculator/", json={"reward": 150, "total_available_places": 2}) == {
        "total_cost": 420, "rewards": 300, "fees": 100, "vat": 20, "currency_code": "GBP"}
    who = completed(gbp_standin, study, 1)
    api.request("POST", f"/submissions/{who['session_id']}/transition/", json={"action": "APPROVE"})
    bonus = api.request("POST", "/submissions/bonus-payments/",
                        json={"study_id": study["id"], "csv_bonuses": f"{participant(1)},1.60"})
    # 160 pence, fee 53.328 -> 53, VAT 10.6 -> 11.
    assert (bonus["amount"], bonus["fees"], bonus["vat"], bonus["total_amount"]) == (160, 53, 11, 224)
    api.request("POST", f"/bulk-bonus-payments/{bonus['id']}/pay/")
    gbp_standin.control("POST", "clock/", {"advance_seconds": 61})
    state = gbp_standin.state()
    assert state["currency"] == "GBP"
    assert state["totals"] == {"rewards": 150, "bonuses": 160, "fees": 103, "vat": 21, "spent": 434}
    assert balance(api)["total_balance"] == 1_000_000 - 434
    api.close()


def test_the_standin_refuses_a_currency_prolific_has_no_workspace_in():
    from hits.prolific.standin import ProlificStandIn

    with pytest.raises(ValueError, match="USD, GBP"):
        ProlificStandIn(currency="EUR")
    with pytest.raises(ValueError, match="VAT rate"):
        ProlificStandIn(vat_rate="1.5")
