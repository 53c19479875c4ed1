"""A campaign on Prolific: the rewards its studies will pay, checked against Prolific's minimum hourly pay.

The pay rule, session length and the check itself live with the Prolific backend (``hits.prolific.pricing``);
here is what only the campaign knows: which task types it will publish (every stage, though later stages create
their HITs later) and the reward of each.  An import onto Prolific (``import_rewards``) chooses rewards that pass
the check, and refuses a reward it was given that would not.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from annotation.models import Campaign
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.services.task_types import task_type
from hits.markets.money import currency_of
from hits.prolific import pricing


#: The campaign's reward field of each stage, and the ``import_campaign`` option that sets it.
REWARD_FIELDS = {GENERATION: "reward_generation", VERIFICATION: "reward_verification", PRESENCE: "reward_presence"}
REWARD_OPTIONS = {field: "--" + field.replace("_", "-") for field in REWARD_FIELDS.values()}


def published_stages(unit_type: str) -> list[str]:
    """The stages a campaign publishes: an "scu" campaign has presence only."""
    return [PRESENCE] if unit_type == Campaign.UnitType.SCU else [GENERATION, VERIFICATION, PRESENCE]


def campaign_rewards(campaign: Campaign) -> list[tuple]:
    """(task type, reward per HIT) for every stage the campaign publishes (``published_stages``)."""
    return [(task_type(slug), Decimal(getattr(campaign, REWARD_FIELDS[slug])))
            for slug in published_stages(campaign.unit_type)]


def campaign_hourly_rates(campaign: Campaign, currency: str | None = None) -> list[pricing.HourlyRate]:
    """The hourly rate of each stage's reward (``hits.prolific.pricing``), passing or not."""
    return [pricing.hourly_rate(task_type, reward, campaign.prolific_hits_per_submission, campaign.batch,
                                currency or currency_of(campaign))
            for task_type, reward in campaign_rewards(campaign)]


def check_campaign_hourly(campaign: Campaign, currency: str | None = None) -> list[pricing.HourlyRate]:
    """Raise ``pricing.HourlyRateTooLow`` (with every stage below the minimum) before anything is published, in
    ``currency`` (by default the campaign's: US dollars until its first publish reads its workspace's)."""
    return pricing.check_rates(campaign_hourly_rates(campaign, currency))


@dataclass(frozen=True)
class ImportReward:
    """The reward an import onto Prolific stores for one stage, and why."""

    rate: pricing.HourlyRate
    option: str  # the import option that sets it
    source: str  # where it came from: the option, a settings file, or "" when the import chose it
    default: Decimal  # the paper's reward (the field's default)

    @property
    def raised(self) -> bool:
        return not self.source and self.rate.reward != self.default

    def line(self) -> str:
        rate = self.rate
        said = (f"{rate.task_type}: ${rate.reward} per HIT, a session of {rate.hits} HITs pays ${rate.session_reward} "
                f"for about {rate.minutes} min = ${rate.rate}/h")
        if self.source:
            return f"{said} (as {self.source} gives it)"
        if self.raised:
            below = pricing.HourlyRate(rate.task_type, self.default, rate.minutes, rate.hits)
            return (f"{said} (raised from the paper's ${self.default}, ${below.rate}/h, to the least that passes; "
                    f"{self.option} sets it)")
        return f"{said} (the paper's; {self.option} sets it)"


def import_rewards(values: dict, unit_type: str, sources: dict[str, str],
                   setting: int | None = None) -> tuple[dict, list[ImportReward], list[tuple]]:
    """The rewards an import onto Prolific stores, checked against Prolific's minimum as a publish checks it
    (``pricing.hourly_rate``: a session's reward over its estimated minutes, sessions of ``setting`` HITs).

    ``values``: the reward fields the import was given (by ``sources[field]``: an option or a settings file); a
    stage without one keeps the paper's reward when it passes, else takes the least reward that passes.  Returns
    the rewards to store (``{field: reward}``), one ``ImportReward`` per published stage, and a problem
    ``(source, field, message)`` for every given reward below the minimum, with the numbers."""
    updates, rewards, problems = {}, [], []
    for slug in published_stages(unit_type):
        field = REWARD_FIELDS[slug]
        default = Campaign._meta.get_field(field).default
        given = field in values
        rate = pricing.hourly_rate(task_type(slug), Decimal(values[field] if given else default), setting)
        if given and not rate.passes:
            problems.append((sources.get(field, REWARD_OPTIONS[field]), field,
                             f"{rate.refusal()}; the campaign runs on Prolific (--market prolific)"))
            continue
        if not given and not rate.passes:
            rate = pricing.hourly_rate(task_type(slug), rate.reward_that_passes, setting)
            updates[field] = rate.reward
        rewards.append(ImportReward(rate, REWARD_OPTIONS[field], sources.get(field, "") if given else "", default))
    return updates, rewards, problems
