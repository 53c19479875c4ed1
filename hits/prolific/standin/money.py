"""The stand-in's money (``hits.prolific.standin``): the workspace's currency, Prolific's fee and the VAT on it,
what the balance holds, the study cost calculator, and the bonuses (created, then paid asynchronously).

As Prolific's reference states it: every amount is in the minor unit (cents or pence) of the workspace's
currency (``currency_code``: ``USD`` or ``GBP``, the two a workspace may have); Prolific charges its service fee
on every reward and bonus "+ VAT where applicable".  Here the fee is ``fee_rate`` of the amount and the VAT is
``vat_rate`` of the fee, each rounded half up to the minor unit; a reward approved costs reward + fee + VAT, a
bulk bonus ``total_amount`` = ``amount`` + ``fees`` + ``vat`` (its create answer states all four), and the cost
calculator (``POST /study-cost-calculator/``) quotes ``total_cost`` with ``rewards``, ``fees`` and ``vat``.

``vat_rate`` by default: 0.20 in a GBP workspace (the UK's standard rate, what a UK researcher is charged),
0 in a USD one; ``--vat`` sets it.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from hits.prolific.standin.common import APPROVED, AWAITING_REVIEW, UNPUBLISHED, Refused, cents, iso, new_id, whole

CURRENCIES = ("USD", "GBP")
DEFAULT_VAT = {"USD": "0", "GBP": "0.20"}


def rate(value, what: str) -> Decimal:
    """A share from 0 (included) to 1 (excluded), or ValueError naming ``what``."""
    try:
        share = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{what} {value!r} is not a number") from None
    if not share.is_finite() or not 0 <= share < 1:
        raise ValueError(f"{what} {value!r} must be at least 0 and below 1 (0.20 is 20%)")
    return share


def currency_code(value) -> str:
    code = str(value or "").upper()
    if code not in CURRENCIES:
        raise ValueError(f"currency {value!r}: a Prolific workspace's currency is one of {', '.join(CURRENCIES)}")
    return code


class StandInMoney:
    """Mixed into ``ProlificStandIn``: ``currency``, ``fee_rate`` and ``vat_rate`` are set by its constructor; the
    balance and the bonuses (``state['bonuses']``) are read and changed under its lock."""

    currency = "USD"
    fee_rate = Decimal("0")
    vat_rate = Decimal("0")

    def fee(self, amount: int) -> int:
        """Prolific's fee on ``amount`` minor units: ``fee_rate`` of it, rounded half up."""
        return int((Decimal(amount) * self.fee_rate).quantize(Decimal(1), rounding=ROUND_HALF_UP))

    def vat(self, fee: int) -> int:
        """The VAT on a fee: ``vat_rate`` of it, rounded half up."""
        return int((Decimal(fee) * self.vat_rate).quantize(Decimal(1), rounding=ROUND_HALF_UP))

    def charges(self, amount: int) -> tuple[int, int]:
        """(fee, VAT) Prolific charges on ``amount``."""
        fee = self.fee(amount)
        return fee, self.vat(fee)

    def _place_cost(self, study: dict) -> int:
        return study["reward"] + sum(self.charges(study["reward"]))

    def _held_by(self, study: dict) -> int:
        """What a published study holds of the balance: every place not yet paid (only those waiting for
        review once it is stopped)."""
        if study["status"] == UNPUBLISHED:
            return 0
        subs = self._submissions_of(study)
        if study["stopped"]:
            places = sum(1 for s in subs if s["status"] == AWAITING_REVIEW)
        else:
            places = max(0, study["total_available_places"] - sum(1 for s in subs if s["status"] == APPROVED))
        return places * self._place_cost(study)

    def _held(self) -> int:
        studies = sum(self._held_by(s) for s in self.state["studies"].values())
        paying = sum(b["total_amount"] for b in self.state["bonuses"].values() for p in b["payments"] if not p["settled"])
        return studies + paying

    def available(self) -> int:
        return self.state["balance"] - self._held()

    def _split(self, total: int) -> dict:
        """A balance as Prolific breaks it down: for participants, for Prolific's fees, for the VAT on them."""
        share = self.fee_rate * (1 + self.vat_rate)
        rewards = int((Decimal(total) / (1 + share)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        rest = total - rewards
        vat = int((Decimal(rest) * self.vat_rate / (1 + self.vat_rate)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        return {"rewards": rewards, "fees": rest - vat, "vat": vat, "total": total}

    def balance_view(self) -> dict:
        total, available = self.state["balance"], self.available()
        return {"currency_code": self.currency, "total_balance": total, "balance_breakdown": self._split(total),
                "available_balance": available, "available_balance_breakdown": self._split(available)}

    def _charge(self, kind: str, submission: dict, amount: int, fee: int, vat: int, now: float,
                bonus_id: str | None = None) -> None:
        self.state["balance"] -= amount + fee + vat
        self.state["ledger"].append({
            "kind": kind, "participant_id": submission["participant_id"], "submission_id": submission["id"],
            "study_id": submission["study_id"], "amount": amount, "fees": fee, "vat": vat, "bulk_bonus_id": bonus_id,
            "at": iso(now),
        })

    def study_cost(self, body) -> dict:
        """``POST /study-cost-calculator/``: what ``total_available_places`` places at ``reward`` cost, fees and VAT
        included (each place charged as an approval charges it)."""
        body = body if isinstance(body, dict) else {}
        missing = [name for name in ("reward", "total_available_places") if body.get(name) in (None, "")]
        if missing:
            raise Refused(400, {name: ["This field is required."] for name in missing})
        reward = whole(body["reward"], "reward", 0)
        places = whole(body["total_available_places"], "total_available_places", 1)
        fee, vat = self.charges(reward)
        rewards, fees, vats = reward * places, fee * places, vat * places
        return {"total_cost": rewards + fees + vats, "rewards": rewards, "fees": fees, "vat": vats,
                "currency_code": self.currency}

    # -- bonuses

    def create_bonus(self, body: dict, now: float) -> dict:
        if not isinstance(body, dict) or not body.get("study_id"):
            raise Refused(400, {"study_id": ["This field is required."]})
        study = self._study(body["study_id"])
        text = body.get("csv_bonuses")
        if not isinstance(text, str) or not text.strip():
            raise Refused(400, {"csv_bonuses": ["Lines '<participant or submission id>,<amount>' are required."]})
        subs = self._submissions_of(study)
        lines, bad = [], []
        for number, line in enumerate(text.strip().splitlines(), 1):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 2:
                raise Refused(400, {"csv_bonuses": [f"line {number} {line!r}: expected '<id>,<amount>'"]})
            amount = cents(parts[1], f"csv_bonuses line {number}")
            if amount <= 0:
                raise Refused(400, {"csv_bonuses": [f"line {number}: the amount must be above 0"]})
            submission = next((s for s in subs if parts[0] in (s["participant_id"], s["id"])), None)
            if submission is None:
                bad.append(parts[0])
                continue
            lines.append({"participant_id": submission["participant_id"], "submission_id": submission["id"], "amount": amount})
        if bad:
            raise Refused(400, {"csv_bonuses": [f"Not taking part in study {study['id']}: {', '.join(bad)}"]})
        amount = sum(line["amount"] for line in lines)
        fees, vat = self.charges(amount)
        bonus = {"id": new_id(), "study": study["id"], "amount": amount, "fees": fees, "vat": vat,
                 "total_amount": amount + fees + vat, "lines": lines, "payments": [], "created_at": iso(now)}
        self.state["bonuses"][bonus["id"]] = bonus
        return self.bonus_view(bonus)

    def bonus_view(self, bonus: dict) -> dict:
        view = {k: v for k, v in bonus.items() if k not in ("lines", "payments")}
        pending = any(not p["settled"] for p in bonus["payments"])
        view["status"] = "PAYING" if pending else ("PAID" if bonus["payments"] else "CREATED")
        view["payments"] = len(bonus["payments"])
        return view

    def pay_bonus(self, bonus_id: str, now: float) -> None:
        bonus = self._find("bonuses", bonus_id, "bulk bonus payment")
        if bonus["total_amount"] > self.available():
            raise Refused(400, f"Insufficient funds: the bonuses cost {bonus['total_amount']} cents with fees; the "
                               f"available balance is {self.available()} cents")
        bonus["payments"].append({"paid_at": now, "settled": False})

    def _settle(self, bonus: dict, payment: dict, now: float) -> None:
        payment["settled"] = True
        last = len(bonus["lines"]) - 1
        for index, line in enumerate(bonus["lines"]):
            submission = self.state["submissions"][line["submission_id"]]
            # The bulk's fee and VAT are charged with its last line: the ledger adds up to the bulk's exactly.
            fee, vat = (bonus["fees"], bonus["vat"]) if index == last else (0, 0)
            submission["bonus_payments"].append(line["amount"])
            self._charge("bonus", submission, line["amount"], fee, vat, now, bonus["id"])
