"""A campaign on Prolific: the rewards its studies will pay, checked against Prolific's minimum hourly pay.

The pay rule, session length and the check itself live with the Prolific backend (``hits.prolific.pricing``);
here is what only the campaign knows: which task types it will publish (every stage, though later stages create
their HITs later) and the reward of each.
"""

from __future__ import annotations

from decimal import Decimal

from annotation.models import Campaign
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.services.task_types import task_type
from hits.prolific import pricing


def campaign_rewards(campaign: Campaign) -> list[tuple]:
    """(task type, reward per HIT) for every stage the campaign publishes: an "scu" campaign has presence only."""
    stages = [(PRESENCE, campaign.reward_presence)]
    if campaign.unit_type == Campaign.UnitType.QA:
        stages = [(GENERATION, campaign.reward_generation), (VERIFICATION, campaign.reward_verification)] + stages
    return [(task_type(slug), Decimal(reward)) for slug, reward in stages]


def campaign_hourly_rates(campaign: Campaign) -> list[pricing.HourlyRate]:
    """The hourly rate of each stage's reward (``hits.prolific.pricing``), passing or not."""
    return [pricing.hourly_rate(task_type, reward) for task_type, reward in campaign_rewards(campaign)]


def check_campaign_hourly(campaign: Campaign) -> list[pricing.HourlyRate]:
    """Raise ``pricing.HourlyRateTooLow`` (with every stage below the minimum) before anything is published."""
    return pricing.check_hourly_minimum(campaign_rewards(campaign))
