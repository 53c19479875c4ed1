"""Serializers: the JSON shape of each resource (reads), and the validation of the few writes."""

from __future__ import annotations

import math
from decimal import Decimal

from django.conf import settings
from rest_framework import serializers

from annotation.models import (
    AutoscoreRun,
    Campaign,
    ContentUnit,
    Example,
    GoldPresence,
    Predicate,
    PresenceJudgment,
    ReferenceSentence,
    SummaryScore,
    System,
    SystemScore,
    SystemSummary,
    Verification,
)
from annotation.models import QAPairCorrection
from annotation.models.campaign import settings_problems
from annotation.services.campaign_import import DESCRIPTION_MAX_CHARS
from hits.models import Assignment, LedgerEntry
from hits.payments import bonus_too_large

# Campaign settings a researcher may change before launch (the paper's values are the defaults).
SETTINGS_FIELDS = [
    "assignments_generation",
    "assignments_verification",
    "assignments_presence",
    "reward_generation",
    "reward_verification",
    "reward_presence",
    "max_questions_per_predicate",
    "max_answers_per_question",
    "min_kept_qas_per_predicate",
    "max_redo_rounds",
    "review_duplicates",
    "qualification_hits",
    "writer_valid_threshold",
    "writer_min_questions_per_predicate",
    "verifier_agreement_threshold",
    "presence_accuracy_threshold",
    "grace_period_items",
    "qualification_cooldown_hours",
    "qualification_max_attempts",
    "gold_share",
    "tie_rule",
    "length_penalty_alpha",
    "hourly_pay_floor",
    "mturk_assignment_duration",
    "mturk_hit_lifetime",
    "mturk_auto_approval_delay",
    # Prolific (issue 31): HITs per participant's submission (empty: about 12 minutes of work), Prolific's fee.
    "prolific_hits_per_submission",
    "prolific_fee_rate",
    # Budgeted presence (issue 32): the human share, and what a unit only the judge labelled counts as.
    "human_presence_share",
    "judge_scoring",
    # Issue 37: how the HITs people judge are chosen ("active": random draws with known probabilities).
    "routing_rule",
    "presence_judges",
    "third_judge_rate",
]


class CampaignSerializer(serializers.ModelSerializer):
    """A campaign with its settings; only name, description, backend and settings are writable."""

    owner = serializers.CharField(source="owner.username", read_only=True, default=None, allow_null=True)
    shared_with = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)
    n_examples = serializers.SerializerMethodField()
    n_systems = serializers.SerializerMethodField()
    # MTurk's times: checked against MTurk's bounds with a message naming the bound (``hits.mturk.limits``).
    mturk_assignment_duration = serializers.IntegerField(required=False, allow_null=True)
    mturk_hit_lifetime = serializers.IntegerField(required=False, allow_null=True)
    mturk_auto_approval_delay = serializers.IntegerField(required=False, allow_null=True)

    def _within(self, bound, value):
        from hits.mturk.limits import out_of_bounds

        if out_of_bounds(bound, value):
            raise serializers.ValidationError(out_of_bounds(bound, value))
        return value

    def validate_mturk_assignment_duration(self, value):
        from hits.mturk.limits import ASSIGNMENT_DURATION

        return self._within(ASSIGNMENT_DURATION, value)

    def validate_mturk_hit_lifetime(self, value):
        from hits.mturk.limits import LIFETIME

        return self._within(LIFETIME, value)

    def validate_mturk_auto_approval_delay(self, value):
        from hits.mturk.limits import AUTO_APPROVAL_DELAY

        return self._within(AUTO_APPROVAL_DELAY, value)

    class Meta:
        model = Campaign
        fields = [
            "slug",
            "name",
            "description",
            "owner",
            "shared_with",
            "unit_type",
            "state",
            "backend",
            "created_at",
            "launched_at",
            "n_examples",
            "n_systems",
            *SETTINGS_FIELDS,
        ]
        read_only_fields = ["slug", "unit_type", "state", "created_at", "launched_at"]
        # Every setting's bounds are the model's validators, as on the settings page.
        extra_kwargs = {"description": {"max_length": DESCRIPTION_MAX_CHARS}}

    def validate(self, attrs):
        errors = {name: ["must be a finite number"] for name, value in attrs.items() if isinstance(value, float) and not math.isfinite(value)}
        if errors:
            raise serializers.ValidationError(errors)
        current = {name: getattr(self.instance, name) for name in SETTINGS_FIELDS} if self.instance is not None else {}
        problems = settings_problems({**current, **attrs})
        if problems:
            raise serializers.ValidationError({name: [message] for name, message in problems.items()})
        return attrs

    def get_n_examples(self, campaign) -> int:
        value = getattr(campaign, "n_examples", None)
        return value if value is not None else campaign.examples.count()

    def get_n_systems(self, campaign) -> int:
        value = getattr(campaign, "n_systems", None)
        return value if value is not None else campaign.systems.count()


class CampaignCreateSerializer(serializers.Serializer):
    """Upload of a new campaign: the same files and formats as ``manage.py import_campaign``."""

    name = serializers.CharField(max_length=200)
    slug = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=DESCRIPTION_MAX_CHARS)
    references = serializers.FileField(help_text="References: JSONL ({id, reference, source?}) or CSV/TSV.")
    summaries = serializers.FileField(help_text="System summaries: JSONL ({id, system, summary}) or CSV/TSV.")
    predicates = serializers.FileField(
        required=False, help_text="Optional predicates JSONL; without it predicates are found automatically."
    )
    detect_predicates = serializers.BooleanField(
        default=True, help_text="Find predicates automatically (ignored when a predicates file is given)."
    )


class ImportReportSerializer(serializers.Serializer):
    n_examples = serializers.IntegerField()
    n_sentences = serializers.IntegerField()
    n_predicates = serializers.IntegerField()
    n_systems = serializers.IntegerField()
    n_summaries = serializers.IntegerField()
    n_units = serializers.IntegerField()
    n_gold = serializers.IntegerField()
    seconds = serializers.FloatField()
    summary = serializers.CharField(source="summary_line")


class JobSerializer(serializers.Serializer):
    """A background job: its state, progress, and the problems of a failed import (one line each)."""

    id = serializers.IntegerField()
    kind = serializers.CharField()
    state = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.IntegerField()
    message = serializers.CharField(allow_blank=True)
    problems = serializers.ListField(child=serializers.CharField())
    finished = serializers.BooleanField()
    retryable = serializers.BooleanField(
        help_text="Failed because the file store was out of reach (inputs kept): ``POST`` to ``retry_url`` queues it again."
    )
    result_url = serializers.CharField(allow_blank=True)
    url = serializers.CharField()
    retry_url = serializers.CharField(allow_blank=True)
    download_url = serializers.CharField(
        allow_blank=True, help_text="A finished export's zip over the API (``GET``, token authentication); empty until then."
    )
    campaign = serializers.CharField(required=False, allow_null=True, help_text="The campaign's slug, once there is one.")


class ProblemSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    path = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ShareSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)


class MarkPaidSerializer(serializers.Serializer):
    """Which owed money to mark paid: some workers (external ids; all by default), ledger entries up to an id."""

    workers = serializers.ListField(child=serializers.CharField(max_length=128), required=False, max_length=10_000)
    upto = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    note = serializers.CharField(required=False, allow_blank=True, max_length=200)


class StateSerializer(serializers.Serializer):
    slug = serializers.CharField()
    state = serializers.CharField()
    detail = serializers.CharField()
    market_errors = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="Pause, resume, cancel of a Prolific campaign: the studies whose transition failed, one line each.",
    )


class SentenceSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReferenceSentence
        fields = ["id", "index", "text", "start", "end"]


class ExampleSerializer(serializers.ModelSerializer):
    sentences = SentenceSerializer(many=True, read_only=True)

    class Meta:
        model = Example
        fields = ["id", "external_id", "position", "reference", "source", "presence_started", "sentences"]


class SystemScoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = SystemScore
        fields = [
            "n_summaries",
            "qapyramid",
            "qapyramid_low",
            "qapyramid_high",
            "nqapyramid",
            "predicate_level",
            "alpha",
            "updated_at",
        ]


class SystemSerializer(serializers.ModelSerializer):
    score = SystemScoreSerializer(read_only=True, allow_null=True, default=None)
    n_summaries = serializers.IntegerField(read_only=True)

    class Meta:
        model = System
        fields = ["id", "name", "n_summaries", "score"]


class SummaryScoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = SummaryScore
        fields = [
            "n_units",
            "n_present",
            "qapyramid",
            "predicate_level",
            "repetition_rate",
            "length_penalty",
            "length",
            "nqapyramid",
            "updated_at",
        ]


class SummarySerializer(serializers.ModelSerializer):
    system = serializers.CharField(source="system.name", read_only=True)
    example = serializers.CharField(source="example.external_id", read_only=True)
    score = SummaryScoreSerializer(read_only=True, allow_null=True, default=None)

    class Meta:
        model = SystemSummary
        fields = ["id", "system", "system_id", "example", "example_id", "text", "score"]


class PredicateSerializer(serializers.ModelSerializer):
    """A predicate: ``sentence_text[start:end]``; created by giving a sentence id and the span."""

    sentence = serializers.PrimaryKeyRelatedField(queryset=ReferenceSentence.objects.none())
    example = serializers.CharField(source="example.external_id", read_only=True)
    lemma = serializers.CharField(max_length=200, required=False, allow_blank=True)

    class Meta:
        model = Predicate
        fields = [
            "id",
            "example",
            "example_id",
            "sentence",
            "start",
            "end",
            "text",
            "lemma",
            "origin",
            "edited_by_researcher",
            "flagged",
            "flag_reason",
            "rounds",
            "settled",
        ]
        read_only_fields = [
            "text",
            "origin",
            "edited_by_researcher",
            "flagged",
            "flag_reason",
            "rounds",
            "settled",
        ]
        # The service checks the span; the model's own validators would only repeat it less clearly.
        validators = []

    def __init__(self, *args, campaign=None, **kwargs):
        super().__init__(*args, **kwargs)
        if campaign is not None:
            # Only sentences of this campaign can be chosen: another campaign's id reads as "does not exist".
            self.fields["sentence"].queryset = ReferenceSentence.objects.filter(example__campaign=campaign)

    def validate_start(self, value):
        if value < 0:
            raise serializers.ValidationError("must be 0 or more")
        return value


class UnitSerializer(serializers.ModelSerializer):
    """A content unit: a QA pair of a predicate, or an imported SCU."""

    example = serializers.CharField(source="example.external_id", read_only=True)
    predicate_text = serializers.CharField(source="predicate.text", read_only=True, default=None, allow_null=True)
    author = serializers.CharField(source="author.external_id", read_only=True, default=None, allow_null=True)

    class Meta:
        model = ContentUnit
        fields = [
            "id",
            "example",
            "example_id",
            "predicate_id",
            "predicate_text",
            "kind",
            "index",
            "question",
            "answers",
            "text",
            "state",
            "round",
            "author",
            "created_at",
        ]


class VerificationSerializer(serializers.ModelSerializer):
    worker = serializers.CharField(source="worker.external_id", read_only=True)

    class Meta:
        model = Verification
        fields = ["id", "unit_id", "worker", "valid", "answers", "excluded", "created_at"]


class JudgmentSerializer(serializers.ModelSerializer):
    worker = serializers.CharField(source="worker.external_id", read_only=True)
    system = serializers.CharField(source="summary.system.name", read_only=True)
    example = serializers.CharField(source="summary.example.external_id", read_only=True)

    class Meta:
        model = PresenceJudgment
        fields = ["id", "unit_id", "summary_id", "system", "example", "worker", "present", "excluded", "created_at"]


class GoldSerializer(serializers.ModelSerializer):
    system = serializers.CharField(source="summary.system.name", read_only=True)
    example = serializers.CharField(source="summary.example.external_id", read_only=True)

    class Meta:
        model = GoldPresence
        fields = ["id", "unit_id", "summary_id", "system", "example", "present", "n_judgments", "n_present", "origin", "decided_by"]


class CheckSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    threshold = serializers.FloatField(allow_null=True, required=False)
    status = serializers.CharField(required=False)


class WorkerRowSerializer(serializers.Serializer):
    """One worker of a campaign: status per task type, HITs done, time per HIT and quality figures."""

    id = serializers.IntegerField(source="worker.pk", help_text="The worker's id: ``workers/ID/`` is their worker view.")
    worker = serializers.CharField(source="worker.external_id")
    blocked = serializers.BooleanField(source="worker.blocked")
    status = serializers.DictField(child=serializers.CharField())
    reasons = serializers.DictField(child=serializers.CharField())
    hits_done = serializers.IntegerField()
    seconds_per_hit = serializers.FloatField(allow_null=True)
    excluded = serializers.BooleanField()
    figures = serializers.JSONField(help_text="Per task type: each check's value, n, threshold and status.")


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    system = serializers.CharField()
    system_id = serializers.IntegerField()
    qapyramid = serializers.FloatField(allow_null=True, help_text="The score the rank is by (see ranked_by).")
    ci95 = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="Its 95% interval: gold, the bootstrap over examples; budgeted presence under the active rule, the design "
        "interval (target: the full-human score on these examples); under the uncertainty rule none ([null, null]).",
    )
    ci95_examples = serializers.ListField(
        child=serializers.FloatField(allow_null=True), required=False, allow_null=True,
        help_text="Budgeted presence, active rule: the interval that also resamples examples (target: the system's score on "
        "documents like these).",
    )
    no_interval_reason = serializers.CharField(
        required=False, allow_null=True, help_text="Budgeted presence: why no interval is given (the uncertainty rule; under the active rule, a "
        "system none of whose units people have judged yet); null when there is one."
    )
    human_share = serializers.FloatField(
        allow_null=True, help_text="Budgeted presence: the share of the system's units people judged (null otherwise)."
    )
    score = SystemScoreSerializer(
        allow_null=True, help_text="The gold scores (null under budgeted presence: they are in human_only, not this ranking)."
    )


class HumanOnlyRowSerializer(serializers.Serializer):
    system = serializers.CharField()
    system_id = serializers.IntegerField()
    score = SystemScoreSerializer(allow_null=True, help_text="QAPyramid from human labels only; n_summaries: the summaries it rests on.")
    n_units = serializers.IntegerField(help_text="The (unit, summary) human labels it rests on.")


class PairSerializer(serializers.Serializer):
    """One pair of systems (``annotation.scoring.pairs``): the difference, its interval and the adjusted verdict."""

    higher = serializers.CharField(help_text="The system with the higher score (by the pair's own difference).")
    lower = serializers.CharField()
    difference = serializers.FloatField(allow_null=True, help_text="higher - lower (null: not compared, see no_comparison).")
    ci95 = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="The difference's own 95% interval, not adjusted: gold, the paired t interval over examples; budgeted "
        "presence (active rule), the design interval.",
    )
    ci95_examples = serializers.ListField(
        child=serializers.FloatField(allow_null=True), required=False,
        help_text="Budgeted presence (active rule): the difference's interval paired by example (not tested).",
    )
    p_value = serializers.FloatField(allow_null=True, help_text="The pair's two-sided p-value.")
    p_holm = serializers.FloatField(allow_null=True, help_text="Holm's adjusted p-value over every pair compared.")
    separated = serializers.BooleanField(help_text="p_holm below 0.05: the higher system scores higher (family-wise error 5%).")
    no_comparison = serializers.CharField(allow_null=True, help_text="Why this pair is not compared (null when it is).")
    n_examples = serializers.IntegerField(required=False, help_text="Gold: the examples scored for both systems.")


class LeaderboardSerializer(serializers.Serializer):
    ranked_by = serializers.ChoiceField(
        choices=["gold", "hybrid"],
        help_text="gold: gold QAPyramid; hybrid (budgeted presence): human labels where people judged, the judge's elsewhere.",
    )
    systems = LeaderboardRowSerializer(many=True)
    human_only = HumanOnlyRowSerializer(
        many=True, allow_null=True, required=False,
        help_text="Budgeted presence only, by name, not a ranking: the scores from human labels alone and their coverage.",
    )
    agreement = serializers.JSONField(help_text="Krippendorff's alpha pooled and per system, with 95% intervals.")
    verification = serializers.JSONField(help_text="Agreement of the two verifiers of each question.")
    hybrid = serializers.JSONField(
        required=False, allow_null=True,
        help_text="Budgeted presence only: scores mixing human labels and the judge's: `estimator` (under the active rule "
        "the AIPW estimate, its statement, the intervals' `targets` and the papers; under the uncertainty rule the judge's "
        "label or calibrated probability and `no_interval_reason`), `pairs` (each pair's difference with its intervals, "
        "`separated` when the design interval excludes 0), each system's human-judged share, the judge version, the "
        "calibration, and when the stored scores were computed.",
    )
    pairs = PairSerializer(many=True, help_text="Every pair of systems, S (S - 1) / 2 entries in ranking order.")
    pairs_method = serializers.CharField(
        help_text="paired-t+holm (gold: paired t-test over examples), aipw-design+holm (budgeted presence, active rule: "
        "the design difference from the same draws), or none (the uncertainty rule: no test holds).",
    )
    pairs_statement = serializers.CharField(help_text="The method and its multiplicity adjustment in one sentence.")
    pairs_no_comparison = serializers.CharField(
        allow_null=True, help_text="Why no pair is compared (one system, no decided unit, the uncertainty rule); null otherwise.",
    )


class WorkerActionSerializer(serializers.Serializer):
    worker = serializers.CharField(max_length=128, help_text="The worker's external id.")
    replace = serializers.BooleanField(default=True, help_text="Exclude: send the excluded judgments out again.")


class AutoscoreRunSerializer(serializers.ModelSerializer):
    """An automatic scoring run (SemiAutoQAPyramid, or AutoQAPyramid with ``generate_qas``) and its progress."""

    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None, allow_null=True)
    progress = serializers.FloatField(read_only=True, help_text="Share of chunks done (0-1).")

    class Meta:
        model = AutoscoreRun
        fields = [
            "id",
            "judge_name",
            "judge_version",
            "systems",
            "generate_qas",
            "state",
            "n_chunks",
            "n_done",
            "progress",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "timings",
            "results",
            "error",
        ]
        read_only_fields = fields


class AutoscoreStartSerializer(serializers.Serializer):
    judge = serializers.CharField(max_length=300, help_text='A judge name, e.g. "lexical", "nli:/path/to/model", "trained:NAME".')
    systems = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list, help_text="System names; all when empty."
    )
    generate_qas = serializers.BooleanField(default=False, help_text="AutoQAPyramid: generate the QA pairs from the reference.")


class AutoSummaryScoreSerializer(serializers.Serializer):
    summary_id = serializers.IntegerField()
    system = serializers.CharField(source="summary.system.name")
    example = serializers.CharField(source="summary.example.external_id")
    n_units = serializers.IntegerField()
    n_present = serializers.IntegerField()
    score = serializers.FloatField(allow_null=True)
    mean_probability = serializers.FloatField(allow_null=True)


# --- review: assignments, bonuses, QA pair corrections, new systems ---------------------------


class AssignmentSerializer(serializers.ModelSerializer):
    """A worker's assignment of one of the campaign's HITs, with its review and money."""

    hit = serializers.IntegerField(source="hit_id", read_only=True)
    task_type = serializers.CharField(source="hit.task_type.slug", read_only=True)
    worker = serializers.CharField(source="worker.external_id", read_only=True)
    reward = serializers.DecimalField(source="hit.reward", max_digits=6, decimal_places=2, read_only=True)
    payload = serializers.JSONField(source="hit.payload", read_only=True, help_text="What the HIT is about (predicate, summary, units).")

    class Meta:
        model = Assignment
        fields = [
            "id", "hit", "task_type", "worker", "state", "attempt", "payload", "answers", "feedback",
            "accepted_at", "submitted_at", "work_seconds", "reviewed_at", "review_message", "reward", "bonus",
        ]
        read_only_fields = fields


class ApproveSerializer(serializers.Serializer):
    message = serializers.CharField(max_length=1000, required=False, allow_blank=True, default="", help_text="Shown to the worker.")


class RejectSerializer(serializers.Serializer):
    message = serializers.CharField(max_length=1000, help_text="Why the work is refused (shown to the worker; required).")
    data = serializers.ChoiceField(
        choices=["exclude", "keep"], required=False, allow_null=True, default=None,
        help_text="Presence and verification work: its data excluded (the default: it stops counting, gold and scores are "
                  "recomputed, a place reopens where the HIT needs one) or kept (counts as before). QA pairs are always kept.",
    )


class BonusSerializer(serializers.Serializer):
    amount = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("0.01"), help_text="USD, more than 0; the assignment's bonuses together at most the platform's limit per assignment (setting MAX_BONUS)."
    )
    reason = serializers.CharField(max_length=1000, help_text="Shown to the worker (required).")
    idempotency_key = serializers.CharField(
        max_length=255, required=False, help_text="As the Idempotency-Key header (either may be sent; if both, they must agree)."
    )

    def validate_amount(self, value):
        limit = Decimal(str(settings.MAX_BONUS))
        if value > limit:
            raise serializers.ValidationError(bonus_too_large(limit))
        return value


class LedgerEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = LedgerEntry
        fields = ["id", "kind", "amount", "state", "reason", "created_at"]
        read_only_fields = fields


class CorrectionSerializer(serializers.Serializer):
    """A QA pair's new wording: answers must be substrings of the predicate's sentence."""

    question = serializers.CharField(max_length=300)
    answers = serializers.ListField(child=serializers.CharField(max_length=300), min_length=1, max_length=3)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class CorrectionLogSerializer(serializers.ModelSerializer):
    """One logged correction: the old and new wording, who and why."""

    changed_by = serializers.CharField(source="changed_by.username", read_only=True, default=None, allow_null=True)

    class Meta:
        model = QAPairCorrection
        fields = [
            "id", "unit_id", "changed_by", "old_question", "old_answers", "new_question", "new_answers", "reason", "created_at",
        ]
        read_only_fields = fields


class SystemUploadSerializer(serializers.Serializer):
    summaries = serializers.FileField(help_text="JSONL, one {id, system, summary} per line (as the import's summaries file).")


class AddedSystemsSerializer(serializers.Serializer):
    systems = serializers.ListField(child=serializers.CharField())
    n_summaries = serializers.IntegerField()
    n_hits = serializers.IntegerField(help_text="Presence HITs created for the new summaries.")
    n_routed_candidates = serializers.IntegerField(
        help_text="Budgeted campaigns: presence HITs of the new summaries kept for the judge's routing (only the "
                  "human share of them is posted, the least-sure first)."
    )
