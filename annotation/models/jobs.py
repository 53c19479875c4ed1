"""Long work tracked for the researcher pages, and the log of researchers' corrections.

``Job`` records one piece of long work (an import, a full recomputation, an
export) run as a Celery task: its state, how far it got (``done`` of
``total`` steps) and where its result is.  The page that started it polls
``/campaigns/jobs/<id>/status/`` to draw a progress bar.

``QAPairCorrection`` keeps who changed which QA pair, from what to what, and
why: a researcher's correction never silently replaces a worker's words.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Job(models.Model):
    """One long-running piece of work and its progress."""

    class Kind(models.TextChoices):
        IMPORT = "import", "Campaign import"
        RECOMPUTE = "recompute", "Recompute gold labels and scores"
        EXPORT = "export", "Export"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    campaign = models.ForeignKey(
        "annotation.Campaign", null=True, blank=True, on_delete=models.CASCADE, related_name="jobs"
    )
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=500, blank=True)
    # What the task needs to run (e.g. the upload to import), JSON-ready.
    params = models.JSONField(default=dict, blank=True)
    # Problems of a failed import, one line each (file, line, field: message).
    problems = models.JSONField(default=list, blank=True)
    result_path = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(done__lte=F("total")) | Q(total=0), name="job_done_le_total"),
        ]

    @property
    def percent(self) -> int:
        if self.state == self.State.DONE:
            return 100
        return round(100 * self.done / self.total) if self.total else 0

    @property
    def finished(self) -> bool:
        return self.state in (self.State.DONE, self.State.FAILED)

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.state})"


class QAPairCorrection(models.Model):
    """A researcher's correction of a QA pair: the old and new wording, who and why."""

    unit = models.ForeignKey("annotation.ContentUnit", on_delete=models.CASCADE, related_name="corrections")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    old_question = models.CharField(max_length=300, blank=True)
    old_answers = models.JSONField(default=list, blank=True)
    new_question = models.CharField(max_length=300, blank=True)
    new_answers = models.JSONField(default=list, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "QA pair correction"
