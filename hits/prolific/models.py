"""What the Prolific backend remembers: its studies, participants' sessions, bulk bonuses and groups."""

from __future__ import annotations

from decimal import Decimal

from django.db import models


class ProlificStudy(models.Model):
    """A Prolific study: one per batch and task type (``main``), and one screening study per tested task type.

    ``internal_name`` is chosen here before the create call is sent: after a lost reply the study is found
    again by it in Prolific's list of studies, so a retried publish never creates a second one."""

    class Kind(models.TextChoices):
        MAIN = "main", "Main study"
        SCREENING = "screening", "Screening study (qualification test)"

    batch = models.ForeignKey("hits.Batch", on_delete=models.CASCADE, related_name="prolific_studies")
    task_type = models.ForeignKey("hits.TaskType", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MAIN)
    internal_name = models.CharField(max_length=200, unique=True)
    # Prolific's id, once its create call answered (or its list showed the study).
    prolific_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    completion_code = models.CharField(max_length=32)
    # Prolific's status as last seen (UNPUBLISHED, SCHEDULED, ACTIVE, AWAITING REVIEW, PAUSED, COMPLETED).
    status = models.CharField(max_length=20, blank=True)
    # What Prolific was told: the base reward per submission (the batch's currency), places, HITs per submission, minutes.
    reward = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0.00"))
    places = models.PositiveIntegerField(default=0)
    hits_per_submission = models.PositiveSmallIntegerField(default=1)
    estimated_minutes = models.PositiveIntegerField(default=1)
    # What Prolific states it charges on one submission's reward, fees and VAT together, and the VAT in it (its study
    # cost calculator for one place, ``hits.prolific.money.place_charges``); None until read.
    place_fee = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    place_vat = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "Prolific study"
        verbose_name_plural = "Prolific studies"
        constraints = [
            models.UniqueConstraint(fields=["batch", "task_type", "kind"], name="prolific_study_per_batch_task_kind"),
        ]

    def __str__(self) -> str:
        return f"Prolific study {self.prolific_id or '(not created)'} ({self.internal_name})"


class ProlificSession(models.Model):
    """One participant's submission to a study: the session of HITs they do between arriving from Prolific
    (``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``) and being sent back with the completion code.

    Work done in a session is pending until the sync sees Prolific list a submission with this session id for
    this participant and study (anyone can open the study URL with made-up ids)."""

    class State(models.TextChoices):
        ACTIVE = "active", "Working"
        COMPLETED = "completed", "Sent back with the completion code"
        RETURNED = "returned", "Returned on Prolific"
        TIMED_OUT = "timed_out", "Timed out on Prolific"
        DISCARDED = "discarded", "Not a real Prolific submission (nothing counted)"

    study = models.ForeignKey(ProlificStudy, on_delete=models.CASCADE, related_name="sessions")
    participant_id = models.CharField(max_length=64)
    # Prolific's SESSION_ID: the id of the participant's submission.
    session_id = models.CharField(max_length=64)
    worker = models.ForeignKey("hits.Worker", on_delete=models.PROTECT, related_name="prolific_sessions")
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    # Prolific's submission status as last seen ("" before the first sync that lists it).
    market_status = models.CharField(max_length=24, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    hits_done = models.PositiveSmallIntegerField(default=0)
    # HITs the session's reward pays for, reserved when it started (``hits.prolific.sessions.reserve``): the study's
    # ``hits_per_submission``, or fewer when no more work was open (it may take more as work appears).
    reserved_hits = models.PositiveSmallIntegerField(default=0)
    # The one browser that works in the session (``hits.prolific.holding``): the SHA-256 of its browser cookie
    # ("" until a browser first opens the study link), the one-time code that moves the session to another
    # browser (shown on the holding browser's HIT pages) and the wrong codes tried since that code was made.
    browser = models.CharField(max_length=64, blank=True)
    move_code = models.CharField(max_length=16, blank=True)
    move_failures = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The review decision sent to Prolific for the submission (APPROVE / REJECT) and when it was answered.
    decision = models.CharField(max_length=10, blank=True)
    # Prolific's rejection category, chosen by the researcher when rejecting this session's HITs: sent with
    # REJECT when every HIT of the session is rejected (Prolific requires one).
    rejection_category = models.CharField(max_length=24, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "Prolific session"
        constraints = [
            # Prolific gives a participant one submission per study.  A discarded session (made-up or mismatched
            # ids) holds neither its SESSION_ID nor its participant's place: the real participant may still come.
            models.UniqueConstraint(fields=["study", "participant_id"], condition=~models.Q(state="discarded"),
                                    name="prolific_one_session_per_participant"),
            models.UniqueConstraint(fields=["session_id"], condition=~models.Q(state="discarded"),
                                    name="prolific_session_id_once"),
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} of {self.participant_id}"


class ProlificBonus(models.Model):
    """One bulk bonus payment: created on Prolific, then paid (a second call, which is not idempotent).

    ``state`` moves forward only: ``recorded`` (the CSV is fixed here before the create call), ``creating``
    (one sync claimed the create call; back to ``recorded`` only when that sync died: creating pays nothing),
    ``created`` (Prolific answered with its id), ``paying`` (the pay call is recorded, then sent once),
    ``paid`` (Prolific answered, or its records show the payment), ``unknown`` (the pay reply was lost: the
    next sync reads Prolific's records and never sends the pay call again), ``failed``."""

    class State(models.TextChoices):
        RECORDED = "recorded", "Recorded (create call to send)"
        CREATING = "creating", "Create call claimed by one sync (in flight)"
        CREATED = "created", "Created on Prolific (pay call to send)"
        PAYING = "paying", "Pay call recorded before sending"
        UNKNOWN = "unknown", "Pay reply lost (Prolific's records to read)"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"

    batch = models.ForeignKey("hits.Batch", on_delete=models.PROTECT, related_name="prolific_bonuses")
    study = models.ForeignKey(ProlificStudy, on_delete=models.PROTECT, related_name="bonuses")
    prolific_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    # Exactly the "participant id,amount" lines sent to Prolific.
    csv_bonuses = models.TextField()
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    # As Prolific's create answer states them: its fees with the VAT on them (``total_amount`` - ``amount``), and
    # that VAT; None before the answer (or an answer without them).
    fees = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    vat = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.RECORDED)
    entries = models.ManyToManyField("hits.LedgerEntry", blank=True, related_name="prolific_bonuses")
    created_at = models.DateTimeField(auto_now_add=True)
    # When one sync claimed the create call (``creating``): a claim older than a while is a dead process's.
    create_claimed_at = models.DateTimeField(null=True, blank=True)
    pay_recorded_at = models.DateTimeField(null=True, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "Prolific bulk bonus"
        verbose_name_plural = "Prolific bulk bonuses"

    def __str__(self) -> str:
        from hits.markets.money import money

        return f"bulk bonus {self.prolific_id or '(not created)'} {money(self.amount, self.batch)} ({self.state})"


class ProlificParticipantGroup(models.Model):
    """A participant group on Prolific used as a study filter: those who passed a campaign's screening test
    for a task type (allowlist), or those its researcher blocked (blocklist, ``task_type`` empty)."""

    class Kind(models.TextChoices):
        QUALIFIED = "qualified", "Passed the screening test (allowlist)"
        BLOCKED = "blocked", "Blocked by the researcher (blocklist)"

    batch = models.ForeignKey("hits.Batch", on_delete=models.CASCADE, related_name="prolific_groups")
    task_type = models.ForeignKey("hits.TaskType", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=200, unique=True)
    prolific_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "Prolific participant group"
        constraints = [
            models.UniqueConstraint(fields=["batch", "task_type", "kind"], name="prolific_group_per_batch_task_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} group {self.prolific_id or '(not created)'} ({self.name})"


class ProlificGroupMember(models.Model):
    """A participant the platform wants in a group; ``added_at`` once Prolific confirmed the addition."""

    group = models.ForeignKey(ProlificParticipantGroup, on_delete=models.CASCADE, related_name="members")
    participant_id = models.CharField(max_length=64)
    wanted_at = models.DateTimeField(auto_now_add=True)
    added_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "participant_id"], name="prolific_group_member_once"),
        ]


class ProlificStranger(models.Model):
    """A submission Prolific lists in one of the platform's studies with no session here: its participant never
    worked on the platform's pages (a leaked completion code).  Left alone, Prolific would approve it after its
    review period and pay a reward no ledger entry stands for: the sync rejects it once it has awaited review
    ``PROLIFIC_CONFIRM_GRACE`` seconds since first seen (``hits.prolific.sync.reject_strangers``)."""

    study = models.ForeignKey(ProlificStudy, on_delete=models.CASCADE, related_name="strangers")
    submission_id = models.CharField(max_length=64, unique=True)
    participant_id = models.CharField(max_length=64)
    # Prolific's status as last listed.
    market_status = models.CharField(max_length=24, blank=True)
    first_seen_at = models.DateTimeField()
    # When it was first listed as AWAITING REVIEW (the grace counts from then).
    awaiting_since = models.DateTimeField(null=True, blank=True)
    rejected_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "Prolific submission with no session here"

    def __str__(self) -> str:
        return f"submission {self.submission_id} of {self.participant_id} with no session here ({self.market_status})"
