"""A campaign's work: verifications, judgments, gold, autoscore runs and assignments (workers: ``workers``)."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from hits.wording import as_sentence
from annotation.web.api import filters, serializers
from annotation.models import AutoscoreRun, GoldPresence, PresenceJudgment, Verification
from annotation.services import rejection
from hits.models import Assignment

from annotation.web.api.views.common import Conflict, DETAIL, CampaignScoped, scoped_schema


@scoped_schema
class VerificationViewSet(CampaignScoped, viewsets.ReadOnlyModelViewSet):
    """Verifiers' verdicts on written QA pairs."""

    serializer_class = serializers.VerificationSerializer
    filterset_class = filters.VerificationFilter
    ordering_fields = ["id", "created_at"]
    queryset = Verification.objects.none()

    def get_queryset(self):
        return Verification.objects.filter(unit__example__campaign=self.campaign).select_related("worker").order_by("pk")


@scoped_schema
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


@scoped_schema
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


@scoped_schema
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


@scoped_schema
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
        """Reject submitted work with a message telling the worker why (no reward), its data excluded or kept."""

        def review(assignment, data, payments):
            if assignment.state == Assignment.State.REJECTED:
                raise payments.PaymentError("this assignment is already rejected")
            rejection.reject_work(assignment, data["message"], by=request.user, data=data.get("data"))
            return assignment

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
