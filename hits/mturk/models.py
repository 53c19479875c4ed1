"""What the MTurk backend remembers about the HITs, assignments and qualification types it created."""

from __future__ import annotations

from django.db import models


class MTurkHIT(models.Model):
    """A local HIT published on MTurk (one MTurk HIT per local HIT).

    ``request_token`` is the ``UniqueRequestToken`` of the CreateHIT call,
    derived from the local HIT id: a publish that is interrupted and run
    again cannot create a second MTurk HIT for the same local HIT.
    """

    hit = models.OneToOneField("hits.HIT", on_delete=models.CASCADE, related_name="mturk")
    sandbox = models.BooleanField()
    mturk_hit_id = models.CharField(max_length=64, unique=True)
    hit_type_id = models.CharField(max_length=64, blank=True)
    request_token = models.CharField(max_length=64, unique=True)
    # What MTurk was told (may differ from the local HIT, e.g. gold HITs: see README).
    max_assignments = models.PositiveIntegerField()
    reward = models.DecimalField(max_digits=6, decimal_places=2)
    published_at = models.DateTimeField(auto_now_add=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    # UpdateExpirationForHIT calls with a past time made so far: each uses its own past time, since MTurk
    # refuses the same (HIT, ExpireAt) twice.
    expiry_calls = models.PositiveIntegerField(default=0)
    # The last MTurk call about this HIT that failed (kept until one succeeds), and how many failed in a row.
    last_error = models.TextField(blank=True)
    failures = models.PositiveIntegerField(default=0)
    # MTurk no longer has the HIT (deleted, e.g. 120 days after creation): the sync leaves it alone.
    gone_at = models.DateTimeField(null=True, blank=True)
    # Places MTurk gave to submissions that never reached our page (rejected by the sync): MTurk does not
    # offer them again, so the HIT is given as many more (CreateAdditionalAssignmentsForHIT).
    lost_places = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "MTurk HIT"

    def __str__(self) -> str:
        return f"MTurk HIT {self.mturk_hit_id} (local {self.hit_id})"

    def save(self, *args, **kwargs):
        adding = self._state.adding
        super().save(*args, **kwargs)
        if adding:
            # From now on MTurk hands out the HIT's places: an arrival is never refused for want of one here
            # (``HIT.overbook``), in the same transaction as the record of the publication.
            type(self.hit).objects.filter(pk=self.hit_id).update(overbook=True)
            self.hit.overbook = True


class MTurkAssignment(models.Model):
    """An MTurk assignment and the local assignment it became when the worker opened our page.

    ``status`` mirrors MTurk's AssignmentStatus as last seen ("" until the
    first sync): the sync compares it with the local state to know which
    ApproveAssignment / RejectAssignment calls are still to be made.
    """

    class Status(models.TextChoices):
        UNKNOWN = "", "Not yet seen by a sync"
        SUBMITTED = "Submitted", "Submitted"
        APPROVED = "Approved", "Approved"
        REJECTED = "Rejected", "Rejected"

    mturk_assignment_id = models.CharField(max_length=64, unique=True)
    mturk_hit = models.ForeignKey(MTurkHIT, on_delete=models.CASCADE, related_name="assignments")
    assignment = models.OneToOneField("hits.Assignment", on_delete=models.CASCADE, related_name="mturk")
    mturk_worker_id = models.CharField(max_length=64)
    # Where the page posts the finished assignment (validated against MTURK_SUBMIT_HOSTS).
    submit_to = models.URLField(max_length=300)
    status = models.CharField(max_length=12, choices=Status.choices, blank=True, default=Status.UNKNOWN)
    created_at = models.DateTimeField(auto_now_add=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "MTurk assignment"

    def __str__(self) -> str:
        return f"MTurk assignment {self.mturk_assignment_id}"


class MTurkUnknownSubmission(models.Model):
    """An assignment MTurk lists as submitted that our HIT page never stored: a worker posted straight to
    MTurk's ``externalSubmit`` (or forged the page).  MTurk would pay it automatically after the auto-approval
    delay; the sync rejects it first, with a message saying why, and the researcher sees it."""

    mturk_hit = models.ForeignKey(MTurkHIT, on_delete=models.CASCADE, related_name="unknown_submissions")
    mturk_assignment_id = models.CharField(max_length=64, unique=True)
    mturk_worker_id = models.CharField(max_length=64)
    status = models.CharField(max_length=12)
    submitted_at = models.DateTimeField(null=True, blank=True)
    seen_at = models.DateTimeField(auto_now_add=True)
    rejected_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    # What MTurk charged when it approved the submission before a rejection reached it (reward + fee).
    paid = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)

    class Meta:
        verbose_name = "MTurk submission not made through the HIT page"
        verbose_name_plural = "MTurk submissions not made through the HIT page"

    def __str__(self) -> str:
        return f"unknown MTurk assignment {self.mturk_assignment_id}"


class MTurkQualificationType(models.Model):
    """The MTurk qualification type of one task type in one batch (a campaign), created once per requester
    account (sandbox or live): a revocation or block in one campaign never touches another's HITs.

    Rows without a batch are the per-task-type types made before qualification became per campaign (migration
    0009): HITs published then still require them, so the mirror keeps granting them (never revoking: that
    would shut the worker out of every campaign of the type; the HIT page still refuses a revoked worker).
    """

    task_type = models.ForeignKey("hits.TaskType", on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey("hits.Batch", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    sandbox = models.BooleanField()
    qualification_type_id = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "MTurk qualification type"
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "task_type", "sandbox"], name="mturk_qualification_type_per_batch_unique"
            ),
            models.UniqueConstraint(
                fields=["task_type", "sandbox"],
                condition=models.Q(batch__isnull=True),
                name="mturk_qualification_type_legacy_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({'sandbox' if self.sandbox else 'live'})"


class MTurkRequest(models.Model):
    """A call carrying a ``UniqueRequestToken`` (CreateHIT, SendBonus, CreateAdditionalAssignmentsForHIT),
    recorded before it is first sent (issue 30).

    MTurk remembers a token for 24 hours only: a call re-sent later with the same token could act twice.  So
    a call whose token was first sent more than ``hits.mturk.tokens.TOKEN_MEMORY`` ago, or whose answer was
    ambiguous (lost reply, fault after the retries, a refusal of a token sent before), is never re-sent
    blind: MTurk's records are read first (``hits.mturk.tokens``), and the call is sent again, with a new
    token, only when they show the first did not go through.
    """

    # What the call is for, stable across new tokens (the CreateHIT token of a local HIT, a bonus entry's
    # ledger token, a HIT's extra-places token).
    key = models.CharField(max_length=64, unique=True)
    operation = models.CharField(max_length=64)
    # The UniqueRequestToken sent now: ``key`` at first, ``key`` with a suffix after each renewal.
    token = models.CharField(max_length=64)
    # When this token was first sent (None: not sent yet), and how many times the platform sent it.
    first_sent_at = models.DateTimeField(null=True, blank=True)
    sends = models.PositiveIntegerField(default=0)
    renewals = models.PositiveIntegerField(default=0)
    # How the call ended: "answered" (MTurk's reply), "found" (MTurk's records show it went through); "made":
    # MTurk said it was made (HitAlreadyExists) and its records have not shown what yet (never sent again).
    outcome = models.CharField(max_length=20, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "MTurk request with a token"

    def __str__(self) -> str:
        return f"{self.operation} {self.token}"
