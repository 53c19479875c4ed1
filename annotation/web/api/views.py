"""API views: thin adapters that read through selectors and write through services.

Every view requires a researcher or admin (``IsResearcher``); campaign-scoped
views look the campaign up among ``campaigns_visible_to(user)``, so another
researcher's campaign is a 404.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Count, Prefetch
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.text import get_valid_filename
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers as drf_serializers, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, NotFound, ParseError, PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hits.wording import as_sentence
from annotation.services import roles
from annotation.web.api import filters, serializers
from annotation.web.api.permissions import CanManageCampaignOrReadOnly, IsResearcher
from annotation.importing.readers import CampaignImportError
from annotation.models import (
    AutoscoreRun,
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    Predicate,
    PresenceJudgment,
    ReferenceSentence,
    System,
    SystemSummary,
    Verification,
)
from annotation.selectors.campaigns import campaign_overview, campaign_progress, campaign_worker, campaign_workers, campaigns_visible_to, leaderboard
from annotation.selectors.scores import campaign_scores
from annotation.services import pipeline, predicates as predicate_service, quality, scores
from annotation.services.campaign_import import PREDICATES_AUTO, PREDICATES_NONE, import_campaign
from config.ratelimit import login_failed, login_refused, login_succeeded
from hits.models import Assignment, Worker


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


def _save_upload(upload, folder: Path, role: str) -> Path:
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


def _problem_dict(problem) -> dict:
    return {
        "file": problem.file,
        "line": problem.line,
        "field": problem.field,
        "path": problem.path,
        "message": problem.message,
    }


class CampaignViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Campaigns the caller owns or that are shared with them (admins: all)."""

    serializer_class = serializers.CampaignSerializer
    permission_classes = [IsResearcher, CanManageCampaignOrReadOnly]
    lookup_field = "slug"
    lookup_value_regex = r"[-a-zA-Z0-9_]+"
    filterset_class = filters.CampaignFilter
    ordering_fields = ["created_at", "name", "slug", "state"]
    # No PUT (every change is partial) and no DELETE (a campaign is cancelled, not deleted).
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_queryset(self):
        return (
            campaign_overview(campaigns_visible_to(self.request.user))
            .prefetch_related("shared_with")
            .order_by("-created_at", "slug")
        )

    def get_serializer_class(self):
        if self.action == "create":
            return serializers.CampaignCreateSerializer
        return serializers.CampaignSerializer

    @extend_schema(
        request={"multipart/form-data": serializers.CampaignCreateSerializer},
        responses={
            201: inline_serializer(
                "CampaignCreated",
                fields={"campaign": serializers.CampaignSerializer(), "report": serializers.ImportReportSerializer()},
            ),
            202: inline_serializer(
                "CampaignImportQueued",
                fields={"detail": drf_serializers.CharField(), "job": serializers.JobSerializer()},
            ),
            400: IMPORT_ERROR,
        },
    )
    def create(self, request, *args, **kwargs):
        """Import a new campaign from uploaded files (all or nothing; every problem is listed with file, line and field)."""
        form = serializers.CampaignCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        uploaded = [data[role] for role in ("references", "summaries", "predicates") if data.get(role)]
        if sum(upload.size or 0 for upload in uploaded) > settings.API_IMPORT_INLINE_MAX_BYTES:
            return self._import_as_job(request, data)
        with tempfile.TemporaryDirectory(prefix="api-import-") as tmp:
            folder = Path(tmp)
            refs = _save_upload(data["references"], folder, "references")
            sums = _save_upload(data["summaries"], folder, "summaries")
            preds = PREDICATES_AUTO if data["detect_predicates"] else PREDICATES_NONE
            if data.get("predicates"):
                preds = _save_upload(data["predicates"], folder, "predicates")
            try:
                report = import_campaign(
                    name=data["name"],
                    slug=data.get("slug") or None,
                    owner=request.user,
                    description=data.get("description", ""),
                    references=refs,
                    summaries=sums,
                    predicates=preds,
                )
            except CampaignImportError as exc:
                return Response(
                    {"detail": str(exc), "problems": [_problem_dict(p) for p in exc.problems]},
                    status=status.HTTP_400_BAD_REQUEST,
                )
        campaign = campaign_overview(Campaign.objects.filter(pk=report.campaign.pk)).get()
        return Response(
            {
                "campaign": serializers.CampaignSerializer(campaign).data,
                "report": serializers.ImportReportSerializer(report).data,
            },
            status=status.HTTP_201_CREATED,
        )

    def _import_as_job(self, request, data):
        """A large upload: staged as the web upload stages its files, imported by a job the client polls
        (``GET /api/jobs/ID/``), so no request waits for predicate detection over thousands of references."""
        from annotation.models import Job
        from annotation.services import uploads
        from annotation.services.jobs import job_status, start_job

        uploads.clean_stale_uploads()
        token = uploads.new_upload()
        uploads.stage_file(token, "references", data["references"])
        uploads.stage_file(token, "summaries", data["summaries"])
        predicates = "auto" if data["detect_predicates"] else "none"
        if data.get("predicates"):
            uploads.stage_file(token, "predicates", data["predicates"])
            predicates = "file"
        params = {
            "upload": token,
            "name": data["name"],
            "slug": data.get("slug") or "",
            "description": data.get("description", ""),
            "predicates": predicates,
            "owner": request.user.pk,
        }
        job = start_job(Job.Kind.IMPORT, params=params, user=request.user)
        body = {
            "detail": "The files are large: they are imported by a background job; poll the job for its state and problems.",
            "job": {**job_status(job), "url": f"/api/jobs/{job.pk}/"},
        }
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/api/jobs/{job.pk}/"})

    @extend_schema(responses={200: serializers.CampaignSerializer, 400: DETAIL, 409: DETAIL})
    def partial_update(self, request, *args, **kwargs):
        """Change the name, description, backend or settings; settings only while the campaign is a draft."""
        campaign = self.get_object()
        serializer = self.get_serializer(campaign, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        changed_settings = set(serializer.validated_data) & set(serializers.SETTINGS_FIELDS + ["backend"])
        if changed_settings and campaign.state != Campaign.State.DRAFT:
            raise Conflict(
                f"campaign '{campaign.slug}' is {campaign.get_state_display().lower()}: "
                f"settings ({', '.join(sorted(changed_settings))}) can only change before launch"
            )
        serializer.save()
        return Response(self.get_serializer(self.get_object()).data)

    def _control(self, request, service, done: str):
        campaign = self.get_object()
        try:
            result = service(campaign)
        except pipeline.LaunchError as exc:
            raise Conflict(as_sentence(exc)) from None
        campaign.refresh_from_db()
        body = {"slug": campaign.slug, "state": campaign.state, "detail": done.format(n=result)}
        if isinstance(result, list):  # pause / resume / cancel: what the crowd market refused (Prolific's studies)
            body["market_errors"] = result
        return Response(body)

    @extend_schema(request=None, responses={200: serializers.StateSerializer, 409: DETAIL})
    @action(detail=True, methods=["post"])
    def launch(self, request, slug=None):
        """Create the first HITs and start the campaign."""
        return self._control(request, pipeline.launch_campaign, "Campaign launched: {n} HITs created.")

    @extend_schema(request=None, responses={200: serializers.StateSerializer, 409: DETAIL})
    @action(detail=True, methods=["post"])
    def pause(self, request, slug=None):
        """Stop handing out HITs; work in progress can still be submitted."""
        return self._control(request, pipeline.pause_campaign, "Campaign paused.")

    @extend_schema(request=None, responses={200: serializers.StateSerializer, 409: DETAIL})
    @action(detail=True, methods=["post"])
    def resume(self, request, slug=None):
        return self._control(request, pipeline.resume_campaign, "Campaign resumed.")

    @extend_schema(request=None, responses={200: serializers.StateSerializer, 409: DETAIL})
    @action(detail=True, methods=["post"])
    def cancel(self, request, slug=None):
        """Cancel for good: open HITs are withdrawn, submitted work is kept."""
        return self._control(request, pipeline.cancel_campaign, "Campaign cancelled.")

    RETRY_ROUTING_REQUEST = inline_serializer(
        "RetryRouting", fields={"presence_judge": drf_serializers.CharField(required=False, max_length=100)}
    )

    @extend_schema(request=RETRY_ROUTING_REQUEST, responses={200: serializers.StateSerializer, 400: DETAIL, 409: DETAIL})
    @action(detail=True, methods=["post"], url_path="retry-routing")
    def retry_routing(self, request, slug=None):
        """Budgeted presence: ask for a routing pass again (after one failed; see ``progress.routing.error``),
        optionally with another judge.  The pass runs in the background."""
        from annotation.automation.autoscore import check_judge_name
        from annotation.automation.judges.base import JudgeError
        from annotation.services.hybrid import RoutingRetryError, retry_routing

        campaign = self.get_object()
        judge = request.data.get("presence_judge") if hasattr(request.data, "get") else None
        if judge is not None and (not isinstance(judge, str) or not judge.strip() or len(judge) > 100):
            raise ValidationError({"presence_judge": ["a judge name (at most 100 characters)"]})
        judge = judge.strip() if judge else None
        try:
            if judge:
                check_judge_name(judge)
        except JudgeError as exc:
            raise ValidationError({"presence_judge": [str(exc)]}) from None
        try:
            retry_routing(campaign, judge)
        except RoutingRetryError as exc:
            raise Conflict(as_sentence(exc)) from None
        campaign.refresh_from_db()
        return Response({"slug": campaign.slug, "state": campaign.state,
                         "detail": f"Routing pass asked for with the judge {campaign.presence_judge}."})

    def _sharing(self, request, service):
        campaign = self.get_object()
        form = serializers.ShareSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        User = get_user_model()
        try:
            user = User.objects.get(username=form.validated_data["username"])
        except User.DoesNotExist:
            raise ValidationError({"username": [f"no user named '{form.validated_data['username']}'"]}) from None
        try:
            changed = service(campaign, user, by=request.user)
        except roles.SharingError as exc:
            raise ValidationError({"username": [str(exc)]}) from None
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from None
        return Response(
            {"changed": changed, "shared_with": sorted(campaign.shared_with.values_list("username", flat=True))}
        )

    SHARE_RESPONSE = inline_serializer(
        "Sharing",
        fields={"changed": drf_serializers.BooleanField(), "shared_with": drf_serializers.ListField(child=drf_serializers.CharField())},
    )

    @extend_schema(request=serializers.ShareSerializer, responses={200: SHARE_RESPONSE, 400: DETAIL})
    @action(detail=True, methods=["post"])
    def share(self, request, slug=None):
        """Share the campaign with another user (they become a researcher who sees and manages it)."""
        return self._sharing(request, roles.share_campaign)

    @extend_schema(request=serializers.ShareSerializer, responses={200: SHARE_RESPONSE, 400: DETAIL})
    @action(detail=True, methods=["post"])
    def unshare(self, request, slug=None):
        return self._sharing(request, roles.unshare_campaign)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"], url_path="worker-status")
    def worker_status(self, request, slug=None):
        """Per worker: HITs held now, done, returned, timed out, median seconds per HIT, hours worked, earned and
        effective hourly pay, flagged below the campaign's ``hourly_pay_floor`` (money as decimal strings, USD)."""
        from annotation.selectors.worker_status import worker_status

        return Response(worker_status(self.get_object()))

    MARK_PAID_RESPONSE = inline_serializer(
        "MarkedPaid",
        fields={
            "entries": drf_serializers.IntegerField(), "amount": drf_serializers.CharField(),
            "workers": drf_serializers.ListField(child=drf_serializers.CharField()),
        },
    )

    @extend_schema(request=serializers.MarkPaidSerializer, responses={200: MARK_PAID_RESPONSE, 400: DETAIL, 409: DETAIL})
    @action(detail=True, methods=["post"], url_path="mark-paid")
    def mark_paid(self, request, slug=None):
        """Record that local workers were paid outside the platform: their owed rewards and bonuses become paid,
        with who and when in the ledger (``workers``: external ids, all by default; ``upto``: ledger entries up to
        this id only).  Entries already paid are never counted again; an MTurk campaign is a 409."""
        from hits import payments
        from hits.models import Batch, Worker

        campaign = self.get_object()
        form = serializers.MarkPaidSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        names = form.validated_data.get("workers")
        batch = Batch.objects.filter(pk=campaign.batch_id).first()
        if batch is None:
            return Response({"entries": 0, "amount": "0.00", "workers": []})
        workers = None if names is None else list(Worker.objects.filter(external_id__in=names).values_list("pk", flat=True))
        try:
            result = payments.mark_paid(
                batch, request.user, workers=workers, upto=form.validated_data.get("upto"), note=form.validated_data.get("note", "")
            )
        except payments.PaymentError as exc:
            raise Conflict(as_sentence(exc)) from None
        paid = sorted(Worker.objects.filter(pk__in=result.workers).values_list("external_id", flat=True))
        return Response({"entries": result.entries, "amount": str(result.amount), "workers": paid})

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def progress(self, request, slug=None):
        """HITs and assignments per stage, settled and flagged predicates, workers and cost so far (poll this);
        ``spending``: money spent and committed per stage, presence cost per system and under the paper's protocol."""
        from annotation.selectors.spending import campaign_spending, spending_as_json

        campaign = self.get_object()
        progress = campaign_progress(campaign)
        progress["spending"] = spending_as_json(campaign_spending(campaign))
        progress["flagged"] = [
            {"id": p.pk, "text": p.text, "example": p.example.external_id, "reason": p.flag_reason}
            for p in progress["flagged"]
        ]
        progress["cost_so_far"] = str(progress["cost_so_far"])
        return Response(progress)

    @extend_schema(
        parameters=[
            OpenApiParameter("backend", str, enum=[c for c, _ in Campaign.Backend.choices], required=False)
        ],
        responses={200: OpenApiTypes.OBJECT, 400: DETAIL},
    )
    # No filter backends: ``?backend=`` names the market to price, not a filter on the campaign list.
    @action(detail=True, methods=["get"], filter_backends=[])
    def cost(self, request, slug=None):
        """Estimated cost from launch to the last presence judgment (amounts as decimal strings, USD)."""
        from annotation.services.costs import campaign_cost_preview

        backend = request.query_params.get("backend") or None
        if backend is not None and backend not in Campaign.Backend.values:
            raise ValidationError({"backend": [f"must be one of {', '.join(Campaign.Backend.values)}"]})
        return Response(campaign_cost_preview(self.get_object(), backend=backend).as_dict())

    @extend_schema(
        parameters=[OpenApiParameter("n_boot", int, description="Bootstrap resamples for intervals (0-2000, default 1000).")],
        responses={200: OpenApiTypes.OBJECT, 400: DETAIL},
    )
    @action(detail=True, methods=["get"])
    def scores(self, request, slug=None):
        """Krippendorff's alpha (pooled, per system, 95% CI) and each system's QAPyramid, nQAPyramid and interval."""
        n_boot = _int_param(request, "n_boot", scores.N_BOOT, 0, 2000)
        campaign = self.get_object()
        scores.ensure_hybrid_scores(campaign)
        return Response(campaign_scores(campaign, n_boot=n_boot))

    @extend_schema(responses={200: serializers.LeaderboardSerializer})
    @action(detail=True, methods=["get"])
    def leaderboard(self, request, slug=None):
        """Systems ranked by gold QAPyramid, or under budgeted presence by the hybrid scores (``ranked_by``; stale
        intervals are recomputed first), with agreement; a budgeted campaign's human-only figures in ``human_only``."""
        campaign = self.get_object()
        scores.ensure_hybrid_scores(campaign)
        scores.refresh_stale_intervals(campaign)
        board = leaderboard(campaign)
        hybrid = board["ranked_by"] == "hybrid"
        rows = [
            {
                "rank": i + 1, "system": row["system"].name, "system_id": row["system"].pk,
                "qapyramid": row["figure"]["qapyramid"], "ci95": row["figure"]["ci95"],
                "ci95_examples": row["figure"].get("ci95_examples"), "no_interval_reason": row["figure"].get("no_interval_reason"),
                "human_share": row["figure"].get("human_share"),
                # Under budgeted presence the human-only figures are not this ranking's: they are in human_only.
                "score": None if hybrid else row["score"],
            }
            for i, row in enumerate(board["rows"])
        ]
        human_only = None
        if hybrid:
            human_only = [
                {"system": row["system"].name, "system_id": row["system"].pk, "score": row["score"], "n_units": row["n_units"]}
                for row in board["human_only"]
            ]
        return Response(
            serializers.LeaderboardSerializer(
                {"ranked_by": board["ranked_by"], "systems": rows, "human_only": human_only, "agreement": board["agreement"],
                 "verification": board["verification"], "hybrid": board.get("hybrid")}
            ).data
        )

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def recompute(self, request, slug=None):
        """Recompute every crowd gold label and every score from the judgments that count."""
        campaign = self.get_object()
        result = scores.recompute_gold(campaign)
        scores.recompute_system_scores(campaign)
        return Response(result)

    @extend_schema(
        parameters=[OpenApiParameter("pseudonymise", bool, description="Replace worker ids by salted hashes.")],
        responses={(200, "application/zip"): OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"])
    def export(self, request, slug=None):
        """The study as a zip: examples.jsonl, judgments.csv, verifications.csv, systems.csv and campaign.json (as ``manage.py export_campaign``)."""
        from annotation.services.export import export_campaign

        campaign = self.get_object()
        pseudonymise = request.query_params.get("pseudonymise", "").lower() in {"1", "true", "yes"}
        buffer = io.BytesIO()
        with tempfile.TemporaryDirectory(prefix="api-export-") as tmp:
            # The salt is derived from the secret key so pseudonyms are stable across exports but unlinkable outside.
            export_campaign(campaign, tmp, pseudonymise=pseudonymise, salt=settings.SECRET_KEY + campaign.slug)
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(Path(tmp).iterdir()):
                    archive.write(path, arcname=f"{campaign.slug}/{path.name}")
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}.zip"'
        return response


def _int_param(request, name: str, default: int, low: int, high: int) -> int:
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


def _scoped_schema(cls):
    return extend_schema(parameters=[CAMPAIGN_SLUG])(cls)


@_scoped_schema
class ExampleViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """The campaign's examples with their reference sentences."""

    serializer_class = serializers.ExampleSerializer
    filterset_class = filters.ExampleFilter
    ordering_fields = ["position", "external_id"]
    queryset = Example.objects.none()

    def get_queryset(self):
        return (
            Example.objects.filter(campaign=self.campaign)
            .prefetch_related(Prefetch("sentences", queryset=ReferenceSentence.objects.order_by("index")))
            .order_by("position")
        )


@_scoped_schema
class SystemViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """The campaign's systems with their gold scores (means over summaries, 95% bootstrap interval)."""

    serializer_class = serializers.SystemSerializer
    ordering_fields = ["name"]
    queryset = System.objects.none()

    def get_queryset(self):
        return (
            System.objects.filter(campaign=self.campaign)
            .select_related("score")
            .annotate(n_summaries=Count("summaries"))
            .order_by("name")
        )

    @extend_schema(
        request={"multipart/form-data": serializers.SystemUploadSerializer},
        responses={201: serializers.AddedSystemsSerializer, 400: IMPORT_ERROR},
    )
    def create(self, request, *args, **kwargs):
        """Add new systems from a summaries JSONL file: only their presence HITs are created.

        All or nothing: a bad line, a system already in the campaign, an unknown
        example or a system not covering the campaign's examples is a 400 listing
        every problem with file, line and field.
        """
        from annotation.services.systems import add_systems

        self.require_manager()
        form = serializers.SystemUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        with tempfile.TemporaryDirectory(prefix="api-systems-") as tmp:
            path = _save_upload(form.validated_data["summaries"], Path(tmp), "summaries")
            try:
                added = add_systems(self.campaign, path, by=request.user)
            except CampaignImportError as exc:
                return Response(
                    {"detail": str(exc), "problems": [_problem_dict(p) for p in exc.problems]},
                    status=status.HTTP_400_BAD_REQUEST,
                )
        return Response(serializers.AddedSystemsSerializer(added).data, status=status.HTTP_201_CREATED)


@_scoped_schema
class SummaryViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """System summaries with their QAPyramid, nQAPyramid and penalties."""

    serializer_class = serializers.SummarySerializer
    filterset_class = filters.SummaryFilter
    ordering_fields = ["id"]
    queryset = SystemSummary.objects.none()

    def get_queryset(self):
        return (
            SystemSummary.objects.filter(system__campaign=self.campaign)
            .select_related("system", "example", "score")
            .order_by("system__name", "example__position")
        )


@_scoped_schema
class PredicateViewSet(
    CampaignScoped,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Predicates of the references; researchers may add or remove them before launch."""

    serializer_class = serializers.PredicateSerializer
    filterset_class = filters.PredicateFilter
    ordering_fields = ["id", "start"]
    queryset = Predicate.objects.none()

    def get_queryset(self):
        return (
            Predicate.objects.filter(example__campaign=self.campaign)
            .select_related("example")
            .order_by("example__position", "sentence__index", "start")
        )

    def get_serializer(self, *args, **kwargs):
        if self.request is not None and self.kwargs.get("campaign_slug") is not None:
            kwargs.setdefault("campaign", self.campaign)
        return super().get_serializer(*args, **kwargs)

    @extend_schema(responses={201: serializers.PredicateSerializer, 400: DETAIL, 409: DETAIL})
    def create(self, request, *args, **kwargs):
        """Add a predicate: ``{"sentence": id, "start": i, "end": j}`` spans ``sentence.text[i:j]`` (before launch)."""
        self.require_manager()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if self.campaign.state != Campaign.State.DRAFT:
            raise Conflict(f"campaign '{self.campaign.slug}' is {self.campaign.get_state_display().lower()}: predicates can only change before launch")
        try:
            predicate = predicate_service.add_predicate(data["sentence"], data["start"], data["end"], data.get("lemma", ""))
        except DjangoValidationError as exc:
            raise ValidationError({"detail": exc.messages}) from None
        return Response(self.get_serializer(predicate).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None, 409: DETAIL})
    def destroy(self, request, *args, **kwargs):
        """Remove a predicate (before launch)."""
        self.require_manager()
        predicate = self.get_object()
        if self.campaign.state != Campaign.State.DRAFT:
            raise Conflict(f"campaign '{self.campaign.slug}' is {self.campaign.get_state_display().lower()}: predicates can only change before launch")
        predicate_service.remove_predicate(predicate)
        return Response(status=status.HTTP_204_NO_CONTENT)


@_scoped_schema
class UnitViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """Content units: QA pairs (with their state: proposed, kept, rejected, superseded) or imported SCUs."""

    serializer_class = serializers.UnitSerializer
    filterset_class = filters.UnitFilter
    ordering_fields = ["id", "index", "created_at"]
    queryset = ContentUnit.objects.none()

    def get_queryset(self):
        return (
            ContentUnit.objects.filter(example__campaign=self.campaign)
            .select_related("example", "predicate", "author")
            .order_by("example__position", "index")
        )

    @extend_schema(request=serializers.CorrectionSerializer, responses={200: serializers.CorrectionLogSerializer, 400: DETAIL})
    @action(detail=True, methods=["post"])
    def correct(self, request, campaign_slug=None, pk=None):
        """Correct a QA pair's question and answers; the old and new wording are logged with who and why."""
        from annotation.services.corrections import correct_qa_pair

        self.require_manager()
        unit = self.get_object()
        form = serializers.CorrectionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            entry = correct_qa_pair(unit, data["question"], data["answers"], by=request.user, reason=data["reason"])
        except DjangoValidationError as exc:
            raise ValidationError({"detail": exc.messages}) from None
        return Response(serializers.CorrectionLogSerializer(entry).data)

    @extend_schema(
        parameters=[OpenApiParameter("unit", int, description="Only this QA pair's corrections.")],
        responses={200: serializers.CorrectionLogSerializer(many=True), 400: DETAIL},
    )
    @action(detail=False, methods=["get"], filter_backends=[])
    def corrections(self, request, campaign_slug=None):
        """The log of QA pair corrections in the campaign, newest first."""
        from annotation.models import QAPairCorrection

        rows = QAPairCorrection.objects.filter(unit__example__campaign=self.campaign).select_related("changed_by")
        unit = _int_param(request, "unit", 0, 0, filters.MAX_ID)
        if unit:
            rows = rows.filter(unit_id=unit)
        page = self.paginate_queryset(rows.order_by("-created_at", "-pk"))
        return self.get_paginated_response(serializers.CorrectionLogSerializer(page, many=True).data)


@_scoped_schema
class VerificationViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """Verifiers' verdicts on written QA pairs."""

    serializer_class = serializers.VerificationSerializer
    filterset_class = filters.VerificationFilter
    ordering_fields = ["id", "created_at"]
    queryset = Verification.objects.none()

    def get_queryset(self):
        return Verification.objects.filter(unit__example__campaign=self.campaign).select_related("worker").order_by("pk")


@_scoped_schema
class JudgmentViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """Presence judgments (one judge, one unit, one summary); filter by system, worker, example, unit."""

    serializer_class = serializers.JudgmentSerializer
    filterset_class = filters.JudgmentFilter
    ordering_fields = ["id", "created_at"]
    queryset = PresenceJudgment.objects.none()

    def get_queryset(self):
        return (
            PresenceJudgment.objects.filter(summary__system__campaign=self.campaign)
            .select_related("worker", "summary__system", "summary__example")
            .order_by("pk")
        )


@_scoped_schema
class GoldViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """Gold presence labels: imported, or the majority of the judgments that count (ties per the campaign's rule)."""

    serializer_class = serializers.GoldSerializer
    filterset_class = filters.GoldFilter
    ordering_fields = ["id"]
    queryset = GoldPresence.objects.none()

    def get_queryset(self):
        return (
            GoldPresence.objects.filter(summary__system__campaign=self.campaign)
            .select_related("summary__system", "summary__example")
            .order_by("pk")
        )


@_scoped_schema
class WorkerViewSet(CampaignScoped, viewsets.GenericViewSet):
    """Workers who did HITs of the campaign, with their status and quality figures; exclude or include them."""

    serializer_class = serializers.WorkerRowSerializer
    filter_backends: list = []
    queryset = Worker.objects.none()

    @extend_schema(responses={200: serializers.WorkerRowSerializer(many=True)})
    def list(self, request, *args, **kwargs):
        rows = campaign_workers(self.campaign)
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(serializers.WorkerRowSerializer(page, many=True).data)

    def _worker(self, form) -> Worker:
        # As the workers page: only a worker of this campaign, and the same 404 for a name unknown anywhere,
        # so the endpoint neither touches other campaigns' workers nor tells who is registered.
        worker = campaign_worker(self.campaign, form.validated_data["worker"])
        if worker is None:
            raise NotFound("No such worker in this campaign.")
        return worker

    @extend_schema(request=serializers.WorkerActionSerializer, responses={200: OpenApiTypes.OBJECT, 400: DETAIL})
    @action(detail=False, methods=["post"])
    def exclude(self, request, campaign_slug=None):
        """Leave a worker's presence judgments out of the gold labels (optionally re-opening their places)."""
        self.require_manager()
        form = serializers.WorkerActionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        worker = self._worker(form)
        from hits.services import PlacesRefused

        try:
            return Response(quality.exclude_worker(self.campaign, worker, by=request.user, replace=form.validated_data["replace"]))
        except PlacesRefused as exc:
            raise ValidationError({"detail": f"nothing was excluded: {exc}"}) from None

    @extend_schema(request=serializers.WorkerActionSerializer, responses={200: OpenApiTypes.OBJECT, 400: DETAIL})
    @action(detail=False, methods=["post"])
    def include(self, request, campaign_slug=None):
        """Undo an exclusion: the worker's judgments count again."""
        self.require_manager()
        form = serializers.WorkerActionSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        worker = self._worker(form)
        return Response(quality.include_worker(self.campaign, worker, by=request.user))


@_scoped_schema
class AutoscoreRunViewSet(
    CampaignScoped, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Automatic scoring runs of the campaign (``annotation.automation.autoscore``): start, follow, resume, compare."""

    serializer_class = serializers.AutoscoreRunSerializer
    ordering_fields = ["id", "created_at"]
    filterset_fields = ["state", "judge_name", "generate_qas"]

    queryset = AutoscoreRun.objects.none()

    def get_queryset(self):
        return AutoscoreRun.objects.filter(campaign=self.campaign).select_related("created_by").order_by("-created_at", "-id")

    @extend_schema(request=serializers.AutoscoreStartSerializer, responses={201: serializers.AutoscoreRunSerializer, 400: DETAIL})
    def create(self, request, *args, **kwargs):
        """Start a run: its chunks are queued on Celery; poll the run for ``progress`` and ``state``."""
        from annotation.automation.judges.base import JudgeError
        from annotation.automation.autoscore import start_autoscore_run

        self.require_manager()
        form = serializers.AutoscoreStartSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            run = start_autoscore_run(
                self.campaign, data["judge"], systems=data["systems"] or None, generate_qas=data["generate_qas"], user=request.user
            )
        except (ValueError, JudgeError) as exc:
            raise ValidationError({"detail": str(exc)}) from None
        run.refresh_from_db()
        return Response(serializers.AutoscoreRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: serializers.AutoscoreRunSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, campaign_slug=None, pk=None):
        """Queue again the chunks of an interrupted run (done chunks are skipped)."""
        from annotation.automation.autoscore import resume_autoscore_run

        self.require_manager()
        run = self.get_object()
        resume_autoscore_run(run)
        run.refresh_from_db()
        return Response(serializers.AutoscoreRunSerializer(run).data)

    @extend_schema(responses={200: serializers.AutoSummaryScoreSerializer(many=True)})
    @action(detail=True, methods=["get"], filter_backends=[])
    def scores(self, request, campaign_slug=None, pk=None):
        """The run's per-summary automatic scores: the share of units the judge found present."""
        run = self.get_object()
        rows = run.summary_scores.select_related("summary__system", "summary__example").order_by(
            "summary__system__name", "summary__example__position"
        )
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(serializers.AutoSummaryScoreSerializer(page, many=True).data)

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["get"], filter_backends=[])
    def compare(self, request, campaign_slug=None):
        """The latest run of each judge against the gold labels: presence F1, Kendall's tau (system, summary), ROUGE."""
        from annotation.automation.autoscore import compare_judges

        return Response(compare_judges(self.campaign))


@_scoped_schema
class AssignmentViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """Assignments of the campaign's HITs: review them (approve, reject with a message) and pay bonuses.

    The money goes through ``hits.payments`` (ledger entries; MTurk calls after
    the commit). Reviewing twice is a 409, never a second payment.
    """

    serializer_class = serializers.AssignmentSerializer
    filterset_class = filters.AssignmentFilter
    ordering_fields = ["id", "submitted_at", "accepted_at"]
    queryset = Assignment.objects.none()

    def get_queryset(self):
        # Only this campaign's batch: another campaign's assignment ids are a 404 here.
        return (
            Assignment.objects.filter(hit__batch_id=self.campaign.batch_id or -1)
            .select_related("hit__task_type", "worker")
            .order_by("pk")
        )

    def _review(self, request, form_class, review):
        """Validate the body, then lock the assignment and check its state, so a repeated review is a 409."""
        from hits import payments

        self.require_manager()
        assignment = self.get_object()
        form = form_class(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            with transaction.atomic():
                locked = Assignment.objects.select_for_update(of=("self",)).get(pk=assignment.pk)
                result = review(locked, form.validated_data, payments)
        except payments.PaymentError as exc:
            raise Conflict(as_sentence(exc)) from None
        return result

    def _assignment_response(self, assignment):
        return Response(serializers.AssignmentSerializer(self.get_queryset().get(pk=assignment.pk)).data)

    @extend_schema(request=serializers.ApproveSerializer, responses={200: serializers.AssignmentSerializer, 400: DETAIL, 409: DETAIL})
    @action(detail=True, methods=["post"])
    def approve(self, request, campaign_slug=None, pk=None):
        """Approve submitted (or previously rejected) work: the worker is paid the HIT's reward, once."""

        def review(assignment, data, payments):
            if assignment.state == Assignment.State.APPROVED:
                raise payments.PaymentError("this assignment is already approved; its reward was paid once")
            return payments.approve_assignment(assignment, message=data["message"], by=request.user)

        return self._assignment_response(self._review(request, serializers.ApproveSerializer, review))

    @extend_schema(request=serializers.RejectSerializer, responses={200: serializers.AssignmentSerializer, 400: DETAIL, 409: DETAIL})
    @action(detail=True, methods=["post"])
    def reject(self, request, campaign_slug=None, pk=None):
        """Reject submitted work with a message telling the worker why (no reward)."""

        def review(assignment, data, payments):
            if assignment.state == Assignment.State.REJECTED:
                raise payments.PaymentError("this assignment is already rejected")
            return payments.reject_assignment(assignment, data["message"], by=request.user)

        return self._assignment_response(self._review(request, serializers.RejectSerializer, review))

    @extend_schema(
        request=serializers.BonusSerializer,
        responses={201: serializers.LedgerEntrySerializer, 400: DETAIL, 409: DETAIL},
        parameters=[
            OpenApiParameter(
                "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                description="Any 1-255 printable characters (a UUID): a repeat with the same key returns the first entry and pays nothing more.",
            )
        ],
    )
    @action(detail=True, methods=["post"])
    def bonus(self, request, campaign_slug=None, pk=None):
        """Pay the worker of submitted or approved work a bonus; returns the ledger entry.

        The assignment's bonuses together may be at most MAX_BONUS.  Send an
        ``Idempotency-Key`` header (or an ``idempotency_key`` field): a repeat
        with the same key returns the first entry (``Idempotent-Replayed: true``)
        and pays nothing more; the same key with another body is a 409.
        """
        header = request.headers.get("Idempotency-Key")
        field = request.data.get("idempotency_key") if hasattr(request.data, "get") else None
        if header is not None and field is not None and header != field:
            raise ValidationError({"idempotency_key": ["differs from the Idempotency-Key header"]})
        key = header if header is not None else field
        if key is not None and (not isinstance(key, str) or not 1 <= len(key) <= 255 or not key.isprintable()):
            raise ValidationError({"idempotency_key": ["give 1 to 255 printable characters (a UUID, say)"]})

        def review(assignment, data, payments):
            return payments.pay_bonus(assignment, data["amount"], data["reason"], by=request.user, idempotency_key=key)

        entry = self._review(request, serializers.BonusSerializer, review)
        replayed = getattr(entry, "replayed", False)
        return Response(
            serializers.LedgerEntrySerializer(entry).data,
            status=status.HTTP_201_CREATED,
            headers={"Idempotent-Replayed": "true" if replayed else "false"},
        )
