"""What a campaign evaluates: examples (a reference summary each), their sentences and predicates,
systems and their summaries."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from annotation.models.campaign import Campaign


class Example(models.Model):
    """One reference summary (and optionally its source document)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="examples")
    external_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField(help_text="Order of the example in the imported file.")
    reference = models.TextField(blank=True)
    source = models.TextField(blank=True)
    # Set once the example's presence HITs exist (all its predicates settled).
    presence_started = models.BooleanField(default=False)
    duplicates_reviewed = models.BooleanField(
        default=False, help_text="A researcher reviewed the near-duplicate QA pairs of this example (or skipped the review)."
    )

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="example_unique_id_per_campaign"),
        ]

    def __str__(self) -> str:
        return self.external_id


class ReferenceSentence(models.Model):
    """A sentence of a reference; ``start``/``end`` are offsets into ``Example.reference``."""

    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="sentences")
    index = models.PositiveIntegerField()
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()

    class Meta:
        ordering = ["example", "index"]
        constraints = [
            models.UniqueConstraint(fields=["example", "index"], name="sentence_unique_index"),
            models.CheckConstraint(condition=Q(end__gte=F("start")), name="sentence_offsets_ordered"),
        ]

    def __str__(self) -> str:
        return self.text


class Predicate(models.Model):
    """A verb predicate: a character span ``[start, end)`` of its sentence's text.

    The database refuses a span that reaches past the end of its sentence
    (a trigger installed by migration ``0002``), as well as an empty one.
    """

    class Origin(models.TextChoices):
        AUTO = "auto", "Found automatically"
        FILE = "file", "Imported from a file"
        RESEARCHER = "researcher", "Added by a researcher"

    # Empty for predicates imported by id only (released judgments without reference texts).
    sentence = models.ForeignKey(
        ReferenceSentence, null=True, blank=True, on_delete=models.CASCADE, related_name="predicates"
    )
    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="predicates")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.CharField(max_length=200)
    lemma = models.CharField(max_length=200, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.AUTO)
    edited_by_researcher = models.BooleanField(default=False)
    # Set by the pipeline when a predicate keeps too few QA pairs after the allowed redo rounds.
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True)
    # Generation rounds done so far, and whether the predicate needs no more (enough kept pairs, or flagged).
    rounds = models.PositiveSmallIntegerField(default=0)
    settled = models.BooleanField(default=False)
    # Ids of released data sets (QAPyramid raw judgments name predicates "<example>_<n>").
    external_id = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["sentence", "start"]
        constraints = [
            models.CheckConstraint(
                condition=Q(end__gt=F("start")) | Q(sentence__isnull=True), name="predicate_span_not_empty"
            ),
            models.UniqueConstraint(fields=["sentence", "start", "end"], name="predicate_unique_span"),
        ]

    def save(self, *args, **kwargs):
        if self.example_id is None and self.sentence_id is not None:
            self.example_id = ReferenceSentence.objects.values_list("example_id", flat=True).get(pk=self.sentence_id)
        super().save(*args, **kwargs)

    def __str__(self) -> str:
        return self.text


class System(models.Model):
    """A summarization system whose summaries are evaluated in a campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="systems")
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["campaign", "name"]
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="system_unique_name")]

    def __str__(self) -> str:
        return self.name


class SystemSummary(models.Model):
    """A system's summary of one example."""

    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="summaries")
    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="summaries")
    text = models.TextField(blank=True)

    class Meta:
        ordering = ["system", "example"]
        verbose_name_plural = "system summaries"
        constraints = [models.UniqueConstraint(fields=["system", "example"], name="summary_unique_per_example")]

    def __str__(self) -> str:
        return f"{self.system} / {self.example}"
