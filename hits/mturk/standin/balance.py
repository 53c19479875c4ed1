"""The MTurk stand-in's money: the balance and ledger, MTurk's fees, what is on hold and SendBonus.

A mixin of ``hits.mturk.standin.StandIn`` (which builds on it; see its docstring for what the
stand-in models); it works on the instance's ``state``, ``lock`` and ``clock``.
"""

from __future__ import annotations

from decimal import Decimal

from hits.mturk.standin.common import CENT, Refused, bonus_fee, money, new_id, reward_fee, text, valid_worker_id


class MoneyMixin:
    """The balance, charges, holds and bonuses."""

    def _balance(self) -> Decimal:
        return Decimal(self.state["balance"])

    def _charge(self, kind: str, amount: Decimal, fee: Decimal, at: float, assignment: dict, automatic=False) -> None:
        self.state["balance"] = str(self._balance() - amount - fee)
        self.state["ledger"].append(
            {
                "kind": kind,
                "at": at,
                "HITId": assignment["HITId"],
                "AssignmentId": assignment["AssignmentId"],
                "WorkerId": assignment["WorkerId"],
                "amount": str(amount),
                "fee": str(fee),
                "total": str(amount + fee),
                "automatic": automatic,
            }
        )
        self._changed()

    def _held(self, hit: dict, now: float) -> Decimal:
        """What MTurk holds for the HIT: reward + fee for every place that may still be paid.

        A place is held while it is free on a HIT not expired, in progress or submitted; it is released when
        its work is approved (then charged), rejected, returned or abandoned once the HIT has expired, and
        when the HIT expires or is deleted with places unused."""
        if hit["deleted"]:
            return Decimal("0.00")
        counts = self._counts(hit, now)
        places = counts["NumberOfAssignmentsAvailable"] + counts["NumberOfAssignmentsPending"] + counts["submitted"]
        reward = Decimal(hit["Reward"])
        return (reward + reward_fee(reward, hit["MaxAssignments"])) * places

    def _on_hold(self, now: float) -> Decimal:
        return sum((self._held(hit, now) for hit in self.state["hits"].values()), Decimal("0.00"))

    def _available(self, now: float) -> Decimal:
        return self._balance() - self._on_hold(now)

    def _need_funds(self, cost: Decimal, what: str, now: float) -> None:
        available = self._available(now)
        if cost > available:
            raise Refused(f"Your account's available balance of ${available} is insufficient for {what} (${cost}).")

    def _op_GetAccountBalance(self, params, now, request_id):
        return {"AvailableBalance": str(self._available(now)), "OnHoldBalance": str(self._on_hold(now))}

    def _op_SendBonus(self, params, now, request_id):
        valid_worker_id(params["WorkerId"])
        assignment = self._assignment(params["AssignmentId"])
        if params["WorkerId"] != assignment["WorkerId"]:
            raise Refused(
                f"Worker {params['WorkerId']} did not work on assignment {assignment['AssignmentId']}.")
        amount = money(params["BonusAmount"], "BonusAmount")
        if amount < CENT:
            raise Refused("BonusAmount must be at least $0.01")
        reason = text(params, "Reason", 4096, required=True, plain=True)
        token = self._check_token("SendBonus", params.get("UniqueRequestToken"), now)
        fee = bonus_fee(amount)
        self._need_funds(amount + fee, f"a bonus of ${amount}", now)
        bonus_id = new_id("B")
        self.state["bonuses"].append(
            {
                "BonusId": bonus_id,
                "WorkerId": assignment["WorkerId"],
                "BonusAmount": str(amount),
                "AssignmentId": assignment["AssignmentId"],
                "HITId": assignment["HITId"],
                "Reason": reason,
                "GrantTime": now,
                "UniqueRequestToken": token,
            }
        )
        self._charge("bonus", amount, fee, now, assignment)
        self._use_token("SendBonus", token, now, f"bonus {bonus_id}", request_id)
        return {}

    def _op_ListBonusPayments(self, params, now, request_id):
        hit_id, assignment_id = params.get("HITId"), params.get("AssignmentId")
        if (hit_id is None) == (assignment_id is None):
            raise Refused("ListBonusPayments needs either HITId or AssignmentId")
        if hit_id is not None:
            self._hit(hit_id)
        bonuses = [
            b for b in self.state["bonuses"]
            if (hit_id is None or b["HITId"] == hit_id) and (assignment_id is None or b["AssignmentId"] == assignment_id)
        ]
        fields = ("WorkerId", "BonusAmount", "AssignmentId", "Reason", "GrantTime")
        return self._page(
            bonuses, lambda b: (b["GrantTime"], b["BonusId"]), params, "BonusPayments", lambda b: {k: b[k] for k in fields}
        )

    def set_balance(self, balance) -> str:
        """Set the available balance (what the requester may still spend); funds on hold stay held."""
        with self._session() as now:
            self.state["balance"] = str(money(balance, "balance") + self._on_hold(now))
            self._changed()
            return str(self._available(now))
