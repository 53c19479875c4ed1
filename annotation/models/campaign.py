"""A campaign: one evaluation study, its settings (defaulting to the paper's values) and its state."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from hits.mturk.limits import ASSIGNMENT_DURATION, AUTO_APPROVAL_DELAY, LIFETIME, bound_validators


# Bounds of the settings: what the protocol and one HIT page can carry.  The protocol's writer enters up
# to 5 questions with up to 3 answers each (the paper's page); a generation page of 300 x 300 inputs
# took 51 s to render.  More than 10 workers per HIT doubles MTurk's fee and buys no agreement the
# protocol asks for (1 writer, 2 verifiers, 3 judges).
PROTOCOL_MAX_QUESTIONS = 5
PROTOCOL_MAX_ANSWERS = 3
MAX_WORKERS_PER_HIT = 10
REWARD_BOUNDS = [MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal("100.00"))]


def settings_problems(values) -> dict[str, str]:
    """Problems of a combination of settings (each field's own bounds are its validators); ``values``
    maps field names to values, e.g. a campaign's ``__dict__``.  The settings page and the API both
    check through this."""
    problems = {}
    most = values.get("max_questions_per_predicate")
    if isinstance(most, int):
        if isinstance(values.get("min_kept_qas_per_predicate"), int) and values["min_kept_qas_per_predicate"] > most:
            problems["min_kept_qas_per_predicate"] = f"cannot be more than the questions a writer may enter ({most})"
        wanted = values.get("writer_min_questions_per_predicate")
        if isinstance(wanted, (int, float)) and wanted > most:
            problems["writer_min_questions_per_predicate"] = f"cannot be more than the questions a writer may enter ({most})"
    return problems


# Paths under /campaigns/ that are pages, not campaigns: refused as slugs by every way of creating one
# (the import, the web and API forms, and the admin through the field's validator).
RESERVED_SLUGS = frozenset({"new", "jobs"})
DESCRIPTION_MAX_CHARS = 5000


def validate_not_reserved(slug: str) -> None:
    if slug in RESERVED_SLUGS:
        raise ValidationError(f"'{slug}' is the address of a page: choose another slug")


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
        PROLIFIC = "prolific", "Prolific"

    class TieRule(models.TextChoices):
        ABSENT = "absent", "Tie counts as not present"
        PRESENT = "present", "Tie counts as present"
        EXCLUDE = "exclude", "Tied units are left out"

    class PresenceJudges(models.TextChoices):
        # The labels name no number: the figures with the campaign's judges are ``presence_judges_statement``.
        FIXED = "fixed", "All of them on every HIT (the paper)"
        ADAPTIVE = "adaptive", "Adaptive: the fewest that decide the majority, one more where they disagree"

    class RoutingRule(models.TextChoices):
        ACTIVE = "active", "Random draws with known probabilities, favouring the judge's unsure HITs (unbiased, 95% intervals)"
        UNCERTAINTY = "uncertainty", "The HITs the judge is least sure of (scores by the judge's label or probability; no valid interval)"

    class JudgeScoring(models.TextChoices):
        LABEL = "label", "Its label"
        PROBABILITY = "probability", "Its calibrated probability"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, unique=True, validators=[validate_not_reserved])
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="campaigns"
    )
    shared_with = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="shared_campaigns")
    description = models.TextField(blank=True, max_length=DESCRIPTION_MAX_CHARS)
    unit_type = models.CharField(max_length=8, choices=UnitType.choices, default=UnitType.QA)
    state = models.CharField(max_length=16, choices=State.choices, default=State.DRAFT)
    backend = models.CharField(max_length=16, choices=Backend.choices, default=Backend.LOCAL)
    batch = models.OneToOneField(
        "hits.Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="campaign"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    launched_at = models.DateTimeField(null=True, blank=True)

    # Redundancy per task type (protocol: 1 writer, 2 verifiers, 3 judges).
    assignments_generation = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_WORKERS_PER_HIT)])
    assignments_verification = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1), MaxValueValidator(MAX_WORKERS_PER_HIT)])
    assignments_presence = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1), MaxValueValidator(MAX_WORKERS_PER_HIT)])
    # Rewards in USD per HIT (paper: $0.32, $0.17, $0.20).
    reward_generation = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.32"), validators=REWARD_BOUNDS)
    reward_verification = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.17"), validators=REWARD_BOUNDS)
    reward_presence = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0.20"), validators=REWARD_BOUNDS)
    # Not in the paper: the least a worker should earn per hour of work (USD; 0 = no floor).  The worker
    # status page warns about every worker whose effective hourly pay is below it.
    hourly_pay_floor = models.DecimalField(
        max_digits=6, decimal_places=2, default=Decimal("12.00"), validators=[MinValueValidator(Decimal("0.00")), MaxValueValidator(Decimal("500.00"))],
        help_text="Effective hourly pay (earned / time worked) below which a worker is flagged on the worker status page.",
    )
    # The pilot (issue 40, ``annotation.services.pilot``): HITs per task type it offers (0: no pilot yet), when it
    # started and when it ended (stopped by the researcher, or by the launch).
    pilot_size = models.PositiveSmallIntegerField(default=0, editable=False)
    pilot_started_at = models.DateTimeField(null=True, blank=True, editable=False)
    pilot_ended_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Generation rules.
    max_questions_per_predicate = models.PositiveSmallIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(PROTOCOL_MAX_QUESTIONS)]
    )
    max_answers_per_question = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(PROTOCOL_MAX_ANSWERS)]
    )
    min_kept_qas_per_predicate = models.PositiveSmallIntegerField(default=2, validators=[MaxValueValidator(PROTOCOL_MAX_QUESTIONS)])
    max_redo_rounds = models.PositiveSmallIntegerField(default=2, validators=[MaxValueValidator(10)])
    review_duplicates = models.BooleanField(
        default=True,
        help_text="Hold an example whose kept QA pairs include near-duplicates until a researcher has reviewed them "
        "(merge or keep), before its presence HITs are created.",
    )
    # Quality control thresholds (strict: a worker must be *above* them).
    qualification_hits = models.PositiveSmallIntegerField(default=4, validators=[MinValueValidator(1), MaxValueValidator(20)])
    writer_valid_threshold = models.FloatField(
        default=0.85, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    writer_min_questions_per_predicate = models.FloatField(
        default=2.0, validators=[MinValueValidator(0.0), MaxValueValidator(PROTOCOL_MAX_QUESTIONS)]
    )
    verifier_agreement_threshold = models.FloatField(
        default=0.85, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    presence_accuracy_threshold = models.FloatField(
        default=0.90, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]
    )
    grace_period_items = models.PositiveIntegerField(default=20, validators=[MaxValueValidator(10_000)])
    qualification_cooldown_hours = models.FloatField(default=24.0, validators=[MinValueValidator(0.0), MaxValueValidator(24 * 365)])
    qualification_max_attempts = models.PositiveSmallIntegerField(default=2, validators=[MinValueValidator(1), MaxValueValidator(10)])
    gold_share = models.FloatField(default=0.1, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    # What the campaign's MTurk HITs are created with (empty: the platform's MTURK_* settings, and each task type's
    # own time per assignment), within MTurk's documented bounds (``hits.mturk.limits``).
    mturk_assignment_duration = models.PositiveIntegerField(
        null=True, blank=True, validators=bound_validators(ASSIGNMENT_DURATION),
        help_text="Seconds an MTurk worker may keep an assignment (AssignmentDurationInSeconds); empty: each task type's own.",
    )
    mturk_hit_lifetime = models.PositiveIntegerField(
        null=True, blank=True, validators=bound_validators(LIFETIME),
        help_text="Seconds a HIT stays on MTurk (LifetimeInSeconds); empty: MTURK_HIT_LIFETIME.",
    )
    mturk_auto_approval_delay = models.PositiveIntegerField(
        null=True, blank=True, validators=bound_validators(AUTO_APPROVAL_DELAY),
        help_text="Seconds after a submission when MTurk approves and pays it on its own (AutoApprovalDelayInSeconds); "
        "empty: MTURK_AUTO_APPROVAL_DELAY.",
    )
    # Prolific (issue 31): HITs in one participant's submission (empty: about 10-15 minutes of the task type's
    # typical time), and Prolific's service fee on rewards and bonuses (its published ~33.33%, VAT not included).
    prolific_hits_per_submission = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="HITs a Prolific participant does in one submission; empty: about 10-15 minutes of work.",
    )
    prolific_fee_rate = models.DecimalField(
        max_digits=5, decimal_places=4, default=Decimal("0.3333"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        help_text="Prolific's service fee as a share of rewards and bonuses (its published figure: 33.33%, plus VAT where it applies).",
    )
    # Aggregation and scoring.
    tie_rule = models.CharField(max_length=8, choices=TieRule.choices, default=TieRule.ABSENT)
    length_penalty_alpha = models.FloatField(default=6.0, validators=[MinValueValidator(0.01), MaxValueValidator(100.0)])
    # How many people judge a presence HIT (issue 29): the paper's fixed number, or two first and one more only
    # where they disagree (campaigns created before the setting existed keep the fixed rule).
    presence_judges = models.CharField(max_length=8, choices=PresenceJudges.choices, default=PresenceJudges.ADAPTIVE)
    # The share of presence HITs expected to need the third judge under the adaptive rule, for cost previews
    # (27.8% in the authors' released judgments).
    third_judge_rate = models.FloatField(
        default=0.278, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Expected share of presence HITs whose first two judges disagree (for cost previews).",
    )
    # Budgeted presence (issue 22): below 1, only the presence HITs the judge is least sure of go to people.
    human_presence_share = models.FloatField(
        default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Share of presence HITs judged by people (1 = every HIT, the paper's protocol).",
    )
    presence_judge = models.CharField(
        max_length=100, default="lexical", help_text="The automatic judge that labels the units people do not see."
    )
    active_rounds = models.BooleanField(
        default=True, help_text="Spend the human budget in rounds, retraining the judge on the human labels between them."
    )
    presence_rounds = models.PositiveSmallIntegerField(default=3, validators=[MinValueValidator(1), MaxValueValidator(10)])
    # What a unit the judge labelled (nobody judged it) counts as in scores (issue 32): its label, or its
    # probability calibrated on the campaign's human labels.  Human-judged units always count as their majority.
    judge_scoring = models.CharField(max_length=12, choices=JudgeScoring.choices, default=JudgeScoring.PROBABILITY)
    # How budgeted presence chooses the HITs people judge and estimates the scores (issue 37).  "active": each round
    # draws its HITs at random with known inclusion probabilities (a mix of uniform and the judge's uncertainty), and
    # the systems' scores are the AIPW estimate with design-based 95% intervals (``annotation.scoring.active``).
    # "uncertainty": the judge's least-sure HITs, scored under ``judge_scoring``, with no interval (none would hold).
    routing_rule = models.CharField(
        max_length=12, choices=RoutingRule.choices, default=RoutingRule.ACTIVE,
        help_text="How a budgeted campaign picks the presence HITs people judge, and so how its scores are estimated.",
    )
    # The last routing pass that failed (the judge could not be built or could not judge); cleared by the next
    # pass that works.  Shown on the progress page with a "retry" action; with a broker, retried with backoff.
    routing_error = models.TextField(blank=True, default="", editable=False)
    routing_error_at = models.DateTimeField(null=True, blank=True, editable=False)
    routing_failures = models.PositiveIntegerField(default=0, editable=False)

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
            models.CheckConstraint(
                condition=Q(human_presence_share__gte=0, human_presence_share__lte=1), name="campaign_human_share_is_share"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        from django.core.exceptions import ValidationError

        problems = settings_problems(self.__dict__)
        if problems:
            raise ValidationError(problems)

    @property
    def adaptive_presence(self) -> bool:
        """A presence HIT is posted for the fewest judges that can decide its majority, one more added at a time
        while some unit of it is undecided (issue 29; ``annotation.services.presence_judges``)."""
        return self.presence_judges == self.PresenceJudges.ADAPTIVE

    @property
    def initial_presence_assignments(self) -> int:
        """Places a presence HIT is posted with: ``assignments_presence`` under the fixed rule; under the adaptive
        rule the smallest number that can decide a majority of ``assignments_presence`` (2 of 3, 3 of 4 or 5)."""
        n = self.assignments_presence
        return n // 2 + 1 if self.adaptive_presence else n

    @property
    def presence_judges_statement(self) -> str:
        """The judges of a presence HIT in words, the one statement every page gives (settings, cost preview,
        progress, agreement): "3 judges on every presence HIT" or "2 judges on every presence HIT, one more at a
        time where they disagree (at most 3)"."""
        first, n = self.initial_presence_assignments, self.assignments_presence
        judges = f"{first} judge{'s' if first != 1 else ''} on every presence HIT"
        if first >= n:
            return judges
        return f"{judges}, one more at a time where they disagree (at most {n})"

    @property
    def expected_presence_assignments(self) -> float:
        """Judgments expected per presence HIT: ``assignments_presence`` under the fixed rule; under the adaptive
        rule the first judges plus the rest at ``third_judge_rate`` (exact in expectation for 3 judges: 2 + rate)."""
        first = self.initial_presence_assignments
        return first + self.third_judge_rate * (self.assignments_presence - first)

    @property
    def is_hybrid(self) -> bool:
        """People judge only part of the presence HITs; the judge labels the rest."""
        return self.human_presence_share < 1.0

    @property
    def pilot_running(self) -> bool:
        """A pilot is handing out HITs (started, not ended)."""
        return self.pilot_started_at is not None and self.pilot_ended_at is None

    @property
    def n_presence_rounds(self) -> int:
        return self.presence_rounds if self.active_rounds else 1
