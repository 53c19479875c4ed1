"""MTurk's commission, and the money a batch has committed on MTurk (for the budget cap).

Commission (MTurk's published pricing): 20% of every reward and bonus, plus
20% more on the rewards of HITs with 10 or more assignments, and never less
than $0.01 per assignment and per bonus:

    fee(reward, n) = max(round(reward * (0.20 + (0.20 if n >= 10 else 0)), cents), 0.01)
    fee(bonus)     = max(round(bonus * 0.20, cents), 0.01)
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Count, Sum

MTURK_COMMISSION = Decimal("0.20")
MTURK_LARGE_HIT_EXTRA = Decimal("0.20")
MTURK_LARGE_HIT_ASSIGNMENTS = 10
CENT = Decimal("0.01")
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
    """Money a batch has committed on MTurk: every published HIT paid in full, plus bonuses and their fees.

    committed = sum over published HITs of (reward + fee) x max_assignments
              + sum of bonus and bonus-fee ledger entries (not those refused for good)
    Published HITs include those MTurk said it created whose HITId is not read yet (``publishing.made_hits``).
    Rejected work is not refunded in this figure: the cap is a ceiling, so it errs on the safe side.
    """
    from hits.models import LedgerEntry
    from hits.mturk.models import MTurkHIT
    from hits.mturk.publishing import made_commitment

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
    bonuses = (
        LedgerEntry.objects.filter(batch=batch)
        .filter(kind__in=[LedgerEntry.Kind.BONUS, LedgerEntry.Kind.FEE])
        .exclude(fee_for__kind=LedgerEntry.Kind.REWARD)
        .exclude(state=LedgerEntry.State.REFUSED)
        .aggregate(s=Sum("amount"))["s"]
    )
    return (total + made_commitment(batch) + Decimal(bonuses or 0)).quantize(CENT)
