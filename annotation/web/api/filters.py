"""Query-string filters of the list endpoints (django-filter)."""

from __future__ import annotations

import django_filters as filters
from django import forms
from django.db.models import Q

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
from hits.models import Assignment


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


class AssignmentFilter(filters.FilterSet):
    """Assignments by state, task type, worker, and (through the HIT's payload) system or example."""

    state = filters.ChoiceFilter(choices=[(s.value, s.label) for s in Assignment.State])
    task_type = filters.CharFilter(field_name="hit__task_type__slug", help_text="generation, verification or presence.")
    worker = filters.CharFilter(field_name="worker__external_id", help_text="Worker id.")
    system = IdFilter(method="filter_system", help_text="System id: presence assignments on its summaries.")
    example = filters.CharFilter(method="filter_example", help_text="Example id: every assignment about it.")

    class Meta:
        model = Assignment
        fields = ["state", "task_type", "worker", "system", "example"]

    # The HIT's payload names the predicate or summary it is about; two small id lists keep this one query.
    def filter_system(self, queryset, name, value):
        summaries = list(SystemSummary.objects.filter(system_id=value).values_list("pk", flat=True))
        return queryset.filter(hit__payload__summary__in=summaries)

    def filter_example(self, queryset, name, value):
        predicates = list(Predicate.objects.filter(example__external_id=value).values_list("pk", flat=True))
        summaries = list(SystemSummary.objects.filter(example__external_id=value).values_list("pk", flat=True))
        return queryset.filter(Q(hit__payload__predicate__in=predicates) | Q(hit__payload__summary__in=summaries))
