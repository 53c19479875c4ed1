"""What a Prolific study pays, how long a session is, and the check against Prolific's minimum hourly pay.

Prolific rates a study by its ``reward`` (bonuses are paid apart from it) over its completion time: the
``estimated_completion_time`` before it runs, the median completion time of its submissions once it does
("Prolific uses the median completion time to work out your study's average reward per hour", researcher help,
"Estimated and average reward per hour").  A submission is one participant's session of HITs, so a study's
``reward`` and ``estimated_completion_time`` describe the whole session.

The pay rule (every HIT done is paid once, to the cent):

- a main study's session holds ``hits_per_submission`` HITs of its task type; its ``reward`` is that many HIT
  rewards (the type's reward x the session's HITs) and pays the session's HITs: the ledger books each approved
  HIT's share (its own reward), and the shares add up to the reward;
- a session reserves its HITs when it starts (``hits.prolific.sessions``), so the work its reward pays for
  exists; when fewer are open it reserves what is (at least one) and may take more as they appear;
- a session cut short by the platform (no work left for it, a campaign paused) is still paid its whole reward
  when Prolific approves it: the share of the HITs it never got is booked as a ledger line of its own ("session
  reward for work the platform could not hand out", ``hits.prolific.review.book_base``); so is the share of HITs
  the researcher rejected in a submission that is approved (Prolific pays an approved submission's whole reward);
- bonuses pay only HITs done beyond the session's reward (more approved HITs than it pays for), the finished HITs
  of a returned or timed-out session (Prolific pays it no reward) and a researcher's own bonuses;
- a screening study's session is the task type's whole qualification test: its reward is the test's items x the
  type's regular HIT reward (every participant does every item).

The session's length: ``hits_per_submission`` = the campaign's setting, else ``SESSION_MINUTES`` (12 minutes:
inside the 10-15 minutes issue 31 asks for) divided by one HIT's typical minutes, at least 1; never more HITs
than fit in Prolific's longest maximum time (``MAX_ALLOWED_MINUTES``) at the task type's own time limit per HIT.

A HIT's typical minutes: the median work time of the campaign's (batch's) own submissions of the type once
there are any (``hits.worktime``), else the protocol's figure, which the task type's handler gives as
``protocol_minutes`` (PROTOCOL.md: generation "about 1-2 minutes", verification "under a minute", presence "under
2 minutes"; the upper figure, so that the hourly check never passes on optimism), else the type's time limit.

The times Prolific is told:

- ``estimated_completion_time`` = the session's expected minutes: its HITs x one HIT's typical minutes, rounded
  up (a screening study: the test's items x that);
- ``maximum_allowed_time``: Prolific's participant help ("Timed Out Submissions") gives the least maximum it
  allows for an estimate of X minutes: 2 + X + 2 x sqrt(X) (``prolific_minimum_allowed``).  The platform asks for
  at least that, and at least each HIT of the session at its task type's own time limit
  (``TaskType.assignment_duration``), so a session fits in it; Prolific times a submission out within a day, so
  at most ``MAX_ALLOWED_MINUTES`` (the session's size is capped to fit: ``hits_per_submission``).

The hourly minimum (``meets_minimum(amount, minutes, minimum)``): the session's reward over its estimated
minutes is at least Prolific's published minimum in the study's currency (``minimum_hourly(currency)``: $8.00 or
£6.00 an hour, ``PROLIFIC_MIN_HOURLY_USD`` and ``PROLIFIC_MIN_HOURLY_GBP``: "Prolific's payment principles",
researcher-help.prolific.com).  The estimated minutes (rounded up) are what
Prolific divides by, so the check uses them.  Below the minimum, publishing is refused with the numbers and the
reward per HIT that would pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal

from django.conf import settings

from hits.markets.money import CENT, DEFAULT, currency_of, money
from hits.worktime import typical_seconds

SESSION_MINUTES = 12
# The cost preview's assumption (annotation.services.costs.screening_stages): participants expected to take a task
# type's qualification test (each paid for the whole test, pass or fail) per place of its main study.  Measured in
# the Prolific guide's rehearsal (docs/guides/prolific.md, "Rehearsing on the Prolific stand-in"); revise it from a campaign's own figures.
TEST_TAKERS_PER_MAIN_PLACE = Decimal("4")
# Prolific times a submission out within a day: the longest maximum_allowed_time we ask for.
MAX_ALLOWED_MINUTES = 24 * 60 - 1
MIN_HOURLY_SOURCE = "Prolific's payment principles (researcher-help.prolific.com): at least $8.00 / £6.00 an hour"
#: The ledger line of a session's reward that pays for no HIT (``hits.prolific.review.book_base``).
UNUSED_SHARE = "session reward for work the platform could not hand out"
REJECTED_SHARE = "session reward for HITs rejected here (Prolific pays an approved submission's whole reward)"
#: Starts the request token of the ledger line of a submission's reward that pays for no HIT (``book_base``).
SESSION_SHARE_TOKEN = "prolific-session-"
#: Ledger lines booked for Prolific's reward of a submission though kind ``bonus`` (reconcile counts them as reward).
REWARD_TOKENS = ("prolific-reward-", SESSION_SHARE_TOKEN)


def minimum_hourly(currency: str = DEFAULT) -> Decimal:
    """Prolific's minimum pay per hour in ``currency`` (``PROLIFIC_MIN_HOURLY_USD`` / ``PROLIFIC_MIN_HOURLY_GBP``)."""
    value = getattr(settings, f"PROLIFIC_MIN_HOURLY_{currency}", None)
    if value is None:
        raise ValueError(f"no minimum hourly pay is set for {currency} (PROLIFIC_MIN_HOURLY_{currency})")
    return Decimal(str(value)).quantize(CENT)


def hourly(amount: Decimal, minutes: int) -> Decimal:
    """``amount`` for ``minutes`` of work, per hour, to the cent (what Prolific shows as reward per hour)."""
    return (Decimal(amount) * 60 / minutes).quantize(CENT, rounding=ROUND_HALF_UP)


def meets_minimum(amount: Decimal, minutes: int, minimum: Decimal) -> bool:
    """Whether ``amount`` for ``minutes`` pays at least ``minimum`` an hour (exactly: no rounding)."""
    return Decimal(amount) * 60 >= Decimal(minimum) * minutes


class HourlyRateTooLow(Exception):
    """A study would pay less than Prolific's minimum hourly rate; ``rows`` hold the numbers per task type."""

    def __init__(self, rows: list["HourlyRate"]):
        self.rows = rows
        super().__init__("; ".join(row.refusal() for row in rows))


@dataclass(frozen=True)
class HourlyRate:
    """A session of ``hits`` HITs of ``reward`` each for ``minutes`` (its estimated completion time), against
    ``minimum`` an hour in ``currency`` (Prolific's, ``minimum_hourly(currency)``, unless given)."""

    task_type: str
    reward: Decimal
    minutes: int
    hits: int = 1
    currency: str = DEFAULT
    minimum: Decimal | None = None

    def __post_init__(self):
        if self.minimum is None:
            object.__setattr__(self, "minimum", minimum_hourly(self.currency))

    @property
    def session_reward(self) -> Decimal:
        return (self.reward * self.hits).quantize(CENT)

    @property
    def rate(self) -> Decimal:
        return hourly(self.session_reward, self.minutes)

    @property
    def passes(self) -> bool:
        return meets_minimum(self.session_reward, self.minutes, self.minimum)

    @property
    def reward_that_passes(self) -> Decimal:
        """The least reward per HIT whose session passes."""
        return (self.minimum * self.minutes / 60 / self.hits).quantize(CENT, rounding=ROUND_CEILING)

    def refusal(self) -> str:
        c = self.currency
        return (
            f"{self.task_type}: a session of {self.hits} HIT(s) at {money(self.reward, c)} pays "
            f"{money(self.session_reward, c)} for {self.minutes} min, {money(self.rate, c)}/h, below Prolific's minimum "
            f"of {money(self.minimum, c)}/h (PROLIFIC_MIN_HOURLY_{c}); a reward of at least "
            f"{money(self.reward_that_passes, c)} per HIT would pass"
        )

    def as_dict(self) -> dict:
        return {"task_type": self.task_type, "reward": str(self.reward), "hits_per_session": self.hits,
                "session_reward": str(self.session_reward), "minutes": self.minutes, "rate": str(self.rate),
                "minimum": str(self.minimum), "passes": self.passes, "reward_that_passes": str(self.reward_that_passes),
                "currency": self.currency}


def protocol_minutes(task_type) -> float:
    """One HIT's minutes as the protocol gives them (the handler's ``protocol_minutes``), else its time limit."""
    from hits.handlers import task_handler

    try:
        protocol = getattr(task_handler(task_type.slug), "protocol_minutes", None)
    except LookupError:
        protocol = None
    return float(protocol) if protocol else task_type.assignment_duration / 60


def typical_minutes(task_type, batch=None) -> float:
    """One HIT's typical minutes (see the module's docstring): measured on ``batch``'s own work once it has any,
    else the protocol's figure."""
    seconds = typical_seconds(task_type, batch=batch) if batch is not None else None
    if seconds is not None:
        return max(seconds / 60, 0.1)
    return protocol_minutes(task_type)


def estimated_minutes(task_type, hits: int = 1, batch=None) -> int:
    """Prolific's ``estimated_completion_time`` for a session of ``hits`` HITs: their typical minutes, rounded up."""
    return max(1, math.ceil(round(hits * typical_minutes(task_type, batch), 6)))


def per_hit_limit(task_type) -> int:
    """A HIT's own time limit, in whole minutes."""
    return max(1, math.ceil(task_type.assignment_duration / 60))


def hits_per_submission(task_type, setting: int | None = None, batch=None) -> int:
    """HITs in one participant's session: the campaign's ``setting``, else about ``SESSION_MINUTES`` of work;
    never more than fit in ``MAX_ALLOWED_MINUTES`` at the type's time limit per HIT."""
    fits = max(1, MAX_ALLOWED_MINUTES // per_hit_limit(task_type))
    wanted = int(setting) if setting else max(1, round(SESSION_MINUTES / typical_minutes(task_type, batch)))
    return min(wanted, fits)


def prolific_minimum_allowed(estimated: int) -> int:
    """The least ``maximum_allowed_time`` Prolific gives an estimate of ``estimated`` minutes: 2 + X + 2 sqrt(X)
    (participant help, "Timed Out Submissions"), rounded up to whole minutes."""
    return math.ceil(2 + estimated + 2 * math.sqrt(estimated))


def maximum_allowed_minutes(task_type, hits: int, estimated: int | None = None) -> int:
    """Prolific's ``maximum_allowed_time`` for a session of ``hits`` HITs estimated at ``estimated`` minutes
    (see the module's docstring)."""
    estimated = estimated_minutes(task_type, hits) if estimated is None else estimated
    wanted = max(hits * per_hit_limit(task_type), prolific_minimum_allowed(estimated))
    return min(wanted, MAX_ALLOWED_MINUTES)


def hourly_rate(task_type, reward: Decimal, setting: int | None = None, batch=None, currency: str | None = None) -> HourlyRate:
    """The hourly rate of a main session of the type at ``reward`` per HIT (its size: ``hits_per_submission``), in
    ``currency`` (else ``batch``'s, else US dollars)."""
    hits = hits_per_submission(task_type, setting, batch)
    currency = currency or currency_of(batch)
    return HourlyRate(task_type.slug, Decimal(reward).quantize(CENT), estimated_minutes(task_type, hits, batch), hits,
                      currency)


def check_hourly_minimum(rewards, setting: int | None = None, batch=None, currency: str | None = None) -> list[HourlyRate]:
    """``rewards``: (task type, reward per HIT) pairs, each priced as a session (``hourly_rate``).  Raises
    ``HourlyRateTooLow`` naming every pair below Prolific's minimum in its currency; returns the rates otherwise."""
    return check_rates([hourly_rate(task_type, reward, setting, batch, currency) for task_type, reward in rewards])


def check_rates(rates: list[HourlyRate]) -> list[HourlyRate]:
    low = [rate for rate in rates if not rate.passes]
    if low:
        raise HourlyRateTooLow(low)
    return rates


def cents(amount: Decimal) -> int:
    """An amount of the study's currency (2 decimals) -> Prolific's minor unit (cents or pence), exactly."""
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
