"""What a Prolific study pays, how long a session is, and the check against Prolific's minimum hourly pay.

The pay rule (every HIT done is paid once, to the cent):

- a main study's ``reward`` (Prolific's base pay per submission) is the reward of ONE HIT of its task type;
  it pays the session's first HIT;
- every further HIT done in the session is paid as a bonus of that HIT's reward (Prolific's bulk bonus);
- so a participant who did k HITs in a session is paid exactly k HIT rewards: reward + (k - 1) x reward.
  A session ends after ``hits_per_submission`` HITs, or earlier when no work is left.  (The rule assumes one
  reward per task type in a batch, as a campaign sets it; the study's reward is the highest one.)
- a screening study's session is the task type's whole qualification test: its reward is the test's items x
  the type's regular HIT reward, paid as the base reward (no bonus: every participant does every item).

The session's length: ``hits_per_submission`` = the campaign's setting, else ``SESSION_MINUTES`` (12 minutes:
inside the 10-15 minutes issue 31 asks for) divided by one HIT's typical minutes, at least 1.

A HIT's typical minutes: the median work time of the task type's recent submissions when there are any
(``hits.worktime``), else the protocol's figure, which the task type's handler gives as ``protocol_minutes``
(PROTOCOL.md: generation "about 1-2 minutes", verification "under a minute", presence "under 2 minutes"; the
upper figure, so that the hourly check never passes on optimism), else the task type's own time limit.

The times Prolific is told:

- ``estimated_completion_time`` = one HIT's typical minutes, rounded up: Prolific shows reward / estimated time
  as the hourly rate, and with one HIT's reward over one HIT's time that is the real rate of the whole session;
  a screening study: its items x that;
- ``maximum_allowed_time`` covers the whole session generously: each HIT of the session may use its task type's
  own time limit (``TaskType.assignment_duration``, 15-20 minutes for the protocol's pages), and never less than
  ``MIN_ALLOWED_FACTOR`` x the session's estimated time; Prolific's reference bounds it below 24 hours
  (a submission "always" times out within a day), so at most ``MAX_ALLOWED_MINUTES``.

The hourly minimum: reward per HIT / estimated hours per HIT >= the minimum of the study's currency (Prolific's
published minimum, $8.00 or £6.00 an hour: "Prolific's payment principles", researcher-help.prolific.com;
``PROLIFIC_MIN_HOURLY_USD`` and ``PROLIFIC_MIN_HOURLY_GBP``).  The estimated minutes
(rounded up) are what Prolific divides by, so the check uses them.  Below the minimum, publishing is refused with
the numbers and the reward that would pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from django.conf import settings

from hits.markets.money import CENT, DEFAULT, money
from hits.worktime import typical_seconds

SESSION_MINUTES = 12
# The cost preview's assumption (annotation.services.costs.screening_stages): participants expected to take a task
# type's qualification test (each paid for the whole test, pass or fail) per place of its main study.  Measured in
# the README's Prolific rehearsal ("Rehearsing on the Prolific stand-in"); revise it from a campaign's own figures.
TEST_TAKERS_PER_MAIN_PLACE = Decimal("4")
MIN_ALLOWED_FACTOR = 3
# Prolific times a submission out within a day: the longest maximum_allowed_time we ask for.
MAX_ALLOWED_MINUTES = 24 * 60 - 1
MIN_HOURLY_SOURCE = "Prolific's payment principles (researcher-help.prolific.com): at least $8.00 / £6.00 an hour"


class HourlyRateTooLow(Exception):
    """A study would pay less than Prolific's minimum hourly rate; ``rows`` hold the numbers per task type."""

    def __init__(self, rows: list["HourlyRate"]):
        self.rows = rows
        super().__init__("; ".join(row.refusal() for row in rows))


def minimum_hourly(currency: str = DEFAULT) -> Decimal:
    """Prolific's minimum pay per hour in ``currency`` (``PROLIFIC_MIN_HOURLY_USD`` / ``PROLIFIC_MIN_HOURLY_GBP``)."""
    value = getattr(settings, f"PROLIFIC_MIN_HOURLY_{currency}", None)
    if value is None:
        raise ValueError(f"no minimum hourly pay is set for {currency} (PROLIFIC_MIN_HOURLY_{currency})")
    return Decimal(str(value)).quantize(CENT)


@dataclass(frozen=True)
class HourlyRate:
    task_type: str
    reward: Decimal
    minutes: int
    currency: str = DEFAULT

    @property
    def rate(self) -> Decimal:
        return (self.reward * 60 / self.minutes).quantize(CENT, rounding=ROUND_HALF_UP)

    @property
    def minimum(self) -> Decimal:
        return minimum_hourly(self.currency)

    @property
    def passes(self) -> bool:
        return self.reward * 60 >= self.minimum * self.minutes

    @property
    def reward_that_passes(self) -> Decimal:
        return (self.minimum * self.minutes / 60).quantize(CENT, rounding=ROUND_CEILING)

    def refusal(self) -> str:
        c = self.currency
        return (
            f"{self.task_type}: {money(self.reward, c)} per HIT for {self.minutes} min is {money(self.rate, c)}/h, below "
            f"Prolific's minimum of {money(self.minimum, c)}/h (PROLIFIC_MIN_HOURLY_{c}); a reward of at least "
            f"{money(self.reward_that_passes, c)} per HIT would pass"
        )

    def as_dict(self) -> dict:
        return {"task_type": self.task_type, "reward": str(self.reward), "minutes": self.minutes, "rate": str(self.rate),
                "minimum": str(self.minimum), "passes": self.passes, "reward_that_passes": str(self.reward_that_passes),
                "currency": self.currency}


def typical_minutes(task_type) -> float:
    """One HIT's typical minutes (see the module's docstring): measured, else the protocol's, else the time limit."""
    seconds = typical_seconds(task_type)
    if seconds is not None:
        return max(seconds / 60, 0.1)
    from hits.handlers import task_handler

    try:
        protocol = getattr(task_handler(task_type.slug), "protocol_minutes", None)
    except LookupError:
        protocol = None
    return float(protocol) if protocol else task_type.assignment_duration / 60


def estimated_minutes(task_type) -> int:
    """Prolific's ``estimated_completion_time`` for one HIT: its typical minutes rounded up, at least 1."""
    return max(1, math.ceil(round(typical_minutes(task_type), 6)))


def hits_per_submission(task_type, setting: int | None = None) -> int:
    """HITs in one participant's session: the campaign's ``setting``, else about ``SESSION_MINUTES`` of work."""
    if setting:
        return int(setting)
    return max(1, round(SESSION_MINUTES / typical_minutes(task_type)))


def maximum_allowed_minutes(task_type, hits: int) -> int:
    """Prolific's ``maximum_allowed_time`` for a session of ``hits`` HITs (see the module's docstring)."""
    per_hit_limit = math.ceil(task_type.assignment_duration / 60)
    wanted = max(hits * per_hit_limit, MIN_ALLOWED_FACTOR * hits * estimated_minutes(task_type))
    return min(wanted, MAX_ALLOWED_MINUTES)


def hourly_rate(task_type, reward: Decimal, currency: str = DEFAULT) -> HourlyRate:
    return HourlyRate(task_type.slug, Decimal(reward).quantize(CENT), estimated_minutes(task_type), currency)


def check_hourly_minimum(rewards, currency: str = DEFAULT) -> list[HourlyRate]:
    """``rewards``: (task type, reward per HIT) pairs, in ``currency``.  Raises ``HourlyRateTooLow`` naming every
    pair below Prolific's minimum in that currency; returns the rates otherwise."""
    rates = [hourly_rate(task_type, reward, currency) for task_type, reward in rewards]
    low = [rate for rate in rates if not rate.passes]
    if low:
        raise HourlyRateTooLow(low)
    return rates


def cents(amount: Decimal) -> int:
    """An amount (2 decimals, in the study's currency) -> Prolific's minor unit (cents, pence), exactly."""
    value = Decimal(amount).quantize(CENT) * 100
    return int(value)


def fee(amount: Decimal, rate: Decimal) -> Decimal:
    """An estimate of Prolific's service fee on ``amount`` (rewards or bonuses) at ``rate``, to the cent: for the
    cost preview, the budget cap and a fee still pending; Prolific's own figures replace it (``money``)."""
    return (Decimal(amount) * Decimal(rate)).quantize(CENT, rounding=ROUND_HALF_UP)


def screening_item_reward(hit) -> Decimal | None:
    """What one qualification item of a Prolific batch pays: its screening study's reward (the whole test) divided
    by the study's items, i.e. the type's regular HIT reward the study was priced with; None before the study
    exists.  The ledger books each approved item at this, so the submission's reward pays them all."""
    from hits.prolific.models import ProlificStudy

    study = ProlificStudy.objects.filter(batch_id=hit.batch_id, task_type_id=hit.task_type_id,
                                         kind=ProlificStudy.Kind.SCREENING).first()
    if study is None or not study.hits_per_submission:
        return None
    return (study.reward / study.hits_per_submission).quantize(CENT, rounding=ROUND_HALF_UP)
