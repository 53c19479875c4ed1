"""The Prolific stand-in's state and time: ``ProlificStandIn`` (its settings, the in-memory state, the clock,
one request under the lock at one instant, the API's dispatch, paging, and everything at once for ``state/``),
built from one mixin per concern (studies, submissions, money and bonuses, workspace and groups, faults)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import urlencode

from hits.markets.standin import Clock, ServedStandIn
from hits.prolific.standin.common import ACTIVE, TIMED_OUT, Refused, cents, iso, new_id
from hits.prolific.standin.faults import Faults
from hits.prolific.standin.messages import Messages
from hits.prolific.standin.money import DEFAULT_VAT, StandInMoney, currency_code, rate
from hits.prolific.standin.routes import ROUTES, Call, Handler
from hits.prolific.standin.studies import Studies
from hits.prolific.standin.submissions import Submissions
from hits.prolific.standin.workspace import Workspace

DEFAULT_TOKEN = "test-token"
DEFAULT_BALANCE = "10000.00"
DEFAULT_FEE_RATE = "0.3333"
DEFAULT_PAGE_SIZE = 5
DEFAULT_SETTLE_SECONDS = 60.0


class ProlificStandIn(Studies, Submissions, StandInMoney, Workspace, Messages, Faults, ServedStandIn):
    """Prolific's API and participant site, in memory, over HTTP (``start()`` in a thread, ``stop()``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str = DEFAULT_TOKEN,
                 balance=DEFAULT_BALANCE, fee_rate=DEFAULT_FEE_RATE, page_size: int = DEFAULT_PAGE_SIZE,
                 settle_seconds: float = DEFAULT_SETTLE_SECONDS, log: Callable[[str], None] | None = None,
                 currency: str = "USD", vat_rate=None):
        if not token:
            raise ValueError("the stand-in needs a token (the platform sends one in every request)")
        self.fee_rate = rate(fee_rate, "fee rate")
        self.currency = currency_code(currency)
        self.vat_rate = rate(DEFAULT_VAT[self.currency] if vat_rate is None else vat_rate, "VAT rate")
        if page_size < 1:
            raise ValueError("page size must be at least 1")
        if settle_seconds < 0:
            raise ValueError("the settle delay cannot be negative")
        self.token, self.page_size, self.settle_seconds, self.log = token, page_size, float(settle_seconds), log
        self.initial_balance = self._dollars_to_cents(balance)
        self.lock = threading.RLock()
        self.clock = Clock()
        self.faults: list[dict] = []
        self._reset_state(self.initial_balance)
        self._listen(host, port, Handler)
        self.url = f"http://{host}:{self.port}"

    @staticmethod
    def _dollars_to_cents(balance) -> int:
        try:
            return cents(balance, "balance")
        except Refused as exc:
            raise ValueError(str(exc)) from None

    thread_name = "prolific-standin"

    # -- state and time

    def _reset_state(self, balance: int) -> None:
        self.clock.restart(time.time())
        self.state = {
            "user_id": new_id(), "workspace_id": new_id(), "project_id": new_id(),
            "balance": balance, "studies": {}, "submissions": {}, "groups": {}, "bonuses": {}, "ledger": [],
            "messages": [],
        }

    def reset(self, balance=None) -> None:
        """Forget everything (studies, submissions, groups, bonuses, ledger, faults); the starting balance."""
        with self.lock:
            self._reset_state(self.initial_balance if balance is None else self._dollars_to_cents(balance))
            self.faults = []

    @contextmanager
    def session(self) -> Iterator[float]:
        """One request: under the lock, at one instant, with what fell due (time-outs, settled bonuses) done first."""
        with self.lock:
            now = self.clock.now()
            self._tick(now)
            yield now

    def advance(self, seconds) -> float:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise Refused(400, f"advance_seconds must be a number of seconds, at least 0, not {seconds!r}")
        with self.lock:
            self.clock.advance(seconds)
            with self.session() as now:
                return now

    def _tick(self, now: float) -> None:
        for submission in self.state["submissions"].values():
            if submission["status"] == ACTIVE:
                study = self.state["studies"][submission["study_id"]]
                if now >= submission["started_at"] + study["maximum_allowed_time"] * 60:
                    submission.update(status=TIMED_OUT)
        for bonus in self.state["bonuses"].values():
            for payment in bonus["payments"]:
                if not payment["settled"] and now >= payment["paid_at"] + self.settle_seconds:
                    self._settle(bonus, payment, now)

    def _find(self, table: str, key: str, what: str) -> dict:
        item = self.state[table].get(key)
        if item is None:
            raise Refused(404, f"No {what} with id {key!r}")
        return item


    def call(self, method: str, path: str, query: dict | None = None, body: Any = None) -> tuple[int, Any]:
        """One API request (``path`` with its ``/api/v1`` prefix), as (status, body); a refusal raises ``Refused``."""
        found = [(m, route.match(path), status, operation) for m, route, status, operation in ROUTES]
        found = [(m, match, status, operation) for m, match, status, operation in found if match]
        if not found:
            raise Refused(404, f"Nothing at {path}")
        for m, match, status, operation in found:
            if m == method:
                with self.session() as now:
                    return status, operation(self, Call(match.groups(), body, query or {}, path, now))
        raise Refused(405, f"Method {method} not allowed on {path}")

    # -- everything, for tests and rehearsals

    def dump(self) -> dict:
        with self.session() as now:
            paid: dict[str, dict] = {}
            totals = {"rewards": 0, "bonuses": 0, "fees": 0, "vat": 0}
            for entry in self.state["ledger"]:
                mine = paid.setdefault(entry["participant_id"], {"rewards": 0, "bonuses": 0})
                key = "rewards" if entry["kind"] == "reward" else "bonuses"
                mine[key] += entry["amount"]
                totals[key] += entry["amount"]
                totals["fees"] += entry["fees"]
                totals["vat"] += entry["vat"]
            return {
                "now": iso(now), "fee_rate": str(self.fee_rate), "vat_rate": str(self.vat_rate), "currency": self.currency,
                "settle_seconds": self.settle_seconds,
                "page_size": self.page_size, "user_id": self.state["user_id"],
                "workspace_id": self.state["workspace_id"], "project_id": self.state["project_id"],
                "initial_balance": self.initial_balance, "balance": self.balance_view(),
                "studies": [self.study_view(s) for s in self.state["studies"].values()],
                "submissions": [self.submission_view(s) for s in self.state["submissions"].values()],
                "groups": [dict(self.group_view(g), participant_ids=list(g["participants"]))
                           for g in self.state["groups"].values()],
                "bonuses": [dict(self.bonus_view(b), lines=b["lines"],
                                 pay_calls=[dict(p, paid_at=iso(p["paid_at"])) for p in b["payments"]])
                            for b in self.state["bonuses"].values()],
                "paid": paid, "totals": dict(totals, spent=sum(totals.values())),
                "ledger": list(self.state["ledger"]), "faults": [dict(f) for f in self.faults],
                "messages": [dict(m) for m in self.state.get("messages", [])],
            }

    # -- listings

    def page(self, items: list, path: str, query: dict) -> dict:
        """One page of ``items`` (``?page=N``; ``?page_size=M`` or the stand-in's ``page_size`` each) with Prolific's
        ``_links`` and ``meta``."""
        try:
            number = int(query.get("page", 1))
        except ValueError:
            raise Refused(400, {"page": [f"{query.get('page')!r} is not a page number"]}) from None
        if number < 1:
            raise Refused(400, {"page": ["Page numbers start at 1"]})
        size = query.get("page_size", self.page_size)
        if not str(size).isdigit() or not 1 <= int(size) <= 200:
            raise Refused(400, {"page_size": [f"{size!r} is not a page size from 1 to 200"]})
        size = int(size)
        last = max(1, -(-len(items) // size))

        def link(n: int | None) -> dict:
            return {"href": None if n is None else f"{self.url}{path}?{urlencode(dict(query, page=n))}", "title": None}

        return {
            "results": items[(number - 1) * size:number * size],
            "_links": {"self": link(number), "next": link(number + 1 if number < last else None),
                       "previous": link(number - 1 if number > 1 else None), "last": link(last)},
            "meta": {"count": len(items)},
        }
