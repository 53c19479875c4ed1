"""Issue 30, items 1 and 6: calls carrying a UniqueRequestToken are never re-sent blind, and one retry policy.

MTurk forgets a request token after 24 hours.  A CreateHIT, SendBonus or
CreateAdditionalAssignmentsForHIT whose token was first sent more than 23 h
ago, or whose answer was ambiguous, is settled by reading MTurk's records
before anything is sent again.  botocore makes exactly one HTTP request per
attempt; the platform's own backoff is the only retry.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from datetime import timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.exceptions import ReadTimeoutError
from django.utils import timezone

from hits.mturk import client as mturk_client
from hits.mturk.client import MTurk, MTurkError, make_boto3_client
from hits.mturk.models import MTurkHIT, MTurkRequest
from hits.mturk.publishing import publish_batch, request_token
from hits.mturk.sync import settle_batch
from hits.mturk.tokens import renewed_token
from hits.payments import pay_bonus
from tests.mturk.conftest import make_hit
from tests.mturk.test_publishing import expected_create, public_url  # noqa: F401  (autouse settings)
from tests.mturk.test_sync import mturk_work, published  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

DAY = 24 * 3600


def sent_long_ago(key: str, operation: str, hours: float = 25) -> MTurkRequest:
    """A call recorded as sent once, ``hours`` ago, whose answer the platform never saw."""
    return MTurkRequest.objects.create(
        key=key, operation=operation, token=key, sends=1, first_sent_at=timezone.now() - timedelta(hours=hours)
    )


# --- item 6: botocore's retries are off -------------------------------------------------------------------


class Counting(BaseHTTPRequestHandler):
    """Answers every request with one MTurk error (``server.answer``: status, __type) and counts them."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, error_type = self.server.answer
        self.server.count += 1
        body = json.dumps({"__type": error_type, "Message": f"{error_type} (request {self.server.count})"}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("x-amzn-RequestId", f"req-{self.server.count}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def counting_server(monkeypatch, settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    server.count, server.answer = 0, (500, "ServiceFault")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    settings.MTURK_ENDPOINT_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()
    server.server_close()


def test_a_fault_is_retried_only_by_the_platform_one_request_per_try(counting_server, settings):
    """ServiceFault (HTTP 500) on every request, MTURK_MAX_RETRIES=5: exactly 6 HTTP requests for one call."""
    settings.MTURK_MAX_RETRIES = 5
    mturk = MTurk(sandbox=True, client=make_boto3_client(True), sleep=lambda seconds: None)
    with pytest.raises(MTurkError) as error:
        mturk.call("GetAccountBalance")
    assert counting_server.count == 6
    assert error.value.code == "ServiceFault" and error.value.transient and error.value.attempts == 6


def test_a_refusal_is_one_request(counting_server, settings):
    """RequestError (HTTP 400) is not retried by anyone: exactly 1 HTTP request."""
    settings.MTURK_MAX_RETRIES = 5
    counting_server.answer = (400, "RequestError")
    mturk = MTurk(sandbox=True, client=make_boto3_client(True), sleep=lambda seconds: None)
    with pytest.raises(MTurkError) as error:
        mturk.call("GetAccountBalance")
    assert counting_server.count == 1
    assert error.value.code == "RequestError" and not error.value.transient and error.value.attempts == 1


# --- item 1 on the stand-in: CreateHIT -----------------------------------------------------------------------


def advance(server, seconds: float) -> None:
    """Move the stand-in's clock with its documented control endpoint."""
    request = urllib.request.Request(
        f"{server.url}/_standin/advance", data=json.dumps({"seconds": seconds}).encode(),
        headers={"Content-Type": "application/json"}, method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def hits_on(server) -> list[dict]:
    """Every HIT the stand-in's account has, read as the platform reads them (ListHITs)."""
    return list(MTurk(sandbox=True, client=make_boto3_client(True)).pages("ListHITs", "HITs", MaxResults=100))


def test_create_hit_retried_after_25_hours_adopts_the_hit_made_the_first_time(standin, mturk_batch, task_type):
    """The first CreateHIT went through but its reply was lost; 25 h later (MTurk has forgotten the token) the
    platform reads ListHITs, finds the HIT by its annotation and records it: the account keeps one HIT."""
    hit = make_hit(mturk_batch, task_type)
    first = make_boto3_client(True).create_hit(**expected_create(hit))["HIT"]
    sent_long_ago(request_token(hit), "CreateHIT")
    advance(standin, 25 * 3600)
    report = publish_batch(mturk_batch)
    assert report.published == 1 and report.recovered == 1
    assert MTurkHIT.objects.get(hit=hit).mturk_hit_id == first["HITId"]
    assert [h["HITId"] for h in hits_on(standin)] == [first["HITId"]]
    assert MTurkRequest.objects.get(key=request_token(hit)).outcome == "found"


def test_create_hit_that_did_not_go_through_is_sent_once_with_a_new_token(standin, mturk_batch, task_type):
    """25 h after a CreateHIT whose reply was lost, ListHITs shows no HIT with the annotation: it is created once,
    with a new token (the old one may be forgotten) and the same annotation."""
    hit = make_hit(mturk_batch, task_type)
    sent_long_ago(request_token(hit), "CreateHIT")
    advance(standin, 25 * 3600)
    assert publish_batch(mturk_batch).published == 1
    [on_mturk] = hits_on(standin)
    assert on_mturk["RequesterAnnotation"] == request_token(hit)
    assert MTurkHIT.objects.get(hit=hit).mturk_hit_id == on_mturk["HITId"]
    request = MTurkRequest.objects.get(key=request_token(hit))
    assert (request.token, request.renewals, request.sends) == (renewed_token(request_token(hit), 1), 1, 1)
    assert publish_batch(mturk_batch).published == 0 and len(hits_on(standin)) == 1


def lose_replies(monkeypatch, operation: str):
    """Every ``operation`` call reaches the stand-in and takes effect, then its reply is lost (read timeout)."""
    factory = mturk_client.client_factory

    def make(sandbox):
        boto = factory(sandbox)
        real = getattr(boto, operation)

        def lost(**params):
            real(**params)
            raise ReadTimeoutError(endpoint_url=boto.meta.endpoint_url)

        setattr(boto, operation, lost)
        return boto

    monkeypatch.setattr(mturk_client, "client_factory", make)


@pytest.mark.parametrize("retries", [0, 2])
def test_a_lost_create_hit_reply_is_settled_by_reading_mturks_records(standin, monkeypatch, mturk_batch, task_type, settings, retries):
    """CreateHIT takes effect at the stand-in, then the reply is lost (with retries: the retried calls are
    refused as repeats, in whatever words): the platform reads ListHITs at once and records the HIT."""
    settings.MTURK_MAX_RETRIES = retries
    hits = [make_hit(mturk_batch, task_type) for _ in range(2)]
    lose_replies(monkeypatch, "create_hit")
    report = publish_batch(mturk_batch)
    assert report.published == 2 and report.recovered == 2
    on_mturk = {h["RequesterAnnotation"]: h["HITId"] for h in hits_on(standin)}
    assert len(on_mturk) == 2
    assert {MTurkHIT.objects.get(hit=hit).mturk_hit_id for hit in hits} == {on_mturk[request_token(hit)] for hit in hits}


# --- item 1 with exact calls: SendBonus and CreateAdditionalAssignmentsForHIT ---------------------------------


def bonus_params(bonus, token: str) -> dict:
    return {"WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "A1", "Reason": "Extra effort", "UniqueRequestToken": token}


def test_bonus_retried_after_25_hours_is_found_and_not_paid_twice(stubbed, published, mturk_batch):  # noqa: F811
    """ListBonusPayments on the assignment shows the bonus: booked as paid, and no SendBonus at all."""
    [a1] = mturk_work(published, 1)
    bonus = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    sent_long_ago(bonus.request_token, "SendBonus")
    stubbed.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "A1", "Reason": "Extra effort"},
    ]}, {"AssignmentId": "A1", "MaxResults": 100})
    assert settle_batch(mturk_batch).bonuses == 1
    bonus.refresh_from_db()
    assert bonus.state == "paid"


def test_bonus_not_paid_the_first_time_is_sent_once_with_a_new_token(stubbed, published, mturk_batch):  # noqa: F811
    """A bonus of another amount does not count: the bonus is sent once, with a new token."""
    [a1] = mturk_work(published, 1)
    bonus = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    sent_long_ago(bonus.request_token, "SendBonus")
    stubbed.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "W1", "BonusAmount": "0.50", "AssignmentId": "A1", "Reason": "Extra effort"},
    ]}, {"AssignmentId": "A1", "MaxResults": 100})
    stubbed.add_response("send_bonus", {}, bonus_params(bonus, renewed_token(bonus.request_token, 1)))
    assert settle_batch(mturk_batch).bonuses == 1
    assert settle_batch(mturk_batch).bonuses == 0  # paid: nothing more is sent
    bonus.refresh_from_db()
    assert bonus.state == "paid"


def test_two_equal_bonuses_count_against_the_ledger(stubbed, published, mturk_batch):  # noqa: F811
    """Two bonuses of the same amount and reason: MTurk lists one, which the ledger already booked for the first,
    so the second (25 h old, reply lost) did not go through and is sent."""
    [a1] = mturk_work(published, 1)
    first = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    stubbed.add_response("send_bonus", {}, bonus_params(first, first.request_token))
    assert settle_batch(mturk_batch).bonuses == 1
    second = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    sent_long_ago(second.request_token, "SendBonus")
    stubbed.add_response("list_bonus_payments", {"NumResults": 1, "BonusPayments": [
        {"WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "A1", "Reason": "Extra effort"},
    ]}, {"AssignmentId": "A1", "MaxResults": 100})
    stubbed.add_response("send_bonus", {}, bonus_params(second, renewed_token(second.request_token, 1)))
    assert settle_batch(mturk_batch).bonuses == 1


def test_a_bonus_sent_23_hours_ago_is_resent_with_its_token(stubbed, published, mturk_batch):  # noqa: F811
    """Under 23 h MTurk still remembers the token: the same token goes again (MTurk refuses a repeat itself)."""
    [a1] = mturk_work(published, 1)
    bonus = pay_bonus(a1, Decimal("1.00"), "Extra effort")
    sent_long_ago(bonus.request_token, "SendBonus", hours=22)
    stubbed.add_response("send_bonus", {}, bonus_params(bonus, bonus.request_token))
    assert settle_batch(mturk_batch).bonuses == 1


def grow_by_one(published) -> str:  # noqa: F811
    from hits.services import add_places

    add_places(published.hit, 1)
    return f"{published.request_token}-4"


def test_extra_places_retried_after_25_hours_are_not_added_twice(stubbed, published, mturk_batch):  # noqa: F811
    """GetHIT shows MaxAssignments 4 (the first CreateAdditionalAssignmentsForHIT went through): recorded, no call."""
    key = grow_by_one(published)
    sent_long_ago(key, "CreateAdditionalAssignmentsForHIT")
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("get_hit", {"HIT": {"HITId": "HIT1", "MaxAssignments": 4}}, {"HITId": "HIT1"})
    assert publish_batch(mturk_batch).grown == 1
    assert MTurkHIT.objects.get(pk=published.pk).max_assignments == 4
    assert publish_batch(mturk_batch).grown == 0


def test_extra_places_that_did_not_go_through_are_asked_once_with_a_new_token(stubbed, published, mturk_batch):  # noqa: F811
    key = grow_by_one(published)
    sent_long_ago(key, "CreateAdditionalAssignmentsForHIT")
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_response("get_hit", {"HIT": {"HITId": "HIT1", "MaxAssignments": 3}}, {"HITId": "HIT1"})
    stubbed.add_response("create_additional_assignments_for_hit", {}, {
        "HITId": "HIT1", "NumberOfAdditionalAssignments": 1, "UniqueRequestToken": renewed_token(key, 1),
    })
    assert publish_batch(mturk_batch).grown == 1
    assert MTurkHIT.objects.get(pk=published.pk).max_assignments == 4


def test_a_refused_create_hit_of_a_token_sent_before_is_settled_by_listing(stubbed, mturk_batch, task_type):
    """A CreateHIT sent before (reply lost) is refused with any message and no TurkErrorCode: ListHITs finds it."""
    hit = make_hit(mturk_batch, task_type)
    MTurkRequest.objects.create(key=request_token(hit), operation="CreateHIT", token=request_token(hit), sends=1, first_sent_at=timezone.now())
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message="Request 77ab could not be completed.", expected_params=expected_create(hit),
    )
    stubbed.add_response("list_hits", {"NumResults": 1, "HITs": [
        {"HITId": "3DDD", "HITTypeId": "T", "RequesterAnnotation": request_token(hit)},
    ]}, {"MaxResults": 100})
    assert publish_batch(mturk_batch).recovered == 1
    assert MTurkHIT.objects.get(hit=hit).mturk_hit_id == "3DDD"


def test_a_first_refusal_reads_nothing(stubbed, mturk_batch, task_type):
    """A token never sent before, refused on its only try: a plain refusal (nothing can have been made), so the
    account's HITs are not listed."""
    hit = make_hit(mturk_batch, task_type)
    stubbed.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    stubbed.add_client_error(
        "create_hit", service_error_code="RequestError", http_status_code=400,
        service_message="Reward is too low.", expected_params=expected_create(hit),
    )
    report = publish_batch(mturk_batch)  # stubbed: a ListHITs call would fail as unexpected
    assert report.published == 0 and [r["hit"] for r in report.refused] == [hit.pk]
    assert not MTurkHIT.objects.exists()
    hit.refresh_from_db()
    assert "too low" in hit.publish_error


def test_staff_see_each_tokened_call_and_how_it_was_settled(admin_client):
    sent_long_ago("qapyr-k-7", "CreateHIT")
    page = admin_client.get("/admin/hits/mturkrequest/").content.decode()
    assert "qapyr-k-7" in page and "CreateHIT" in page


# --- UpdateExpirationForHIT: a repeat is refused without a documented code; GetHIT tells ------------------------


def refused_expiry(stubbed, expire_at) -> None:
    stubbed.add_client_error(
        "update_expiration_for_hit", service_error_code="RequestError", http_status_code=400,
        service_message="The request has been processed before. (1700000000000)",
        expected_params={"HITId": "HIT1", "ExpireAt": expire_at},
    )


def test_a_refused_reopening_counts_when_gethit_shows_the_hit_open(stubbed, published, mturk_batch):  # noqa: F811
    from datetime import datetime, timezone as dt_timezone

    from hits.mturk.sync import sync_batch
    from tests.mturk.test_sync import listing

    MTurkHIT.objects.filter(pk=published.pk).update(expired_at=timezone.now())
    now = datetime(2030, 5, 1, 12, 0, tzinfo=dt_timezone.utc)
    listing(stubbed, [])
    refused_expiry(stubbed, now + timedelta(days=7))
    stubbed.add_response("get_hit", {"HIT": {"HITId": "HIT1", "Expiration": now + timedelta(days=7)}}, {"HITId": "HIT1"})
    report = sync_batch(mturk_batch, now=now)
    assert (report.reopened, report.failed) == (1, 0)
    assert MTurkHIT.objects.get(pk=published.pk).expired_at is None


def test_a_refused_expiry_fails_when_gethit_shows_the_hit_still_running(stubbed, published, mturk_batch):  # noqa: F811
    from hits.models import Batch
    from hits.mturk.sync import past_expiry, sync_batch
    from tests.mturk.test_sync import listing

    Batch.objects.filter(pk=mturk_batch.pk).update(state=Batch.State.PAUSED)
    listing(stubbed, [])
    refused_expiry(stubbed, past_expiry(1))
    stubbed.add_response("get_hit", {"HIT": {"HITId": "HIT1", "Expiration": timezone.now() + timedelta(days=6)}}, {"HITId": "HIT1"})
    report = sync_batch(mturk_batch)
    assert (report.expired, report.failed) == (0, 1)
    published.refresh_from_db()
    assert published.expired_at is None and "processed before" in published.last_error
