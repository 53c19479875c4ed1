"""Tokens and background jobs: ``/api/token/`` and ``/api/jobs/ID/``."""

from __future__ import annotations

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

from annotation.web.api.views.common import DETAIL


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
        from annotation.models import Job
        from annotation.services.jobs import job_status

        job = Job.objects.select_related("campaign").filter(pk=pk).first() if pk <= filters.MAX_ID else None
        if job is None or not roles.can_view_job(request.user, job):
            from rest_framework.exceptions import NotFound

            raise NotFound("No such job.")
        return Response(
            {**job_status(job), "url": f"/api/jobs/{job.pk}/", "campaign": job.campaign.slug if job.campaign_id else None}
        )
