"""The ledger against Prolific's own records: what Prolific paid for a batch, and what the ledger booked as paid.

Prolific's side, read from Prolific and never computed with the platform's own fee rate (every study of the batch,
its submissions listed to the last page, and each submission read on its own for its ``bonus_payments``, which the
list does not carry): an APPROVED submission was charged the study's ``reward`` (a whole session's) plus the fees
and VAT Prolific's cost calculator states for one place at that reward (``money.place_charges``); each of a
submission's ``bonus_payments`` was charged plus its fees and VAT: for a payment that matches a line of one of the
platform's bulk bonuses, that line's share of what Prolific's create answer stated for the bulk (listings do not
carry fees), else the calculator's figure for that amount.  The ledger's side is its ``paid`` entries: the reward a
submission paid (the session's approved HITs, and the line of its reward that pays no HIT:
``review.REWARD_TOKENS``), the rewards and bonuses paid by bulk bonuses, and their fees.  Both sides are in the
batch's currency (``currency`` in the result); a study Prolific states in another currency is not compared
(``unchecked``).

Both sides are compared per submission (the session id), rewards and bonuses apart, with the result shapes and
the difference kinds of ``hits.markets.reconcile`` (``hit`` is the study's id, ``assignment`` the submission's):
``charged_not_booked``, ``booked_not_charged``, and ``unchecked`` for a study whose listing failed (its
entries are left out).  A submission Prolific lists that the platform never recorded counts on Prolific's side
and is reported as charged but not booked.  One failing study never stops the others.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from decimal import Decimal

from hits.models import HIT, Assignment, Batch, LedgerEntry
from hits.markets.models import Reconciliation
from hits.markets.money import currency_of
from hits.markets.reconcile import BONUS, REWARD, UNCHECKED, ZERO, Difference, ReconcileResult, compare
from hits.prolific import fees
from hits.prolific.bonuses import line_fees, parse_csv
from hits.prolific.client import Prolific, ProlificError
from hits.prolific.models import ProlificBonus, ProlificSession, ProlificStudy
from hits.prolific.money import place_charges
from hits.prolific.review import REWARD_TOKENS

log = logging.getLogger(__name__)
MARKET = "prolific"


class Quotes:
    """Prolific's stated fees and VAT on an amount (its cost calculator for one place), asked once per amount."""

    def __init__(self, client: Prolific):
        self.client, self.known = client, {}

    def __call__(self, amount: Decimal) -> Decimal:
        if amount not in self.known:
            self.known[amount] = place_charges(self.client, amount)[0]
        return self.known[amount]


def _bulk_lines(study: ProlificStudy, quote: Quotes) -> dict[str, list[tuple[Decimal, Decimal]]]:
    """Per participant, the (amount, fee) of each line of the study's bulk bonuses whose pay call was sent, the
    fee being what Prolific's create answer stated for the bulk, spread over its lines (``bonuses.line_fees``), or
    the calculator's figure when the answer stated none."""
    lines: dict[str, list[tuple[Decimal, Decimal]]] = defaultdict(list)
    sent = [ProlificBonus.State.PAID, ProlificBonus.State.UNKNOWN, ProlificBonus.State.PAYING]
    for bonus in ProlificBonus.objects.filter(study=study, state__in=sent).order_by("pk"):
        charged = line_fees(bonus) if bonus.fees is not None else None
        for pid, amount in parse_csv(bonus.csv_bonuses):
            lines[pid].append((amount, charged[pid] if charged is not None else quote(amount)))
    return lines


def _charged(client: Prolific, study: ProlificStudy, quote: Quotes) -> dict[tuple[str, str], Decimal]:
    """Reward + fees of each APPROVED submission (the study's ``reward``), and each bonus payment + its fees (those of
    the bulk line it matches, else the calculator's: a bonus paid outside the platform), as Prolific states them.
    The study's list gives the submissions and their statuses; each submission's ``bonus_payments`` are read on it
    (``GET /submissions/{id}/``), where Prolific documents them.  A study in another currency than its batch's
    raises ``ProlificError`` (not compared)."""
    charged: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
    lines = _bulk_lines(study, quote)
    detail = client.get(f"/studies/{study.prolific_id}/") or {}
    stated = str(detail.get("currency_code") or "").upper()
    if stated and stated != currency_of(study.batch):
        raise ProlificError(f"Prolific states this study in {stated}, the batch's ledger is in {currency_of(study.batch)}")
    reward = Decimal(int(detail.get("reward") or 0)) / 100
    for item in client.paginate(f"/studies/{study.prolific_id}/submissions/"):
        sid = item["id"]
        if item.get("status") == "APPROVED":
            charged[(sid, REWARD)] += reward + quote(reward)
        mine = list(lines.get(item.get("participant_id", ""), []))
        for paid in client.get(f"/submissions/{sid}/").get("bonus_payments") or []:
            amount = Decimal(int(paid)) / 100
            line = next((line for line in mine if line[0] == amount), None)
            if line is not None:
                mine.remove(line)
            charged[(sid, BONUS)] += amount + (line[1] if line is not None else quote(amount))
    return charged


def _booked(batch: Batch) -> tuple[dict, dict, Decimal]:
    """Paid ledger money per (session id, reward|bonus), the study of each session, and the paid total."""
    # An assignment's session: its worker's in the study of its task type and kind (``sessions.session_assignments``).
    sessions = {
        (s.worker_id, s.study.task_type_id, s.study.kind): s
        for s in ProlificSession.objects.filter(study__batch=batch).select_related("study")
    }
    session_of: dict[int, ProlificSession] = {}
    rows = Assignment.objects.filter(hit__batch=batch, ledger__isnull=False).distinct().values_list(
        "pk", "worker_id", "hit__task_type_id", "hit__kind")
    for pk, worker_id, task_type_id, kind in rows:
        study_kind = ProlificStudy.Kind.SCREENING if kind == HIT.Kind.QUALIFICATION else ProlificStudy.Kind.MAIN
        session = sessions.get((worker_id, task_type_id, study_kind))
        if session is not None:
            session_of[pk] = session
    by_bonus = set(ProlificBonus.objects.filter(batch=batch, state=ProlificBonus.State.PAID).values_list("entries", flat=True))
    booked: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
    study_of: dict[str, str] = {}
    total = ZERO
    rows = LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID).values_list(
        "pk", "assignment_id", "kind", "fee_for_id", "fee_for__kind", "amount", "request_token", "fee_for__request_token",
    )
    for pk, assignment_id, kind, fee_for, fee_for_kind, amount, token, fee_for_token in rows:
        money = fee_for if kind == LedgerEntry.Kind.FEE else pk
        money_kind = fee_for_kind if kind == LedgerEntry.Kind.FEE else kind
        # A line of the submission's reward that pays no HIT (``review.book_base``) is Prolific's reward.
        of_reward = ((fee_for_token if kind == LedgerEntry.Kind.FEE else token) or "").startswith(REWARD_TOKENS)
        group = BONUS if money in by_bonus or (money_kind == LedgerEntry.Kind.BONUS and not of_reward) else REWARD
        session = session_of.get(assignment_id)
        key = session.session_id if session else f"local:{assignment_id}"
        if session:
            study_of[key] = session.study.prolific_id or ""
        booked[(key, group)] += amount
        total += amount
    return booked, study_of, total


def reconcile_batch(batch: Batch, client: Prolific | None = None, save: bool = True) -> ReconcileResult:
    """Compare the batch's ledger with Prolific's records; stored (``Reconciliation``, market "prolific")."""
    own = client is None
    client = client or Prolific()
    result = ReconcileResult(currency=currency_of(batch))
    quote = Quotes(client)
    charged: dict[tuple[str, str], Decimal] = defaultdict(lambda: ZERO)
    study_of: dict[str, str] = {}
    unchecked: set[str] = set()
    try:
        for study in ProlificStudy.objects.filter(batch=batch, prolific_id__isnull=False).order_by("pk"):
            calls = client.requests_sent
            try:
                listed = _charged(client, study, quote)
            except ProlificError as exc:
                unchecked.add(study.prolific_id)
                result.differences.append(Difference(UNCHECKED, study.prolific_id, None, None, f"not compared: {exc}"))
                continue
            finally:
                result.calls += client.requests_sent - calls
            result.hits_checked += 1
            for key, amount in listed.items():
                charged[key] += amount
                study_of[key[0]] = study.prolific_id
    finally:
        if own:
            client.close()
    booked, booked_study, ledger_total = _booked(batch)
    result.ledger_total = ledger_total.quantize(fees.CENT)
    result.market_total = sum(charged.values(), ZERO).quantize(fees.CENT)
    result.differences.extend(compare(charged, booked, {**booked_study, **study_of}, unchecked, "Prolific",
                                      currency=result.currency))
    if save:
        Reconciliation.objects.create(
            batch=batch, market=MARKET, ledger_total=result.ledger_total, market_total=result.market_total,
            differences=[d.as_dict() for d in result.differences], hits_checked=result.hits_checked,
        )
    return result
