"""What the API views share: error bodies, the 409 error, query-parameter checks, campaign scoping."""

from __future__ import annotations

from pathlib import Path

from django.shortcuts import get_object_or_404
from django.utils.text import get_valid_filename
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers as drf_serializers, status
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError

from annotation.services import roles
from annotation.web.api import serializers
from annotation.web.api.permissions import IsResearcher
from annotation.models import Campaign
from annotation.selectors.campaigns import campaigns_visible_to


def api_job(job) -> dict:
    """A job as the API shows it: its status, the URL to poll, its campaign, and a finished export's download URL."""
    from annotation.models import Job
    from annotation.services.jobs import job_status

    done_export = job.kind == Job.Kind.EXPORT and job.state == Job.State.DONE and bool(job.result_path)
    return {
        **job_status(job),
        "url": f"/api/jobs/{job.pk}/",
        "download_url": f"/api/jobs/{job.pk}/download/" if done_export else "",
        "retry_url": f"/api/jobs/{job.pk}/retry/" if job.state == Job.State.FAILED and job.params.get("retryable") else "",
        "campaign": job.campaign.slug if job.campaign_id else None,
    }


class Conflict(APIException):
    """The request is valid but the campaign's state does not allow it (e.g. launching a running campaign)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The campaign's state does not allow this."
    default_code = "conflict"


# Error bodies: {"detail": ...} or, for invalid input, one list of messages per field name.
DETAIL = inline_serializer(
    "Error",
    fields={"detail": drf_serializers.JSONField(required=False, help_text="What went wrong (field errors use the field's name).")},
)
IMPORT_ERROR = inline_serializer(
    "ImportProblems",
    fields={
        "detail": drf_serializers.CharField(required=False),
        "problems": serializers.ProblemSerializer(many=True, required=False, help_text="Every problem in the files, with file, line and field."),
    },
)


def redoc_csp(view):
    """Redoc's page starts the viewer from an inline script and renders in a blob worker."""
    from functools import wraps

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = "script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:"
        return response

    return wrapped
def save_upload(upload, folder: Path, role: str) -> Path:
    """Write an uploaded file under its own (sanitised) name, so import problems name the file the user sent.

    Each upload gets its own sub-folder: two uploads with the same name cannot overwrite each other.
    """
    try:
        name = get_valid_filename(Path(upload.name or role).name)
    except Exception:  # noqa: BLE001 - a name with nothing usable left
        name = role
    (folder / role).mkdir()
    path = folder / role / name
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


def problem_dict(problem) -> dict:
    return {
        "file": problem.file,
        "line": problem.line,
        "field": problem.field,
        "path": problem.path,
        "message": problem.message,
    }


def int_param(request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: ["must be a whole number"]}) from None
    if not low <= value <= high:
        raise ValidationError({name: [f"must be between {low} and {high}"]})
    return value


# --- campaign-scoped resources ---------------------------------------------------------------


CAMPAIGN_SLUG = OpenApiParameter("campaign_slug", str, OpenApiParameter.PATH, description="The campaign's slug.")


class CampaignScoped:
    """Resolves ``campaign_slug`` among the campaigns the caller may see (404 otherwise)."""

    permission_classes = [IsResearcher]
    # Ids beyond 9 digits do not resolve (404) rather than overflowing the database's integer (500).
    lookup_value_regex = r"[0-9]{1,9}"

    _campaign = None

    @property
    def campaign(self) -> Campaign:
        if self._campaign is None:
            self._campaign = get_object_or_404(
                campaigns_visible_to(self.request.user), slug=self.kwargs.get("campaign_slug", "")
            )
        return self._campaign

    def require_manager(self):
        if not roles.can_manage_campaign(self.request.user, self.campaign):
            raise PermissionDenied("Only the campaign's owner, the researchers it is shared with, and admins may change it.")


def scoped_schema(cls):
    return extend_schema(parameters=[CAMPAIGN_SLUG])(cls)
