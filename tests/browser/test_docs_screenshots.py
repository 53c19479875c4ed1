"""The documentation's screenshots, taken in Chromium on a real campaign: the worker's HIT pages, the progress
page, the leaderboard and the review page (issue 42).

``make docs-screenshots`` runs this with ``DOCS_SCREENSHOTS=docs/img`` and the PNGs replace the committed ones;
otherwise they go to a temporary folder and the test checks the pages show what the guides say they show."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotation.models import SystemSummary
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign
from annotation.services.roles import make_researcher
from annotation.web.hit_pages import presence_field
from hits.models import TaskType, Worker
from hits.services import accept_next, submit_assignment
from tests.browser.conftest import log_in
from tests.browser.test_hit_pages import _verify_by_service
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "docs-screenshot-password-1"
# Committed PNGs stay small (the docs build needs no browser; the repository stays light).
MAX_BYTES = 150 * 1024
SHOTS = ("worker-generation-hit", "worker-presence-hit", "progress", "leaderboard", "review")


@pytest.fixture
def study(tmp_path, django_user_model):
    rita = django_user_model.objects.create_user(username="rita", password=PASSWORD)
    make_researcher(rita)
    django_user_model.objects.create_user(username="ann", password=PASSWORD)
    refs = write_jsonl(tmp_path / "r.jsonl", [{"id": "e1", "reference": "Police blamed the driver for the crash."}])
    sums = write_jsonl(tmp_path / "s.jsonl", [
        {"id": "e1", "system": "extractive", "summary": "The driver was blamed by police."},
        {"id": "e1", "system": "abstractive", "summary": "A crash happened on Main Street."},
    ])
    campaign = import_campaign(name="Docs study", owner=rita, references=refs, summaries=sums).campaign
    launch_campaign(campaign)
    return campaign


def _judge_everything_by_service(name):
    worker = Worker.objects.get_or_create(external_id=name)[0]
    presence = TaskType.objects.get(slug="presence")
    while (assignment := accept_next(worker, presence)) is not None:
        system = SystemSummary.objects.get(pk=assignment.hit.payload["summary"]).system.name
        units = len(assignment.hit.payload["units"])
        submit_assignment(worker, assignment.pk, {presence_field(k): "1" if system == "extractive" else "0"
                                                  for k in range(1, units + 1)})


def _shot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def test_the_guides_screenshots(page, chromium, live_server, study, tmp_path):
    folder = Path(os.environ.get("DOCS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1100, "height": 720})

    log_in(page, "ann", PASSWORD)
    page.goto("/work/")
    page.click("tr[data-task=generation] button:has-text('Start working')")
    page.wait_for_selector("#sentence")
    page.locator("#sentence").scroll_into_view_if_needed()
    page.fill("#id_q1", "Who blamed someone?")
    page.fill("#id_q1_a1", "Police")
    page.fill("#id_q2", "Who did someone blame?")
    page.fill("#id_q2_a1", "the driver")
    assert page.inner_text("#predicate") == "blamed"
    _shot(page, folder, "worker-generation-hit")
    page.click("#submit")
    page.wait_for_selector("text=Submitted. Thank you!")

    # Two verifiers by the services; then ann judges presence.
    _verify_by_service("v1")
    _verify_by_service("v2")
    page.goto("/work/")
    page.click("tr[data-task=presence] button:has-text('Start working')")
    page.wait_for_selector("text=Present")
    _shot(page, folder, "worker-presence-hit")
    # Three judges by the services: the extractive summary has both QA pairs, the abstractive one neither.
    for name in ("j1", "j2", "j3"):
        _judge_everything_by_service(name)

    researcher = chromium.new_context(base_url=live_server.url, viewport={"width": 1100, "height": 720})
    page = researcher.new_page()
    page.set_default_timeout(45_000)
    log_in(page, "rita", PASSWORD)
    for name, url, expected in (
        ("progress", f"/campaigns/{study.slug}/progress/", "Docs study"),
        ("leaderboard", f"/campaigns/{study.slug}/leaderboard/", "1.000"),
        ("review", f"/campaigns/{study.slug}/review/", "Police blamed the driver"),
    ):
        page.goto(url)
        if name == "review":  # one example's review: its predicates, QA pairs, judgments and the work to review
            page.click("a:text-is('e1')")
        page.wait_for_load_state()
        assert expected in page.inner_text("body"), name
        _shot(page, folder, name)
    researcher.close()

    for name in SHOTS:
        data = (folder / f"{name}.png").read_bytes()
        assert data.startswith(b"\x89PNG") and 0 < len(data) <= MAX_BYTES, (name, len(data))
