"""The QAPyramid world: campaigns, references, predicates, QA pairs, systems.

A campaign holds examples (one reference summary each, optionally the source
document).  Each reference is split into sentences; every verb predicate of a
sentence is a ``Predicate``.  Writers attach ``QAPair`` rows to predicates.
Systems contribute one ``SystemSummary`` per example.  Presence is judged on
*content units*: the kept QA pairs of a "qa" campaign, or the imported
Pyramid SCUs of an "scu" campaign; both live in ``ContentUnit`` so that
presence judging and scoring have a single shape.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q


class Campaign(models.Model):
    """An evaluation study; its settings default to the paper's values."""

    class UnitType(models.TextChoices):
        QA = "qa", "QA pairs (QAPyramid)"
        SCU = "scu", "Summary content units (Pyramid)"

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"

    class Backend(models.TextChoices):
        LOCAL = "local", "Local workers"
        MTURK_SANDBOX = "mturk-sandbox", "MTurk sandbox"
        MTURK_LIVE = "mturk-live", "MTurk (live)"

    class TieRule(models.TextChoices):
        ABSENT = "absent", "Tie counts as not present"
        PRESENT = "present", "Tie counts as present"
        EXCLUDE = "exclude", "Tied units are left out"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="campaigns"
    )
    shared_with = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="shared_campaigns")
    description = models.TextField(blank=True)
    unit_type = models.CharField(max_length=8, choices=UnitType.choices, default=UnitType.QA)
    state = models.CharField(max_length=16, choices=State.choices, default=State.DRAFT)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.LOCAL)
    batch = models.OneToOneField(
        "hits.Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="campaign"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    launched_at = models.DateTimeField(null=True, blank=True)

    # Redundancy per task type (protocol: 1 writer, 2 verifiers, 3 judges).
    assignments_generation = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    assignments_verification = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1)])
    assignments_presence = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1)])
    # Rewards in USD per HIT (paper: $0.32, $0.17, $0.20).
    reward_generation = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.32"))
    reward_verification = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.17"))
    reward_presence = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.20"))
    # Generation rules.
    max_questions_per_predicate = models.PositiveSmallIntegerField(default=5, validators=[MinValueValidator(1)])
    max_answers_per_question = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1)])
    min_kept_qas_per_predicate = models.PositiveSmallIntegerField(default=2)
    max_redo_rounds = models.PositiveSmallIntegerField(default=2)
    # Quality control thresholds (strict: a worker must be *above* them).
    qualification_hits = models.PositiveSmallIntegerField(default=4, validators=[MinValueValidator(1)])
    writer_valid_threshold = models.FloatField(
        default=0.85, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    writer_min_questions_per_predicate = models.FloatField(default=2.0, validators=[MinValueValidator(0.0)])
    verifier_agreement_threshold = models.FloatField(
        default=0.85, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    presence_accuracy_threshold = models.FloatField(
        default=0.90, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    grace_period_items = models.PositiveIntegerField(default=20)
    qualification_cooldown_hours = models.FloatField(default=24.0, validators=[MinValueValidator(0.0)])
    qualification_max_attempts = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1)])
    gold_share = models.FloatField(default=0.1, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    # Aggregation and scoring.
    tie_rule = models.CharField(max_length=8, choices=TieRule.choices, default=TieRule.ABSENT)
    length_penalty_alpha = models.FloatField(default=6.0, validators=[MinValueValidator(0.01)])

    class Meta:
        ordering = ["-created_at", "slug"]
        constraints = [
            models.CheckConstraint(condition=Q(length_penalty_alpha__gt=0), name="campaign_alpha_positive"),
            models.CheckConstraint(
                condition=Q(writer_valid_threshold__gte=0, writer_valid_threshold__lte=1)
                & Q(verifier_agreement_threshold__gte=0, verifier_agreement_threshold__lte=1)
                & Q(presence_accuracy_threshold__gte=0, presence_accuracy_threshold__lte=1)
                & Q(gold_share__gte=0, gold_share__lte=1),
                name="campaign_thresholds_are_shares",
            ),
            models.CheckConstraint(
                condition=Q(assignments_generation__gte=1)
                & Q(assignments_verification__gte=1)
                & Q(assignments_presence__gte=1),
                name="campaign_assignments_positive",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Example(models.Model):
    """One reference summary (and optionally its source document)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="examples")
    external_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField(help_text="Order of the example in the imported file.")
    reference = models.TextField(blank=True)
    source = models.TextField(blank=True)
    # Set once the example's presence HITs exist (all its predicates settled).
    presence_started = models.BooleanField(default=False)

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


class ContentUnit(models.Model):
    """A unit whose presence in a system summary is judged.

    In a "qa" campaign every unit is a QA pair of a predicate (``QAPair``):
    a question and up to three answers, each a substring of the sentence.
    In an "scu" campaign units are the Pyramid SCUs of the reference
    (``predicate`` is empty and ``text`` holds the SCU).
    """

    class Kind(models.TextChoices):
        QA = "qa", "QA pair"
        SCU = "scu", "Summary content unit"

    class State(models.TextChoices):
        PROPOSED = "proposed", "Written, awaiting verification"
        KEPT = "kept", "Kept (valid for both verifiers)"
        REJECTED = "rejected", "Rejected by verification"
        SUPERSEDED = "superseded", "Replaced by a later round"

    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="units")
    predicate = models.ForeignKey(Predicate, null=True, blank=True, on_delete=models.CASCADE, related_name="units")
    kind = models.CharField(max_length=4, choices=Kind.choices, default=Kind.QA)
    index = models.PositiveIntegerField(help_text="Order of the unit within its example.")
    question = models.CharField(max_length=300, blank=True)
    answers = models.JSONField(default=list, blank=True)
    text = models.TextField(help_text="The unit as one line: the SCU, or the question followed by its answer(s).")
    author = models.ForeignKey(
        "hits.Worker", null=True, blank=True, on_delete=models.SET_NULL, related_name="written_units"
    )
    state = models.CharField(max_length=12, choices=State.choices, default=State.PROPOSED)
    round = models.PositiveSmallIntegerField(default=1)
    external_id = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["example", "index"]
        constraints = [
            models.UniqueConstraint(fields=["example", "index"], name="unit_unique_index"),
            models.CheckConstraint(
                condition=(Q(kind="qa") & Q(predicate__isnull=False)) | (Q(kind="scu") & Q(predicate__isnull=True)),
                name="unit_qa_has_predicate",
            ),
        ]

    def __str__(self) -> str:
        return self.text


class QAPairManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(kind=ContentUnit.Kind.QA)


class QAPair(ContentUnit):
    """A QA-SRL question-answer pair of one predicate (a ``ContentUnit`` of kind "qa")."""

    objects = QAPairManager()

    class Meta:
        proxy = True
        verbose_name = "QA pair"

    def save(self, *args, **kwargs):
        self.kind = ContentUnit.Kind.QA
        super().save(*args, **kwargs)


class GoldPresence(models.Model):
    """The gold presence label of a unit in a system summary.

    ``origin`` says where it came from: imported with a data set, or the
    majority of the crowd judgments that count.
    """

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported gold label"
        MAJORITY = "majority", "Majority of crowd judgments"

    unit = models.ForeignKey(ContentUnit, on_delete=models.CASCADE, related_name="gold")
    summary = models.ForeignKey(SystemSummary, on_delete=models.CASCADE, related_name="gold")
    present = models.BooleanField(null=True, help_text="Empty when the tie rule leaves a tied unit out.")
    n_judgments = models.PositiveSmallIntegerField(default=0)
    n_present = models.PositiveSmallIntegerField(default=0)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.MAJORITY)

    class Meta:
        verbose_name_plural = "gold presence labels"
        constraints = [
            # An imported label and the crowd's majority can stand side by side.
            models.UniqueConstraint(fields=["unit", "summary", "origin"], name="gold_unique_unit_summary"),
            models.CheckConstraint(condition=Q(n_present__lte=F("n_judgments")), name="gold_counts_consistent"),
        ]


class Verification(models.Model):
    """One verifier's verdict on one written QA pair."""

    unit = models.ForeignKey(ContentUnit, on_delete=models.CASCADE, related_name="verifications")
    worker = models.ForeignKey("hits.Worker", on_delete=models.PROTECT, related_name="verifications")
    assignment = models.ForeignKey(
        "hits.Assignment", null=True, blank=True, on_delete=models.CASCADE, related_name="verifications"
    )
    valid = models.BooleanField()
    answers = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["unit", "worker"], name="verification_once_per_worker")]


class PresenceJudgment(models.Model):
    """One judge's label: is this unit present in this system summary?

    ``excluded`` judgments (e.g. of a disqualified worker) do not count
    towards gold labels; exclusion is reversible.
    """

    unit = models.ForeignKey(ContentUnit, on_delete=models.CASCADE, related_name="judgments")
    summary = models.ForeignKey(SystemSummary, on_delete=models.CASCADE, related_name="judgments")
    worker = models.ForeignKey("hits.Worker", on_delete=models.PROTECT, related_name="presence_judgments")
    assignment = models.ForeignKey(
        "hits.Assignment", null=True, blank=True, on_delete=models.CASCADE, related_name="presence_judgments"
    )
    present = models.BooleanField()
    excluded = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["summary", "unit"], name="judgment_summary_unit")]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "unit"],
                condition=Q(assignment__isnull=False),
                name="judgment_once_per_assignment_and_unit",
            ),
        ]


class SummaryScore(models.Model):
    """Gold scores of one system summary (recomputed when its gold labels change)."""

    summary = models.OneToOneField(SystemSummary, on_delete=models.CASCADE, related_name="score")
    n_units = models.PositiveIntegerField(default=0)
    n_present = models.PositiveIntegerField(default=0)
    qapyramid = models.FloatField(null=True)
    predicate_level = models.FloatField(null=True)
    repetition_rate = models.FloatField(null=True)
    length_penalty = models.FloatField(null=True)
    nqapyramid = models.FloatField(null=True, help_text="Empty where the summary or reference text is missing.")
    updated_at = models.DateTimeField(auto_now=True)


class SystemScore(models.Model):
    """A system's gold scores: means over its summaries, with 95% bootstrap intervals over examples."""

    system = models.OneToOneField(System, on_delete=models.CASCADE, related_name="score")
    n_summaries = models.PositiveIntegerField(default=0)
    qapyramid = models.FloatField(null=True)
    qapyramid_low = models.FloatField(null=True)
    qapyramid_high = models.FloatField(null=True)
    nqapyramid = models.FloatField(null=True)
    predicate_level = models.FloatField(null=True)
    alpha = models.FloatField(null=True, help_text="Krippendorff's alpha of this system's presence judgments.")
    updated_at = models.DateTimeField(auto_now=True)


from annotation.autoscore_models import (  # noqa: E402,F401  (automated scoring, issue 7)
    AutoPresence, AutoscoreChunk, AutoscoreRun, AutoSummaryScore, GeneratedUnit, JudgeCacheEntry,
)

from annotation.jobs_models import Job, QAPairCorrection  # noqa: E402,F401  (researcher pages: long work, corrections)
