"""Query-string filters of the list endpoints (django-filter)."""

from __future__ import annotations

import django_filters as filters

from annotation.models import (
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    Predicate,
    PresenceJudgment,
    SystemSummary,
    Verification,
)


class CampaignFilter(filters.FilterSet):
    class Meta:
        model = Campaign
        fields = ["state", "unit_type", "backend"]


class ExampleFilter(filters.FilterSet):
    external_id = filters.CharFilter()

    class Meta:
        model = Example
        fields = ["external_id", "presence_started"]


class SummaryFilter(filters.FilterSet):
    system = filters.CharFilter(field_name="system__name", help_text="System name.")
    example = filters.CharFilter(field_name="example__external_id", help_text="Example id.")

    class Meta:
        model = SystemSummary
        fields = ["system", "example"]


class PredicateFilter(filters.FilterSet):
    example = filters.CharFilter(field_name="example__external_id", help_text="Example id.")

    class Meta:
        model = Predicate
        fields = ["example", "origin", "flagged", "settled"]


class UnitFilter(filters.FilterSet):
    example = filters.CharFilter(field_name="example__external_id", help_text="Example id.")
    predicate = filters.NumberFilter(field_name="predicate_id")

    class Meta:
        model = ContentUnit
        fields = ["example", "predicate", "state", "kind", "round"]


class VerificationFilter(filters.FilterSet):
    worker = filters.CharFilter(field_name="worker__external_id", help_text="Worker id.")
    unit = filters.NumberFilter(field_name="unit_id")
    example = filters.CharFilter(field_name="unit__example__external_id", help_text="Example id.")

    class Meta:
        model = Verification
        fields = ["worker", "unit", "example", "valid"]


class JudgmentFilter(filters.FilterSet):
    system = filters.CharFilter(field_name="summary__system__name", help_text="System name.")
    worker = filters.CharFilter(field_name="worker__external_id", help_text="Worker id.")
    example = filters.CharFilter(field_name="summary__example__external_id", help_text="Example id.")
    unit = filters.NumberFilter(field_name="unit_id")
    summary = filters.NumberFilter(field_name="summary_id")

    class Meta:
        model = PresenceJudgment
        fields = ["system", "worker", "example", "unit", "summary", "present", "excluded"]


class GoldFilter(filters.FilterSet):
    system = filters.CharFilter(field_name="summary__system__name", help_text="System name.")
    example = filters.CharFilter(field_name="summary__example__external_id", help_text="Example id.")
    unit = filters.NumberFilter(field_name="unit_id")
    summary = filters.NumberFilter(field_name="summary_id")

    class Meta:
        model = GoldPresence
        fields = ["system", "example", "unit", "summary", "origin", "present"]
