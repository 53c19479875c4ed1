"""What every market's reconcile shares: the kinds of difference, the comparison of what a market charged with
what the ledger booked as paid, and the report (``ReconcileResult``, stored as a ``Reconciliation``).

Each market reads its own side from its own records (``hits.mturk.reconcile``, ``hits.prolific.reconcile``);
the comparison is made here, once, per (market id, reward|bonus) key:

- ``charged_not_booked``: the market charged more than the ledger booked as paid;
- ``booked_not_charged``: the ledger booked as paid more than the market charged;
- ``unknown_hit``: a HIT (or study) the platform never recorded, with what the market charged on it;
- ``unchecked``: a market call failed; that place could not be compared, and its entries are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from hits.markets.money import CENT, ZERO, money

CHARGED_NOT_BOOKED = "charged_not_booked"
BOOKED_NOT_CHARGED = "booked_not_charged"
UNKNOWN_HIT = "unknown_hit"
UNCHECKED = "unchecked"

REWARD, BONUS = "reward", "bonus"


@dataclass
class Difference:
    kind: str
    hit: str | None
    assignment: str | None
    amount: Decimal | None
    detail: str = ""

    def as_dict(self, detail: bool = True) -> dict:
        out = {
            "kind": self.kind,
            "hit": self.hit,
            "assignment": self.assignment,
            "amount": None if self.amount is None else str(self.amount),
        }
        if detail:
            out["detail"] = self.detail
        return out


@dataclass
class ReconcileResult:
    ledger_total: Decimal = ZERO
    market_total: Decimal = ZERO
    differences: list[Difference] = field(default_factory=list)
    hits_checked: int = 0
    hits_from_records: int = 0
    calls: int = 0
    # The ISO code of both totals' currency (``hits.markets.money``): MTurk's is USD; a Prolific batch's, its own.
    currency: str = "USD"

    def as_dict(self) -> dict:
        """The command's JSON: exactly ``ledger_total``, ``market_total``, ``currency`` and ``differences``."""
        return {
            "ledger_total": str(self.ledger_total),
            "market_total": str(self.market_total),
            "currency": self.currency,
            "differences": [d.as_dict(detail=False) for d in self.differences],
        }


def compare(
    charged: dict, booked: dict, place_of: dict, unchecked: set, market: str, *, pending: set = frozenset(),
    never_there: str = "", currency: str = "USD",
) -> list[Difference]:
    """The differences between what a market charged and what the ledger booked as paid, per (id, reward|bonus)
    key, in the order of their place (HIT or study) then key.  ``place_of``: id -> HIT or study id (ids of an
    ``unchecked`` place are left out); ``pending``: ids with money still pending in the ledger; keys
    ``local:<assignment id>`` are work never on the market (``never_there`` says so); amounts are written in
    ``currency``.  Shared by the markets."""
    found = []
    for key in sorted(set(charged) | set(booked), key=lambda k: (place_of.get(k[0]) or "", k)):
        market_id, group = key
        place = place_of.get(market_id)
        if place in unchecked:
            continue
        gap = charged.get(key, ZERO) - booked.get(key, ZERO)
        if gap == 0:
            continue
        local = market_id.startswith("local:")
        if gap > 0:
            detail = (f"{group}: {market} charged {money(charged[key], currency)}, the ledger has "
                      f"{money(booked.get(key, ZERO), currency)} paid")
            if market_id in pending:
                detail += " (the rest is pending in the ledger)"
            found.append(Difference(CHARGED_NOT_BOOKED, place, market_id, gap.quantize(CENT), detail))
        else:
            detail = (f"{group}: the ledger has {money(booked[key], currency)} paid, {market} charged "
                      f"{money(charged.get(key, ZERO), currency)}")
            if local and never_there:
                detail += f" ({never_there})"
            found.append(Difference(BOOKED_NOT_CHARGED, place, None if local else market_id, (-gap).quantize(CENT), detail))
    return found
