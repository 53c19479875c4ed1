"""The MTurk backend's framed HIT page in headless Chromium, inside a parent page on localhost that plays MTurk's role.

The parent page frames our ExternalQuestion URL the way MTurk does: first
in preview (``ASSIGNMENT_ID_NOT_AVAILABLE``), then, once the worker
"accepts", reloaded with a real assignment id and ``turkSubmitTo`` pointing
back at the parent server, which records what reaches its
``/mturk/externalSubmit``.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode

import pytest

from annotation.models import Campaign, ContentUnit
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from hits.models import Assignment
from hits.mturk.models import MTurkAssignment, MTurkHIT
from hits.services import confirm_submission
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class FakeMTurk:
    """A tiny web server standing in for MTurk's worker site: frames a HIT and records externalSubmit posts."""

    def __init__(self):
        self.submissions: list[dict] = []
        self.frame_url = ""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = f'<!doctype html><title>MTurk</title><h1>Fake MTurk</h1><iframe id="hit" src="{fake.frame_url}" width="1200" height="900"></iframe>'
                self._send(200, body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                fields = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                fake.submissions.append({"path": self.path, **fields})
                self._send(200, '<!doctype html><p id="mturk-thanks">HIT submitted to MTurk</p>')

            def _send(self, status, body):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("localhost", 0), Handler)
        self.origin = f"http://localhost:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_mturk(settings):
    fake = FakeMTurk()
    settings.MTURK_FRAME_ANCESTORS = [*settings.MTURK_FRAME_ANCESTORS, fake.origin]
    settings.MTURK_SUBMIT_HOSTS = [*settings.MTURK_SUBMIT_HOSTS, fake.origin]
    yield fake
    fake.close()


@pytest.fixture
def published(tmp_path):
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [{"id": "e1", "system": "s", "summary": "The driver was blamed by police."}])
    campaign = import_campaign(name="Framed browser", references=refs, summaries=sums).campaign
    Campaign.objects.filter(pk=campaign.pk).update(backend="mturk-sandbox")
    campaign.refresh_from_db()
    # The publish hook runs after the commit; with no AWS here, record the MTurk HIT by hand instead.
    from unittest import mock

    with mock.patch("annotation.services.pipeline.publish_soon"):
        launch_campaign(campaign)
    campaign.refresh_from_db()
    hit = campaign.batch.hits.get(task_type__slug="generation")
    return MTurkHIT.objects.create(hit=hit, sandbox=True, mturk_hit_id="HIT1", request_token="t", max_assignments=1, reward=Decimal("0.32"))


def test_worker_previews_accepts_and_submits_inside_mturks_frame(page, live_server, fake_mturk, published):
    hit_page = f"{live_server.url}/work/mturk/hit/"
    # 1. Preview: read-only, nothing taken.
    fake_mturk.frame_url = hit_page + "?" + urlencode({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "HIT1"})
    page.goto(fake_mturk.origin + "/preview")
    frame = page.frame_locator("#hit")
    frame.locator("#mturk-preview").wait_for()
    assert frame.locator("#submit").count() == 0
    assert frame.locator("#id_q1").is_disabled()
    assert not Assignment.objects.exists()

    # 2. Accept: MTurk reloads the frame with the worker's assignment.
    fake_mturk.frame_url = hit_page + "?" + urlencode(
        {"assignmentId": "3ASSIGN1", "hitId": "HIT1", "workerId": "AWORKER1", "turkSubmitTo": fake_mturk.origin}
    )
    page.goto(fake_mturk.origin + "/accepted")
    frame = page.frame_locator("#hit")
    frame.locator("#submit").wait_for()

    # 3. A first submit with nothing filled in is refused by our validation, inside the frame; MTurk hears nothing.
    frame.locator("#submit").click()
    frame.locator("#errors-summary").wait_for()
    assert fake_mturk.submissions == []

    # 4. The answers are stored in our database first, then the frame posts to MTurk's externalSubmit.
    frame.locator("#id_q1").fill("Who blamed someone?")
    frame.locator("#id_q1_a1").fill("Police")
    frame.locator("#id_q2").fill("Who did someone blame?")
    frame.locator("#id_q2_a1").fill("the driver")
    frame.locator("#submit").click()
    frame.locator("#mturk-thanks").wait_for()
    assert fake_mturk.submissions == [{"path": "/mturk/externalSubmit", "assignmentId": "3ASSIGN1", "saved": "1"}]
    record = MTurkAssignment.objects.select_related("assignment__worker").get()
    assert record.mturk_worker_id == "AWORKER1" and record.assignment.worker.mturk_worker_id == "AWORKER1"
    # Stored, but pending: nothing counts until MTurk lists the assignment as AWORKER1's (the sync confirms it).
    assert record.assignment.state == "pending"
    assert not ContentUnit.objects.exists()
    assert confirm_submission(record.assignment_id)
    assert Assignment.objects.get(pk=record.assignment_id).state == "submitted"
    assert sorted(ContentUnit.objects.values_list("question", flat=True)) == ["Who blamed someone?", "Who did someone blame?"]


def test_the_frame_is_refused_to_other_sites(page, live_server, published):
    """Without the parent's origin among the frame ancestors, Chromium refuses to show the page in its frame."""
    fake = FakeMTurk()
    try:
        fake.frame_url = f"{live_server.url}/work/mturk/hit/?" + urlencode({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "HIT1"})
        page.goto(fake.origin + "/preview")
        page.wait_for_timeout(1500)
        frame = page.frame_locator("#hit")
        assert frame.locator("#mturk-preview").count() == 0
    finally:
        fake.close()
