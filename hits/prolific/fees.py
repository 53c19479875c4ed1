"""Prolific's service fee (and the VAT on it) on what a campaign pays, as the ledger books it.

What Prolific states is booked (``hits.prolific.money``): on a submission's reward, the fees and VAT its study cost
calculator quotes for one place at the study's reward (``submission_fee``); on a bulk bonus, the fees and VAT its
create answer states for the whole bulk, spread over its lines and ledger entries in proportion (``split_fee``), so
the ledger's fees add up to what Prolific charged.  The batch's ``prolific_fee_rate`` (the campaign's setting at
launch; Prolific's published figure is 33.33%, VAT not included) only estimates: a fee still pending, the budget
cap, the cost preview, and a charge Prolific has not stated (``fee``: the rate times the amount, rounded half up to
the cent)."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

from hits.prolific.pricing import CENT, fee

__all__ = ["CENT", "committed", "fee", "fee_rate", "split_fee", "submission_fee"]


def fee_rate(batch) -> Decimal:
    return Decimal(batch.prolific_fee_rate)


def submission_fee(study) -> Decimal:
    """What Prolific charges on one submission's reward of ``study``, fees and VAT: as it stated them
    (``ProlificStudy.place_fee``), else the estimate at the batch's rate until it does."""
    if study.place_fee is not None:
        return study.place_fee
    return fee(study.reward, fee_rate(study.batch))


def split_fee(total: Decimal, amounts: list[Decimal]) -> list[Decimal]:
    """``total`` spread over ``amounts`` in proportion, to the cent, summing exactly to ``total`` (the
    remainder cents go to the largest shares first)."""
    whole = sum(amounts, Decimal("0"))
    if not amounts:
        return []
    if whole == 0:
        return [total] + [Decimal("0.00")] * (len(amounts) - 1)
    exact = [total * a / whole for a in amounts]
    shares = [e.quantize(CENT, rounding=ROUND_DOWN) for e in exact]
    left = int(((total - sum(shares, Decimal("0"))) / CENT).to_integral_value())
    for i in sorted(range(len(amounts)), key=lambda i: (exact[i] - shares[i], amounts[i]), reverse=True)[:left]:
        shares[i] += CENT
    return shares


def committed(batch) -> Decimal:
    """What a Prolific batch commits against its budget cap: ``hits.budget.committed`` (the one definition every
    caller uses: its studies' places at the pay rule, bonuses researchers gave and Prolific's fees on them, and
    reservations in flight)."""
    from hits.budget import committed as total

    return total(batch)
