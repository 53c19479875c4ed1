"""MTurk's commission, and the money a batch has committed on MTurk (for the budget cap).

Commission (MTurk's published pricing): 20% of every reward and bonus, plus
20% more on the rewards of HITs with 10 or more assignments, and never less
than $0.01 per assignment and per bonus:

    fee(reward, n) = max(round(reward * (0.20 + (0.20 if n >= 10 else 0)), cents), 0.01)
    fee(bonus)     = max(round(bonus * 0.20, cents), 0.01)
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Count

from hits.markets.money import CENT
from hits.markets.publishing import regular_rewards  # noqa: F401 - also this module's name

MTURK_COMMISSION = Decimal("0.20")
MTURK_LARGE_HIT_EXTRA = Decimal("0.20")
MTURK_LARGE_HIT_ASSIGNMENTS = 10
MIN_FEE = CENT


def mturk_fee(reward: Decimal, max_assignments: int) -> Decimal:
    """MTurk's commission on one paid assignment: 20% of the reward, 40% for HITs of 10+ assignments, at least $0.01."""
    rate = MTURK_COMMISSION + (MTURK_LARGE_HIT_EXTRA if max_assignments >= MTURK_LARGE_HIT_ASSIGNMENTS else 0)
    return max((Decimal(reward) * rate).quantize(CENT, rounding=ROUND_HALF_UP), MIN_FEE)


def bonus_fee(amount: Decimal) -> Decimal:
    """MTurk's commission on a bonus: 20%, at least $0.01."""
    return max((Decimal(amount) * MTURK_COMMISSION).quantize(CENT, rounding=ROUND_HALF_UP), MIN_FEE)


def hit_commitment(reward: Decimal, max_assignments: int) -> Decimal:
    """What publishing one HIT commits: (reward + fee) x assignments."""
    return ((Decimal(reward) + mturk_fee(reward, max_assignments)) * max_assignments).quantize(CENT)


def committed(batch) -> Decimal:
    """Money a batch has committed on MTurk against its budget cap: ``hits.budget.committed`` (the one definition
    every caller uses: published HITs paid in full, bonuses and their fees, reservations in flight)."""
    from hits.budget import committed as total

    return total(batch)


def hits_committed(batch) -> Decimal:
    """What the batch's HITs on MTurk commit: sum over published HITs of (reward + fee) x max_assignments, plus the
    HITs MTurk said it created whose HITId is not read yet (``made_hit_ids``).  Rejected work is not refunded in
    this figure: the cap is a ceiling, so it errs on the safe side."""
    from hits.mturk.models import MTurkHIT

    total = Decimal("0")
    # Grouped by (reward, assignments): a handful of rows however many HITs the campaign has.
    groups = (
        MTurkHIT.objects.filter(hit__batch=batch)
        .values_list("reward", "max_assignments")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for reward, assignments, n in groups:
        total += hit_commitment(reward, assignments) * n
    return (total + made_commitment(batch)).quantize(CENT)


# What a HIT commits on MTurk: the reward and places it is published with (``hits.mturk.publishing`` publishes
# with these), and the HITs MTurk said it created whose HITId is not read yet.
MIN_REWARD = CENT


def mturk_max_assignments(hit) -> int:
    """The MaxAssignments a HIT is created with on MTurk."""
    from django.conf import settings

    from hits.models import HIT

    if hit.kind == HIT.Kind.GOLD:
        return regular_places(hit) or min(hit.max_assignments, settings.MTURK_OPEN_HIT_ASSIGNMENTS)
    if hit.kind == HIT.Kind.QUALIFICATION:
        return min(hit.max_assignments, settings.MTURK_OPEN_HIT_ASSIGNMENTS)
    return hit.max_assignments


def regular_places(hit) -> int | None:
    """Places of the regular HITs a gold HIT sits among (its batch and task type): the fewest any of them has (a
    HIT given replacement places has more; one holding places moved from another is left out).  None if none."""
    from django.db.models import Min

    from hits.models import HIT

    regular = HIT.objects.filter(batch_id=hit.batch_id, task_type_id=hit.task_type_id, kind=HIT.Kind.REGULAR)
    return regular.exclude(payload__has_key="replaces").exclude(payload__has_key="adds_to").aggregate(m=Min("max_assignments"))["m"]


def mturk_reward(hit, regular_reward: Decimal | None = None) -> Decimal:
    """The reward MTurk shows; an unpaid gold HIT pays like the regular HITs of its type (else it stands out)."""
    from hits.models import HIT

    if hit.kind == HIT.Kind.GOLD and not hit.reward and regular_reward is not None:
        return Decimal(regular_reward)
    return max(Decimal(hit.reward), MIN_REWARD)


def made_hit_ids(batch) -> list[int]:
    """Local HITs MTurk said it created (``HitAlreadyExists``) whose HITId its records have not shown yet."""
    from django.conf import settings

    from hits.mturk import tokens
    from hits.mturk.models import MTurkRequest

    prefix = f"{settings.MTURK_TOKEN_PREFIX}-{batch.key}-"
    keys = MTurkRequest.objects.filter(operation="CreateHIT", outcome=tokens.MADE, key__startswith=prefix[:64])
    suffixes = (key[len(prefix):] for key in keys.values_list("key", flat=True))
    return [int(suffix) for suffix in suffixes if suffix.isdigit()]


def made_commitment(batch) -> Decimal:
    """What the HITs of ``made_hit_ids`` not recorded yet hold on MTurk: (reward + fee) x places each, as their
    CreateHIT asked."""
    from hits.models import HIT

    made = made_hit_ids(batch)
    if not made:
        return Decimal("0")
    rewards = regular_rewards(batch)
    return sum(
        (hit_commitment(mturk_reward(hit, rewards.get(hit.task_type_id)), mturk_max_assignments(hit))
         for hit in HIT.objects.filter(batch=batch, pk__in=made, mturk__isnull=True)),
        Decimal("0"),
    )
