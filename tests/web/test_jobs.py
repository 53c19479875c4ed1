"""Long work as jobs with progress: export (download), recomputation; and the command-line progress bar."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Job
from annotation.management.progress import ProgressBar
from annotation.models import ContentUnit, GoldPresence, PresenceJudgment, SystemSummary
from annotation.services.jobs import run_job
from hits.models import Worker
from tests.web.conftest import settle_with_kept_pairs

pytestmark = pytest.mark.django_db


def _with_judgments(campaign):
    settle_with_kept_pairs(campaign)
    worker = Worker.objects.create(external_id="judge")
    rows = [
        PresenceJudgment(unit=u, summary=s, worker=worker, present=True)
        for s in SystemSummary.objects.filter(system__campaign=campaign)
        for u in ContentUnit.objects.filter(example=s.example_id, state="kept")
    ]
    PresenceJudgment.objects.bulk_create(rows)
    return len(rows)


def test_export_job_progress_and_download(client_rita, draft, django_user_model, django_capture_on_commit_callbacks):
    n_judgments = _with_judgments(draft)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_rita.post(reverse("campaign-export", args=[draft.slug]), {"pseudonymise": "1"})
    job = Job.objects.get(kind="export")
    assert response["Location"] == reverse("job-detail", args=[job.pk])
    assert job.state == "done" and job.done == job.total == 2 + 2  # two examples, judgments, settings
    assert f"{n_judgments:,} judgments" in job.message
    status = client_rita.get(reverse("job-status", args=[job.pk])).json()
    assert status["finished"] and status["result_url"] == reverse("job-download", args=[job.pk])
    download = client_rita.get(status["result_url"])
    assert download.status_code == 200 and "attachment" in download["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    names = sorted(n.split("/")[-1] for n in archive.namelist())
    assert names == ["campaign.json", "examples.jsonl", "judgments.csv", "pairs.csv", "systems.csv", "verifications.csv"]
    csv_text = archive.read(next(n for n in archive.namelist() if n.endswith("judgments.csv"))).decode()
    assert "judge" not in csv_text.split("\n", 1)[1] and "w-" in csv_text  # pseudonymised
    page = client_rita.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "Download the export" in page and "data-poll-url" not in page  # finished: no more polling
    stranger = django_user_model.objects.create_user(username="sam", password="a-long-test-password")
    other = Client()
    other.force_login(stranger)
    for name in ("job-detail", "job-status", "job-download"):
        assert other.get(reverse(name, args=[job.pk])).status_code == 404


def test_recompute_job_and_a_queued_job_page_polls(client_rita, draft, django_capture_on_commit_callbacks):
    _with_judgments(draft)
    assert not GoldPresence.objects.exists()
    response = client_rita.post(reverse("campaign-recompute", args=[draft.slug]))
    job = Job.objects.get(kind="recompute")
    # Not run yet (the task goes after the commit): the page polls the status endpoint.
    page = client_rita.get(response["Location"]).content.decode()
    assert f'data-poll-url="{reverse("job-status", args=[job.pk])}"' in page and "queued" in page
    assert run_job(job.pk) == "done"
    job.refresh_from_db()
    assert (job.done, job.total) == (2, 2) and "crowd gold labels" in job.message
    assert GoldPresence.objects.filter(summary__system__campaign=draft).count() == PresenceJudgment.objects.count()
    assert run_job(job.pk) == "done"  # a re-delivered task changes nothing
    progress_page = client_rita.get(reverse("campaign-progress", args=[draft.slug])).content.decode()
    assert f'<a href="{reverse("job-detail", args=[job.pk])}">Recompute gold labels and scores #{job.pk}</a> · Done' in progress_page


def test_a_failing_job_ends_failed_with_its_reason(draft, rita):
    job = Job.objects.create(kind="export", campaign=None, created_by=rita)  # nothing to export: the service raises
    assert run_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed" and job.message.startswith("Failed:") and job.finished_at is not None
    assert run_job(job.pk) == "failed"  # a finished job is left alone


def test_progress_bar_draws_only_when_asked_or_on_a_terminal():
    stream = io.StringIO()
    bar = ProgressBar(stream, enabled=True, min_interval=0)
    bar(0, 4, "examples")
    bar(2, 4, "examples")
    bar(4, 4, "done")
    bar.close()
    out = stream.getvalue()
    assert "\r[" in out and " 50%  2/4  examples" in out and "100%  4/4  done" in out and out.endswith("\n")
    quiet = io.StringIO()
    ProgressBar(quiet, enabled=False)(1, 2)
    assert quiet.getvalue() == ""


def test_commands_show_a_progress_bar_on_stderr_with_progress(draft, tmp_path, capsys):
    _with_judgments(draft)
    call_command("recompute_gold", campaign=draft.slug, progress=True)
    captured = capsys.readouterr()
    assert "100%  2/2  recomputed" in captured.err and "Recomputed" in captured.out and "[" not in captured.out
    call_command("export_campaign", campaign=draft.slug, out=str(tmp_path / "out"))
    captured = capsys.readouterr()
    assert captured.err == "" and "Exported 2 examples" in captured.out  # not a terminal, no --progress: no bar
    call_command("export_campaign", campaign=draft.slug, out=str(tmp_path / "out2"), progress=True)
    assert "100%  4/4  exported" in capsys.readouterr().err
    refs = tmp_path / "r.jsonl"
    refs.write_text('{"id": "x", "reference": "Rain fell."}\n')
    sums = tmp_path / "s.jsonl"
    sums.write_text('{"id": "x", "system": "s", "summary": "It rained."}\n')
    call_command("import_campaign", name="Bar", references=str(refs), summaries=str(sums), progress=True, owner="rita")
    captured = capsys.readouterr()
    assert "100%  4/4  imported" in captured.err and "Imported campaign 'Bar'" in captured.out


def test_jobs_and_corrections_in_the_django_admin(draft, django_user_model):
    from annotation.models import QAPairCorrection

    admin_user = django_user_model.objects.create_superuser(username="ada", password="a-long-test-password")
    client = Client()
    client.force_login(admin_user)
    Job.objects.create(kind="export", campaign=draft, created_by=admin_user, message="a test job")
    assert client.get("/admin/annotation/job/").status_code == 200
    settle_with_kept_pairs(draft)
    unit = ContentUnit.objects.filter(example__campaign=draft).first()
    entry = QAPairCorrection.objects.create(unit=unit, changed_by=admin_user, old_question="old?", new_question="new?")
    assert client.get("/admin/annotation/qapaircorrection/").status_code == 200
    assert client.get(f"/admin/annotation/qapaircorrection/{entry.pk}/change/").status_code == 200  # view only
    assert client.post(f"/admin/annotation/qapaircorrection/{entry.pk}/change/", {"new_question": "x"}).status_code == 403
