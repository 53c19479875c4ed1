"""What a researcher's script sees: uploads with clear errors, settings, controls, predicates,
sharing, filters, pagination, tokens and the docs."""

from __future__ import annotations

from decimal import Decimal

import io
import re
import zipfile

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import Campaign, Predicate, PresenceJudgment, SystemSummary
from annotation.services.roles import make_researcher
from hits.models import Worker
from tests.api.conftest import client_for
from tests.conftest import write_jsonl

pytestmark = pytest.mark.django_db


def _upload(client, name, refs, sums, **extra):
    with refs.open("rb") as r, sums.open("rb") as s:
        return client.post("/api/campaigns/", {"name": name, "references": r, "summaries": s, **extra}, format="multipart")


def test_upload_creates_an_owned_campaign_and_reports_what_was_imported(api_world, small_files):
    client = client_for(api_world, "owner")
    response = _upload(client, "Weather study", *small_files, description="Two stories")
    assert response.status_code == 201
    body = response.json()
    assert body["campaign"]["slug"] == "weather-study" and body["campaign"]["owner"] == "owner1"
    assert body["campaign"]["state"] == "draft" and body["campaign"]["assignments_presence"] == 3
    assert body["report"]["n_examples"] == 2 and body["report"]["n_predicates"] > 0
    assert Campaign.objects.get(slug="weather-study").description == "Two stories"
    # Someone else cannot see it.
    assert client_for(api_world, "other_researcher").get("/api/campaigns/weather-study/").status_code == 404


def test_upload_with_bad_files_lists_every_problem_and_writes_nothing(api_world, tmp_path):
    refs = write_jsonl(tmp_path / "my-refs.jsonl", [{"id": "a", "reference": "Rain fell."}, '{"id": "b", broken', {"id": "c"}])
    sums = write_jsonl(tmp_path / "my-sums.jsonl", [{"id": "zz", "system": "s", "summary": "x"}])
    before = Campaign.objects.count()
    response = _upload(client_for(api_world, "owner"), "Broken", refs, sums)
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert len(problems) >= 3
    files = {p["file"] for p in problems}
    assert "my-refs.jsonl" in files and "my-sums.jsonl" in files  # the names the user uploaded
    assert any(p["file"] == "my-refs.jsonl" and p["line"] == 2 for p in problems)
    assert any(p["file"] == "my-refs.jsonl" and p["line"] == 3 and p["field"] == "reference" for p in problems)
    assert "my-refs.jsonl, line" in response.json()["detail"]
    assert Campaign.objects.count() == before


def test_upload_without_files_or_with_a_taken_slug_is_a_clear_400(api_world, small_files):
    client = client_for(api_world, "owner")
    response = client.post("/api/campaigns/", {"name": "No files"}, format="multipart")
    assert response.status_code == 400 and set(response.json()) >= {"references", "summaries"}
    response = _upload(client, "Parks", *small_files)
    assert response.status_code == 400
    assert "already exists" in response.json()["problems"][0]["message"]


def test_settings_change_while_draft_and_are_refused_after_launch(api_world):
    client = client_for(api_world, "owner")
    url = "/api/campaigns/parks/"
    response = client.patch(url, {"assignments_presence": 5, "reward_presence": "0.25", "tie_rule": "present"}, format="json")
    assert response.status_code == 200 and response.json()["assignments_presence"] == 5
    assert response.json()["reward_presence"] == "0.25"
    # The hourly pay floor of the worker status page is a setting like the others, with its bounds.
    assert client.patch(url, {"hourly_pay_floor": "15.00"}, format="json").json()["hourly_pay_floor"] == "15.00"
    assert set(client.patch(url, {"hourly_pay_floor": "-1"}, format="json").json()) == {"hourly_pay_floor"}
    assert Campaign.objects.get(slug="parks").hourly_pay_floor == Decimal("15.00")
    bad = client.patch(url, {"writer_valid_threshold": 1.5, "reward_generation": "-1.00", "assignments_generation": 0}, format="json")
    assert bad.status_code == 400
    assert set(bad.json()) == {"writer_valid_threshold", "reward_generation", "assignments_generation"}
    # Read-only fields are ignored, not written.
    client.patch(url, {"state": "finished", "slug": "hijack"}, format="json")
    assert Campaign.objects.filter(slug="parks", state="draft").exists()

    assert client.post("/api/campaigns/parks/launch/").status_code == 200
    refused = client.patch(url, {"assignments_presence": 7}, format="json")
    assert refused.status_code == 409 and "assignments_presence" in refused.json()["detail"]
    assert Campaign.objects.get(slug="parks").assignments_presence == 5
    # The name is not a setting: it can still change.
    assert client.patch(url, {"name": "Parks (final)"}, format="json").json()["name"] == "Parks (final)"


def test_controls_follow_the_campaign_state(api_world):
    client = client_for(api_world, "shared")
    base = "/api/campaigns/parks"
    assert client.post(f"{base}/pause/").status_code == 409
    launched = client.post(f"{base}/launch/").json()
    assert launched["state"] == "running" and re.search(r"\d+ HITs created", launched["detail"])
    assert client.post(f"{base}/launch/").status_code == 409
    assert client.post(f"{base}/pause/").json()["state"] == "paused"
    assert client.post(f"{base}/resume/").json()["state"] == "running"
    assert client.post(f"{base}/cancel/").json()["state"] == "cancelled"
    conflict = client.post(f"{base}/cancel/")
    assert conflict.status_code == 409 and "already cancelled" in conflict.json()["detail"]


def test_predicates_are_added_and_removed_before_launch_only(api_world):
    client = client_for(api_world, "owner")
    predicate = Predicate.objects.filter(example__campaign__slug="parks").select_related("sentence").first()
    sentence = predicate.sentence
    url = "/api/campaigns/parks/predicates/"
    n = Predicate.objects.filter(example__campaign__slug="parks").count()

    word = "mayor" if "mayor" in sentence.text else sentence.text.split()[0]
    start = sentence.text.index(word)
    created = client.post(url, {"sentence": sentence.pk, "start": start, "end": start + len(word)}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["text"] == word and created.json()["origin"] == "researcher"
    duplicate = client.post(url, {"sentence": sentence.pk, "start": start, "end": start + len(word)}, format="json")
    assert duplicate.status_code == 400 and "already a predicate" in str(duplicate.json())
    outside = client.post(url, {"sentence": sentence.pk, "start": 0, "end": 10_000}, format="json")
    assert outside.status_code == 400 and "not inside the sentence" in str(outside.json())

    assert client.delete(f"{url}{created.json()['id']}/").status_code == 204
    assert Predicate.objects.filter(example__campaign__slug="parks").count() == n

    client.post("/api/campaigns/parks/launch/")
    late = client.delete(f"{url}{predicate.pk}/")
    assert late.status_code == 409 and "before launch" in late.json()["detail"]
    assert Predicate.objects.filter(pk=predicate.pk).exists()


def test_sharing_gives_and_takes_access(api_world, django_user_model):
    owner = client_for(api_world, "owner")
    colleague = django_user_model.objects.create_user("colleague")
    api = APIClient()
    api.force_authenticate(colleague)
    # Not a researcher yet: the API is closed to them.
    assert api.get("/api/campaigns/").status_code == 403

    assert owner.post("/api/campaigns/parks/share/", {"username": "nobody"}, format="json").status_code == 400
    own = owner.post("/api/campaigns/parks/share/", {"username": "owner1"}, format="json")
    assert own.status_code == 400 and "owns" in own.json()["username"][0]
    shared = owner.post("/api/campaigns/parks/share/", {"username": "colleague"}, format="json").json()
    assert shared == {"changed": True, "shared_with": ["colleague", "shared1"]}
    assert [c["slug"] for c in api.get("/api/campaigns/").json()["results"]] == ["parks"]

    owner.post("/api/campaigns/parks/unshare/", {"username": "colleague"}, format="json")
    assert api.get("/api/campaigns/parks/").status_code == 404
    assert api.get("/api/campaigns/").json()["results"] == []


def test_filters_narrow_the_lists(api_world):
    client = client_for(api_world, "owner")
    summaries = client.get("/api/campaigns/parks/summaries/", {"system": "beta"}).json()
    assert summaries["count"] == 2 and {s["system"] for s in summaries["results"]} == {"beta"}
    by_example = client.get("/api/campaigns/parks/predicates/", {"example": "b"}).json()
    assert by_example["count"] >= 1 and {p["example"] for p in by_example["results"]} == {"b"}

    from tests.api.test_permissions import _with_data

    data = _with_data(api_world)
    other_worker = Worker.objects.create(external_id="w2")
    beta = SystemSummary.objects.get(system__name="beta", example=data["unit"].example)
    PresenceJudgment.objects.create(unit=data["unit"], summary=beta, worker=other_worker, present=False)
    judgments = "/api/campaigns/parks/judgments/"
    assert client.get(judgments).json()["count"] == 2
    assert [j["worker"] for j in client.get(judgments, {"worker": "w2"}).json()["results"]] == ["w2"]
    assert [j["system"] for j in client.get(judgments, {"system": "beta"}).json()["results"]] == ["beta"]
    assert client.get(judgments, {"example": "b"}).json()["count"] == 0
    assert client.get("/api/campaigns/parks/units/", {"state": "kept"}).json()["count"] == 1
    assert client.get("/api/campaigns/parks/units/", {"state": "rejected"}).json()["count"] == 0
    bad = client.get("/api/campaigns/parks/units/", {"state": "bogus"})
    assert bad.status_code == 400 and "state" in bad.json()
    huge = client.get(judgments, {"unit": 10**30})
    assert huge.status_code == 400 and "unit" in huge.json()


def test_pagination_with_a_chosen_page_size(api_world):
    client = client_for(api_world, "owner")
    first = client.get("/api/campaigns/parks/summaries/", {"page_size": 3}).json()
    assert first["count"] == 4 and len(first["results"]) == 3 and first["next"].endswith("page=2&page_size=3")
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 1 and second["next"] is None
    ids = [s["id"] for s in first["results"] + second["results"]]
    assert len(set(ids)) == 4
    assert client.get("/api/campaigns/parks/summaries/", {"page": 9}).status_code == 404


def test_page_size_is_capped(api_world, monkeypatch):
    from annotation.web.api.pagination import PageNumberWithSize

    monkeypatch.setattr(PageNumberWithSize, "max_page_size", 2)
    response = client_for(api_world, "owner").get("/api/campaigns/parks/summaries/", {"page_size": 1000}).json()
    assert len(response["results"]) == 2 and response["count"] == 4


def test_token_endpoint_gives_a_working_token_and_is_rate_limited(api_world, django_user_model, settings, pinned_rate_window):
    from django.core.cache import cache

    cache.clear()
    user = django_user_model.objects.create_user("tokenuser", password="right-password-1")
    make_researcher(user)
    api = APIClient()
    assert api.post("/api/token/", {"username": "tokenuser", "password": "wrong"}, format="json").status_code == 400
    token = api.post("/api/token/", {"username": "tokenuser", "password": "right-password-1"}, format="json").json()["token"]
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get("/api/campaigns/").status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert api.get("/api/campaigns/").status_code == 401

    settings.LOGIN_RATE_LIMIT = "3/60"
    cache.clear()
    api = APIClient()
    codes = [api.post("/api/token/", {"username": "tokenuser", "password": "guess"}, format="json").status_code for _ in range(5)]
    assert codes == [400, 400, 400, 429, 429]
    # Even the right password waits until the window passes.
    assert api.post("/api/token/", {"username": "tokenuser", "password": "right-password-1"}, format="json").status_code == 429


def test_api_token_command_prints_and_rotates(api_world, capsys):
    call_command("api_token", "owner1")
    first = capsys.readouterr().out.strip()
    call_command("api_token", "owner1")
    assert capsys.readouterr().out.strip() == first
    call_command("api_token", "owner1", "--rotate")
    rotated = capsys.readouterr().out.strip()
    assert rotated != first and len(rotated) == 40
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {first}")
    assert api.get("/api/campaigns/").status_code == 401
    api.credentials(HTTP_AUTHORIZATION=f"Token {rotated}")
    assert api.get("/api/campaigns/").status_code == 200
    call_command("api_token", "crowd1")
    assert "not a researcher" in capsys.readouterr().err


def test_session_login_works_too_and_needs_csrf_for_writes(api_world, django_user_model):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(api_world["users"]["owner"])
    assert browser.get("/api/campaigns/").status_code == 200
    assert browser.post("/api/campaigns/parks/launch/").status_code == 403
    assert Campaign.objects.get(slug="parks").state == "draft"


def test_export_is_a_job_to_poll_then_a_zip_of_the_study(api_world, settings, tmp_path, django_capture_on_commit_callbacks, eager_celery):
    # The job runs in-process here (tests/web/test_jobs_worker.py runs it on a real worker).
    from annotation.models import Job

    settings.EXPORTS_DIR = tmp_path / "exports"
    client = client_for(api_world, "owner")
    # Issue 41: the request only queues the export (no file is built in it) and answers with the job to poll.
    response = client.post("/api/campaigns/parks/export/")
    assert response.status_code == 202
    job = response.json()["job"]
    assert response["Location"] == job["url"] == f"/api/jobs/{job['id']}/"
    assert job["state"] == "queued" and job["download_url"] == "" and not list((tmp_path / "exports").glob("*"))
    early = client.get(f"/api/jobs/{job['id']}/download/")
    assert early.status_code == 409 and "poll" in early.json()["detail"]
    assert client.get("/api/campaigns/parks/export/").status_code == 405  # never a file built in a GET
    # The embedded default runs the job in-process once the request's transaction commits.
    with django_capture_on_commit_callbacks(execute=True):
        job = client.post("/api/campaigns/parks/export/?pseudonymise=1").json()["job"]
    polled = client.get(job["url"]).json()
    assert polled["state"] == "done" and polled["finished"] and polled["download_url"] == f"/api/jobs/{job['id']}/download/"
    download = client.get(polled["download_url"])
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    assert download["Content-Disposition"].startswith("attachment")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    names = sorted(n.split("/", 1)[1] for n in archive.namelist())
    assert names == ["campaign.json", "examples.jsonl", "judgments.csv", "pairs.csv", "systems.csv", "verifications.csv"]
    assert Job.objects.get(pk=job["id"]).params == {"pseudonymise": True, "stable_pseudonyms": True}
    # Another researcher's script sees neither the job nor its file.
    stranger = client_for(api_world, "other_researcher")
    assert stranger.get(job["url"]).status_code == 404 and stranger.get(polled["download_url"]).status_code == 404


def test_schema_and_offline_docs(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/campaigns/{slug}/launch/" in paths and "/api/campaigns/{campaign_slug}/judgments/" in paths
    assert "tokenAuth" in schema.json()["components"]["securitySchemes"]
    for url in ("/api/docs/", "/api/redoc/"):
        page = client.get(url).content.decode()
        # Every script and stylesheet comes from our own static files: the docs work without internet.
        assets = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', page)
        assert assets and all(a.startswith("/static/") for a in assets), assets
        assert "cdn" not in page.lower()
        for asset in assets:
            assert finders.find(asset.removeprefix("/static/")), asset


def test_settings_out_of_the_database_range_are_a_400(api_world):
    client = client_for(api_world, "owner")
    response = client.patch(
        "/api/campaigns/parks/",
        {"assignments_presence": 40_000, "grace_period_items": 2**40, "qualification_cooldown_hours": "Infinity"},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"assignments_presence", "grace_period_items", "qualification_cooldown_hours"}
    assert Campaign.objects.get(slug="parks").assignments_presence == 3


def test_autoscore_run_through_the_api(api_world, django_capture_on_commit_callbacks, eager_celery):
    """Start a SemiAutoQAPyramid run with the lexical judge, follow it to the end, read its scores."""
    from tests.api.test_permissions import _with_data

    _with_data(api_world)
    client = client_for(api_world, "owner")
    url = "/api/campaigns/parks/autoscore/"
    unknown = client.post(url, {"judge": "no-such-judge"}, format="json")
    assert unknown.status_code == 400 and "unknown judge" in str(unknown.json())
    foreign = client.post(url, {"judge": "lexical", "systems": ["gamma"]}, format="json")
    assert foreign.status_code == 400 and "gamma" in str(foreign.json())

    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(url, {"judge": "lexical", "systems": ["alpha"]}, format="json")
    assert started.status_code == 201, started.content
    run = client.get(f"{url}{started.json()['id']}/").json()
    assert run["state"] == "finished" and run["progress"] == 1.0 and run["created_by"] == "owner1"
    scores = client.get(f"{url}{run['id']}/scores/").json()
    assert scores["count"] == 2 and {s["system"] for s in scores["results"]} == {"alpha"}
    # Only example "a" has a kept unit: its summary gets a score in [0, 1]; "b" has no units to judge.
    by_example = {s["example"]: s for s in scores["results"]}
    assert by_example["a"]["n_units"] == 1 and 0 <= by_example["a"]["score"] <= 1
    assert run["id"] in [r["id"] for r in client.get(url, {"state": "finished"}).json()["results"]]
    assert client.get(url, {"state": "failed"}).json()["count"] == 0
    assert client.get(f"{url}compare/").status_code == 200
    # Another researcher cannot see the run.
    assert client_for(api_world, "other_researcher").get(f"{url}{run['id']}/").status_code == 404
