"""Constraints the database itself enforces."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from annotation.models import Campaign, ContentUnit, Example, Predicate, ReferenceSentence, System, SystemSummary

pytestmark = pytest.mark.django_db


@pytest.fixture
def sentence():
    campaign = Campaign.objects.create(name="C", slug="c")
    example = Example.objects.create(campaign=campaign, external_id="e1", position=0, reference="Dogs bark.")
    return ReferenceSentence.objects.create(example=example, index=0, text="Dogs bark.", start=0, end=10)


def test_external_ids_are_unique_per_campaign(sentence):
    campaign = sentence.example.campaign
    with pytest.raises(IntegrityError), transaction.atomic():
        Example.objects.create(campaign=campaign, external_id="e1", position=1, reference="x")
    other = Campaign.objects.create(name="D", slug="d")
    Example.objects.create(campaign=other, external_id="e1", position=0, reference="x")  # another campaign: fine


def test_one_summary_per_system_and_example(sentence):
    system = System.objects.create(campaign=sentence.example.campaign, name="bart")
    SystemSummary.objects.create(system=system, example=sentence.example, text="a")
    with pytest.raises(IntegrityError), transaction.atomic():
        SystemSummary.objects.create(system=system, example=sentence.example, text="b")


def test_predicate_span_must_lie_inside_its_sentence(sentence):
    Predicate.objects.create(sentence=sentence, start=5, end=9, text="bark", lemma="bark")
    with pytest.raises(IntegrityError), transaction.atomic():
        Predicate.objects.create(sentence=sentence, start=5, end=11, text="bark.?", lemma="bark")
    with pytest.raises(IntegrityError), transaction.atomic():
        Predicate.objects.create(sentence=sentence, start=5, end=5, text="", lemma="")
    predicate = Predicate.objects.get()
    predicate.end = 40
    with pytest.raises(IntegrityError), transaction.atomic():
        predicate.save()
    assert Predicate.objects.get().end == 9


def test_qa_pair_needs_a_predicate_and_scu_must_not_have_one(sentence):
    predicate = Predicate.objects.create(sentence=sentence, start=5, end=9, text="bark", lemma="bark")
    with pytest.raises(IntegrityError), transaction.atomic():
        ContentUnit.objects.create(example=sentence.example, kind="qa", index=0, text="Who barks? Dogs")
    with pytest.raises(IntegrityError), transaction.atomic():
        ContentUnit.objects.create(example=sentence.example, kind="scu", predicate=predicate, index=0, text="x")
    ContentUnit.objects.create(example=sentence.example, kind="qa", predicate=predicate, index=0, text="Who barks? Dogs")


def test_campaign_settings_are_checked(sentence):
    with pytest.raises(IntegrityError), transaction.atomic():
        Campaign.objects.create(name="Bad", slug="bad", presence_accuracy_threshold=1.5)
    with pytest.raises(IntegrityError), transaction.atomic():
        Campaign.objects.create(name="Bad", slug="bad", length_penalty_alpha=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Campaign.objects.create(name="Bad", slug="bad", assignments_presence=0)
