"""Limits a request cannot get past (issue 19): settings bounded by the protocol, texts by a size, one
validation for the API and the web forms, and job results that follow the campaign's permissions."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.models import Campaign
from annotation.services.roles import share_campaign, unshare_campaign
from tests.api.conftest import api_world, client_for  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

REFS = b'{"id": "a", "reference": "Dogs bark at night."}\n'
SUMS = b'{"id": "a", "system": "s", "summary": "Dogs bark."}\n'


def _files(refs=REFS, sums=SUMS):
    return {"references": SimpleUploadedFile("refs.jsonl", refs), "summaries": SimpleUploadedFile("sums.jsonl", sums)}


def _settings_form(campaign, **changes):
    from annotation.web.forms import CampaignSettingsForm

    values = {name: getattr(campaign, name) for name in CampaignSettingsForm.Meta.fields}
    data = {name: "" if value is None else value for name, value in values.items()}  # an empty field posts ""
    return {**data, **changes, "action": "save"}


# Values the protocol and a page cannot carry, and what each must say.
OUT_OF_BOUNDS = {
    "max_questions_per_predicate": (300, "less than or equal to 5"),
    "max_answers_per_question": (300, "less than or equal to 3"),
    "assignments_presence": (11, "less than or equal to 10"),
    "max_redo_rounds": (1000, "less than or equal to 10"),
    "grace_period_items": (2_000_000, "less than or equal to 10000"),
}


def test_settings_are_bounded_by_the_protocol_on_the_api_and_the_page(api_world):
    campaign = api_world["campaign"]
    api = client_for(api_world, "owner")
    web = Client()
    web.force_login(api_world["users"]["owner"])
    for name, (value, message) in OUT_OF_BOUNDS.items():
        response = api.patch(f"/api/campaigns/{campaign.slug}/", {name: value}, format="json")
        assert response.status_code == 400 and message in response.json()[name][0], (name, response.content)
        page = web.post(f"/campaigns/{campaign.slug}/settings/", _settings_form(campaign, **{name: value}))
        assert page.status_code == 400 and message in page.content.decode(), name
    # The paper's own values pass both ways.
    assert api.patch(f"/api/campaigns/{campaign.slug}/", {"max_questions_per_predicate": 5, "max_answers_per_question": 3}, format="json").status_code == 200
    # A combination one field cannot see: more kept pairs wanted than questions a writer may enter.
    response = api.patch(f"/api/campaigns/{campaign.slug}/", {"max_questions_per_predicate": 2, "min_kept_qas_per_predicate": 3}, format="json")
    assert response.status_code == 400 and "cannot be more than the questions a writer may enter (2)" in response.json()["min_kept_qas_per_predicate"][0]
    page = web.post(f"/campaigns/{campaign.slug}/settings/", _settings_form(campaign, max_questions_per_predicate=2, min_kept_qas_per_predicate=3))
    assert page.status_code == 400 and "cannot be more than the questions a writer may enter (2)" in page.content.decode()
    campaign.refresh_from_db()
    assert (campaign.max_questions_per_predicate, campaign.max_answers_per_question, campaign.min_kept_qas_per_predicate) == (5, 3, 2)
    # A reward of 0 was refused by the page only; now by the API as well.
    response = api.patch(f"/api/campaigns/{campaign.slug}/", {"reward_presence": "0.00"}, format="json")
    assert response.status_code == 400 and "reward_presence" in response.json()


def test_reserved_slugs_and_long_names_are_refused_by_the_api_as_by_the_page(api_world):
    api = client_for(api_world, "owner")
    web = Client()
    web.force_login(api_world["users"]["owner"])
    for slug in ("new", "jobs"):
        response = api.post("/api/campaigns/", {"name": f"Study {slug}", "slug": slug, **_files()}, format="multipart")
        assert response.status_code == 400 and f"'{slug}' is reserved" in response.json()["detail"], response.content
        page = web.post("/campaigns/new/", {"name": f"Study {slug}", "slug": slug, "predicates": "none", **_files()})
        assert page.status_code == 400 and f"&#x27;{slug}&#x27; is reserved" in page.content.decode()
    long_system = json.dumps({"id": "a", "system": "s" * 5000, "summary": "Dogs bark."}).encode() + b"\n"
    response = api.post("/api/campaigns/", {"name": "Long system", **_files(sums=long_system)}, format="multipart")
    assert response.status_code == 400 and "sums.jsonl, line 1, field 'system': is 5,000 characters long; the limit is 200" in response.json()["detail"]
    page = web.post("/campaigns/new/", {"name": "Long system", "predicates": "none", **_files(sums=long_system)})
    assert page.status_code == 400 and "the limit is 200" in page.content.decode()
    response = api.post("/api/campaigns/", {"name": "n" * 201, **_files()}, format="multipart")
    assert response.status_code == 400 and "name" in response.json()
    assert not Campaign.objects.filter(slug__in=["new", "jobs", "long-system"]).exists()


def test_oversized_texts_are_refused_with_their_line_and_limit(api_world, settings, tmp_path, django_capture_on_commit_callbacks):
    from config.celery import app

    settings.DATA_DIR = tmp_path / "data"
    api = client_for(api_world, "owner")
    huge = json.dumps({"id": "a", "reference": "Dogs bark. " * 100_000}).encode() + b"\n"  # 1.1M characters
    was = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post("/api/campaigns/", {"name": "Huge", **_files(refs=huge)}, format="multipart")
    finally:
        app.conf.task_always_eager = was
    # 1.1 MB: a background job, whose problems name the line, the field and the limit.
    assert response.status_code == 202, response.content[:300]
    job = api.get(response.json()["job"]["url"]).json()
    assert job["state"] == "failed"
    assert "refs.jsonl, line 1, field 'reference': is 1,100,000 characters long; the limit is 20,000" in job["problems"]
    small = json.dumps({"id": "a", "reference": "Dogs bark. " * 2000}).encode() + b"\n"
    settings.IMPORT_MAX_REFERENCE_CHARS = 1000
    response = api.post("/api/campaigns/", {"name": "Huge", **_files(refs=small)}, format="multipart")
    assert response.status_code == 400
    assert "refs.jsonl, line 1, field 'reference': is 22,000 characters long; the limit is 1,000" in response.json()["detail"]
    assert not Campaign.objects.filter(name="Huge").exists()


def test_an_unshared_researcher_loses_the_campaigns_job_results(api_world, settings, tmp_path, django_capture_on_commit_callbacks):
    from config.celery import app

    settings.EXPORTS_DIR = tmp_path / "exports"
    campaign, owner, shared = api_world["campaign"], api_world["users"]["owner"], api_world["users"]["shared"]
    client = Client()
    client.force_login(shared)
    was = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/campaigns/{campaign.slug}/export/")
    finally:
        app.conf.task_always_eager = was
    job_url = response["Location"]
    assert client.get(job_url + "download/").status_code == 200
    unshare_campaign(campaign, shared, by=owner)
    for suffix in ("", "status/", "download/"):
        assert client.get(job_url + suffix).status_code == 404, suffix
    share_campaign(campaign, shared, by=owner)
    assert client.get(job_url + "download/").status_code == 200


def test_large_api_imports_run_as_background_jobs(api_world, settings, tmp_path, django_capture_on_commit_callbacks):
    from config.celery import app

    settings.DATA_DIR = tmp_path / "data"
    settings.API_IMPORT_INLINE_MAX_BYTES = 50  # these small files stand for a large upload
    api = client_for(api_world, "owner")
    was = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            queued = api.post("/api/campaigns/", {"name": "Queued study", **_files()}, format="multipart")
        with django_capture_on_commit_callbacks(execute=True):
            broken = api.post("/api/campaigns/", {"name": "Queued broken", **_files(sums=b'{"id": "zz", "system": "s", "summary": "x"}\n')}, format="multipart")
    finally:
        app.conf.task_always_eager = was
    assert queued.status_code == 202 and queued["Location"] == queued.json()["job"]["url"]
    job = api.get(queued["Location"]).json()
    assert job["state"] == "done" and job["kind"] == "import" and job["campaign"] == "queued-study"
    assert Campaign.objects.get(slug="queued-study").owner == api_world["users"]["owner"]
    failed = api.get(broken.json()["job"]["url"]).json()
    assert failed["state"] == "failed" and any("unknown" in p or "zz" in p for p in failed["problems"]), failed
    assert not Campaign.objects.filter(name="Queued broken").exists()
    # Another researcher cannot see either job.
    other = client_for(api_world, "other_researcher")
    assert other.get(queued["Location"]).status_code == 404 and other.get(broken.json()["job"]["url"]).status_code == 404
    assert client_for(api_world, "anonymous").get(queued["Location"]).status_code == 401


def test_every_page_sends_a_content_security_policy(api_world):
    from annotation.models import Job

    owner = Client()
    owner.force_login(api_world["users"]["owner"])
    slug = api_world["campaign"].slug
    pages = [
        (Client(), "/"), (Client(), "/accounts/login/"), (Client(), "/admin/login/"), (Client(), "/healthz"),
        (Client(), "/api/schema/"), (Client(), "/api/docs/"), (Client(), "/no/such/page/"), (owner, "/work/"),
        (owner, f"/campaigns/{slug}/progress/"), (owner, f"/campaigns/{slug}/settings/"), (owner, "/api/campaigns/"),
    ]
    for client, url in pages:
        response = client.get(url)
        policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
        assert policy["script-src"] == "'self'" and policy["frame-ancestors"] == "'none'", url
        assert policy["object-src"] == "'none'" and policy["base-uri"] == "'self'", url
        assert b"onclick=" not in response.content and b"onchange=" not in response.content, url
    # Swagger UI's setup is a script file of its own (the policy refuses inline scripts).
    docs = Client().get("/api/docs/").content.decode()
    assert "<script>" not in docs and "?script" in docs
    assert Client().get("/api/docs/?script").status_code == 200
    assert Job.objects.count() == 0
