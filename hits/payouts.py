"""What each worker has earned, from the ledger: one source for the researcher's payout report and the
worker's own earnings page, so the two always show the same "owed".

Money is counted only once it is in the ledger (``LedgerEntry``): a reward when the work is approved, a
bonus when it is given.  Work submitted but not reviewed yet is shown apart ("awaiting review", at the
HIT's reward): it may still be rejected, so it is not owed.  (The worker page used to add that work, and
bonuses by the assignment's ``paid`` flag, to its "owed": it said $3.32 where the ledger said $1.32.)

``owed``: rewards and bonuses not paid yet (recorded ``owed`` for local workers, who are paid outside the
platform, or ``pending`` until MTurk confirms the call); ``paid``: confirmed paid; ``fees``: MTurk's
commission (the researcher's cost, never the worker's money).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Q, Sum

from hits.models import HIT, Assignment, Batch, LedgerEntry, Worker
from hits.markets.money import CENT, ZERO, cents  # noqa: F401 - also this module's names


@dataclass
class Totals:
    """Counts and money of some work: one worker in one campaign (``Payout``), or the sums of several."""

    approved: int = 0
    awaiting_review: int = 0
    rejected: int = 0
    rewards: Decimal = ZERO
    bonuses: Decimal = ZERO
    owed: Decimal = ZERO
    paid: Decimal = ZERO
    fees: Decimal = ZERO
    awaiting_amount: Decimal = ZERO


@dataclass(kw_only=True)
class Payout(Totals):
    """One worker's money in one batch (campaign): the figures of ``Totals`` for that worker and batch."""

    worker: Worker
    batch: Batch
    bonus_items: list = field(default_factory=list)

    @property
    def earned(self) -> Decimal:
        return self.rewards + self.bonuses


def payouts(batch: Batch | None = None, worker: Worker | None = None) -> list[Payout]:
    """Per (worker, batch): counts of reviewed and unreviewed work and the ledger's money, ordered by batch then
    worker.  Restrict to one ``batch`` (a campaign's payout report) or one ``worker`` (their earnings page)."""
    entries = LedgerEntry.objects.exclude(state=LedgerEntry.State.REFUSED)  # never paid, never owed
    assignments = Assignment.objects.filter(state__in=Assignment.DONE_STATES)
    if batch is not None:
        entries, assignments = entries.filter(batch=batch), assignments.filter(hit__batch=batch)
    if worker is not None:
        entries, assignments = entries.filter(worker=worker), assignments.filter(worker=worker)
    rows: dict[tuple[int, int], Payout] = {}
    workers: dict[int, Worker] = {}
    batches: dict[int, Batch] = {}

    def row(worker_id: int, batch_id: int) -> Payout:
        key = (batch_id, worker_id)
        if key not in rows:
            rows[key] = Payout(worker=workers[worker_id], batch=batches[batch_id])
        return rows[key]

    counted = (
        # Test items are unpaid and never reviewed for pay: never "approved" nor "awaiting review" here.
        assignments.exclude(hit__kind=HIT.Kind.QUALIFICATION).values("worker_id", "hit__batch_id")
        .annotate(
            approved=Count("pk", filter=Q(state=Assignment.State.APPROVED)),
            awaiting=Count("pk", filter=Q(state=Assignment.State.SUBMITTED)),
            rejected=Count("pk", filter=Q(state=Assignment.State.REJECTED)),
            awaiting_amount=Sum("hit__reward", filter=Q(state=Assignment.State.SUBMITTED)),
        )
    )
    money = entries.values("worker_id", "batch_id").annotate(
        rewards=Sum("amount", filter=Q(kind=LedgerEntry.Kind.REWARD)),
        bonuses=Sum("amount", filter=Q(kind=LedgerEntry.Kind.BONUS)),
        owed=Sum("amount", filter=~Q(kind=LedgerEntry.Kind.FEE) & ~Q(state=LedgerEntry.State.PAID)),
        paid=Sum("amount", filter=~Q(kind=LedgerEntry.Kind.FEE) & Q(state=LedgerEntry.State.PAID)),
        fees=Sum("amount", filter=Q(kind=LedgerEntry.Kind.FEE)),
    )
    counted, money = list(counted), list(money)
    worker_ids = {c["worker_id"] for c in counted} | {m["worker_id"] for m in money}
    batch_ids = {c["hit__batch_id"] for c in counted} | {m["batch_id"] for m in money}
    workers.update(Worker.objects.in_bulk(worker_ids))
    batches.update(Batch.objects.in_bulk(batch_ids))
    for c in counted:
        r = row(c["worker_id"], c["hit__batch_id"])
        r.approved, r.awaiting_review, r.rejected = c["approved"], c["awaiting"], c["rejected"]
        r.awaiting_amount = cents(c["awaiting_amount"])
    for m in money:
        r = row(m["worker_id"], m["batch_id"])
        r.rewards, r.bonuses = cents(m["rewards"]), cents(m["bonuses"])
        r.owed, r.paid, r.fees = cents(m["owed"]), cents(m["paid"]), cents(m["fees"])
    for entry in entries.filter(kind=LedgerEntry.Kind.BONUS).order_by("pk"):
        rows[(entry.batch_id, entry.worker_id)].bonus_items.append(entry)
    return sorted(rows.values(), key=lambda r: (r.batch.name, r.batch.pk, r.worker.external_id))


def totals(rows: list[Payout]) -> Totals:
    """The sums of a list of payouts (a campaign's, or a worker's over every campaign)."""
    t = Totals()
    for r in rows:
        for name in Totals.__dataclass_fields__:
            setattr(t, name, getattr(t, name) + getattr(r, name))
    return t


def payment_records(batch: Batch) -> list[dict]:
    """The audit trail of money marked paid by hand (``hits.payments.mark_paid``), newest first: per marking
    and worker, when, by whom, the amount, how many ledger entries and the note."""
    rows = (
        LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID, settled_at__isnull=False)
        .exclude(kind=LedgerEntry.Kind.FEE)
        .values("settled_at", "settled_by__username", "worker_id", "worker__external_id", "settlement_note")
        .annotate(amount=Sum("amount"), entries=Count("pk"))
        .order_by("-settled_at", "worker__external_id")
    )
    return [
        {
            "when": row["settled_at"], "by": row["settled_by__username"], "worker": row["worker__external_id"], "worker_id": row["worker_id"],
            "note": row["settlement_note"], "amount": cents(row["amount"]), "entries": row["entries"],
        }
        for row in rows
    ]


def last_entry_id(batch: Batch) -> int:
    """The newest ledger entry of the batch (0 when none): what a payout page was drawn from."""
    return LedgerEntry.objects.filter(batch=batch).order_by("-pk").values_list("pk", flat=True).first() or 0


def paid_by_mturk(batch: Batch) -> list[dict]:
    """Rewards MTurk paid on its own, before or without a review here (its automatic approval, or work submitted
    straight to MTurk), oldest first: what the researcher should know was paid unseen.  Each with its fee."""
    entries = (
        # (a Prolific submission's reward Prolific paid on its own is booked as a bonus: hits.prolific.review.paid_unseen)
        LedgerEntry.objects.filter(batch=batch, kind__in=[LedgerEntry.Kind.REWARD, LedgerEntry.Kind.BONUS], paid_by_mturk=True)
        .select_related("worker", "assignment", "fee")
        .order_by("pk")
    )
    rows = []
    for entry in entries:
        fee = getattr(entry, "fee", None)
        rows.append({
            "worker": entry.worker.external_id, "worker_id": entry.worker_id, "assignment": entry.assignment_id, "hit": entry.assignment.hit_id,
            "reward": cents(entry.amount), "fee": cents(fee.amount if fee is not None else 0), "reason": entry.reason,
            "answers": entry.assignment.answers is not None, "when": entry.settled_at,
        })
    return rows


def refused_bonuses(batch: Batch) -> list[dict]:
    """Bonuses the market refused for good (``LedgerEntry.State.REFUSED``: e.g. MTurk no longer has the
    assignment's HIT), oldest first, each with the reason: not paid, and counted nowhere else on the page."""
    entries = (
        LedgerEntry.objects.filter(batch=batch, kind=LedgerEntry.Kind.BONUS, state=LedgerEntry.State.REFUSED)
        .select_related("worker", "assignment").order_by("pk")
    )
    return [
        {"worker": e.worker.external_id, "worker_id": e.worker_id, "assignment": e.assignment_id, "hit": e.assignment.hit_id,
         "amount": cents(e.amount), "reason": e.reason, "why": e.error, "when": e.settled_at}
        for e in entries
    ]


__all__ = [
    "Payout", "Totals", "cents", "last_entry_id", "paid_by_mturk", "payment_records", "payouts", "refused_bonuses", "totals",
]
