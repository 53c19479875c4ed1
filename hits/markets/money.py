"""Money as every market counts it: exact decimals to the cent.

Amounts are ``Decimal`` throughout (never floats); a sum read back from the database (SQLite sums decimals as
floats) goes through ``cents``.  The currency an amount is in is the campaign's (one currency per campaign).
"""

from __future__ import annotations

from decimal import Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


def cents(value) -> Decimal:
    """An amount (or a sum from the database, possibly a float with a long tail, or None) to the cent."""
    return Decimal(str(value or 0)).quantize(CENT)
