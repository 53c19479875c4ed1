"""A researcher runs a whole study in Chromium: files in, crowd at work, leaderboard, agreement, export out."""

from __future__ import annotations

import threading
import time
import zipfile

import pytest

from annotation.models import Campaign, PresenceJudgment
from annotation.services.roles import make_researcher
from annotation.management.simulation import simulate_crowd
from tests.browser.conftest import log_in
from tests.conftest import write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "browser-test-password-3"


@pytest.fixture
def eager_jobs(settings, tmp_path):
    """Jobs run in the live server's process (as under the embedded default), files under the test's folder."""
    from config.celery import app

    settings.DATA_DIR = tmp_path / "data"
    settings.EXPORTS_DIR = tmp_path / "data" / "exports"
    was = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = was


def test_researcher_runs_a_study_in_the_browser(page, live_server, tmp_path, django_user_model, eager_jobs):
    refs = write_jsonl(tmp_path / "references.jsonl", [
        {"id": "n1", "reference": "The council approved a new bridge. Builders will start work in May."},
        {"id": "n2", "reference": "Heavy rain flooded the old market on Sunday."},
    ])
    sums = write_jsonl(tmp_path / "summaries.jsonl", [
        {"id": "n1", "system": "lead", "summary": "The council approved a new bridge."},
        {"id": "n2", "system": "lead", "summary": "Heavy rain flooded the old market."},
        {"id": "n1", "system": "short", "summary": "A bridge was approved."},
        {"id": "n2", "system": "short", "summary": "Rain fell."},
    ])
    bad = write_jsonl(tmp_path / "bad.jsonl", ['{"id": "n1", "reference": "ok"}', '{"id": "n1", "reference": "again"}'])
    user = django_user_model.objects.create_user(username="rosa", password=PASSWORD)
    make_researcher(user)
    log_in(page, "rosa", PASSWORD)

    # Upload a bad file first: every problem is listed and the name typed is kept.
    page.click("#new-campaign")
    page.fill("#id_name", "Bridge study")
    page.set_input_files("#id_references", str(bad))
    page.set_input_files("#id_summaries", str(sums))
    page.click("#preview")
    assert "duplicate id 'n1' (first on line 1)" in page.inner_text("#problems")
    assert page.input_value("#id_name") == "Bridge study"
    assert "summaries.jsonl" in page.inner_text("#staged-summaries")
    assert not Campaign.objects.exists()

    # Replace only the references: the preview counts what will be imported.
    page.set_input_files("#id_references", str(refs))
    page.click("#preview")
    assert page.inner_text("[data-count=examples]") == "2"
    assert page.inner_text("[data-count=systems]") == "2"
    assert page.inner_text("[data-count=summaries]") == "4"
    page.click("#confirm")
    page.wait_for_selector("#job-result:visible")
    assert page.get_attribute("#job", "data-state") == "done"
    page.click("#job-result")

    # Settings with the paper's values and the cost preview, then launch.
    assert "paper: 0.32" in page.inner_text("#settings-form")
    assert page.inner_text("#cost-total").startswith("$")
    page.click("#launch")
    page.wait_for_selector("#campaign-state:has-text('Running')")
    campaign = Campaign.objects.get(slug="bridge-study")

    # The simulated crowd works through the live server while the page polls its progress.
    report = {}

    def work():
        from django.db import connections

        try:
            report["r"] = simulate_crowd(campaign, 6, seed=5, base_url=live_server.url, max_seconds=240)
        finally:
            connections.close_all()  # the thread's own connection, so the test database can be dropped

    crowd = threading.Thread(target=work, daemon=True)
    crowd.start()
    seen = [page.inner_text("#stages")]
    # The test never navigates: every change of the table comes from the page's own polling (which updates
    # the figures, and reloads the page when a stage appears or the state changes).  Sampled until the page
    # itself shows the end, since on SQLite's in-memory test database a poll made while the crowd writes can
    # be refused (the table is locked) and retried only after the crowd is done.
    deadline = time.monotonic() + 300
    while (crowd.is_alive() or page.inner_text("#campaign-state") != "Finished") and time.monotonic() < deadline:
        if seen[-1] != (now := page.inner_text("#stages")):
            seen.append(now)
        page.wait_for_timeout(300)
    crowd.join()
    page.wait_for_selector("#campaign-state:has-text('Finished')", timeout=30_000)
    seen.append(page.inner_text("#stages"))
    assert report["r"].campaign_state == "finished"
    assert "(0%)" in seen[0] and seen[-1] != seen[0]  # the page brought itself from the launch to the end
    presence_row = page.inner_text("#stages tr[data-stage=presence]")
    assert "(100%)" in presence_row

    # Leaderboard and agreement dashboard.
    page.click(".campaign-nav >> text=leaderboard")
    assert {page.get_attribute(r, "data-system") for r in ("#leaderboard tbody tr:nth-child(1)", "#leaderboard tbody tr:nth-child(2)")} == {"lead", "short"}
    page.click("#agreement-link")
    assert page.inner_text("#alpha-pooled")
    assert page.locator("#worker-accuracy .bar").count() == 10
    n_judges = PresenceJudgment.objects.filter(summary__system__campaign=campaign).values("worker").distinct().count()
    counts = [int(page.get_attribute(f"#worker-accuracy .bar >> nth={i}", "data-count")) for i in range(10)]
    assert sum(counts) == n_judges

    # Export: the job page shows the download when the export is written.
    page.click(".campaign-nav >> text=progress")
    page.click("#export")
    page.wait_for_selector("#job-result:visible")
    with page.expect_download() as download:
        page.click("#job-result")
    path = tmp_path / "export.zip"
    download.value.save_as(path)
    names = sorted(n.split("/")[-1] for n in zipfile.ZipFile(path).namelist())
    assert names == ["campaign.json", "examples.jsonl", "judgments.csv", "pairs.csv", "systems.csv", "verifications.csv"]
