"""A batch's budget cap, held under any interleaving of publishes, extra places, approvals and bonuses.

What a batch has committed on its market (one definition, for every caller on both markets):

    committed = places    (MTurk: every published HIT's (reward + fee) x places, and the HITs MTurk said it
                           created whose HITId is not read yet; Prolific: every created study's places x
                           session pay x (1 + fee rate))
              + given     (bonuses researchers gave and the market's fees on them, not those refused for good)
              + reserved  (``BudgetReservation`` rows held for market calls in flight)

An approval commits nothing new: its reward was committed with its place (MTurk's HIT, Prolific's study).

Every commitment is checked and recorded in one locked step before its market call: the batch's row is locked
(``SELECT ... FOR UPDATE``), ``committed`` is read with every reservation in flight, the new amount is checked
against the cap, and the reservation (``reserve``) or the caller's own record-before-send row (a bonus's ledger
entries, inside the caller's transaction: ``check``) is written before the lock is let go.  Two callers thus
never both see the same room under the cap.  A reservation is ``settle``d in the transaction that records what
the market made (its records count it from then on), ``release``d when the call failed for good, and kept while
the answer is ambiguous until the market's records settle it.  The local market has no cap.
"""

from __future__ import annotations

from decimal import Decimal
from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from hits.markets.money import CENT, money
from hits.markets.registry import market_for
from hits.models import Batch, BudgetReservation, LedgerEntry



class CapReached(Exception):
    """A commitment would take the batch over its budget cap; nothing was recorded.  The message names the cap,
    what is already committed or reserved, and what the commitment would add."""

    def __init__(self, batch: Batch, what: str, amount: Decimal, spent: Decimal):
        self.cap, self.amount, self.spent, self.what, self.batch = batch.budget_cap, amount, spent, what, batch
        super().__init__(
            f"{what} ({money(amount, batch)}) would bring the batch to {money(spent + amount, batch)}, over its "
            f"budget cap of {money(batch.budget_cap, batch)} ({money(spent, batch)} already committed or reserved)"
        )

    @property
    def stop_note(self) -> str:
        """The publisher's one-line note on why it stopped."""
        return (f"budget cap of {money(self.cap, self.batch)} reached ({money(self.spent, self.batch)} committed or "
                f"reserved; {self.what} would add {money(self.amount, self.batch)})")


def capped(batch: Batch) -> bool:
    """Whether the batch's commitments are held to a cap: it has one and runs on a paid market."""
    return batch.budget_cap is not None and (batch.on_mturk or batch.on_prolific)


def places(batch: Batch) -> Decimal:
    """What the market's records say the batch's published places commit (see the module's formula; each market
    says it through the seam: ``Market.places_committed``); nothing on the local market."""
    return market_for(batch).places_committed(batch)


def given(batch: Batch) -> Decimal:
    """Bonuses given on the batch and the market's fees on them, except those the market refused for good and the
    lines the market's places count already (``Market.in_places_tokens``: e.g. a Prolific session's reward that paid
    no HIT)."""
    entries = (
        LedgerEntry.objects.filter(batch=batch)
        .filter(Q(kind=LedgerEntry.Kind.BONUS) | Q(fee_for__kind=LedgerEntry.Kind.BONUS))
        .exclude(state=LedgerEntry.State.REFUSED)
    )
    for prefix in market_for(batch).in_places_tokens():
        entries = entries.exclude(request_token__startswith=prefix)  # its fee's token starts alike ("<token>-fee")
    total = entries.aggregate(s=Sum("amount"))["s"]
    return Decimal(total or 0)


def reserved(batch: Batch) -> Decimal:
    """Money held for the batch's market calls in flight."""
    total = BudgetReservation.objects.filter(batch=batch, state=BudgetReservation.State.HELD).aggregate(s=Sum("amount"))["s"]
    return Decimal(total or 0)


def committed(batch: Batch) -> Decimal:
    """What the batch has committed against its budget cap: places + given + reserved (the module's formula)."""
    return (places(batch) + given(batch) + reserved(batch)).quantize(CENT)


def locked(batch: Batch | int) -> Batch:
    """The batch's row (or the batch of this id), locked until the caller's transaction ends: commitments to
    one batch go one at a time.  The lock is PostgreSQL's FOR NO KEY UPDATE: it still excludes every other
    such lock, but not the key-share lock a foreign-key check takes, so rows that merely point at the batch
    (an approval's ledger entry, a new HIT) are written meanwhile instead of waiting for the holder's commit."""
    return Batch.objects.select_for_update(no_key=True).get(pk=getattr(batch, "pk", batch))


def check(batch: Batch, amount: Decimal, what: str) -> None:
    """Refuse (``CapReached``) ``amount`` more for ``what`` when it would pass the cap.  The caller holds the
    batch's row lock (``locked``) and records what it commits before its transaction ends."""
    if not capped(batch):
        return
    amount = Decimal(amount).quantize(CENT)
    spent = committed(batch)
    if spent + amount > batch.budget_cap:
        raise CapReached(batch, what, amount, spent)


def reserve(batch: Batch, amount: Decimal, key: str, what: str) -> BudgetReservation:
    """Hold ``amount`` against the batch's cap for the market call named ``key``, before the call is sent (its own
    transaction: the lock is let go once the reservation is recorded).  A reservation still held under ``key`` (an
    earlier try whose answer was lost) is reused, grown to ``amount`` if the call now asks for more (the
    difference checked): the call's money is not counted twice.  Raises
    ``CapReached`` (nothing recorded) when the amount would pass the cap."""
    amount = Decimal(amount).quantize(CENT)
    with transaction.atomic():
        batch = locked(batch)
        earlier = BudgetReservation.objects.select_for_update().filter(key=key).first()
        if earlier is not None and earlier.state == BudgetReservation.State.HELD:
            if amount > earlier.amount:  # the retried call now asks for more: only the difference is new
                check(batch, amount - earlier.amount, what)
                earlier.amount, earlier.what = amount, what[:200]
                earlier.save(update_fields=["amount", "what"])
            return earlier
        check(batch, amount, what)
        if earlier is None:
            return BudgetReservation.objects.create(batch=batch, key=key, what=what[:200], amount=amount)
        earlier.batch, earlier.amount, earlier.what = batch, amount, what[:200]
        earlier.state, earlier.ended_at = BudgetReservation.State.HELD, None
        earlier.save(update_fields=["batch", "amount", "what", "state", "ended_at"])
        return earlier


def reserve_for_publish(report, batch: Batch, amount: Decimal, key: str, what: str) -> bool:
    """A publisher's ``reserve``: True when the money is held; else the publish's ``report.stopped`` says which cap
    stopped it, and False (the call is not made)."""
    try:
        reserve(batch, amount, key, what)
    except CapReached as exc:
        report.stopped = exc.stop_note
        return False
    return True


def settle(key: str) -> bool:
    """The market's records now count the call's money (call it in the transaction that records them)."""
    return _end(key, BudgetReservation.State.SETTLED)


def release(key: str) -> bool:
    """The call failed for good: nothing was committed, the money is free again."""
    return _end(key, BudgetReservation.State.RELEASED)


def _end(key: str, state: str) -> bool:
    return bool(
        BudgetReservation.objects.filter(key=key, state=BudgetReservation.State.HELD).update(state=state, ended_at=timezone.now())
    )


__all__ = ["CapReached", "capped", "check", "committed", "given", "locked", "places", "release", "reserve", "reserve_for_publish", "reserved", "settle"]
