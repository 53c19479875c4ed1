"""Forms of the researcher pages (creating a campaign, its settings, adding systems, review)."""

from __future__ import annotations

from decimal import Decimal

from django import forms
from django.core.validators import MaxValueValidator, MinValueValidator
from django.utils.text import slugify

from annotation.models import Campaign
from annotation.services.campaign_import import DESCRIPTION_MAX_CHARS, RESERVED_SLUGS  # noqa: F401 - the import's own rules


class CampaignUploadForm(forms.Form):
    """Name and files of a new campaign; the files may already be staged from an earlier attempt."""

    PREDICATE_CHOICES = [
        ("auto", "Find them automatically (every verb of every reference sentence)"),
        ("none", "None for now (add them by hand before launch)"),
        ("file", "From a file: JSONL {id, start, end, lemma?} with offsets into the reference"),
    ]

    name = forms.CharField(max_length=200)
    slug = forms.CharField(
        max_length=200, required=False, help_text="Used in the campaign's addresses; the slugified name by default."
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, max_length=DESCRIPTION_MAX_CHARS)
    references = forms.FileField(
        required=False, help_text='JSONL lines {"id", "reference", "source"?}, or CSV with the columns id,reference[,source].'
    )
    summaries = forms.FileField(required=False, help_text='JSONL lines {"id", "system", "summary"}.')
    predicates = forms.ChoiceField(choices=PREDICATE_CHOICES, initial="auto", widget=forms.RadioSelect)
    predicates_file = forms.FileField(required=False, label="Predicates file")

    def clean(self):
        data = super().clean()
        name = (data.get("name") or "").strip()
        slug = slugify(data.get("slug") or name)
        if name and not slug:
            self.add_error("slug", "Cannot make an address from this name: give a slug with letters or digits.")
        elif slug in RESERVED_SLUGS:
            self.add_error("slug", f"'{slug}' is reserved: choose another slug.")
        elif slug and Campaign.objects.filter(slug=slug).exists():
            self.add_error("slug", f"A campaign with the slug '{slug}' already exists: choose another name or slug.")
        data["final_slug"] = slug
        return data


SETTINGS_GROUPS = [
    ("Where the work runs", ["backend"]),
    ("On MTurk (seconds; empty: the platform's setting)", ["mturk_assignment_duration", "mturk_hit_lifetime", "mturk_auto_approval_delay"]),
    ("On Prolific", ["prolific_hits_per_submission", "prolific_fee_rate"]),
    ("Redundancy (workers per HIT)", ["assignments_generation", "assignments_verification", "assignments_presence"]),
    ("Rewards per HIT (USD)", ["reward_generation", "reward_verification", "reward_presence"]),
    ("Fair pay", ["hourly_pay_floor"]),
    (
        "QA generation rules",
        ["max_questions_per_predicate", "max_answers_per_question", "min_kept_qas_per_predicate", "max_redo_rounds",
         "review_duplicates"],
    ),
    (
        "Quality control",
        [
            "qualification_hits",
            "writer_valid_threshold",
            "writer_min_questions_per_predicate",
            "verifier_agreement_threshold",
            "presence_accuracy_threshold",
            "grace_period_items",
            "gold_share",
            "qualification_cooldown_hours",
            "qualification_max_attempts",
        ],
    ),
    ("Presence judges", ["presence_judges", "third_judge_rate"]),
    ("Aggregation and scores", ["tie_rule", "length_penalty_alpha"]),
    ("Budgeted presence", ["human_presence_share", "routing_rule", "presence_judge", "active_rounds", "presence_rounds", "judge_scoring"]),
]


#: Settings of the QA stages (writing and verifying QA pairs): an "scu" campaign, whose units are imported, has none.
QA_ONLY_SETTINGS = (
    "assignments_generation", "assignments_verification", "reward_generation", "reward_verification",
    "max_questions_per_predicate", "max_answers_per_question", "min_kept_qas_per_predicate", "max_redo_rounds",
    "review_duplicates", "writer_valid_threshold", "writer_min_questions_per_predicate", "verifier_agreement_threshold",
)


class CampaignSettingsForm(forms.ModelForm):
    """Every setting of a campaign that applies to it; the model's defaults are the paper's values."""

    class Meta:
        model = Campaign
        fields = [name for _, names in SETTINGS_GROUPS for name in names]
        labels = {
            "assignments_generation": "Writers per predicate",
            "assignments_verification": "Verifiers per predicate",
            "assignments_presence": "Judges per presence HIT",
            "reward_generation": "QA generation",
            "reward_verification": "QA verification",
            "reward_presence": "QA presence",
            "hourly_pay_floor": "Hourly pay floor (USD per hour of work; 0 = none)",
            "min_kept_qas_per_predicate": "Kept QA pairs wanted per predicate",
            "max_redo_rounds": "Redo rounds before a predicate is flagged",
            "review_duplicates": "Review near-duplicate QA pairs before presence",
            "qualification_hits": "Qualification HITs per task type",
            "writer_valid_threshold": "Writers: share of pairs kept must be above",
            "writer_min_questions_per_predicate": "Writers: questions per predicate, on average, at least",
            "verifier_agreement_threshold": "Verifiers: agreement with the other verifier above",
            "presence_accuracy_threshold": "Judges: accuracy on gold above",
            "grace_period_items": "Grace period (judged items before any check)",
            "gold_share": "Share of gold HITs in a judge's stream",
            "tie_rule": "Tie rule",
            "length_penalty_alpha": "Length-penalty alpha",
            "human_presence_share": "Human presence share (1 = every presence HIT)",
            "presence_judge": "Judge of the units people do not see",
            "active_rounds": "Active rounds (retrain the judge between rounds)",
            "presence_rounds": "Rounds",
            "mturk_assignment_duration": "Time a worker may keep an assignment (30 to 31,536,000)",
            "mturk_hit_lifetime": "Time a HIT stays on MTurk (30 to 31,536,000)",
            "mturk_auto_approval_delay": "Automatic approval after (0 to 2,592,000)",
            "judge_scoring": "Units the judge labels count as",
            "routing_rule": "How people's presence HITs are chosen",
            "presence_judges": "Presence judges",
            "third_judge_rate": "Expected share of HITs needing the third judge (for the cost preview)",
            "backend": "Market",
            "prolific_hits_per_submission": "HITs per Prolific submission (1 to 100; empty: about 12 minutes of work)",
            "prolific_fee_rate": "Prolific's service fee (share of rewards and bonuses, 0 to 1)",
        }

        help_texts = {
            "backend": "Local workers: the platform's own pages, through invitation links. MTurk sandbox / live: HITs "
            "published on Amazon Mechanical Turk (manage.py mturk_publish). Prolific: one study per task type, each "
            "participant doing a session of HITs (manage.py prolific_publish); every HIT pays its reward, the first "
            "by the study's reward and the others by bonuses, and publishing is refused below Prolific's minimum "
            "hourly pay.",
            "routing_rule": "Under budgeted presence. Random draws (the default): each round draws the HITs people judge "
            "at random with known probabilities that favour the judge's unsure HITs; each system's score is unbiased "
            "whatever the judge, with 95% intervals that hold (Zrnic & Candes, Active Statistical Inference, 2024). "
            "Least sure: the HITs the judge is least sure of, scored by its label or probability, with no valid "
            "interval. Fixed at launch.",
            "judge_scoring": "Under budgeted presence, what a unit nobody judged counts as in the scores: the judge's label, or its "
            "probability calibrated on this campaign's human labels (Platt scaling, out of fold; labels until there are "
            "50 human-labelled units, 10 present and 10 absent). Units people judged always count as their majority.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.unit_type == Campaign.UnitType.SCU:
            for name in QA_ONLY_SETTINGS:  # not shown, not posted: the saved values stay as they are
                del self.fields[name]
            self.fields["reward_presence"].label = "Presence"
        # The bounds are the model's validators (the API checks the same); the browser is told them too.
        for name, field in self.fields.items():
            for validator in Campaign._meta.get_field(name).validators:
                if isinstance(validator, (MinValueValidator, MaxValueValidator)):
                    field.widget.attrs["min" if isinstance(validator, MinValueValidator) else "max"] = str(validator.limit_value)

    def notes(self) -> dict[str, str]:
        """A line under some settings: what each presence rule costs, for the values shown."""
        # The instance holds the typed values once a bound form is validated (the saved ones otherwise).
        values = self.instance
        n = values.assignments_presence
        first = n // 2 + 1
        adaptive = Campaign(assignments_presence=n, third_judge_rate=values.third_judge_rate,
                            presence_judges=Campaign.PresenceJudges.ADAPTIVE)
        return {
            "backend": self.market_note(values),
            "presence_judges": (
                f"With these values: {values.presence_judges_statement}. Fixed: {n} judgments per presence HIT. Adaptive: {first} first, one more at a time only where they "
                f"disagree: about {adaptive.expected_presence_assignments:.2f} judgments per HIT at the expected "
                f"disagreement rate ({values.third_judge_rate:.1%}), vs {n}; the same gold labels. Under the adaptive "
                "rule, agreement (alpha) is computed over the first two judgments of every unit."
            ),
        }

    def market_note(self, values) -> str:
        """What the chosen market means; on Prolific, the hourly rate of each task type's reward against Prolific's
        minimum (publishing is refused below it)."""
        text = str(self.fields["backend"].help_text)
        if values.backend != Campaign.Backend.PROLIFIC:
            return text
        from annotation.services.prolific import campaign_hourly_rates

        rates = campaign_hourly_rates(values)
        lines = [f"{r.task_type}: {r.hits} HITs x ${r.reward} = ${r.session_reward} for about {r.minutes} min = ${r.rate}/h"
                 + ("" if r.passes else f" (below ${r.minimum}/h: at least ${r.reward_that_passes} per HIT)") for r in rates]
        return text + " Hourly rates of a session (a study's reward is the whole session's): " + "; ".join(lines) + "."

    def clean_presence_judge(self):
        name = self.cleaned_data["presence_judge"].strip()
        from annotation.automation.autoscore import check_judge_name
        from annotation.automation.judges.base import JudgeError

        try:
            check_judge_name(name)
        except JudgeError as exc:
            raise forms.ValidationError(str(exc)) from None
        return name

    def groups(self):
        """(title, [bound field, paper value]) for the template."""
        notes = self.notes()
        groups = [
            (title, [(self[name], paper_value(name), notes.get(name, "")) for name in names if name in self.fields])
            for title, names in SETTINGS_GROUPS
        ]
        return [(title, rows) for title, rows in groups if rows]


# Settings the paper has no value for: the settings page says so rather than show our default as the paper's.
NOT_IN_PAPER = {"hourly_pay_floor", "third_judge_rate", "mturk_assignment_duration", "mturk_hit_lifetime", "mturk_auto_approval_delay",
                "prolific_hits_per_submission", "prolific_fee_rate", "routing_rule"}
#: Settings whose default for new campaigns is not the paper's value.
PAPER_VALUES = {"presence_judges": Campaign.PresenceJudges.FIXED}


def paper_value(field_name: str):
    """The model default of a setting: the value the QAPyramid paper used (or the protocol implies)."""
    field = Campaign._meta.get_field(field_name)
    value = field.get_default()
    if field_name in PAPER_VALUES:
        paper = PAPER_VALUES[field_name]
        return f"{dict(field.flatchoices)[paper]} (our default: {dict(field.flatchoices)[value]})" if paper != value else dict(field.flatchoices)[paper]
    if field_name in NOT_IN_PAPER:
        return f"not set (our default: {'the platform setting' if value is None else value})"
    if field.choices:
        return dict(field.flatchoices).get(value, value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value


class AddSystemForm(forms.Form):
    summaries = forms.FileField(
        help_text='JSONL lines {"id", "system", "summary"} of the new system(s), one summary per judged example.'
    )


class AssignmentReviewForm(forms.Form):
    ACTIONS = [("approve", "Approve"), ("reject", "Reject"), ("bonus", "Pay a bonus")]

    action = forms.ChoiceField(choices=ACTIONS)
    message = forms.CharField(max_length=1000, required=False)
    # What a rejection does with presence or verification data (``annotation.services.rejection``); empty: the default.
    data = forms.ChoiceField(choices=[("exclude", "Exclude its data"), ("keep", "Keep its data")], required=False)
    amount = forms.DecimalField(max_digits=6, decimal_places=2, required=False, min_value=Decimal("0.01"))

    def clean(self):
        data = super().clean()
        action = data.get("action")
        if action == "reject" and not (data.get("message") or "").strip():
            self.add_error("message", "Say why the work is rejected: the worker sees this message.")
        amount = data.get("amount")
        if action == "bonus" and amount is None:
            self.add_error("amount", "Give the bonus amount in USD.")
        if action == "reject" and amount is not None:
            # A typed bonus is never dropped silently: approving pays it too, rejecting refuses it.
            self.add_error("amount", "Rejected work gets no bonus: clear the bonus amount, or approve the work with it.")
        if (action == "bonus" or action == "approve" and amount is not None) and not (data.get("message") or "").strip():
            self.add_error("message", "Give the reason for the bonus: the worker sees it.")
        return data


class QAPairCorrectionForm(forms.Form):
    question = forms.CharField(max_length=300)
    answers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), help_text="One answer per line; each must be a substring of the sentence."
    )
    reason = forms.CharField(max_length=500, required=False)

    def clean_answers(self):
        answers = [line.strip() for line in self.cleaned_data["answers"].splitlines() if line.strip()]
        if not answers:
            raise forms.ValidationError("Give at least one answer.")
        return answers
