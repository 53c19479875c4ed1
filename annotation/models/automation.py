"""Automated scoring (SemiAutoQAPyramid / AutoQAPyramid): judge cache, runs, chunks and their results.

A run scores a campaign's system summaries with one automatic presence
judge.  Its work is split into chunks (a few summaries each) that Celery
workers take independently; a chunk writes its results and marks itself
done in one transaction, so a chunk redelivered after a crash rewrites the
same rows instead of adding duplicates.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class JudgeCacheEntry(models.Model):
    """A judge's presence probability for one (summary, unit, context) pair.

    ``pair_hash`` is the SHA-256 of the pair's texts, so an identical pair
    judged again by the same judge version costs a lookup, not a model call.
    """

    judge_version = models.CharField(max_length=200)
    pair_hash = models.CharField(max_length=64)
    probability = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "judge cache entries"
        constraints = [
            models.UniqueConstraint(fields=["judge_version", "pair_hash"], name="judge_cache_unique_pair"),
            models.CheckConstraint(
                condition=Q(probability__gte=0) & Q(probability__lte=1), name="judge_cache_probability_range"
            ),
        ]


class AutoscoreRun(models.Model):
    """One automatic scoring of (some of) a campaign's systems with one judge."""

    class State(models.TextChoices):
        PENDING = "pending", "Waiting for a worker"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey("annotation.Campaign", on_delete=models.CASCADE, related_name="autoscore_runs")
    judge_name = models.CharField(max_length=100)
    judge_version = models.CharField(max_length=200, blank=True)
    systems = models.JSONField(default=list, blank=True, help_text="Ids of the systems scored; empty means all.")
    generate_qas = models.BooleanField(default=False, help_text="AutoQAPyramid: units generated from the reference.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    n_chunks = models.PositiveIntegerField(default=0)
    n_done = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="autoscore_runs"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    results = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(n_done__lte=F("n_chunks")), name="autoscore_done_le_chunks"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign} / {self.judge_name} #{self.pk}"

    @property
    def progress(self) -> float:
        return self.n_done / self.n_chunks if self.n_chunks else 0.0


class AutoscoreChunk(models.Model):
    """A slice of a run's summaries; done exactly once however often it is delivered."""

    run = models.ForeignKey(AutoscoreRun, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    summary_ids = models.JSONField(default=list)
    done = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(null=True, blank=True)
    n_pairs = models.PositiveIntegerField(default=0)
    n_cached = models.PositiveIntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="autoscore_chunk_unique_index")]


class GeneratedUnit(models.Model):
    """An AutoQAPyramid QA pair generated automatically from a reference sentence."""

    run = models.ForeignKey(AutoscoreRun, on_delete=models.CASCADE, related_name="generated_units")
    example = models.ForeignKey("annotation.Example", on_delete=models.CASCADE, related_name="generated_units")
    index = models.PositiveIntegerField()
    predicate = models.CharField(max_length=200)
    question = models.CharField(max_length=300)
    answer = models.TextField()
    text = models.TextField()

    class Meta:
        ordering = ["run", "example", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "example", "index"], name="generated_unit_unique_index")]


class AutoPresence(models.Model):
    """The judge's verdict on one unit (human-written or generated) in one system summary."""

    run = models.ForeignKey(AutoscoreRun, on_delete=models.CASCADE, related_name="presences")
    summary = models.ForeignKey("annotation.SystemSummary", on_delete=models.CASCADE, related_name="auto_presences")
    unit = models.ForeignKey(
        "annotation.ContentUnit", null=True, blank=True, on_delete=models.CASCADE, related_name="auto_presences"
    )
    generated = models.ForeignKey(
        GeneratedUnit, null=True, blank=True, on_delete=models.CASCADE, related_name="presences"
    )
    probability = models.FloatField()
    present = models.BooleanField()
    # Budgeted presence: the probability calibrated on the campaign's human labels (out of fold where people
    # judged the unit; ``annotation.scoring.calibration``), None when it could not be calibrated.
    calibrated = models.FloatField(null=True, blank=True)
    # Budgeted presence, active rule: the judge's probability as it would be without this unit's own human label
    # (out of fold where people judged the unit; the plain probability elsewhere), the f of the AIPW estimate.
    cross_fitted = models.FloatField(null=True, blank=True)

    class Meta:
        # The unit inspector joins the judge's label and probability of every (unit, summary) row: covered by the
        # index, no table read per row.
        indexes = [
            models.Index(fields=["run", "summary", "unit", "present", "probability"], name="auto_presence_inspector"),
            # Its sort by probability walks this index.
            models.Index(fields=["run", "probability"], name="auto_presence_run_probability"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "summary", "unit"], condition=Q(unit__isnull=False), name="auto_presence_unique_unit"
            ),
            models.UniqueConstraint(
                fields=["run", "summary", "generated"],
                condition=Q(generated__isnull=False),
                name="auto_presence_unique_generated",
            ),
            models.CheckConstraint(
                condition=Q(unit__isnull=False, generated__isnull=True) | Q(unit__isnull=True, generated__isnull=False),
                name="auto_presence_one_unit",
            ),
        ]


class AutoSummaryScore(models.Model):
    """A summary's automatic score in a run: share of units the judge found present."""

    run = models.ForeignKey(AutoscoreRun, on_delete=models.CASCADE, related_name="summary_scores")
    summary = models.ForeignKey("annotation.SystemSummary", on_delete=models.CASCADE, related_name="auto_scores")
    n_units = models.PositiveIntegerField(default=0)
    n_present = models.PositiveIntegerField(default=0)
    score = models.FloatField(null=True)
    mean_probability = models.FloatField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "summary"], name="auto_summary_score_unique")]


class PresenceCandidate(models.Model):
    """A presence HIT a budgeted campaign could post: created for every (summary, predicate or unit group),
    posted (``hit``) only when routed to people in a round; otherwise the judge labels its units."""

    campaign = models.ForeignKey("annotation.Campaign", on_delete=models.CASCADE, related_name="presence_candidates")
    summary = models.ForeignKey("annotation.SystemSummary", on_delete=models.CASCADE, related_name="presence_candidates")
    predicate = models.ForeignKey(
        "annotation.Predicate", null=True, blank=True, on_delete=models.CASCADE, related_name="presence_candidates"
    )
    units = models.JSONField(default=list)
    uncertainty = models.FloatField(null=True, blank=True)
    round = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The round that routed it to people.")
    # The active rule (issue 37): every candidate is decided once, in one draw (``stratum``, numbered per campaign)
    # of round ``decided_round``, where it went to people with probability ``inclusion_probability`` (pi); routed
    # or not, these stay, so the estimator can weight what people judged by 1/pi.
    decided_round = models.PositiveSmallIntegerField(null=True, blank=True, help_text="The round whose draw decided it.")
    stratum = models.PositiveIntegerField(null=True, blank=True, help_text="The draw that decided it (active rule).")
    inclusion_probability = models.FloatField(
        null=True, blank=True, help_text="Its probability of going to people in that draw (active rule)."
    )
    hit = models.OneToOneField("hits.HIT", null=True, blank=True, on_delete=models.SET_NULL, related_name="candidate")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["campaign", "pk"]
        indexes = [models.Index(fields=["campaign", "round"])]


class PresenceRound(models.Model):
    """One round of a budgeted campaign's human presence work: what the judge routed, with which version."""

    class State(models.TextChoices):
        OPEN = "open", "People are judging"
        DONE = "done", "Done"

    campaign = models.ForeignKey("annotation.Campaign", on_delete=models.CASCADE, related_name="presence_rounds_done")
    number = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=8, choices=State.choices, default=State.OPEN)
    judge_version = models.CharField(max_length=300, blank=True)
    training_labels = models.PositiveIntegerField(default=0, help_text="Human labels the judge was retrained on.")
    budget = models.PositiveIntegerField(default=0)
    routed = models.PositiveIntegerField(default=0)
    candidates = models.PositiveIntegerField(default=0)
    labelling_run = models.ForeignKey(AutoscoreRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The active rule: the weight of uncertainty in the round's draw (0 = uniform), and how it was chosen.
    mix = models.FloatField(null=True, blank=True)
    mix_reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "number"]
        constraints = [models.UniqueConstraint(fields=["campaign", "number"], name="presence_round_unique_number")]
