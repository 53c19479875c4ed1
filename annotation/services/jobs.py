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
- ``export``: ``export_campaign``, zipped for download into the exports
  storage (``EXPORTS_DIR``, or the bucket of ``STORAGE_BUCKET``), removed
  after ``EXPORT_KEEP_HOURS`` by ``remove_old_exports``.

A job that failed because the file store was out of reach is marked
retryable (``retry_job``): its inputs (an import's staged files) are kept.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import tempfile
import time
import zipfile
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation.models import Campaign, Job
from annotation.services import filestore
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
        retryable = isinstance(exc, filestore.StorageUnavailable)
        if retryable:
            log.error("job %s (%s) failed: %s", job.pk, job.kind, exc)
        elif not problems:
            log.exception("job %s (%s) failed", job.pk, job.kind)
        Job.objects.filter(pk=job.pk).update(
            state=Job.State.FAILED, finished_at=timezone.now(), message=_failure_message(exc)[:500], problems=problems,
            params={**job.params, "retryable": retryable},
        )
        return Job.State.FAILED
    Job.objects.filter(pk=job.pk).update(state=Job.State.DONE, finished_at=timezone.now(), **fields)
    return Job.State.DONE


def _failure_message(exc: Exception) -> str:
    from annotation.importing.readers import CampaignImportError

    if isinstance(exc, CampaignImportError):
        n = len(exc.problems)
        return f"Nothing was imported: {n} problem{'s' if n != 1 else ''} in the files."
    if isinstance(exc, filestore.StorageUnavailable):
        return f"Failed: {exc}. Nothing was lost: retry the job once the store answers."
    return f"Failed: {exc}" if str(exc) else f"Failed: {type(exc).__name__}"


def _run_import(job: Job, progress) -> dict:
    from annotation.services.campaign_import import import_campaign
    from annotation.services.uploads import discard_upload, local_files, staged_files

    params = job.params
    predicates = params.get("predicates", "auto")
    owner = get_user_model().objects.filter(pk=params.get("owner")).first()
    # The files were staged by whichever web node took the upload: read from the shared uploads storage.
    with local_files(staged_files(params["upload"])) as files:
        report = import_campaign(
            name=params["name"],
            slug=params.get("slug") or None,
            owner=owner,
            description=params.get("description", ""),
            references=files.get("references"),
            summaries=files.get("summaries"),
            predicates=files.get("predicates") if predicates == "file" else predicates,
            progress=progress,
        )
    try:
        discard_upload(params["upload"])
    except filestore.StorageUnavailable as exc:  # imported: the hourly clean-up removes the files later
        log.warning("job %s: staged upload kept: %s", job.pk, exc)
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
    """Where exports are kept on the local disk (without ``STORAGE_BUCKET``)."""
    return Path(settings.EXPORTS_DIR)


def _run_export(job: Job, progress) -> dict:
    """Export into a temporary folder, zip it (one file to download) and keep only the zip, in the exports
    storage that every web node reads (the disk, or the bucket)."""
    from annotation.services.export import export_campaign

    campaign = job.campaign
    stem = f"{campaign.slug}-export-{job.pk}"
    pseudonymise = bool(job.params.get("pseudonymise"))
    # A fresh salt per export: pseudonyms cannot be linked across exports, nor reversed by guessing ids.  An API
    # export asks for stable ones (``stable_pseudonyms``): salted with the secret key, never stored in the job.
    salt = ""
    if pseudonymise:
        salt = settings.SECRET_KEY + campaign.slug if job.params.get("stable_pseudonyms") else secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="qapyr-export-") as work:
        folder = Path(work) / stem
        result = export_campaign(campaign, folder, pseudonymise=pseudonymise, salt=salt, progress=progress)
        archive = Path(work) / f"{stem}.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.iterdir()):
                zf.write(path, arcname=f"{stem}/{path.name}")
        name = filestore.save_path(filestore.EXPORTS, archive.name, archive)
    total = Job.objects.values_list("total", flat=True).get(pk=job.pk) or 1
    return {
        "result_path": name,
        "message": f"Exported {result['examples']:,} examples and {result['judgments']:,} judgments.",
        "done": total,
        "total": total,
    }


RUNNERS = {Job.Kind.IMPORT: _run_import, Job.Kind.RECOMPUTE: _run_recompute, Job.Kind.EXPORT: _run_export}
_EXPORT_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.zip$")


def export_file(job: Job) -> str | None:
    """The name, in the exports storage, of the zip a finished export job wrote; None when the job is not a done
    export.  Only a plain archive name of that storage: a tampered row must not serve other files.  (Rows written
    before the storage hold an absolute path under ``EXPORTS_DIR``: its name is taken when it is right there.)"""
    if job.kind != Job.Kind.EXPORT or job.state != Job.State.DONE or not job.result_path:
        return None
    name = job.result_path
    if os.path.isabs(name):
        path = Path(name).resolve()
        if path.parent != export_dir().resolve():
            return None
        name = path.name
    return name if _EXPORT_NAME.match(name) else None


def export_gone_reason(job: Job) -> str:
    """Why a done export has no archive any more (its download answers 410 Gone with this)."""
    keep = settings.EXPORT_KEEP_HOURS
    if job.finished_at and timezone.now() - job.finished_at >= timedelta(hours=keep):
        return f"This export expired: archives are kept {keep} hours after the export. Export the campaign again."
    return "This export's archive was removed from the store. Export the campaign again."


def remove_old_exports(keep_hours: float | None = None) -> int:
    """Remove export archives older than ``EXPORT_KEEP_HOURS`` (a beat task, on the disk as in the bucket);
    returns how many were removed."""
    keep = settings.EXPORT_KEEP_HOURS if keep_hours is None else keep_hours
    cutoff = timezone.now() - timedelta(hours=keep)
    removed = 0
    for name in filestore.walk(filestore.EXPORTS):
        if _EXPORT_NAME.match(name) and filestore.modified(filestore.EXPORTS, name) < cutoff:
            filestore.delete(filestore.EXPORTS, name)
            removed += 1
    return removed


def retry_job(job: Job) -> bool:
    """Queue a job again that failed because the file store was out of reach (its inputs were kept); False for
    any other job (a failure in the files or the data would only fail again)."""
    updated = Job.objects.filter(pk=job.pk, state=Job.State.FAILED, params__retryable=True).update(
        state=Job.State.QUEUED, done=0, total=0, message="Queued again.", problems=[], started_at=None, finished_at=None
    )
    if updated:
        send_after_commit(RUN_JOB_TASK, job.pk)
    return bool(updated)


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
        # Failed because the file store was out of reach: POST .../retry/ queues it again.
        "retryable": job.state == Job.State.FAILED and bool(job.params.get("retryable")),
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
