"""Gold scores computed from the gold labels: per system summary and per system."""

from __future__ import annotations

from django.db import models

from annotation.models.texts import System, SystemSummary


class SummaryScore(models.Model):
    """Gold scores of one system summary (recomputed when its gold labels change)."""

    summary = models.OneToOneField(SystemSummary, on_delete=models.CASCADE, related_name="score")
    n_units = models.PositiveIntegerField(default=0)
    n_present = models.PositiveIntegerField(default=0)
    qapyramid = models.FloatField(null=True)
    predicate_level = models.FloatField(null=True)
    repetition_rate = models.FloatField(null=True)
    length_penalty = models.FloatField(null=True)
    length = models.PositiveIntegerField(null=True, help_text="The summary's length in NLTK word tokens.")
    nqapyramid = models.FloatField(null=True, help_text="Empty where the summary or reference text is missing.")
    updated_at = models.DateTimeField(auto_now=True)


class SystemScore(models.Model):
    """A system's gold scores: means over its summaries, with 95% bootstrap intervals over examples.

    The sums and counts behind the means are kept too (``*_sum``, ``n_*``): a presence HIT changes them by the
    difference its summaries' scores made (``annotation.services.scores``), never by re-reading the campaign.
    Empty sums (rows stored before they were kept) mean "rebuild from the summary scores".
    """

    system = models.OneToOneField(System, on_delete=models.CASCADE, related_name="score")
    n_summaries = models.PositiveIntegerField(default=0)
    qapyramid = models.FloatField(null=True)
    qapyramid_low = models.FloatField(null=True)
    qapyramid_high = models.FloatField(null=True)
    nqapyramid = models.FloatField(null=True)
    predicate_level = models.FloatField(null=True)
    alpha = models.FloatField(null=True, help_text="Krippendorff's alpha of this system's presence judgments.")
    qapyramid_sum = models.FloatField(null=True)
    nqapyramid_sum = models.FloatField(null=True)
    n_nqapyramid = models.PositiveIntegerField(default=0)
    predicate_level_sum = models.FloatField(null=True)
    n_predicate_level = models.PositiveIntegerField(default=0)
    n_units = models.PositiveIntegerField(default=0, help_text="Gold-labelled (unit, summary) pairs its scores rest on.")
    updated_at = models.DateTimeField(auto_now=True)


class HybridScore(models.Model):
    """A budgeted campaign's stored hybrid scores (``annotation.selectors.hybrid.compute_hybrid_scores``):
    recomputed after each routing pass and when human labels change, read by the leaderboard, the API,
    ``campaign_scores`` and the export (never recomputed per request)."""

    campaign = models.OneToOneField("annotation.Campaign", on_delete=models.CASCADE, related_name="hybrid_score")
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"hybrid scores of {self.campaign_id}"


class AgreementCache(models.Model):
    """Figures of a campaign's crowd agreement as last computed with ``n_boot`` bootstrap draws, and the stamp of
    the data they were computed from.  ``kind``: the scores' agreement (``annotation.selectors.scores.agreement``:
    written by every score update with the system scores, ``annotation.services.scores.refresh_figures``, and read
    as stored; its row is also the lock every writer of the figures takes first), the agreement dashboard's
    figures, or the verifiers' agreement (``annotation.selectors.agreement``: read until the stamp changes)."""

    class Kind(models.TextChoices):
        SCORES = "scores", "scores' agreement"
        DASHBOARD = "dashboard", "agreement dashboard"
        VERIFICATION = "verification", "verifiers' agreement"

    campaign = models.ForeignKey("annotation.Campaign", on_delete=models.CASCADE, related_name="agreement_caches")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.SCORES)
    n_boot = models.PositiveIntegerField()
    stamp = models.JSONField(default=list)
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "kind", "n_boot"], name="agreement_cache_once_per_kind_and_draws")]
