"""Content units and the crowd's work on them: QA pairs written for predicates (or imported SCUs),
their verifications, presence judgments and gold presence labels."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotation.models.texts import Example, Predicate, SystemSummary


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
        MERGED = "merged", "Merged into a near-duplicate by a researcher"

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
        # "override" sorts after "imported" and "majority": wherever labels are chosen by origin order, it wins.
        OVERRIDE = "override", "Set by a researcher (overrides the others)"

    class DecidedBy(models.TextChoices):
        MAJORITY = "majority", "Majority (decided)"
        TIE_RULE = "tie_rule", "Tie rule"
        PARTIAL = "partial", "Majority of fewer judges than planned"

    unit = models.ForeignKey(ContentUnit, on_delete=models.CASCADE, related_name="gold")
    summary = models.ForeignKey(SystemSummary, on_delete=models.CASCADE, related_name="gold")
    present = models.BooleanField(null=True, help_text="Empty when the tie rule leaves a tied unit out.")
    n_judgments = models.PositiveSmallIntegerField(default=0)
    n_present = models.PositiveSmallIntegerField(default=0)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.MAJORITY)
    # How a crowd label was reached (issue 29): the judges' majority, decided (no further judge the campaign
    # plans could change it); the campaign's tie rule, the judges being tied (e.g. 1-1 when a campaign with
    # the adaptive rule was cancelled or closed before the third judge came); or the majority of fewer judges
    # than planned, not yet decided.  Empty for imported labels.
    decided_by = models.CharField(max_length=10, choices=DecidedBy.choices, blank=True, default="")

    class Meta:
        verbose_name_plural = "gold presence labels"
        # The unit inspector joins the labels of every (unit, summary) row by origin, and filters on the counts.
        indexes = [models.Index(fields=["unit", "summary", "origin", "present", "n_judgments", "n_present"], name="gold_inspector")]
        constraints = [
            # An imported label and the crowd's majority can stand side by side.
            models.UniqueConstraint(fields=["unit", "summary", "origin"], name="gold_unique_unit_summary"),
            models.CheckConstraint(condition=Q(n_present__lte=F("n_judgments")), name="gold_counts_consistent"),
        ]


class Verification(models.Model):
    """One verifier's verdict on one written QA pair.

    ``excluded`` verdicts (of work rejected with its data excluded) do not count when the HIT's pairs are
    decided, nor in the verifier checks and agreement; exclusion is reversible.
    """

    unit = models.ForeignKey(ContentUnit, on_delete=models.CASCADE, related_name="verifications")
    worker = models.ForeignKey("hits.Worker", on_delete=models.PROTECT, related_name="verifications")
    assignment = models.ForeignKey(
        "hits.Assignment", null=True, blank=True, on_delete=models.CASCADE, related_name="verifications"
    )
    valid = models.BooleanField()
    answers = models.JSONField(default=list, blank=True)
    excluded = models.BooleanField(default=False)
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


class GoldOverride(models.Model):
    """The log of researchers' gold overrides (the unit inspector): who set which label of a unit in a summary,
    when, the label that counted before, the new one (empty: the override was withdrawn) and why.  The label
    itself is a ``GoldPresence`` of origin "override"; this table keeps every change."""

    unit = models.ForeignKey(ContentUnit, on_delete=models.CASCADE, related_name="gold_overrides")
    summary = models.ForeignKey(SystemSummary, on_delete=models.CASCADE, related_name="gold_overrides")
    old_present = models.BooleanField(null=True, help_text="The label that counted before (empty: none).")
    old_origin = models.CharField(max_length=10, blank=True, help_text="Where that label came from.")
    new_present = models.BooleanField(null=True, help_text="Empty when the override was withdrawn.")
    note = models.TextField(max_length=2000)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="gold_overrides")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["summary", "unit"], name="gold_override_summary_unit")]
