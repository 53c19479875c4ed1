"""Prolific's service fee on what a campaign pays: a share of every reward and bonus (the campaign's
``prolific_fee_rate``; Prolific's published figure is 33.33%, VAT not included).

``hits`` never imports ``annotation``: the campaign's rate reaches it through ``register_fee_rate``, called
once at start-up (``annotation.apps``).  Without a registered rate, ``PROLIFIC_FEE_RATE`` applies.

A fee is the rate times an amount, rounded half up to the cent.  The same rounding is used on both sides of
a reconciliation: per submission reward, and per line of a bulk bonus (one participant's bonuses of one
bulk payment together; ``split_fee`` spreads that line's fee over its ledger entries)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Callable

from django.conf import settings

CENT = Decimal("0.01")
_provider: Callable | None = None


def register_fee_rate(provider: Callable) -> None:
    """``provider(batch) -> Decimal | None``: the fee rate of the batch's campaign (a share: 0.3333)."""
    global _provider
    _provider = provider


def fee_rate(batch) -> Decimal:
    rate = _provider(batch) if _provider is not None else None
    return Decimal(str(settings.PROLIFIC_FEE_RATE if rate is None else rate))


def fee(amount: Decimal, rate: Decimal) -> Decimal:
    return (Decimal(amount) * rate).quantize(CENT, rounding=ROUND_HALF_UP)


def split_fee(total: Decimal, amounts: list[Decimal]) -> list[Decimal]:
    """``total`` spread over ``amounts`` in proportion, to the cent, summing exactly to ``total`` (the
    remainder cents go to the largest shares first)."""
    whole = sum(amounts, Decimal("0"))
    if not amounts:
        return []
    if whole == 0:
        return [total] + [Decimal("0.00")] * (len(amounts) - 1)
    exact = [total * a / whole for a in amounts]
    shares = [e.quantize(CENT, rounding="ROUND_DOWN") for e in exact]
    left = int(((total - sum(shares, Decimal("0"))) / CENT).to_integral_value())
    for i in sorted(range(len(amounts)), key=lambda i: (exact[i] - shares[i], amounts[i]), reverse=True)[:left]:
        shares[i] += CENT
    return shares
