"""Campaigns: list, create, change, launch, import, scores and exports (``/api/campaigns/``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers as drf_serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from hits.wording import as_sentence
from annotation.services import roles
from annotation.web.api import filters, serializers
from annotation.web.api.permissions import CanManageCampaignOrReadOnly, IsResearcher
from annotation.importing.readers import CampaignImportError
from annotation.models import Campaign
from annotation.selectors.campaigns import campaign_overview, campaign_progress, campaigns_visible_to, leaderboard
from annotation.selectors.scores import campaign_scores
from annotation.services import pipeline, scores
from annotation.services.campaign_import import PREDICATES_AUTO, PREDICATES_NONE, import_campaign
from hits.models import Worker

from annotation.web.api.views.common import Conflict, DETAIL, IMPORT_ERROR, api_job, int_param, save_upload, problem_dict


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
            refs = save_upload(data["references"], folder, "references")
            sums = save_upload(data["summaries"], folder, "summaries")
            preds = PREDICATES_AUTO if data["detect_predicates"] else PREDICATES_NONE
            if data.get("predicates"):
                preds = save_upload(data["predicates"], folder, "predicates")
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
                    {"detail": str(exc), "problems": [problem_dict(p) for p in exc.problems]},
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
        from annotation.services.jobs import start_job

        uploads.clean_stale_uploads_here()
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
            "job": api_job(job),
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
        n_boot = int_param(request, "n_boot", scores.N_BOOT, 0, 2000)
        campaign = self.get_object()
        scores.ensure_hybrid_scores(campaign)
        return Response(campaign_scores(campaign, n_boot=n_boot))

    @extend_schema(responses={200: serializers.LeaderboardSerializer})
    @action(detail=True, methods=["get"])
    def leaderboard(self, request, slug=None):
        """Systems ranked by gold QAPyramid, or under budgeted presence by the hybrid scores (``ranked_by``), with
        agreement; a budgeted campaign's human-only figures in ``human_only``.  The stored figures, as the page
        shows them (every change that moves them refreshes them)."""
        campaign = self.get_object()
        scores.ensure_hybrid_scores(campaign)
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
                 "verification": board["verification"], "hybrid": board.get("hybrid"), **board["comparisons"]}
            ).data
        )

    @extend_schema(
        request=None,
        responses={
            202: inline_serializer(
                "CampaignRecomputeQueued", fields={"detail": drf_serializers.CharField(), "job": serializers.JobSerializer()}
            )
        },
    )
    @action(detail=True, methods=["post"])
    def recompute(self, request, slug=None):
        """Recompute every crowd gold label and every score from the judgments that count, in a background job (as
        the campaign page's button and ``manage.py recompute_gold``): poll ``GET /api/jobs/ID/`` until it is
        finished; its ``message`` says how many labels and summaries were recomputed.  At the paper's size the
        rebuild reads every judgment, more than a request should wait for."""
        from annotation.models import Job
        from annotation.services.jobs import start_job

        campaign = self.get_object()
        job = start_job(Job.Kind.RECOMPUTE, campaign=campaign, user=request.user)
        body = {"detail": "The recomputation runs as a background job: poll the job until it is finished.", "job": api_job(job)}
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/api/jobs/{job.pk}/"})

    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("pseudonymise", bool, description="Replace worker ids by salted hashes.")],
        responses={
            202: inline_serializer(
                "CampaignExportQueued", fields={"detail": drf_serializers.CharField(), "job": serializers.JobSerializer()}
            )
        },
    )
    @action(detail=True, methods=["post"])
    def export(self, request, slug=None):
        """Start exporting the study (examples.jsonl, judgments.csv, verifications.csv, systems.csv, pairs.csv and campaign.json,
        as ``manage.py export_campaign``) in a background job: poll ``GET /api/jobs/ID/`` until it is finished, then
        fetch the zip from its ``download_url``.  No request builds the file."""
        from annotation.models import Job
        from annotation.services.jobs import start_job

        campaign = self.get_object()
        pseudonymise = request.query_params.get("pseudonymise", "").lower() in {"1", "true", "yes"}
        # Pseudonyms stable across API exports (salted with the secret key, unlinkable outside).
        params = {"pseudonymise": pseudonymise, "stable_pseudonyms": True}
        job = start_job(Job.Kind.EXPORT, campaign=campaign, params=params, user=request.user)
        body = {"detail": "The export runs as a background job: poll the job, then download its file.", "job": api_job(job)}
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/api/jobs/{job.pk}/"})
