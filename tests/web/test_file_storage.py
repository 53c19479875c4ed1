"""Files another process reads (issue 50): staged uploads, export archives and trained judges go through the
storage API, on the local disk by default and in an S3 bucket (moto's in-process stand-in here) with
``STORAGE_BUCKET``; an expired or removed export answers 410; a store out of reach fails the job clearly and
the job can be retried."""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Campaign, Job
from annotation.services import filestore, uploads
from annotation.services.jobs import remove_old_exports, run_job
from annotation.tasks import clean_stored_files_task
from config.storage import storages_setting
from tests.web.conftest import REFERENCES, SUMMARIES, settle_with_kept_pairs, upload

pytestmark = pytest.mark.django_db
BUCKET = "qapyr-test-files"


@pytest.fixture
def api(rita):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=rita)[0].key}")
    return client


@pytest.fixture
def bucket(monkeypatch, settings):
    """STORAGES pointed at an S3 bucket served by moto in this process; yields the boto3 client."""
    moto = pytest.importorskip("moto")
    import boto3

    for name in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with moto.mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        with override_settings(STORAGES={**settings.STORAGES, **storages_setting(BUCKET, 0)}):
            yield client


def keys(client) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def _export(campaign, rita) -> Job:
    job = Job.objects.create(kind=Job.Kind.EXPORT, campaign=campaign, created_by=rita)
    assert run_job(job.pk) == "done", Job.objects.get(pk=job.pk).message
    return Job.objects.get(pk=job.pk)


def _zip_names(response) -> list[str]:
    body = b"".join(response.streaming_content)
    return sorted(n.split("/", 1)[1] for n in zipfile.ZipFile(io.BytesIO(body)).namelist())


# --- the embedded default: the local disk ---------------------------------------------------------------------


def test_local_default_keeps_exports_under_exports_dir_and_streams_them(draft, rita, client_rita, api, settings):
    settle_with_kept_pairs(draft)
    job = _export(draft, rita)
    assert job.result_path == f"{draft.slug}-export-{job.pk}.zip"  # a name in the exports storage, not a path
    assert (settings.EXPORTS_DIR / job.result_path).is_file()
    page = client_rita.get(reverse("job-download", args=[job.pk]))
    assert page.status_code == 200 and page.streaming and page["Content-Disposition"].startswith("attachment")
    assert "campaign.json" in _zip_names(page)
    assert "campaign.json" in _zip_names(api.get(f"/api/jobs/{job.pk}/download/"))


def test_a_removed_export_answers_410_with_the_reason_on_the_page_and_the_api(draft, rita, client_rita, api, settings):
    settle_with_kept_pairs(draft)
    job = _export(draft, rita)
    (settings.EXPORTS_DIR / job.result_path).unlink()
    page = client_rita.get(reverse("job-download", args=[job.pk]))
    assert page.status_code == 410 and "archive was removed from the store" in page.content.decode()
    response = api.get(f"/api/jobs/{job.pk}/download/")
    assert response.status_code == 410 and "Export the campaign again" in response.json()["detail"]


def test_the_beat_task_removes_expired_exports_and_stale_uploads_and_keeps_fresh_ones(draft, rita, api, settings):
    settle_with_kept_pairs(draft)
    old, fresh = _export(draft, rita), _export(draft, rita)
    stale_token, fresh_token = uploads.new_upload(), uploads.new_upload()
    for token in (stale_token, fresh_token):
        uploads.stage_file(token, "references", upload("refs.jsonl", REFERENCES))
    two_days_ago = time.time() - 2 * 24 * 3600
    for path in (settings.EXPORTS_DIR / old.result_path, *(uploads.uploads_dir() / stale_token).rglob("*")):
        os.utime(path, (two_days_ago, two_days_ago))
    Job.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(days=2))
    settings.EXPORT_KEEP_HOURS = 24
    assert clean_stored_files_task.apply().get() == {"uploads": 1, "exports": 1}
    assert set(uploads.staged_files(fresh_token)) == {"references"} and uploads.staged_files(stale_token) == {}
    assert (settings.EXPORTS_DIR / fresh.result_path).is_file()
    response = api.get(f"/api/jobs/{old.pk}/download/")
    assert response.status_code == 410 and "expired: archives are kept 24 hours" in response.json()["detail"]
    assert api.get(f"/api/jobs/{fresh.pk}/download/").status_code == 200


def test_a_tampered_result_path_serves_nothing(draft, rita, client_rita, settings):
    settle_with_kept_pairs(draft)
    job = _export(draft, rita)
    for tampered in ("../db.sqlite3", str(settings.DATA_DIR / "secret_key"), "sub/other.zip"):
        Job.objects.filter(pk=job.pk).update(result_path=tampered)
        assert client_rita.get(reverse("job-download", args=[job.pk])).status_code == 404, tampered


# --- an S3 bucket (moto's stand-in in this process) -----------------------------------------------------------


def test_an_api_import_job_reads_its_upload_from_the_bucket_and_leaves_no_file_on_disk(
    api, bucket, settings, django_capture_on_commit_callbacks
):
    settings.API_IMPORT_INLINE_MAX_BYTES = 10  # every upload becomes a background job
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/campaigns/", {
        "name": "From the bucket", "references": upload("refs.jsonl", REFERENCES),
        "summaries": upload("sums.jsonl", SUMMARIES)}, format="multipart")
    assert response.status_code == 202, response.content
    job = api.get(response["Location"]).json()
    assert job["state"] == "done", job
    assert Campaign.objects.get(slug=job["campaign"]).examples.count() == 2
    assert keys(bucket) == []  # staged in the bucket, removed after the import
    assert not uploads.uploads_dir().exists()


def test_a_staged_upload_is_in_the_bucket_under_its_token(bucket, settings):
    token = uploads.new_upload()
    uploads.stage_file(token, "references", upload("my refs.jsonl", REFERENCES))
    assert keys(bucket) == [f"uploads/{token}/references/my_refs.jsonl"]
    staged = uploads.staged_files(token)
    assert staged["references"].name == "my_refs.jsonl"
    with uploads.local_files(staged) as files:
        assert files["references"].read_bytes() == REFERENCES and files["references"].name == "my_refs.jsonl"
    uploads.stage_file(token, "references", upload("other.jsonl", REFERENCES))  # replaces the earlier file
    assert keys(bucket) == [f"uploads/{token}/references/other.jsonl"]
    assert not uploads.uploads_dir().exists()


def test_an_export_lands_in_the_bucket_and_downloads_streamed_or_through_a_signed_link(draft, rita, api, bucket, settings):
    settle_with_kept_pairs(draft)
    job = _export(draft, rita)
    assert keys(bucket) == [f"exports/{job.result_path}"]
    assert not settings.EXPORTS_DIR.exists()
    streamed = api.get(f"/api/jobs/{job.pk}/download/")
    assert streamed.status_code == 200 and streamed["Content-Type"] == "application/zip"
    assert "campaign.json" in _zip_names(streamed)
    settings.STORAGE_SIGNED_URL_SECONDS = 60
    redirected = api.get(f"/api/jobs/{job.pk}/download/")
    assert redirected.status_code == 302
    link = redirected["Location"]
    assert BUCKET in link and f"exports/{job.result_path}" in link and "Expires=" in link and "Signature=" in link
    bucket.delete_object(Bucket=BUCKET, Key=f"exports/{job.result_path}")
    gone = api.get(f"/api/jobs/{job.pk}/download/")
    assert gone.status_code == 410 and "removed from the store" in gone.json()["detail"]


def test_the_beat_task_removes_old_exports_in_the_bucket(draft, rita, bucket, settings):
    settle_with_kept_pairs(draft)
    job = _export(draft, rita)
    assert remove_old_exports() == 0 and keys(bucket) == [f"exports/{job.result_path}"]
    assert remove_old_exports(keep_hours=-1) == 1 and keys(bucket) == []  # everything is older than the future


def test_a_store_out_of_reach_fails_the_job_clearly_and_it_can_be_retried(
    api, bucket, settings, client_rita, django_capture_on_commit_callbacks
):
    settings.API_IMPORT_INLINE_MAX_BYTES = 10
    with django_capture_on_commit_callbacks(execute=False):  # staged, queued, but not run yet
        response = api.post("/api/campaigns/", {
            "name": "Retried", "references": upload("refs.jsonl", REFERENCES),
            "summaries": upload("sums.jsonl", SUMMARIES)}, format="multipart")
    assert response.status_code == 202
    job_id = response.json()["job"]["id"]
    with override_settings(STORAGES={**settings.STORAGES, **storages_setting("qapyr-no-such-bucket", 0)}):
        run_job(job_id)  # the worker's store is out of reach
    job = api.get(f"/api/jobs/{job_id}/").json()
    assert job["state"] == "failed" and "storage unreachable: bucket 'qapyr-no-such-bucket'" in job["message"]
    assert job["retryable"] and job["retry_url"] == f"/api/jobs/{job_id}/retry/"
    assert any(k.startswith("uploads/") for k in keys(bucket))  # the staged files were kept for the retry
    assert 'id="job-retry"' in client_rita.get(reverse("job-detail", args=[job_id])).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        retried = api.post(job["retry_url"])
    assert retried.status_code == 202
    assert api.get(f"/api/jobs/{job_id}/").json()["state"] == "done"
    assert Campaign.objects.filter(name="Retried").exists() and keys(bucket) == []
    again = api.post(f"/api/jobs/{job_id}/retry/")
    assert again.status_code == 409 and "only a job that failed because the file store" in again.json()["detail"]


def test_an_upload_to_a_store_out_of_reach_answers_503_never_500(api, client_rita, bucket, settings):
    settings.API_IMPORT_INLINE_MAX_BYTES = 10
    with override_settings(STORAGES={**settings.STORAGES, **storages_setting("qapyr-no-such-bucket", 0)}):
        response = api.post("/api/campaigns/", {
            "name": "Nowhere", "references": upload("refs.jsonl", REFERENCES),
            "summaries": upload("sums.jsonl", SUMMARIES)}, format="multipart")
        assert response.status_code == 503
        assert response.json()["detail"].startswith("storage unreachable: bucket 'qapyr-no-such-bucket'")
        page = client_rita.post(reverse("campaign-new"), {
            "name": "Nowhere", "predicates": "auto", "references": upload("refs.jsonl", REFERENCES),
            "summaries": upload("sums.jsonl", SUMMARIES)})
        assert page.status_code == 503 and "could not reach the store" in page.content.decode()
    assert not Job.objects.exists()


def test_an_endpoint_that_does_not_answer_is_storage_unreachable(monkeypatch, settings):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with override_settings(STORAGES={**settings.STORAGES, **storages_setting(BUCKET, 0)}):
        with pytest.raises(filestore.StorageUnavailable, match=f"^storage unreachable: bucket '{BUCKET}': Could not connect"):
            uploads.stage_file(uploads.new_upload(), "references", upload("refs.jsonl", REFERENCES))


def test_a_missing_bucket_stops_the_start_naming_it(bucket):
    filestore.check_bucket(BUCKET)  # there: nothing said
    with pytest.raises(ImproperlyConfigured, match="STORAGE_BUCKET 'qapyr-missing' does not exist"):
        filestore.check_bucket("qapyr-missing")


def test_a_trained_judge_is_loaded_from_the_bucket_on_another_node(bucket, settings, tmp_path):
    """A judge published by the training node is fetched by another node (its own DATA_DIR and MODELS_DIR) into a
    cache keyed by the stored metadata's digest: trained again under the same name, it is fetched again."""
    import joblib
    from sklearn.dummy import DummyClassifier

    from annotation.automation.judges.base import file_sha256
    from annotation.automation.judges.features import FEATURE_NAMES
    from annotation.automation.judges.trained import (
        FORMAT_VERSION, load_trained_judge, local_model_directory, model_directory, model_exists, publish_model,
    )

    settings.MODELS_DIR = tmp_path / "trainer" / "models"
    directory = model_directory("shared-judge")
    directory.mkdir(parents=True)

    def train(threshold):
        joblib.dump(DummyClassifier().fit([[0.0] * len(FEATURE_NAMES), [1.0] * len(FEATURE_NAMES)], [0, 1]), directory / "head.joblib")
        (directory / "metadata.json").write_text(json.dumps({
            "format": FORMAT_VERSION, "kind": "features", "features": FEATURE_NAMES, "threshold": threshold,
            "head_sha256": file_sha256(directory / "head.joblib")}))
        publish_model(directory)

    train(0.4)
    assert keys(bucket) == ["models/shared-judge/head.joblib", "models/shared-judge/metadata.json"]
    settings.MODELS_DIR, settings.DATA_DIR = tmp_path / "other" / "models", tmp_path / "other" / "data"
    assert model_exists("shared-judge") and not model_exists("never-trained")
    judge = load_trained_judge("shared-judge")
    assert judge.threshold == 0.4 and "/shared-judge/" in judge.version
    first = local_model_directory("shared-judge")
    assert first.name == "shared-judge" and (tmp_path / "other" / "data" / "cache" / "models") in first.parents
    assert not settings.MODELS_DIR.exists()  # nothing written where the disk store would be
    settings.MODELS_DIR = tmp_path / "trainer" / "models"
    train(0.6)
    settings.MODELS_DIR = tmp_path / "other" / "models"
    assert local_model_directory("shared-judge") != first
    assert load_trained_judge("shared-judge").threshold == 0.6


def test_hybrid_curves_are_saved_to_and_listed_from_the_bucket(bucket):
    from annotation.automation.judges.hybrid import save_curve, saved_curves

    where = save_curve({"curve": [{"routed": {"summary_pearson": 0.9}}]}, "tiny run")
    assert where == f"s3://{BUCKET}/models/hybrid-curves/tiny-run.json"
    assert [c["name"] for c in saved_curves()] == ["tiny-run"]


def test_without_a_bucket_the_start_imports_neither_boto3_nor_django_storages(tmp_path):
    """The start-up check asks the store only when STORAGE_BUCKET is set: the embedded default pays nothing for it."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import sys, django; django.setup(); "
            "print(sorted(m for m in ('boto3', 'botocore', 'storages') if m in sys.modules))")
    env = {"PATH": os.environ.get("PATH", ""), "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1",
           "DATA_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
