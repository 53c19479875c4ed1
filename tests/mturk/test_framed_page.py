"""The HIT page inside MTurk's frame: preview, worker mapping, refusals and framing headers."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from django.urls import reverse

from hits.models import Assignment, Worker
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.services import available_hits
from tests.mturk.conftest import make_hit

pytestmark = pytest.mark.django_db

SUBMIT_TO = "https://workersandbox.mturk.com"


@pytest.fixture
def published(small_files, settings):
    """A launched QA campaign on the MTurk sandbox whose first generation HIT is on MTurk as HIT1."""
    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign

    settings.SUBMIT_RATE_LIMIT = "0/60"
    refs, sums = small_files
    campaign = import_campaign(name="Framed", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend="mturk-sandbox")
    campaign.refresh_from_db()
    launch_campaign(campaign)  # the publish hook waits for a commit that never comes in this test
    campaign.refresh_from_db()
    hit = campaign.batch.hits.order_by("pk").first()
    return MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token="t1", max_assignments=1, reward=Decimal("0.32"))


def open_page(client, remote_addr="127.0.0.1", **params):
    query = {"hitId": "HIT1", "assignmentId": "A1", "workerId": "W1", "turkSubmitTo": SUBMIT_TO}
    query.update(params)
    return client.get(reverse("mturk-hit"), {k: v for k, v in query.items() if v is not None}, REMOTE_ADDR=remote_addr)


def test_preview_is_read_only_and_takes_nothing(client, published):
    response = open_page(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE", workerId=None, turkSubmitTo=None)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="mturk-preview"' in html and 'id="submit"' not in html
    assert not Assignment.objects.exists()


def test_accepting_maps_the_mturk_worker_and_takes_the_hit(client, published):
    response = open_page(client)
    assert response.status_code == 200 and 'id="submit"' in response.content.decode()
    worker = Worker.objects.get(mturk_worker_id="W1")
    record = MTurkAssignment.objects.get(mturk_assignment_id="A1")
    assert record.assignment.worker == worker and record.assignment.hit == published.hit
    # Loading the page again (a reload inside MTurk) gives the same assignment, not a second one.
    assert open_page(client).status_code == 200
    assert Assignment.objects.count() == 1


def test_another_worker_id_is_refused(client, published):
    open_page(client)
    response = open_page(client, workerId="INTRUDER")
    assert response.status_code == 403 and b"another worker" in response.content
    record = MTurkAssignment.objects.get()
    post = client.post(reverse("mturk-hit"), {"hitId": "HIT1", "assignmentId": "A1", "workerId": "INTRUDER", "token": str(record.assignment.token), "q1": "Who opened?"})
    assert post.status_code == 403
    assert Assignment.objects.get().state == "assigned"


def test_a_post_without_the_pages_token_is_refused(client, published):
    open_page(client)
    for guess in ("guess", "ünïcode-guess", ""):
        post = client.post(reverse("mturk-hit"), {"hitId": "HIT1", "assignmentId": "A1", "workerId": "W1", "token": guess})
        assert post.status_code == 403
    assert Assignment.objects.get().state == "assigned"


def test_invalid_answers_are_shown_again_and_nothing_is_stored(client, published):
    open_page(client)
    record = MTurkAssignment.objects.get()
    post = client.post(reverse("mturk-hit"), {"hitId": "HIT1", "assignmentId": "A1", "workerId": "W1", "token": str(record.assignment.token)})
    assert post.status_code == 400 and b"errors-summary" in post.content
    assert Assignment.objects.get().state == "assigned"


@pytest.mark.parametrize(
    "params, status",
    [({"hitId": ""}, 400), ({"hitId": "NOSUCH"}, 404), ({"workerId": "w-1<script>"}, 400), ({"turkSubmitTo": "https://evil.example"}, 400)],
)
def test_bad_parameters_are_refused(client, published, params, status):
    assert open_page(client, **params).status_code == status
    assert not Assignment.objects.exists()


def test_only_the_mturk_pages_may_be_framed_and_only_by_mturk(client, published, django_user_model):
    framed = open_page(client, assignmentId="ASSIGNMENT_ID_NOT_AVAILABLE")
    assert "X-Frame-Options" not in framed
    policy = dict(part.strip().split(" ", 1) for part in framed["Content-Security-Policy"].split(";"))
    assert policy["frame-ancestors"] == "https://www.mturk.com https://worker.mturk.com https://workersandbox.mturk.com"
    assert policy["script-src"] == "'self'"  # the rest of the site's policy holds on the framed page too
    for url in ("/", "/accounts/login/", "/work/"):
        response = client.get(url)
        assert response["X-Frame-Options"] == "DENY", url
        assert "frame-ancestors 'none'" in response["Content-Security-Policy"], url


def test_local_workers_are_not_offered_mturk_hits(published, task_type, local_batch):
    worker = Worker.objects.create(external_id="local")
    generation = published.hit.task_type
    assert not available_hits(worker, generation).exists()
    assert available_hits(worker, generation, via_mturk=True).exists()
    local = make_hit(local_batch, task_type)
    assert list(available_hits(worker, task_type)) == [local]


def test_mturk_worker_whose_id_is_taken_by_an_imported_worker_still_gets_one(client, published):
    Worker.objects.create(external_id="mturk:W1")  # an imported annotator who happens to carry that name
    assert open_page(client).status_code == 200
    assert Worker.objects.get(mturk_worker_id="W1").external_id == "mturk:W1-2"


def test_taking_places_is_rate_limited_per_client(client, published, settings, pinned_rate_window):
    settings.SUBMIT_RATE_LIMIT = "1/60"
    address = f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"  # a fresh window, also on a shared Redis
    assert open_page(client, address).status_code == 200
    assert open_page(client, address).status_code == 200  # the same assignment again: no new place taken, not counted
    assert open_page(client, address, assignmentId="A2", workerId="W2").status_code == 429
    assert Assignment.objects.count() == 1


# --- nothing from the framed page counts before MTurk confirms it (issue 17) --------------------


def _submit(client, assignment_id="A1", worker_id="W1"):
    page = open_page(client, assignmentId=assignment_id, workerId=worker_id)
    assert page.status_code == 200
    record = MTurkAssignment.objects.get(mturk_assignment_id=assignment_id)
    done = client.post(reverse("mturk-hit"), {
        "hitId": "HIT1", "assignmentId": assignment_id, "workerId": worker_id, "token": str(record.assignment.token),
        "q1": _question(record.assignment.hit), "q1_a1": _first_word(record.assignment.hit),
    })
    assert done.status_code == 200, done.content[:400]
    return MTurkAssignment.objects.select_related("assignment__hit").get(pk=record.pk)


def _question(hit):
    from annotation.models import Predicate

    # The server refuses a question without the HIT's verb.
    return f"Who {Predicate.objects.get(pk=hit.payload['predicate']).text} something?"


def _first_word(hit):
    from annotation.models import Predicate

    return Predicate.objects.select_related("sentence").get(pk=hit.payload["predicate"]).sentence.text.split()[0]


def _listing(stub, items):
    stub.add_response("list_assignments_for_hit", {"NumResults": len(items), "Assignments": [
        {"AssignmentId": a, "WorkerId": w, "HITId": "HIT1", "AssignmentStatus": "Submitted"} for a, w in items
    ]}, {"HITId": "HIT1", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})


def test_a_forged_submission_never_counts_and_its_place_is_freed(client, published, stubbed, settings):
    """Made-up assignment and worker ids for a known HIT: the answers are stored but pending (no QA pair, no
    verification HIT); MTurk never lists them, and once the grace has passed it says it has no such
    assignment: the submission is discarded, logged, and the place is free for a real worker."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import ContentUnit
    from hits.models import HIT
    from hits.mturk.sync import sync_batch

    settings.MTURK_CONFIRM_GRACE = 600
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    batch = published.hit.batch
    HIT.objects.filter(batch=batch).exclude(pk=published.hit_id).delete()  # only HIT1 is on MTurk in this test
    forged = _submit(client, "FORGED01", "NOBODY1")
    assert forged.assignment.state == "pending" and not ContentUnit.objects.exists()
    assert HIT.objects.filter(batch=batch).count() == 1  # no verification HIT for it
    _listing(stubbed, [])
    assert sync_batch(batch).discarded == 0  # within the grace: MTurk may not have it listed yet
    Assignment.objects.filter(pk=forged.assignment_id).update(submitted_at=timezone.now() - timedelta(seconds=601))
    _listing(stubbed, [])
    stubbed.add_client_error("get_assignment", service_error_code="RequestError", http_status_code=400,
                             service_message="Assignment FORGED01 does not exist.",
                             modeled_fields={"TurkErrorCode": "AWS.MechanicalTurk.AssignmentDoesNotExist"},
                             expected_params={"AssignmentId": "FORGED01"})
    report = sync_batch(batch)
    assert report.discarded == 1 and report.confirmed == 0
    assignment = Assignment.objects.get(pk=forged.assignment_id)
    assert assignment.state == "discarded" and "no assignment FORGED01" in assignment.review_message
    hit = HIT.objects.get(pk=published.hit_id)
    assert (hit.n_taken, hit.n_submitted, hit.state) == (0, 0, "open")
    assert not ContentUnit.objects.exists()


def test_a_submission_mturk_lists_for_another_worker_is_discarded(client, published, stubbed, settings):
    from annotation.models import ContentUnit
    from hits.models import HIT
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    claimed = _submit(client, "A7", "IMPOSTOR")
    _listing(stubbed, [("A7", "REALWORKER")])  # the assignment id is real, but it is someone else's
    report = sync_batch(published.hit.batch)
    assert (report.discarded, report.confirmed) == (1, 0)
    assert Assignment.objects.get(pk=claimed.assignment_id).state == "discarded"
    assert not ContentUnit.objects.exists()


def test_a_submission_mturk_lists_for_the_same_worker_counts(client, published, stubbed, settings):
    from annotation.models import ContentUnit
    from hits.models import HIT
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    genuine = _submit(client, "A1", "W1")
    _listing(stubbed, [("A1", "W1")])
    report = sync_batch(published.hit.batch)
    assert (report.confirmed, report.discarded) == (1, 0)
    assert Assignment.objects.get(pk=genuine.assignment_id).state == "submitted"
    assert ContentUnit.objects.count() == 1
    assert HIT.objects.get(pk=published.hit_id).state == "completed"
    assert HIT.objects.filter(batch=published.hit.batch, task_type__slug="verification").count() == 1


# --- places returned or abandoned on MTurk (issue 17) ----------------------------------------------


def test_an_arrival_never_frees_a_place_on_its_own_word(client, published, stubbed):
    """W1 holds the only place.  Anyone can open the page with made-up ids, so an arrival at a full HIT neither
    asks MTurk nor frees W1's place (the Stubber would fail on any call): MTurk hands out the HIT's places, so
    the arrival is let in beyond them (``HIT.overbook``)."""
    from hits.models import HIT

    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    assert open_page(client, assignmentId="FAKE1", workerId="FORGER1").status_code == 200
    assert Assignment.objects.get(worker__mturk_worker_id="W1").state == "assigned"
    assert HIT.objects.get(pk=published.hit_id).n_taken == 2


def test_made_up_ids_holding_every_place_do_not_keep_a_real_worker_out(client, published, stubbed, settings):
    """Issue 27: made-up ids take the HIT's only place (a page opened) and more (a page submitted).  A worker MTurk
    gave the HIT to still gets the form, their work is the one the sync confirms and the HIT completes with it;
    the made-up ones never count."""
    from django.test import Client

    from annotation.models import ContentUnit
    from hits.models import HIT
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    forger = Client()
    assert open_page(forger, remote_addr="10.9.8.7", assignmentId="FORGED01", workerId="NOBODY1").status_code == 200
    _submit(forger, "FORGED02", "NOBODY2")
    assert HIT.objects.get(pk=published.hit_id).n_taken == 2  # more than its one place
    real = open_page(client, assignmentId="REAL0001", workerId="REALW1")
    assert real.status_code == 200 and 'id="submit"' in real.content.decode()
    genuine = _submit(client, "REAL0001", "REALW1")
    _listing(stubbed, [("REAL0001", "REALW1")])
    report = sync_batch(published.hit.batch)
    assert report.confirmed == 1
    assert Assignment.objects.get(pk=genuine.assignment_id).state == "submitted"
    hit = HIT.objects.get(pk=published.hit_id)
    assert (hit.state, hit.n_submitted) == ("completed", 1)
    states = dict(MTurkAssignment.objects.values_list("mturk_assignment_id", "assignment__state"))
    assert states == {"FORGED01": "assigned", "FORGED02": "pending", "REAL0001": "submitted"}
    assert list(ContentUnit.objects.values_list("author__mturk_worker_id", flat=True)) == ["REALW1"]


def test_the_sync_never_evicts_a_worker_still_working_on_a_count_made_up_ids_inflate(client, published, stubbed, settings):
    """W1 works on the HIT; made-up ids open it after them.  MTurk's count of work in progress cannot tell which
    place here is not MTurk's, so the sync frees none (it used to free the longest-held ones beyond the count:
    W1's): it asks MTurk nothing about the count (the Stubber fails on any call but the listing), and W1's work
    is stored and confirmed."""
    from django.test import Client

    from hits.models import HIT
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    for n in (1, 2):
        assert open_page(Client(), remote_addr="10.9.8.7", assignmentId=f"FAKE{n}", workerId=f"FORGER{n}").status_code == 200
    _listing(stubbed, [])
    sync_batch(published.hit.batch)
    assert dict(MTurkAssignment.objects.values_list("mturk_assignment_id", "assignment__state")) == {
        "A1": "assigned", "FAKE1": "assigned", "FAKE2": "assigned",
    }
    _submit(client, "A1", "W1")
    _listing(stubbed, [("A1", "W1")])
    assert sync_batch(published.hit.batch).confirmed == 1
    assert MTurkAssignment.objects.get(mturk_assignment_id="A1").assignment.state == "submitted"


def test_work_posted_straight_to_mturk_after_opening_the_page_is_rejected_and_its_place_freed(client, published, stubbed, settings):
    """W1 opened our page (a place held here) but posted to MTurk's externalSubmit directly: MTurk has work we
    never stored.  It is rejected like any unknown submission, the place here is freed, and MTurk is given
    the place back (it never offers a rejected assignment's place again)."""
    from hits.models import HIT
    from hits.mturk.models import MTurkUnknownSubmission
    from hits.mturk.sync import UNKNOWN_SUBMISSION_FEEDBACK, sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    _listing(stubbed, [("A1", "W1")])
    stubbed.add_response("reject_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": UNKNOWN_SUBMISSION_FEEDBACK})
    report = sync_batch(published.hit.batch)
    assert report.unknown == 1 and report.unknown_rejected == 1 and report.failed == 0
    assert Assignment.objects.get().state == "returned" and HIT.objects.get(pk=published.hit_id).n_taken == 0
    assert MTurkUnknownSubmission.objects.get().mturk_assignment_id == "A1"
    assert MTurkHIT.objects.get(pk=published.pk).lost_places == 1


def test_work_mturk_paid_without_our_record_is_booked_in_the_ledger(client, published, stubbed, settings):
    """MTurk auto-approved work our page never stored, before any rejection reached it: the ledger books the
    reward and MTurk's fee as paid, once, so it matches what the account was charged."""
    from decimal import Decimal

    from hits.models import HIT, LedgerEntry
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    stubbed.add_response("list_assignments_for_hit", {"NumResults": 1, "Assignments": [
        {"AssignmentId": "A1", "WorkerId": "W1", "HITId": "HIT1", "AssignmentStatus": "Approved"}
    ]}, {"HITId": "HIT1", "AssignmentStatuses": ["Submitted", "Approved", "Rejected"], "MaxResults": 100})
    sync_batch(published.hit.batch)
    paid = dict(LedgerEntry.objects.filter(state="paid").values_list("kind", "amount"))
    assert paid == {"reward": Decimal("0.32"), "fee": Decimal("0.06")}


def test_a_submission_after_the_campaign_is_cancelled_is_refused_and_shows_the_text_back(client, published):
    """Issue 19, item 4 on MTurk's frame: as on the local page, the worker's text comes back with the refusal."""
    from annotation.services.pipeline import cancel_campaign
    from hits.models import HIT

    open_page(client)
    record = MTurkAssignment.objects.get()
    hit = record.assignment.hit
    cancel_campaign(hit.batch.campaign)
    hits_before = HIT.objects.count()
    question = _question(hit) + " <typed & kept>"
    post = client.post(reverse("mturk-hit"), {
        "hitId": "HIT1", "assignmentId": "A1", "workerId": "W1", "token": str(record.assignment.token),
        "q1": question, "q1_a1": _first_word(hit),
    })
    assert post.status_code == 409
    text = post.content.decode()
    assert "was cancelled by its researchers" in text and "return this HIT on MTurk" in text
    assert 'id="refused"' in text and "What you wrote is shown below." in text
    assert "&lt;typed &amp; kept&gt;" in text  # the worker's own words, escaped
    assert 'id="submit"' not in text  # nothing to send again
    assert "frame-ancestors" in post["Content-Security-Policy"] and "https://" in post["Content-Security-Policy"]
    assignment = Assignment.objects.get()
    assert assignment.state == "assigned" and assignment.answers in (None, {}) and assignment.submitted_at is None
    assert HIT.objects.count() == hits_before
    assert not HIT.objects.filter(batch=hit.batch, state="open").exists()


def test_a_nul_character_in_an_answer_is_refused_inside_the_frame_with_the_text_shown_back(client, published):
    open_page(client)
    record = MTurkAssignment.objects.get()
    post = client.post(reverse("mturk-hit"), {
        "hitId": "HIT1", "assignmentId": "A1", "workerId": "W1", "token": str(record.assignment.token),
        "q1": "Who opened\x00 it?", "q1_a1": "The mayor",
    })
    assert post.status_code == 400
    text = post.content.decode()
    assert "Nothing was saved or submitted" in text and "Who opened it?" in text and ">The mayor</pre>" in text
    assert str(record.assignment.token) not in text and "\x00" not in text
    # MTurk's frame may show it (the default policy would leave the frame blank).
    assert "https://" in post["Content-Security-Policy"] and "X-Frame-Options" not in post
    assert Assignment.objects.get().state == "assigned"


# --- one place, one MTurk assignment: a made-up assignmentId cannot take a worker's place over (issue 27) -----


def test_a_made_up_assignment_id_for_a_workers_place_gets_no_form_and_rewrites_nothing(client, published):
    """Knowing a worker's id and the HIT id is not enough: a cookieless client with a made-up assignmentId never
    sees the place's form token (it gets a place of its own, with its own token), and A1 stays bound to its place."""
    from django.test import Client

    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    record = MTurkAssignment.objects.get()
    attacker = Client()  # no cookie, another address
    forged = open_page(attacker, remote_addr="10.9.8.7", assignmentId="FORGED1", workerId="W1")
    assert forged.status_code == 200
    text = forged.content.decode()
    assert str(record.assignment.token) not in text
    own = MTurkAssignment.objects.get(mturk_assignment_id="FORGED1")
    assert own.assignment_id != record.assignment_id and str(own.assignment.token) in text
    assert MTurkAssignment.objects.get(mturk_assignment_id="A1").assignment_id == record.assignment_id
    # The worker's own page still works (and still carries its token).
    again = open_page(client, assignmentId="A1", workerId="W1")
    assert again.status_code == 200 and str(record.assignment.token) in again.content.decode()


def test_the_forgers_post_is_refused_and_the_workers_own_post_is_accepted(client, published, stubbed, settings):
    """... and the sync then confirms the worker's own work under the id MTurk lists for them (it used to
    discard it: the stored id had been rewritten to the forger's)."""
    from django.test import Client

    from hits.models import HIT
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()

    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    record = MTurkAssignment.objects.get()
    attacker = Client()
    open_page(attacker, remote_addr="10.9.8.7", assignmentId="FORGED1", workerId="W1")
    hit = record.assignment.hit
    answers = {"q1": _question(hit), "q1_a1": _first_word(hit)}
    for token in ("", "guess", str(record.assignment.token)):  # even with the real token, the made-up id is refused
        post = attacker.post(reverse("mturk-hit"), {"hitId": "HIT1", "assignmentId": "FORGED1", "workerId": "W1", "token": token, **answers})
        assert post.status_code == 403
    assert set(Assignment.objects.values_list("state", flat=True)) == {"assigned"}
    own = client.post(reverse("mturk-hit"), {"hitId": "HIT1", "assignmentId": "A1", "workerId": "W1", "token": str(record.assignment.token), **answers})
    assert own.status_code == 200
    assignment = Assignment.objects.get(pk=record.assignment_id)
    assert assignment.state == "pending" and assignment.mturk.mturk_assignment_id == "A1"
    _listing(stubbed, [("A1", "W1")])
    report = sync_batch(published.hit.batch)
    # The worker's work counts; the place the made-up id opened in their name is discarded.
    assert (report.confirmed, report.discarded) == (1, 1)
    states = dict(MTurkAssignment.objects.values_list("mturk_assignment_id", "assignment__state"))
    assert states == {"A1": "submitted", "FORGED1": "discarded"}


def test_a_made_up_id_cannot_take_over_a_place_whose_work_is_stored(client, published):
    """After the worker's submission is stored (pending MTurk's word), a made-up id for the same worker gets a
    place of its own at most: the stored id and work are never rewritten."""
    from django.test import Client

    stored = _submit(client, "A1", "W1")
    forged = open_page(Client(), remote_addr="10.9.8.7", assignmentId="FORGED1", workerId="W1")
    assert forged.status_code == 200 and str(stored.assignment.token) not in forged.content.decode()
    assert MTurkAssignment.objects.get(mturk_assignment_id="A1").assignment_id == stored.assignment_id
    assert Assignment.objects.get(pk=stored.assignment_id).state == "pending"


def test_a_new_assignment_id_for_a_returned_place_gets_a_place_of_its_own_and_the_old_record_is_kept(client, published):
    """A worker who returned the HIT on MTurk and accepted it again comes with a new id: it gets a place of its
    own (MTurk cannot tell us which id is live), and A1 is never rewritten."""
    from hits.services import return_assignment

    assert open_page(client, assignmentId="A1", workerId="W1").status_code == 200
    old = MTurkAssignment.objects.get()
    return_assignment(old.assignment.worker, old.assignment_id)
    assert open_page(client, assignmentId="A2", workerId="W1").status_code == 200
    records = dict(MTurkAssignment.objects.values_list("mturk_assignment_id", "assignment__state"))
    assert records == {"A1": "returned", "A2": "assigned"}
    assert MTurkAssignment.objects.get(mturk_assignment_id="A1").assignment_id == old.assignment_id


def test_a_made_up_id_opened_first_never_locks_the_real_worker_out(client, published, stubbed, settings):
    """Issue 27: a made-up assignmentId opened first in a worker's name used to bind their place (the real
    assignment got 409), and once it expired the worker got "no place left" for good.  The real assignment
    gets its own place and form, before and after the made-up one expires, and its work is confirmed."""
    from datetime import timedelta

    from django.test import Client
    from django.utils import timezone

    from hits.models import HIT
    from hits.mturk.sync import sync_batch
    from hits.services import expire_assignments

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    assert open_page(Client(), remote_addr="10.9.8.7", assignmentId="FORGED1", workerId="W1").status_code == 200
    forged = MTurkAssignment.objects.get(mturk_assignment_id="FORGED1")
    real = open_page(client, assignmentId="A1", workerId="W1")
    assert real.status_code == 200 and str(forged.assignment.token) not in real.content.decode()
    Assignment.objects.filter(pk=forged.assignment_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert expire_assignments() == 1
    record = _submit(client, "A1", "W1")
    assert record.assignment.state == "pending"
    _listing(stubbed, [("A1", "W1")])
    report = sync_batch(published.hit.batch)
    assert (report.confirmed, report.discarded) == (1, 0)
    assert Assignment.objects.get(pk=record.assignment_id).state == "submitted"
    assert HIT.objects.get(pk=published.hit_id).state == "completed"


def test_of_two_submissions_in_one_workers_name_only_the_one_mturk_lists_counts(client, published, stubbed, settings):
    """A made-up id and the real one both submit work for the same (HIT, worker): the sync confirms the one MTurk
    lists for the worker, discards the other (its answers never count), and the worker's work is paid once."""
    from django.test import Client

    from annotation.models import ContentUnit
    from hits.models import HIT, LedgerEntry
    from hits.mturk.sync import sync_batch

    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.MTURK_APPROVE_AFTER_HOURS = 1000
    HIT.objects.filter(batch=published.hit.batch).exclude(pk=published.hit_id).delete()
    forged = _submit(Client(REMOTE_ADDR="10.9.8.7"), "FORGED1", "W1")
    real = _submit(client, "A1", "W1")
    assert forged.assignment_id != real.assignment_id
    _listing(stubbed, [("A1", "W1")])
    report = sync_batch(published.hit.batch)
    assert (report.confirmed, report.discarded) == (1, 1)
    states = dict(MTurkAssignment.objects.values_list("mturk_assignment_id", "assignment__state"))
    assert states == {"A1": "submitted", "FORGED1": "discarded"}
    assert ContentUnit.objects.count() == 1
    hit = HIT.objects.get(pk=published.hit_id)
    assert (hit.state, hit.n_submitted, hit.n_taken) == ("completed", 1, 1)
    from hits.payments import approve_assignment

    for assignment in Assignment.objects.filter(hit_id=published.hit_id, state="submitted"):
        approve_assignment(assignment, "Thank you.", settle=False)
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.REWARD).count() == 1
    # Once the worker's work is confirmed, any further id in their name is refused.
    again = open_page(client, assignmentId="A9", workerId="W1")
    assert again.status_code == 409 and "You already did this HIT" in again.content.decode()


@pytest.mark.django_db(transaction=True)
def test_loads_of_one_new_assignment_id_at_once_leave_one_place_on_postgresql(published):
    """Six loads of the same new MTurk assignment at once (a double click, a reload): one local assignment and
    one record, every page carries its token; a load that lost the race never leaves a place held by nobody."""
    import threading

    from django.db import connection, connections
    from django.test import Client

    from hits.models import HIT

    if connection.vendor != "postgresql":
        pytest.skip("concurrent page loads are exercised on PostgreSQL")
    Worker.objects.create(external_id="mturk:W1", mturk_worker_id="W1")
    barrier = threading.Barrier(6)
    pages, errors = [], []

    def load():
        try:
            barrier.wait(timeout=30)
            pages.append(open_page(Client(), assignmentId="A1", workerId="W1"))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=load) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    record = MTurkAssignment.objects.get()
    assert [page.status_code for page in pages] == [200] * 6
    assert all(str(record.assignment.token) in page.content.decode() for page in pages)
    assert Assignment.objects.count() == 1 and HIT.objects.get(pk=published.hit_id).n_taken == 1
