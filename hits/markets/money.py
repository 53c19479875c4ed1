"""Money as every market counts it: exact decimals to the cent, in one currency per batch.

Amounts are ``Decimal`` throughout (never floats); a sum read back from the database (SQLite sums decimals as
floats) goes through ``cents``.  The currency an amount is in is the campaign's (one currency per campaign).

MTurk pays in US dollars, always.  A Prolific batch pays in its Prolific workspace's currency (USD or GBP, the
two a workspace may have): every reward, bonus and fee the platform sends or books for it is a number in that
currency, which the batch records once (``Batch.currency``, read from Prolific by ``hits.prolific.money`` at its
first publish).  A batch never mixes currencies.  Until a Prolific batch's currency is read, its figures are
shown in US dollars, the platform's default.  Amounts stay exact decimals; only their label changes.
"""

from __future__ import annotations

from decimal import Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


def cents(value) -> Decimal:
    """An amount (or a sum from the database, possibly a float with a long tail, or None) to the cent."""
    return Decimal(str(value or 0)).quantize(CENT)


DEFAULT = "USD"
SYMBOLS = {"USD": "$", "GBP": "£"}
KNOWN = tuple(SYMBOLS)


def currency_of(thing) -> str:
    """The ISO code of the money of ``thing``: a code, a batch, or anything with a ``batch`` (a campaign) or a
    ``hit`` (an assignment); US dollars for MTurk, local work and a Prolific batch whose currency is not read yet."""
    if isinstance(thing, str):
        return thing.upper() or DEFAULT
    if thing is None:
        return DEFAULT
    if hasattr(thing, "currency") and hasattr(thing, "backend"):  # a batch
        return DEFAULT if getattr(thing, "on_mturk", False) else (thing.currency or DEFAULT)
    for link in ("batch", "hit"):
        inner = getattr(thing, link, None)
        if inner is not None:
            return currency_of(inner)
    return DEFAULT


def symbol(code: str) -> str:
    return SYMBOLS.get(currency_of(code), f"{currency_of(code)} ")


def money(amount, currency=DEFAULT) -> str:
    """``amount`` written in ``currency`` (a code or anything ``currency_of`` reads): ``$1.20``, ``£1.20``;
    the amount as given (no rounding), its sign before the symbol."""
    text = str(amount)
    sign = "-" if text.startswith("-") else ""
    return f"{sign}{symbol(currency_of(currency))}{text.lstrip('-')}"
