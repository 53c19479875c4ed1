"""Query-string filters of the list endpoints (django-filter)."""

from __future__ import annotations

import django_filters as filters
from django import forms

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


# Largest id or count a filter accepts: beyond it the database cannot store the number, so it is a 400, not a 500.
MAX_ID = 2**31 - 1


class IdFilter(filters.NumberFilter):
    """A whole number between 0 and ``MAX_ID`` (a row id or a round)."""

    field_class = forms.IntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 0)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(*args, **kwargs)


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
    predicate = IdFilter(field_name="predicate_id")
    round = IdFilter(help_text="Generation round (1 = first).")

    class Meta:
        model = ContentUnit
        fields = ["example", "predicate", "state", "kind", "round"]


class VerificationFilter(filters.FilterSet):
    worker = filters.CharFilter(field_name="worker__external_id", help_text="Worker id.")
    unit = IdFilter(field_name="unit_id")
    example = filters.CharFilter(field_name="unit__example__external_id", help_text="Example id.")

    class Meta:
        model = Verification
        fields = ["worker", "unit", "example", "valid"]


class JudgmentFilter(filters.FilterSet):
    system = filters.CharFilter(field_name="summary__system__name", help_text="System name.")
    worker = filters.CharFilter(field_name="worker__external_id", help_text="Worker id.")
    example = filters.CharFilter(field_name="summary__example__external_id", help_text="Example id.")
    unit = IdFilter(field_name="unit_id")
    summary = IdFilter(field_name="summary_id")

    class Meta:
        model = PresenceJudgment
        fields = ["system", "worker", "example", "unit", "summary", "present", "excluded"]


class GoldFilter(filters.FilterSet):
    system = filters.CharFilter(field_name="summary__system__name", help_text="System name.")
    example = filters.CharFilter(field_name="summary__example__external_id", help_text="Example id.")
    unit = IdFilter(field_name="unit_id")
    summary = IdFilter(field_name="summary_id")

    class Meta:
        model = GoldPresence
        fields = ["system", "example", "unit", "summary", "origin", "present"]
