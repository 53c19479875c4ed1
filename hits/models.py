"""Crowdsourcing machinery, protocol-agnostic.

This app knows workers, task types, batches, HITs and assignments.  It never
imports ``annotation``: a HIT carries a payload and a task type, and a
submitted assignment carries answers.  What a task type *means* (its page,
how answers are validated, what a submission sets in motion) is supplied by
a handler registered in ``hits.handlers``.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q


def _new_token() -> str:
    import secrets

    return secrets.token_urlsafe(24)


class Worker(models.Model):
    """A person who does HITs, on the platform's own pages or through MTurk.

    ``external_id`` is the platform identity shown in reports and exports
    (for imported annotations, the id the data set used).
    """

    external_id = models.CharField(max_length=128, unique=True)
    mturk_worker_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    # The participant's Prolific id (PROLIFIC_PID), for one who came from a Prolific study.
    prolific_pid = models.CharField(max_length=64, unique=True, null=True, blank=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="worker"
    )
    blocked = models.BooleanField(default=False)
    blocked_reason = models.CharField(max_length=500, blank=True)
    # Off by default: a HIT accepted for a worker who has stopped would sit reserved for them.
    auto_accept_next = models.BooleanField(
        default=False, help_text="After a submission, accept the next HIT of the same type straight away."
    )
    # Worked examples on HIT pages start collapsed once the worker has seen them.
    seen_instructions = models.JSONField(default=list, blank=True)
    # The link the worker signed up with (None for MTurk workers, imported ones and accounts made otherwise).
    invitation = models.ForeignKey(
        "Invitation", null=True, blank=True, on_delete=models.SET_NULL, related_name="registrations", editable=False
    )
    # The simulated crowd's workers (manage.py simulate_crowd): HITs, tests and gold checks of this batch only.
    only_batch = models.ForeignKey(
        "hits.Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="A simulated worker: the hand-out gives them work of this batch (campaign) only.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["external_id"]

    def __str__(self) -> str:
        return self.external_id


class TaskType(models.Model):
    """A kind of HIT; ``slug`` names the handler that renders and checks it."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    keywords = models.CharField(max_length=300, blank=True)
    assignment_duration = models.PositiveIntegerField(default=30 * 60, help_text="Seconds a worker may hold an assignment.")
    # Ordering of task types on the worker's home page.
    position = models.PositiveSmallIntegerField(default=0)
    # Qualification: when required, a worker must pass this type's qualification HITs first.
    requires_qualification = models.BooleanField(default=False)
    qualification_cooldown_hours = models.FloatField(default=24.0)
    qualification_max_attempts = models.PositiveSmallIntegerField(default=2)

    class Meta:
        ordering = ["position", "slug"]

    def __str__(self) -> str:
        return self.name


def new_batch_key() -> str:
    return uuid.uuid4().hex[:12]


class Batch(models.Model):
    """A group of HITs published together; ``reference`` names its owner (e.g. "campaign:12")."""

    class State(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        CANCELLED = "cancelled", "Cancelled"
        FINISHED = "finished", "Finished"

    class Backend(models.TextChoices):
        LOCAL = "local", "Local workers"
        MTURK_SANDBOX = "mturk-sandbox", "MTurk sandbox"
        MTURK_LIVE = "mturk-live", "MTurk (live)"
        PROLIFIC = "prolific", "Prolific"

    name = models.CharField(max_length=200)
    reference = models.CharField(max_length=200, unique=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.ACTIVE)
    # Where the HITs are offered: the platform's own pages, or Amazon Mechanical Turk (published by hits.mturk).
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.LOCAL)
    # In the batch's currency; publishing and bonuses stop before rewards + fees + bonuses committed would exceed it.
    budget_cap = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    # Chance that a worker's next HIT is a gold HIT (answers known), when one is left for them.
    gold_share = models.FloatField(default=0.0)
    # Random, part of the MTurk request tokens of the batch's HITs: after a database reset (ids start at 1
    # again), or on another installation sharing the account, a token can never name an older HIT.
    key = models.CharField(max_length=12, default=new_batch_key, editable=False)
    # The family of batches whose qualifications may count here (the owning app names it: e.g. one
    # researcher's campaigns of one protocol); they count only when ``accepts_group_qualifications``.
    qualification_group = models.CharField(max_length=100, blank=True)
    accepts_group_qualifications = models.BooleanField(default=False)
    # Retakes of this batch's qualification tests: after a cool-down, a limited number of times.
    qualification_cooldown_hours = models.FloatField(default=24.0)
    qualification_max_attempts = models.PositiveSmallIntegerField(default=2)
    # The times its MTurk HITs are created with (the campaign's settings at launch); None: the MTURK_* settings
    # (and each task type's ``assignment_duration``).
    mturk_assignment_duration = models.PositiveIntegerField(null=True, blank=True)
    mturk_hit_lifetime = models.PositiveIntegerField(null=True, blank=True)
    mturk_auto_approval_delay = models.PositiveIntegerField(null=True, blank=True)
    # On Prolific (the campaign's settings at launch): HITs per submission (None: from the task type's typical
    # time, ``hits.prolific.pricing``) and Prolific's service fee, for the budget cap and the cost figures.
    prolific_hits_per_submission = models.PositiveSmallIntegerField(null=True, blank=True)
    prolific_fee_rate = models.DecimalField(max_digits=5, decimal_places=4, default=Decimal("0.3333"))
    # The ISO code of the currency its money is in (``hits.markets.money``): "" until a Prolific batch's first publish
    # reads its workspace's (USD or GBP), then never changed; MTurk's is always USD.
    currency = models.CharField(max_length=3, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return self.name

    @property
    def on_mturk(self) -> bool:
        return self.backend in (self.Backend.MTURK_SANDBOX, self.Backend.MTURK_LIVE)

    @property
    def on_prolific(self) -> bool:
        return self.backend == self.Backend.PROLIFIC


class HIT(models.Model):
    """A unit of work offered to ``max_assignments`` different workers.

    ``n_taken`` counts the assignments that hold or used a place (assigned,
    submitted, approved, rejected); it changes only in the transaction that
    changes those assignments, so the database can refuse an over-filled HIT
    with a CHECK constraint (except a HIT published on MTurk: ``overbook``).
    """

    class State(models.TextChoices):
        OPEN = "open", "Open"
        # Set aside while its batch is paused (``hits.services.set_batch_state``): the hand-out's
        # queries for open HITs of a type then never count a paused campaign's.
        PAUSED = "paused", "Paused"
        COMPLETED = "completed", "Completed"
        CANCELLED = "cancelled", "Cancelled"

    # Not yet completed nor cancelled: work still to do (open now, or open again on resume).
    UNFINISHED_STATES = (State.OPEN, State.PAUSED)

    class Kind(models.TextChoices):
        REGULAR = "regular", "Regular"
        GOLD = "gold", "Gold check (answers known)"
        QUALIFICATION = "qualification", "Qualification test"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="hits")
    task_type = models.ForeignKey(TaskType, on_delete=models.PROTECT, related_name="hits")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.REGULAR)
    payload = models.JSONField(default=dict)
    # Known answers of gold and qualification HITs: never sent to a worker's page.
    answer_key = models.JSONField(null=True, blank=True)
    max_assignments = models.PositiveSmallIntegerField(default=1)
    reward = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.00"))
    state = models.CharField(max_length=12, choices=State.choices, default=State.OPEN)
    priority = models.IntegerField(default=0, help_text="Lower comes first.")
    n_taken = models.PositiveSmallIntegerField(default=0)
    n_submitted = models.PositiveSmallIntegerField(default=0)
    # Published on MTurk: MTurk hands out its places, and an arrival on the framed page cannot be told from a
    # made-up id before its work is submitted, so arrivals are never refused for want of a place here (made-up
    # ids would otherwise keep real workers out); ``n_taken`` may then pass ``max_assignments``, work counts only
    # once MTurk confirms it, and the HIT completes on ``max_assignments`` confirmed submissions as any other.
    overbook = models.BooleanField(default=False)
    # Why a crowd market refused to publish this HIT for a lasting reason (e.g. MTurk's RequestError on CreateHIT:
    # a parameter out of bounds), and when: the HIT waits, the rest of its batch is published, and the campaign's
    # progress page shows the error with a retry (which clears it).
    publish_error = models.TextField(blank=True)
    publish_error_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "HIT"
        indexes = [
            # The hand-out's queue, per campaign: every hand-out reads one campaign's open HITs of a type in
            # queue order, never walking past another campaign's (a campaign just paused leaves index entries
            # of HITs no longer open until vacuum; with the batch after the state, they are never visited).
            models.Index(fields=["task_type", "state", "batch", "priority", "id"], name="hit_campaign_queue"),
            # Which batches test a task type (asked on every hand-out): few rows, never the whole queue.
            models.Index(fields=["task_type", "kind", "state", "batch"], name="hit_kind_batch"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(n_taken__lte=F("max_assignments")) | Q(overbook=True), name="hit_not_overfilled"
            ),
            models.CheckConstraint(condition=Q(n_submitted__lte=F("n_taken")), name="hit_submitted_le_taken"),
            models.CheckConstraint(condition=Q(max_assignments__gte=1), name="hit_max_assignments_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.task_type.slug} HIT {self.pk}"


class HITExclusion(models.Model):
    """A worker who may not take a HIT (e.g. the writer of the questions to verify)."""

    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="exclusions")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name = "HIT exclusion"
        constraints = [models.UniqueConstraint(fields=["hit", "worker"], name="hit_exclusion_unique")]


class Assignment(models.Model):
    """One worker's take on one HIT."""

    class State(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        RETURNED = "returned", "Returned"
        EXPIRED = "expired", "Expired"
        # Answers stored, not counted yet: an MTurk submission waits until MTurk lists it as submitted by the
        # same worker (then "submitted"); one MTurk never confirms is "discarded" and its place freed.
        PENDING = "pending", "Awaiting MTurk's confirmation"
        DISCARDED = "discarded", "Discarded (MTurk never confirmed it)"

    # States that hold a place of the HIT.
    TAKING_STATES = (State.ASSIGNED, State.PENDING, State.SUBMITTED, State.APPROVED, State.REJECTED)
    DONE_STATES = (State.SUBMITTED, State.APPROVED, State.REJECTED)

    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments")
    # Only qualification HITs are taken again, on a later attempt at the test; regular HITs always have attempt 1.
    attempt = models.PositiveSmallIntegerField(default=1)
    state = models.CharField(max_length=12, choices=State.choices, default=State.ASSIGNED)
    token = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    answers = models.JSONField(null=True, blank=True)
    feedback = models.TextField(blank=True)
    accepted_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    work_seconds = models.PositiveIntegerField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_message = models.CharField(max_length=1000, blank=True)
    bonus = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.00"))
    paid = models.BooleanField(default=False)
    # Given back with "Skip" (to get another HIT) rather than "Return": the worker's history says which.
    skipped = models.BooleanField(default=False)
    # Taken from MTurk's frame on a HIT published there (``HIT.overbook``): one such assignment per MTurk
    # assignment id, so a worker may hold several of one HIT (a made-up id must not lock the real one out);
    # the sync confirms the one MTurk lists for the worker and discards the others.
    overbook = models.BooleanField(default=False)

    class Meta:
        ordering = ["-accepted_at"]
        indexes = [
            models.Index(fields=["state", "expires_at"], name="assignment_expiry"),
            models.Index(fields=["worker", "state"], name="assignment_worker_state"),
        ]
        constraints = [
            # Only places held count: a test item returned or expired may be taken again in the same attempt.
            # Not for MTurk arrivals on a HIT published there (``overbook``): one per MTurk assignment id.
            models.UniqueConstraint(
                fields=["hit", "worker", "attempt"],
                condition=Q(state__in=["assigned", "pending", "submitted", "approved", "rejected"], overbook=False),
                name="assignment_one_per_worker_and_hit",
            ),
            # Work that counts (confirmed, for MTurk): once per worker and HIT, whatever the backend.
            models.UniqueConstraint(
                fields=["hit", "worker", "attempt"],
                condition=Q(state__in=["submitted", "approved", "rejected"]),
                name="assignment_work_once_per_worker_and_hit",
            ),
            models.CheckConstraint(
                condition=Q(submitted_at__isnull=True) | Q(state__in=["submitted", "approved", "rejected", "pending", "discarded"]),
                name="assignment_submitted_state",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} of {self.hit} by {self.worker}"


class Draw(models.Model):
    """The HIT drawn for a worker's next HIT of a task type (``hits.services``), kept until ``expires_at``.

    Previewing shows it and "Start" takes it, whatever HIT the page posts: the gold draw is made once per HIT
    taken, never again on each preview.  ``passed_hit_id`` is the HIT the worker last gave back (skip or
    return): the next draw moves on to another HIT when there is one.
    """

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="+")
    task_type = models.ForeignKey(TaskType, on_delete=models.CASCADE, related_name="+")
    hit = models.ForeignKey(HIT, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    passed_hit_id = models.BigIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "task_type"], name="draw_one_per_worker_and_type")]


class BatchChoice(models.Model):
    """A worker chose a batch (a campaign): signed up through its invitation, or started work from it.

    A batch's qualification test is offered only to workers who chose the batch (``hits.qualifications``).
    """

    class How(models.TextChoices):
        INVITATION = "invitation", "Signed up through its invitation"
        START = "start", "Started work from it"
        WORK = "work", "Worked on it before choices were recorded"

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="batch_choices")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="choices")
    how = models.CharField(max_length=12, choices=How.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "batch"], name="batch_choice_unique")]


class LastServed(models.Model):
    """When a batch (a campaign) last handed a worker a HIT of a type: the fair order's "served longest ago".

    Written by the hand-out with every assignment it creates (one row per worker, batch and task type, updated in
    the same statement), read by key, so the fair order costs the same for a worker with a thousand HITs behind
    them as for a new one (``hits.handout.campaign_order``).  Migration 0032 filled it from the assignments
    that existed before.  An MTurk submission the HIT page never saw (``hits.mturk.sync.book_unknown_paid``)
    writes none: it was no hand-out of the platform's.
    """

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="+")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="+")
    task_type = models.ForeignKey(TaskType, on_delete=models.CASCADE, related_name="+")
    served_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "batch", "task_type"], name="last_served_unique")]


class Invitation(models.Model):
    """A sign-up link for new workers; limited in uses and time, optionally for one batch (a campaign)."""

    token = models.CharField(max_length=64, unique=True, default=_new_token)
    note = models.CharField(max_length=200, blank=True)
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.CASCADE, related_name="invitations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    max_uses = models.PositiveIntegerField(default=100)
    uses = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.CheckConstraint(condition=Q(uses__lte=F("max_uses")), name="invitation_uses_within_limit")]

    def clean(self):
        # The database's check, said as a form error: the admin form does not validate read-only ``uses``.
        if self.max_uses is not None and self.max_uses < max(1, self.uses):
            from django.core.exceptions import ValidationError

            raise ValidationError({"max_uses": f"At least {max(1, self.uses)}: the link has been used {self.uses} time(s)."})

    def usable(self, now) -> bool:
        return (
            self.revoked_at is None and self.uses < self.max_uses and (self.expires_at is None or self.expires_at > now)
        )

    def __str__(self) -> str:
        return self.note or self.token[:8]


class Qualification(models.Model):
    """A worker's standing for one task type in one batch (a campaign): its test, grading and revocation."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending (test not finished)"
        QUALIFIED = "qualified", "Qualified"
        FAILED = "failed", "Failed the test"
        REVIEW = "review", "Test awaiting a researcher's review"
        REVOKED = "revoked", "Revoked"

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualifications")
    task_type = models.ForeignKey(TaskType, on_delete=models.CASCADE, related_name="qualifications")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="qualifications")
    state = models.CharField(max_length=12, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Tests finished so far.")
    score = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["worker", "task_type", "batch"], name="qualification_unique")]

    def __str__(self) -> str:
        return f"{self.worker} / {self.task_type.slug} / {self.batch}: {self.state}"


class BatchBlock(models.Model):
    """A worker kept out of one batch (a campaign) by its researcher; platform-wide blocks are ``Worker.blocked``."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="blocks")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="batch_blocks")
    reason = models.CharField(max_length=500, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch", "worker"], name="batch_block_unique")]

    def __str__(self) -> str:
        return f"{self.worker} blocked from {self.batch}"


class QualificationEvent(models.Model):
    """The log of every decision about a worker: who or what made it, and why."""

    class Action(models.TextChoices):
        GRANT = "grant", "Qualified"
        FAIL = "fail", "Failed the test"
        REVIEW = "review", "Sent to review"
        REVOKE = "revoke", "Qualification revoked"
        REINSTATE = "reinstate", "Reinstated"
        BLOCK = "block", "Blocked"
        UNBLOCK = "unblock", "Unblocked"
        EXCLUDE = "exclude", "Work excluded from gold"
        INCLUDE = "include", "Work counted again"

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualification_events")
    task_type = models.ForeignKey(TaskType, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # The batch (campaign) the decision is about; none for a platform-wide block by an admin.
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=12, choices=Action.choices)
    reason = models.CharField(max_length=500, blank=True)
    figures = models.JSONField(default=dict, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    automatic = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


class FollowUp(models.Model):
    """A Celery task that could not be handed to the broker yet (e.g. Redis down).

    Work that follows a committed submission must not be lost, nor fail the
    worker's request: it waits here until ``hits.outbox.flush`` sends it.
    """

    task_name = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    error = models.CharField(max_length=500, blank=True)
    attempts = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        verbose_name = "follow-up"


class ScheduledRun(models.Model):
    """When a Celery beat task (``CELERY_BEAT_SCHEDULE``) last started: the guard that lets a second beat duplicate
    nothing (``hits.schedule``).  The time is the database's clock, the same for every host."""

    task_name = models.CharField(max_length=200, primary_key=True)
    started_at = models.DateTimeField()

    class Meta:
        verbose_name = "scheduled run"


class LedgerEntry(models.Model):
    """Money: every reward, bonus and crowd-platform fee, one row each.

    ``owed``: recorded for a local worker (paid outside the platform);
    ``pending``: to be paid through MTurk by the next sync; ``paid``: MTurk
    confirmed the call; ``refused``: a bonus MTurk can never pay (e.g. its
    assignment's HIT was deleted), its records showing it unpaid: no money
    moved, ``error`` says why, and it counts nowhere (neither owed nor spent).  A reward and its fee are recorded once per
    assignment (unique constraint); each bonus carries its own
    ``request_token``, which is MTurk's ``UniqueRequestToken`` so a retried
    SendBonus never pays twice.
    """

    class Kind(models.TextChoices):
        REWARD = "reward", "Reward"
        BONUS = "bonus", "Bonus"
        FEE = "fee", "Platform fee"

    class State(models.TextChoices):
        OWED = "owed", "Owed (paid outside the platform)"
        PENDING = "pending", "Pending (MTurk call to make)"
        PAID = "paid", "Paid"
        REFUSED = "refused", "Refused for good by the market (not paid)"

    batch = models.ForeignKey(Batch, on_delete=models.PROTECT, related_name="ledger")
    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="ledger")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="ledger")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # For a fee: the entry it is charged on.
    fee_for = models.OneToOneField("self", null=True, blank=True, on_delete=models.PROTECT, related_name="fee")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    state = models.CharField(max_length=8, choices=State.choices)
    reason = models.CharField(max_length=1000, blank=True)
    request_token = models.CharField(max_length=64, unique=True)
    error = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    # Who marked a local worker's money paid (outside the platform), and their note (e.g. a transfer's
    # reference); MTurk's payments are settled by the sync and carry neither.
    settled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    settlement_note = models.CharField(max_length=200, blank=True)
    # MTurk approved (and so paid) the work on its own, before or without the platform's review: its automatic
    # approval, or a submission that never came through the HIT page.  Flagged for the researcher (payout page).
    paid_by_mturk = models.BooleanField(default=False)

    class Meta:
        ordering = ["pk"]
        verbose_name_plural = "ledger entries"
        constraints = [
            models.UniqueConstraint(
                fields=["assignment"], condition=Q(kind="reward"), name="ledger_one_reward_per_assignment"
            ),
            models.CheckConstraint(condition=Q(amount__gte=0), name="ledger_amount_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} ${self.amount} to {self.worker} ({self.state})"



class BudgetReservation(models.Model):
    """Money held against a batch's budget cap for a market call in flight (``hits.budget``).

    Recorded, under the batch's row lock, before the call that commits the money (a HIT's places, more places,
    a study or its places) is sent.  ``held`` counts as committed; ``settled``: the market's own records now
    count it (a published HIT, a study's places), so the reservation no longer does; ``released``: the call
    failed for good, nothing was committed.  A call whose answer was lost stays ``held`` until the market's
    records settle it.  ``key`` names the call (its request token), so a retry reuses its reservation."""

    class State(models.TextChoices):
        HELD = "held", "Held (market call in flight)"
        SETTLED = "settled", "Settled (counted by the market's records)"
        RELEASED = "released", "Released (the call failed for good)"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="reservations")
    key = models.CharField(max_length=100, unique=True)
    what = models.CharField(max_length=200)
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    state = models.CharField(max_length=8, choices=State.choices, default=State.HELD)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(amount__gte=0), name="reservation_amount_not_negative")]

    def __str__(self) -> str:
        return f"${self.amount} {self.state} for {self.what}"


class WorkerMessage(models.Model):
    """A message a researcher sent to workers of a campaign (its batch), through the batch's market
    (``hits.messaging``).  Recorded before anything is sent: each recipient's delivery is a ``MessageRecipient``."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="worker_messages")
    sender = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    sender_name = models.CharField(max_length=150)  # kept when the account is deleted
    market = models.CharField(max_length=10)  # "local", "mturk", "prolific": who carried it
    subject = models.CharField(max_length=200)
    body = models.TextField()
    # The sender's own key (form or API): the same key again is the same message, never a second one.
    key = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)  # when the last send attempt ended

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.subject} ({self.market}, {self.created_at:%Y-%m-%d %H:%M})"


class MessageRecipient(models.Model):
    """One worker's copy of a ``WorkerMessage``: its delivery by the market, and on the platform's pages, whether
    the worker has read it."""

    class Status(models.TextChoices):
        PENDING = "pending", "Not sent yet"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        FAILED = "failed", "Not delivered"
        UNKNOWN = "unknown", "Unknown (no answer from the market)"

    message = models.ForeignKey(WorkerMessage, on_delete=models.CASCADE, related_name="recipients")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="messages")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    code = models.CharField(max_length=64, blank=True)  # the market's failure code (e.g. MTurk's HardFailure)
    detail = models.CharField(max_length=500, blank=True)  # why it failed, or how it went (e-mail or not)
    emailed = models.BooleanField(default=False)
    read_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "worker"], name="message_recipient_once")]
        indexes = [models.Index(fields=["worker", "read_at"], name="message_recipient_unread")]

    def __str__(self) -> str:
        return f"{self.worker} {self.status}"


# The markets' own records (MTurk's published HITs, Prolific's studies and sessions, ...) live in their packages;
# the seam loads them (and holds ``Reconciliation``), so Django finds them with the app's models.
from hits.markets import models as market_models  # noqa: E402,F401
