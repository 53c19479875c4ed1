"""Tokens and background jobs: ``/api/token/``, ``/api/jobs/ID/``, ``/api/jobs/ID/download/`` and ``/api/jobs/ID/retry/``."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers as drf_serializers
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import NotFound, ParseError, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.services import roles
from annotation.web.api import filters, serializers
from annotation.web.api.permissions import IsResearcher
from config.ratelimit import login_failed, login_refused, login_succeeded

from annotation.web.api.views.common import DETAIL, Conflict, api_job


# --- tokens ----------------------------------------------------------------------------------


TOO_MANY_LOGINS = "Too many attempts; wait a minute and try again."


class TokenView(APIView):
    """``POST /api/token/`` with username and password: the caller's API token (created on first request).

    Under the login page's limits (``config.ratelimit``: attempts per account,
    failures per client address), so it cannot be used to guess passwords faster.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    @extend_schema(
        request=AuthTokenSerializer,
        responses={
            200: inline_serializer("TokenResponse", fields={"token": drf_serializers.CharField()}),
            400: OpenApiResponse(description="Wrong user name or password."),
            429: DETAIL,
        },
        auth=[],
        tags=["auth"],
    )
    def post(self, request):
        try:
            username = request.data.get("username", "") if hasattr(request.data, "get") else ""
        except ParseError:
            login_failed(request)
            raise
        if login_refused(request, username):
            return Response({"detail": TOO_MANY_LOGINS}, status=429)
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        if not serializer.is_valid():
            if login_failed(request, username):
                return Response({"detail": TOO_MANY_LOGINS}, status=429)
            raise ValidationError(serializer.errors)
        login_succeeded(request, username)
        token, _ = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})


# --- campaigns -------------------------------------------------------------------------------

# --- jobs ------------------------------------------------------------------------------------


class JobView(APIView):
    """``GET /api/jobs/ID/``: a background job (e.g. a large import) with its progress and problems."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={200: serializers.JobSerializer, 404: DETAIL})
    def get(self, request, pk: int):
        return Response(api_job(visible_job(request, pk)))


def visible_job(request, pk: int):
    """The job ``pk`` if the caller may see it (``roles.can_view_job``); 404 otherwise."""
    from annotation.models import Job

    job = Job.objects.select_related("campaign").filter(pk=pk).first() if pk <= filters.MAX_ID else None
    if job is None or not roles.can_view_job(request.user, job):
        raise NotFound("No such job.")
    return job


class JobDownloadView(APIView):
    """``GET /api/jobs/ID/download/``: the zip a finished export job wrote."""

    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY, 302: OpenApiResponse(description="A short-lived link to the archive in the object store (``STORAGE_SIGNED_URL_SECONDS``)."), 404: DETAIL, 409: DETAIL, 410: DETAIL})
    def get(self, request, pk: int):
        from annotation.models import Job
        from annotation.services.jobs import export_file
        from annotation.web.downloads import ExportGone, export_download

        job = visible_job(request, pk)
        if job.kind != Job.Kind.EXPORT:
            raise NotFound("This job has no file to download.")
        if not job.finished:
            raise Conflict(f"The export is {job.state}: poll /api/jobs/{job.pk}/ until it is done.")
        name = export_file(job)
        if name is None:
            raise NotFound("The export failed; export again.")
        try:
            return export_download(job, name)
        except ExportGone as gone:
            return Response({"detail": str(gone)}, status=410)


class JobRetryView(APIView):
    """``POST /api/jobs/ID/retry/``: queue again a job that failed because the file store was out of reach."""

    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={202: serializers.JobSerializer, 404: DETAIL, 409: DETAIL})
    def post(self, request, pk: int):
        from annotation.services.jobs import retry_job

        job = visible_job(request, pk)
        if not retry_job(job):
            raise Conflict(f"The job is {job.state}: only a job that failed because the file store was out of reach "
                           "can be retried.")
        job.refresh_from_db()
        return Response(api_job(job), status=202, headers={"Location": f"/api/jobs/{job.pk}/"})
