"""Pages of long jobs: start one, watch its progress (polled JSON), download its result, retry it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.services import roles
from annotation.web.views.setup import managed_campaign
from annotation.models import Job
from annotation.services.jobs import export_file, job_status, retry_job, start_job
from annotation.web.downloads import ExportGone, export_download


def _visible_job(request, pk: int) -> Job:
    """A job the user may see now (``roles.can_view_job``); 404 for anyone else."""
    job = get_object_or_404(Job.objects.select_related("campaign"), pk=pk)
    if not roles.can_view_job(request.user, job):
        raise Http404
    return job


@login_required
def job_detail(request, pk):
    job = _visible_job(request, pk)
    return render(request, "annotation/job.html", {"job": job, "status": job_status(job)})


@login_required
def job_status_view(request, pk):
    """The job's progress as JSON, polled by static/js/jobs.js (never cached)."""
    job = _visible_job(request, pk)
    response = JsonResponse(job_status(job))
    response["Cache-Control"] = "no-store"
    return response


@login_required
def job_download(request, pk):
    job = _visible_job(request, pk)
    if job.state != Job.State.DONE or not job.result_path:
        raise Http404("This job has no file to download.")
    name = export_file(job)
    if name is None:
        raise Http404("This job has no file to download.")
    try:
        return export_download(job, name)
    except ExportGone as gone:
        return render(request, "annotation/job.html", {"job": job, "status": job_status(job), "gone": str(gone)}, status=410)


@login_required
@require_POST
def job_retry(request, pk):
    """Queue again a job that failed because the file store was out of reach (who may see the job may retry it)."""
    job = _visible_job(request, pk)
    if retry_job(job):
        messages.success(request, "The job is queued again.")
    else:
        messages.error(request, "Only a job that failed because the file store was out of reach can be retried.")
    return redirect("job-detail", pk=job.pk)


@login_required
@require_POST
def campaign_recompute(request, slug):
    campaign = managed_campaign(request, slug)
    job = start_job(Job.Kind.RECOMPUTE, campaign=campaign, user=request.user)
    return redirect("job-detail", pk=job.pk)


@login_required
@require_POST
def campaign_export(request, slug):
    campaign = managed_campaign(request, slug)
    job = start_job(
        Job.Kind.EXPORT, campaign=campaign, params={"pseudonymise": request.POST.get("pseudonymise") == "1"}, user=request.user
    )
    return redirect("job-detail", pk=job.pk)
