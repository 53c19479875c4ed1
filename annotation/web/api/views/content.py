"""A campaign's content: examples, systems, summaries, predicates and units."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Count, Prefetch
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation.web.api import filters, serializers
from annotation.importing.readers import CampaignImportError
from annotation.models import Campaign, ContentUnit, Example, Predicate, ReferenceSentence, System, SystemSummary
from annotation.services import predicates as predicate_service

from annotation.web.api.views.common import (
    DETAIL,
    IMPORT_ERROR,
    CampaignScoped,
    Conflict,
    int_param,
    problem_dict,
    save_upload,
    scoped_schema,
)


@scoped_schema
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


@scoped_schema
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
            path = save_upload(form.validated_data["summaries"], Path(tmp), "summaries")
            try:
                added = add_systems(self.campaign, path, by=request.user)
            except CampaignImportError as exc:
                return Response(
                    {"detail": str(exc), "problems": [problem_dict(p) for p in exc.problems]},
                    status=status.HTTP_400_BAD_REQUEST,
                )
        return Response(serializers.AddedSystemsSerializer(added).data, status=status.HTTP_201_CREATED)


@scoped_schema
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


@scoped_schema
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


@scoped_schema
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
        unit = int_param(request, "unit", 0, 0, filters.MAX_ID)
        if unit:
            rows = rows.filter(unit_id=unit)
        page = self.paginate_queryset(rows.order_by("-created_at", "-pk"))
        return self.get_paginated_response(serializers.CorrectionLogSerializer(page, many=True).data)
