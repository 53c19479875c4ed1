"""Long work run as Celery tasks, with progress a page can poll.

``start_job`` records a ``Job`` and hands ``annotation.run_job`` to Celery
once the current transaction commits (in-process under the embedded
default).  ``run_job`` calls the service for the job's kind with a
``progress(done, total, message)`` callable that stores how far it got, so
that ``/campaigns/jobs/<id>/status/`` can answer while the work goes on.

Kinds:

- ``import``: ``import_campaign`` from an upload staged by
  ``annotation.services.uploads`` (the staged files are removed afterwards);
- ``recompute``: ``recompute_gold`` (every gold label and score);
- ``export``: ``export_campaign`` into ``settings.EXPORTS_DIR``, zipped for
  download.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import time
import zipfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import Campaign, Job
from hits.outbox import send_after_commit

log = logging.getLogger(__name__)


RUN_JOB_TASK = "annotation.run_job"


def start_job(kind: str, *, campaign: Campaign | None = None, params: dict | None = None, user=None) -> Job:
    """Record a queued job and schedule it after the current transaction commits."""
    job = Job.objects.create(kind=kind, campaign=campaign, params=params or {}, created_by=user)
    # By name: the Celery entry points (annotation.tasks) sit above the services.
    send_after_commit(RUN_JOB_TASK, job.pk)
    return job


class JobProgress:
    """The ``progress(done, total, message)`` callable of a running job.

    Writes at most every ``min_interval`` seconds (always the final step), so
    that a service reporting every row does not turn into a write per row.
    """

    def __init__(self, job: Job, min_interval: float = 0.3):
        self.job = job
        self.min_interval = min_interval
        self._last = 0.0

    def __call__(self, done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        if total and done < total and now - self._last < self.min_interval:
            return
        self._last = now
        done = min(done, total) if total else 0
        Job.objects.filter(pk=self.job.pk).update(done=done, total=total, message=message[:500])


def run_job(job_id: int) -> str:
    """Run a queued job to its end; returns its final state. A finished job is left alone (re-delivery)."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job.state if job else "missing"
    Job.objects.filter(pk=job.pk).update(state=Job.State.RUNNING, started_at=timezone.now())
    progress = JobProgress(job)
    try:
        fields = RUNNERS[job.kind](job, progress)
    except Exception as exc:  # noqa: BLE001 - a failure must end the job visibly, never leave it "running"
        from annotation.importing.readers import CampaignImportError

        problems = [str(p) for p in exc.problems] if isinstance(exc, CampaignImportError) else []
        if not problems:
            log.exception("job %s (%s) failed", job.pk, job.kind)
        Job.objects.filter(pk=job.pk).update(
            state=Job.State.FAILED, finished_at=timezone.now(), message=_failure_message(exc)[:500], problems=problems
        )
        return Job.State.FAILED
    Job.objects.filter(pk=job.pk).update(state=Job.State.DONE, finished_at=timezone.now(), **fields)
    return Job.State.DONE


def _failure_message(exc: Exception) -> str:
    from annotation.importing.readers import CampaignImportError

    if isinstance(exc, CampaignImportError):
        n = len(exc.problems)
        return f"Nothing was imported: {n} problem{'s' if n != 1 else ''} in the files."
    return f"Failed: {exc}" if str(exc) else f"Failed: {type(exc).__name__}"


def _run_import(job: Job, progress) -> dict:
    from annotation.services.campaign_import import import_campaign
    from annotation.services.uploads import discard_upload, staged_files

    params = job.params
    files = staged_files(params["upload"])
    predicates = params.get("predicates", "auto")
    if predicates == "file":
        predicates = files.get("predicates")
    owner = get_user_model().objects.filter(pk=params.get("owner")).first()
    report = import_campaign(
        name=params["name"],
        slug=params.get("slug") or None,
        owner=owner,
        description=params.get("description", ""),
        references=files.get("references"),
        summaries=files.get("summaries"),
        predicates=predicates,
        progress=progress,
    )
    discard_upload(params["upload"])
    total = report.n_examples + 3  # the steps import_campaign reports: files, each reference, writing
    return {"campaign": report.campaign, "message": report.summary_line()[:500], "done": total, "total": total}


def _run_recompute(job: Job, progress) -> dict:
    from annotation.services.scores import recompute_gold

    result = recompute_gold(job.campaign, progress=progress)
    return {
        "message": f"Recomputed {result['gold_labels']:,} crowd gold labels and the scores of {result['summaries']:,} summaries.",
        "done": 2,
        "total": 2,
    }


def export_dir() -> Path:
    return Path(settings.EXPORTS_DIR)


def _run_export(job: Job, progress) -> dict:
    """Export into a folder of its own, then zip it (one file to download) and keep only the zip."""
    from annotation.services.export import export_campaign

    campaign = job.campaign
    stem = f"{campaign.slug}-export-{job.pk}"
    folder = export_dir() / stem
    pseudonymise = bool(job.params.get("pseudonymise"))
    # A fresh salt per export: pseudonyms cannot be linked across exports, nor reversed by guessing ids.  An API
    # export asks for stable ones (``stable_pseudonyms``): salted with the secret key, never stored in the job.
    salt = ""
    if pseudonymise:
        salt = settings.SECRET_KEY + campaign.slug if job.params.get("stable_pseudonyms") else secrets.token_hex(16)
    result = export_campaign(campaign, folder, pseudonymise=pseudonymise, salt=salt, progress=progress)
    archive = export_dir() / f"{stem}.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, arcname=f"{stem}/{path.name}")
    shutil.rmtree(folder, ignore_errors=True)
    total = Job.objects.values_list("total", flat=True).get(pk=job.pk) or 1
    return {
        "result_path": str(archive),
        "message": f"Exported {result['examples']:,} examples and {result['judgments']:,} judgments.",
        "done": total,
        "total": total,
    }


RUNNERS = {Job.Kind.IMPORT: _run_import, Job.Kind.RECOMPUTE: _run_recompute, Job.Kind.EXPORT: _run_export}


def export_file(job: Job) -> Path | None:
    """The zip a finished export job wrote, or None (not done, not an export, or the file is gone).  Only files
    under ``EXPORTS_DIR``: a tampered row must not serve other files."""
    if job.state != Job.State.DONE or not job.result_path:
        return None
    path = Path(job.result_path).resolve()
    if not path.is_file() or export_dir().resolve() not in path.parents:
        return None
    return path


def job_status(job: Job) -> dict:
    """What the status endpoint answers (JSON-ready)."""
    from django.urls import reverse

    data = {
        "id": job.pk,
        "kind": job.kind,
        "state": job.state,
        "done": job.done,
        "total": job.total,
        "percent": job.percent,
        "message": job.message,
        "problems": job.problems,
        "finished": job.finished,
        "result_url": "",
    }
    if job.state == Job.State.DONE:
        if job.kind == Job.Kind.EXPORT and job.result_path:
            data["result_url"] = reverse("job-download", args=[job.pk])
        elif job.kind == Job.Kind.IMPORT and job.campaign_id:
            data["result_url"] = reverse("campaign-settings", args=[job.campaign.slug])
        elif job.campaign_id:
            data["result_url"] = reverse("campaign-agreement", args=[job.campaign.slug])
    return data
