"""Reviewing and paying work: approve, reject, bonus.

Each service changes the assignment and the ledger (``LedgerEntry``) in one
transaction, for local and MTurk batches alike.  For an MTurk batch the money
moves through MTurk: the entries are recorded ``pending`` and the MTurk calls
(ApproveAssignment, RejectAssignment, SendBonus with the entry's unique
request token) are made after the commit by the ``hits.mturk.settle_batch``
task and by every sync, so a failed or repeated call never loses or doubles
a payment.  For a local batch the entries are ``owed`` (paid outside the
platform).

Amounts:  reward entry = the HIT's reward (as published on MTurk);
          fee entry    = MTurk's commission on it (``hits.mturk.fees``), MTurk only;
          bonus entry  = the amount given, plus a 20% fee entry on MTurk.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from hits import budget
from hits.markets.money import CENT, money
from hits.markets.registry import market_for, market_named
from hits.models import Assignment, Batch, LedgerEntry

SETTLE_TASK = "hits.mturk.settle_batch"
# A Prolific batch's reviews and bonuses are sent by this task (``hits.prolific.review``, ``hits.prolific.bonuses``).
PROLIFIC_SETTLE_TASK = "hits.prolific.settle_batch"


# MTurk's OverrideRejection works only this long after the worker submitted.
OVERRIDE_REJECTION_WINDOW = timedelta(days=30)


OVERRIDE_AFTER_DELETION = (
    "MTurk no longer has this assignment's HIT (deleted), and it overrides a rejection only while the HIT exists; "
    "pay the worker a bonus instead"
)


def override_impossible(assignment: Assignment) -> bool:
    """Whether MTurk can no longer override the assignment's rejection: its MTurk HIT was deleted (by the sync
    once the override window had passed, or by MTurk itself)."""
    published = getattr(assignment.hit, "mturk", None)
    return published is not None and (published.deleted_at is not None or published.gone_at is not None)


def withdraw_override(assignment: Assignment, reason: str) -> bool:
    """An override asked for before MTurk deleted the HIT and not sent yet: it can never be made, so the assignment
    is rejected again and its reward and fee (pending, never sent to MTurk) are removed: nothing stays pending.
    Returns whether it was withdrawn."""
    with transaction.atomic():
        assignment = _locked(assignment)
        if assignment.state != Assignment.State.APPROVED:
            return False
        entries = LedgerEntry.objects.filter(assignment=assignment, kind=LedgerEntry.Kind.REWARD)
        if entries.exclude(state=LedgerEntry.State.PENDING).exists():
            return False  # paid, or owed locally: not an override waiting for MTurk
        LedgerEntry.objects.filter(fee_for__in=entries).delete()
        entries.delete()
        assignment.state = Assignment.State.REJECTED
        assignment.review_message = (f"{assignment.review_message} [override withdrawn: {reason}]".strip())[:1000]
        assignment.save(update_fields=["state", "review_message"])
    return True


def bonus_refused(entry: LedgerEntry, reason: str) -> bool:
    """A pending bonus the market refuses for good, its records showing it unpaid: it and its fee leave the pending
    list (state ``refused``, the reason kept for the researcher) and the assignment's bonus total drops by it.
    Returns whether it was pending (and so is refused now)."""
    with transaction.atomic():
        assignment = _locked(entry.assignment)
        moved = LedgerEntry.objects.filter(pk=entry.pk, kind=LedgerEntry.Kind.BONUS, state=LedgerEntry.State.PENDING).update(
            state=LedgerEntry.State.REFUSED, error=reason[:500], settled_at=timezone.now()
        )
        if not moved:
            return False
        LedgerEntry.objects.filter(fee_for_id=entry.pk).update(state=LedgerEntry.State.REFUSED, settled_at=timezone.now())
        assignment.bonus = max(assignment.bonus - entry.amount, Decimal("0.00"))
        assignment.save(update_fields=["bonus"])
    return True


class PaymentError(Exception):
    """The review or payment cannot be made as asked; nothing was changed."""


class BudgetExceeded(PaymentError):
    """The batch's budget cap would be exceeded."""


def _locked(assignment: Assignment) -> Assignment:
    return (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("hit__batch", "worker")
        .get(pk=assignment.pk)
    )


def _record(assignment: Assignment, kind: str, amount: Decimal, reason: str, by, token: str) -> LedgerEntry:
    batch = assignment.hit.batch
    on_market = batch.on_mturk or batch.on_prolific
    state = LedgerEntry.State.PENDING if on_market else LedgerEntry.State.OWED
    entry = LedgerEntry.objects.create(
        batch=batch, assignment=assignment, worker=assignment.worker, kind=kind, amount=amount,
        state=state, reason=reason[:1000], request_token=token, created_by=by,
    )
    if on_market:
        # The market's fee on it: MTurk's commission, Prolific's service fee (``Market.entry_fee``).
        fee, what = market_for(batch).entry_fee(assignment, kind, amount)
        LedgerEntry.objects.create(
            batch=batch, assignment=assignment, worker=assignment.worker, kind=LedgerEntry.Kind.FEE, fee_for=entry,
            amount=fee, state=state, reason=f"{what} on {kind}", request_token=f"{token}-fee", created_by=by,
        )
    return entry


def record_entry(assignment: Assignment, kind: str, amount: Decimal, reason: str, by, token: str) -> LedgerEntry:
    """A ledger entry (and its market fee) for an assignment, pending on a market (for the markets' own code)."""
    return _record(assignment, kind, amount, reason, by, token)


def reward_fee(assignment: Assignment, amount: Decimal | None = None) -> Decimal:
    """MTurk's commission on the assignment's reward (``amount``: the reward), as approving it books it."""
    return market_named("mturk").reward_fee(assignment, amount)


def reward_of(assignment: Assignment) -> Decimal:
    """What approving the assignment pays: the reward MTurk shows for its HIT; on Prolific, a qualification item's
    share of its screening study's reward (``hits.prolific.pricing.screening_item_reward``); else the HIT's own."""
    hit = assignment.hit
    if getattr(hit, "mturk", None) is not None:
        return market_named("mturk").reward_of(assignment)
    return market_for(hit.batch).reward_of(assignment)


def _after_commit(assignment: Assignment, settle: bool) -> None:
    if settle:
        # The market sends what was recorded (its SETTLE_TASK / PROLIFIC_SETTLE_TASK) once this commits.
        market_for(assignment.hit.batch).settle_soon(assignment.hit.batch)


def approve_assignment(
    assignment: Assignment, message: str = "", by=None, *, settle: bool = True, by_mturk: bool = False,
    only_submitted: bool = False,
) -> Assignment:
    """Accept a submitted assignment: the worker is paid the HIT's reward.

    Approving an approved assignment changes nothing.  A rejected one may be
    approved afterwards (MTurk's OverrideRejection): the reward is then paid.
    ``settle=False`` leaves the MTurk call to the caller (the sync settles in one pass).
    ``only_submitted``: an automatic approval; work reviewed meanwhile (e.g. rejected by the researcher at the same
    moment) is left as it is.
    """
    with transaction.atomic():
        assignment = _locked(assignment)
        if assignment.state == Assignment.State.APPROVED:
            return assignment
        if only_submitted and assignment.state != Assignment.State.SUBMITTED:
            return assignment
        if assignment.state not in (Assignment.State.SUBMITTED, Assignment.State.REJECTED):
            raise PaymentError(
                f"only submitted work can be approved; this assignment is {assignment.get_state_display().lower()}"
            )
        if (
            not by_mturk
            and assignment.state == Assignment.State.REJECTED
            and assignment.hit.batch.on_mturk
            and assignment.submitted_at is not None
            and timezone.now() - assignment.submitted_at > OVERRIDE_REJECTION_WINDOW
        ):
            raise PaymentError(
                "MTurk lets a rejection be overridden only within 30 days of the submission; pay the worker a bonus instead"
            )
        if not by_mturk and assignment.state == Assignment.State.REJECTED and override_impossible(assignment):
            raise PaymentError(OVERRIDE_AFTER_DELETION)
        assignment.state = Assignment.State.APPROVED
        assignment.reviewed_at = timezone.now()
        assignment.review_message = (message or "")[:1000]
        assignment.save(update_fields=["state", "reviewed_at", "review_message"])
        entry = _record(assignment, LedgerEntry.Kind.REWARD, reward_of(assignment), message, by, f"reward-{assignment.pk}")
        if by_mturk:  # MTurk paid it before a review here: flagged for the researcher (payout page)
            LedgerEntry.objects.filter(pk=entry.pk).update(paid_by_mturk=True)
            LedgerEntry.objects.filter(fee_for=entry).update(paid_by_mturk=True)
        _after_commit(assignment, settle)
    return assignment


def record_paid_by_mturk(assignment: Assignment, mturk_max_assignments: int) -> bool:
    """MTurk paid work our page never stored (automatic approval of a submission made straight to MTurk): book
    the reward and MTurk's fee as paid, once, so the ledger matches what the account was charged."""
    reward = reward_of(assignment)
    with transaction.atomic():
        if LedgerEntry.objects.filter(assignment=assignment, kind=LedgerEntry.Kind.REWARD).exists():
            return False
        now = timezone.now()
        entry = LedgerEntry.objects.create(
            batch=assignment.hit.batch, assignment=assignment, worker=assignment.worker, kind=LedgerEntry.Kind.REWARD,
            amount=reward, state=LedgerEntry.State.PAID, settled_at=now, request_token=f"reward-{assignment.pk}",
            reason="paid by MTurk's automatic approval (the work never reached the HIT page)", paid_by_mturk=True,
        )
        LedgerEntry.objects.create(
            batch=assignment.hit.batch, assignment=assignment, worker=assignment.worker, kind=LedgerEntry.Kind.FEE,
            fee_for=entry, amount=market_named("mturk").reward_fee(assignment, reward, mturk_max_assignments),
            state=LedgerEntry.State.PAID,
            settled_at=now, request_token=f"reward-{assignment.pk}-fee", reason="MTurk commission on reward",
            paid_by_mturk=True,
        )
        Assignment.objects.filter(pk=assignment.pk).update(paid=True)
    return True


def reject_assignment(assignment: Assignment, message: str, by=None, *, settle: bool = True) -> Assignment:
    """Refuse a submitted assignment: no reward; ``message`` tells the worker why (required)."""
    message = (message or "").strip()
    if not message:
        raise PaymentError("a rejection needs a message telling the worker why")
    with transaction.atomic():
        assignment = _locked(assignment)
        if assignment.state == Assignment.State.REJECTED:
            return assignment
        if assignment.state != Assignment.State.SUBMITTED:
            raise PaymentError(
                f"only submitted work can be rejected; this assignment is {assignment.get_state_display().lower()}"
            )
        assignment.state = Assignment.State.REJECTED
        assignment.reviewed_at = timezone.now()
        assignment.review_message = message[:1000]
        assignment.save(update_fields=["state", "reviewed_at", "review_message"])
        _after_commit(assignment, settle)
    return assignment


class BonusNeedsConfirming(PaymentError):
    """The assignment already has a bonus and the caller asked to pay only a first one."""


class IdempotencyKeyReused(PaymentError):
    """The idempotency key was already used for a different bonus (another assignment, amount or reason)."""


def bonus_request_token(idempotency_key: str, by) -> str:
    """The ledger's request token for a bonus asked with ``idempotency_key`` by ``by`` (keys are per user).

    Deterministic, so a repeated call finds the first call's entry; hashed, so
    any key fits the 64-character column and MTurk's UniqueRequestToken.
    """
    who = getattr(by, "pk", None) or 0
    return "bonus-k-" + hashlib.sha256(f"{who}:{idempotency_key}".encode()).hexdigest()[:48]


def bonus_too_large(limit: Decimal) -> str:
    """What a researcher reads when one bonus alone is over the limit on an assignment's bonuses together."""
    return f"a bonus may be at most ${limit} (the platform's limit per assignment, on all its bonuses together)"


def _replayed(earlier: LedgerEntry, assignment: Assignment, amount: Decimal, reason: str) -> LedgerEntry:
    """The entry an idempotency key already recorded, if this call repeats it; else ``IdempotencyKeyReused``."""
    if (earlier.assignment_id, earlier.kind, earlier.amount, earlier.reason) != (
        assignment.pk, LedgerEntry.Kind.BONUS, amount, reason[:1000]
    ):
        raise IdempotencyKeyReused("this idempotency key was already used for a different bonus")
    earlier.replayed = True
    return earlier


def pay_bonus(
    assignment: Assignment,
    amount: Decimal,
    reason: str,
    by=None,
    *,
    first_only: bool = False,
    idempotency_key: str | None = None,
) -> LedgerEntry:
    """Give the worker of a submitted or approved assignment a bonus; returns the ledger entry.

    ``amount`` is in USD, more than 0; the assignment's bonuses together may
    be at most ``MAX_BONUS``.  ``reason`` is shown to the worker (required by
    MTurk).  On MTurk the bonus and its 20% fee count against the batch's
    budget cap (on Prolific: the bonus and Prolific's fee on it, with what the studies commit).  Bonuses of one assignment are serialised by its row lock, so
    concurrent calls see each other's bonus: ``first_only`` refuses to pay
    when the assignment already has one (``BonusNeedsConfirming``).  With
    ``idempotency_key``, a repeat of the same call returns the first call's
    entry (its ``replayed`` attribute set) and pays nothing more; the same key
    with another assignment, amount or reason is ``IdempotencyKeyReused``, also
    when the two calls run at once (the ledger's unique request token decides
    which one pays).
    """
    try:
        amount = Decimal(str(amount)).quantize(CENT)
    except (InvalidOperation, ValueError):
        raise PaymentError(f"'{amount}' is not an amount of money") from None
    reason = (reason or "").strip()
    limit = Decimal(str(settings.MAX_BONUS))
    if amount <= 0:
        raise PaymentError("a bonus must be more than $0.00")
    if amount > limit:
        raise PaymentError(bonus_too_large(limit))
    if not reason:
        raise PaymentError("a bonus needs a reason the worker will read")
    token = bonus_request_token(idempotency_key, by) if idempotency_key else f"bonus-{uuid.uuid4().hex}"
    with transaction.atomic():
        assignment = _locked(assignment)
        if idempotency_key:
            earlier = LedgerEntry.objects.filter(request_token=token).first()
            if earlier is not None:
                return _replayed(earlier, assignment, amount, reason)
        if assignment.state not in (Assignment.State.SUBMITTED, Assignment.State.APPROVED):
            raise PaymentError(
                f"bonuses are paid on submitted or approved work; this assignment is {assignment.get_state_display().lower()}"
            )
        if first_only and assignment.bonus > 0:
            raise BonusNeedsConfirming(f"this assignment already has a bonus of {money(assignment.bonus, assignment.hit.batch)}")
        if assignment.bonus + amount > limit:
            in_batch = assignment.hit.batch
            raise PaymentError(
                f"the assignment already has bonuses of {money(assignment.bonus, in_batch)}; together they may be at "
                f"most {money(limit, in_batch)} (the platform's limit per assignment), so at most "
                f"{money(max(limit - assignment.bonus, Decimal('0.00')), in_batch)} more"
            )
        # The batch's row locked, the cap checked with every commitment in flight, and the bonus recorded
        # (pending: sent after the commit) in this one transaction (``hits.budget``).
        batch = budget.locked(assignment.hit.batch)
        cost = market_for(batch).bonus_cost(batch, amount)
        if cost is not None:
            try:
                budget.check(batch, cost, f"the bonus of {money(amount, batch)} and its fee")
            except budget.CapReached as exc:
                raise BudgetExceeded(str(exc)) from None
        try:
            # A savepoint: a call with the same key on another assignment (another row lock) may have
            # recorded its entry since we looked; the unique token then refuses ours, and we answer
            # as if we had found that entry first.
            with transaction.atomic():
                entry = _record(assignment, LedgerEntry.Kind.BONUS, amount, reason, by, token)
        except IntegrityError:
            earlier = LedgerEntry.objects.filter(request_token=token).first() if idempotency_key else None
            if earlier is None:
                raise
            return _replayed(earlier, assignment, amount, reason)
        assignment.bonus = assignment.bonus + amount
        assignment.save(update_fields=["bonus"])
        _after_commit(assignment, True)
    entry.replayed = False
    return entry


MTURK_PAYS_ITSELF = (
    "MTurk pays this campaign's workers itself (the ledger is marked paid when MTurk confirms each payment): "
    "only local workers' payouts are marked paid by hand"
)


@dataclass
class MarkedPaid:
    """What ``mark_paid`` changed: ledger entries now paid, their sum, and the workers they belong to."""

    entries: int = 0
    amount: Decimal = Decimal("0.00")
    workers: list = field(default_factory=list)


def mark_paid(batch: Batch, by, *, workers=None, upto: int | None = None, note: str = "") -> MarkedPaid:
    """Record that local workers were paid outside the platform: their owed rewards and bonuses become paid.

    ``workers``: only these workers (ids); ``upto``: only ledger entries up to this id, the last one the
    researcher saw, so money owed since (work approved after the page was drawn) is not marked paid
    unseen.  Each entry keeps who marked it (``settled_by``), when (``settled_at``) and ``note``: the
    audit trail.  Entries already paid are left alone, so marking twice (a double click, two
    researchers at once: the rows are locked) pays nothing twice.  MTurk batches are refused.
    """
    if batch.on_mturk:
        raise PaymentError(MTURK_PAYS_ITSELF)
    with transaction.atomic():
        owed = (
            LedgerEntry.objects.select_for_update()
            .filter(batch=batch, state=LedgerEntry.State.OWED)
            .exclude(kind=LedgerEntry.Kind.FEE)
        )
        if workers is not None:
            owed = owed.filter(worker_id__in=list(workers))
        if upto is not None:
            owed = owed.filter(pk__lte=upto)
        entries = list(owed.order_by("pk"))
        if not entries:
            return MarkedPaid()
        LedgerEntry.objects.filter(pk__in=[e.pk for e in entries], state=LedgerEntry.State.OWED).update(
            state=LedgerEntry.State.PAID, settled_at=timezone.now(), settled_by=by, settlement_note=(note or "").strip()[:200]
        )
    return MarkedPaid(
        entries=len(entries),
        amount=sum((e.amount for e in entries), Decimal("0.00")),
        workers=sorted({e.worker_id for e in entries}),
    )


__all__ = [
    "BonusNeedsConfirming", "BudgetExceeded", "IdempotencyKeyReused", "MarkedPaid", "PaymentError",
    "approve_assignment", "bonus_request_token", "mark_paid", "pay_bonus", "reject_assignment",
]
