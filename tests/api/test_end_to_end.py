"""The demo study run by a script through the API alone: upload, launch, the simulated crowd works, then
progress, scores, leaderboard, judgments and the export are read back over HTTP with a token."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from rest_framework.test import APIClient

from annotation.services.roles import make_researcher
from annotation.management.simulation import simulate_crowd
from annotation.models import Campaign
from tests.conftest import DEMO_DIR

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_study_through_the_api(django_user_model, eager_celery, settings, tmp_path):
    # The crowd works on a server in this process, its follow-ups run in-process (no Celery worker here).
    user = django_user_model.objects.create_user("script", password="script-pass-123")
    make_researcher(user)
    api = APIClient()
    token = api.post("/api/token/", {"username": "script", "password": "script-pass-123"}, format="json").json()["token"]
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    with (DEMO_DIR / "references.jsonl").open("rb") as refs, (DEMO_DIR / "summaries.jsonl").open("rb") as sums:
        created = api.post(
            "/api/campaigns/", {"name": "Demo via API", "references": refs, "summaries": sums}, format="multipart"
        )
    assert created.status_code == 201, created.content
    slug = created.json()["campaign"]["slug"]
    assert created.json()["report"]["n_examples"] == 6 and created.json()["report"]["n_systems"] == 4

    cost = api.get(f"/api/campaigns/{slug}/cost/").json()
    assert float(cost["total"]) > 0
    launched = api.post(f"/api/campaigns/{slug}/launch/")
    assert launched.status_code == 200 and launched.json()["state"] == "running"

    report = simulate_crowd(Campaign.objects.get(slug=slug), 8, seed=3)
    assert report.campaign_state == "finished", report.lines()

    campaign = api.get(f"/api/campaigns/{slug}/").json()
    assert campaign["state"] == "finished"
    progress = api.get(f"/api/campaigns/{slug}/progress/").json()
    assert progress["settled"] == progress["n_predicates"] > 0
    assert progress["stages"]["presence"]["percent"] == 100

    kept = api.get(f"/api/campaigns/{slug}/units/", {"state": "kept", "page_size": 500}).json()
    assert kept["count"] >= 20
    judgments = api.get(f"/api/campaigns/{slug}/judgments/", {"page_size": 1}).json()
    # Three judges per kept unit and summary: 4 systems judge every kept unit of their example.
    assert judgments["count"] == 3 * 4 * kept["count"]
    one_system = api.get(f"/api/campaigns/{slug}/judgments/", {"system": "extractive-lead", "page_size": 1}).json()
    assert one_system["count"] == judgments["count"] // 4

    # Scores are updated by Celery tasks as judgments arrive; with a real broker and no worker running (as
    # here on PostgreSQL + Redis) they wait, so the script asks for the full recomputation itself.
    # (A background job, run here in-process after its commit: the answer is 202 and the job says what it did.)
    queued = api.post(f"/api/campaigns/{slug}/recompute/")
    assert queued.status_code == 202 and queued["Location"] == queued.json()["job"]["url"]
    recomputed = api.get(queued["Location"]).json()
    assert recomputed["state"] == "done", recomputed
    assert f"Recomputed {4 * kept['count']:,} crowd gold labels and the scores of 24 summaries." == recomputed["message"]

    board = api.get(f"/api/campaigns/{slug}/leaderboard/").json()
    assert len(board["systems"]) == 4
    values = [row["score"]["qapyramid"] for row in board["systems"]]
    assert values == sorted(values, reverse=True) and all(0 <= v <= 1 for v in values)
    assert all(row["score"]["qapyramid_low"] <= row["score"]["qapyramid"] <= row["score"]["qapyramid_high"] for row in board["systems"])
    assert board["agreement"]["pooled"] is not None

    scores = api.get(f"/api/campaigns/{slug}/scores/", {"n_boot": 100}).json()
    assert set(scores["systems"]) == {row["system"] for row in board["systems"]}
    for row in board["systems"]:
        assert scores["systems"][row["system"]]["qapyramid"] == pytest.approx(row["score"]["qapyramid"])

    workers = api.get(f"/api/campaigns/{slug}/workers/").json()
    assert workers["count"] >= 3
    assert all("presence" in row["figures"] for row in workers["results"])

    settings.EXPORTS_DIR = tmp_path / "exports"
    queued = api.post(f"/api/campaigns/{slug}/export/")
    assert queued.status_code == 202
    job = api.get(queued["Location"]).json()  # the job ran in-process (eager Celery) once the request committed
    assert job["state"] == "done"
    export = api.get(job["download_url"])
    assert export.status_code == 200 and export["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(export.streaming_content)))
    names = {n.split("/", 1)[1]: n for n in archive.namelist()}
    assert sorted(names) == ["campaign.json", "examples.jsonl", "judgments.csv", "pairs.csv", "systems.csv", "verifications.csv"]
    examples = [json.loads(line) for line in archive.read(names["examples.jsonl"]).decode().splitlines()]
    assert len(examples) == 6
    judgments_csv = archive.read(names["judgments.csv"]).decode().strip().splitlines()
    assert len(judgments_csv) - 1 == judgments["count"]
