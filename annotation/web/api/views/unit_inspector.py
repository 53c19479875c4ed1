"""The unit inspector's API (issue 40): the page's rows with the same filters, sort and pages, and the gold override."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers as drf, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotation.selectors import unit_inspector
from annotation.web.api.views.common import DETAIL, CampaignScoped, scoped_schema


class VotesSerializer(drf.Serializer):
    present = drf.IntegerField()
    not_present = drf.IntegerField()
    total = drf.IntegerField(help_text="Counted votes (excluded judgments left out).")
    excluded = drf.IntegerField()


class JudgeSerializer(drf.Serializer):
    present = drf.BooleanField()
    probability = drf.FloatField()
    calibrated = drf.FloatField(allow_null=True)


class InspectedUnitSerializer(drf.Serializer):
    unit = drf.IntegerField()
    summary = drf.IntegerField()
    text = drf.CharField()
    kind = drf.CharField()
    example_id = drf.IntegerField()
    example = drf.CharField(help_text="The example's external id.")
    system = drf.CharField()
    votes = VotesSerializer()
    agreement = drf.ChoiceField(choices=list(unit_inspector.AGREEMENT))
    majority = drf.BooleanField(allow_null=True, help_text="The crowd's majority (empty: none, or a tie left out).")
    majority_rule = drf.CharField(allow_blank=True)
    judge = JudgeSerializer(allow_null=True, help_text="The judge's label and probability (empty: not labelled).")
    judge_disagrees = drf.BooleanField()
    imported = drf.BooleanField(allow_null=True)
    gold = drf.BooleanField(allow_null=True, help_text="The label that counts.")
    decided_by = drf.ChoiceField(choices=list(unit_inspector.DECIDED))
    overridden = drf.BooleanField()


class InspectorPageSerializer(drf.Serializer):
    count = drf.IntegerField()
    page = drf.IntegerField()
    pages = drf.IntegerField()
    page_size = drf.IntegerField()
    judge_version = drf.CharField(allow_null=True)
    results = InspectedUnitSerializer(many=True)


class OverrideSerializer(drf.Serializer):
    unit = drf.IntegerField(min_value=1, max_value=2**31 - 1)
    summary = drf.IntegerField(min_value=1, max_value=2**31 - 1)
    present = drf.BooleanField(allow_null=True, help_text="The gold label; null withdraws the override.")
    note = drf.CharField(max_length=2000, help_text="Why (required; logged with who and when).")


class OverrideDoneSerializer(drf.Serializer):
    id = drf.IntegerField()
    unit = drf.IntegerField()
    summary = drf.IntegerField()
    old_present = drf.BooleanField(allow_null=True)
    old_origin = drf.CharField(allow_blank=True)
    new_present = drf.BooleanField(allow_null=True)
    note = drf.CharField()
    created_at = drf.DateTimeField()


def _choices(name: str, choices: dict) -> OpenApiParameter:
    return OpenApiParameter(name, str, enum=list(choices), required=False,
                            description="; ".join(f"{k}: {v}" for k, v in choices.items()))


PARAMETERS = [
    OpenApiParameter("system", str, required=False, description="System name."),
    OpenApiParameter("example", str, required=False, description="Example id."),
    _choices("agreement", unit_inspector.AGREEMENT),
    OpenApiParameter("disagreement", bool, required=False, description="Only units where the judge's label differs from the crowd's majority."),
    _choices("gold", unit_inspector.GOLD),
    _choices("decided", unit_inspector.DECIDED),
    OpenApiParameter("q", str, required=False, description=f"Search the unit's text, the example id and the system name (at most {unit_inspector.MAX_SEARCH} characters)."),
    _choices("sort", unit_inspector.SORTS),
    OpenApiParameter("page", int, required=False),
    OpenApiParameter("page_size", int, required=False, description=f"1 to {unit_inspector.MAX_PER_PAGE} (default {unit_inspector.PER_PAGE})."),
]


class PageSchema(AutoSchema):
    """The list answers one page object (count, pages, results), not an array of rows."""

    def _is_list_view(self, serializer=None) -> bool:
        return False


@scoped_schema
class UnitInspectorViewSet(CampaignScoped, viewsets.ViewSet):
    """Every presence unit (a unit in a system's summary) with its crowd votes, majority, the judge's label and
    probability, the gold label that counts and who decided it; the page ``/campaigns/SLUG/units/`` reads the same."""

    schema = PageSchema()

    @extend_schema(parameters=PARAMETERS, responses={200: InspectorPageSerializer, 400: DETAIL})
    def list(self, request, *args, **kwargs):
        filters = unit_inspector.parse_filters(request.query_params)
        if filters.errors:
            raise ValidationError({name: [message] for name, message in filters.errors.items()})
        listing = unit_inspector.inspect(self.campaign, filters)
        run = listing["run"]
        return Response(InspectorPageSerializer({
            "count": listing["count"], "page": listing["page"], "pages": listing["pages"],
            "page_size": listing["page_size"], "judge_version": run.judge_version if run else None,
            "results": listing["rows"],
        }).data)

    @extend_schema(request=OverrideSerializer, responses={201: OverrideDoneSerializer, 400: DETAIL, 403: DETAIL})
    @action(detail=False, methods=["post"])
    def override(self, request, *args, **kwargs):
        """Set a unit's gold label in a summary (or withdraw the override) with a note: logged, scores recomputed.
        Managers of the campaign only."""
        from annotation.services.gold_overrides import override_gold

        self.require_manager()
        form = OverrideSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            entry = override_gold(self.campaign, data["unit"], data["summary"], data["present"], data["note"], by=request.user)
        except DjangoValidationError as exc:
            raise ValidationError({"detail": exc.messages}) from None
        return Response(OverrideDoneSerializer({
            "id": entry.pk, "unit": entry.unit_id, "summary": entry.summary_id, "old_present": entry.old_present,
            "old_origin": entry.old_origin, "new_present": entry.new_present, "note": entry.note, "created_at": entry.created_at,
        }).data, status=status.HTTP_201_CREATED)
