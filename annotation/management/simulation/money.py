"""A local rehearsal's money: the simulated researcher's review, and the ledger reconciled with the work.

After the crowd is done, ``review_and_reconcile`` may approve every submitted assignment of the campaign through
``hits.payments.approve_assignment`` (what the researcher's bulk review calls), then checks, in a few grouped
queries, that the ledger and the payout report agree with the work: one reward entry per approved assignment,
at its HIT's reward (``hits.payments.reward_of``), none for work not approved, and the payout report's totals
(``hits.payouts``) equal to the ledger's.  Both modes of ``simulate_crowd`` end with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Q, Sum

from hits import payments, payouts
from hits.markets.money import ZERO, cents, money
from hits.models import HIT, Assignment, LedgerEntry

REVIEW_MESSAGE = "Thank you for your work. (A rehearsal's simulated review.)"


@dataclass
class MoneyFigures:
    approved: int = 0  # assignments approved (tests' items included), in the ledger at their reward
    approved_now: int = 0  # by the simulated review of this run
    awaiting: int = 0  # submitted, not reviewed (the payout report's "awaiting review")
    rewards: Decimal = ZERO  # the ledger's rewards
    owed: Decimal = ZERO
    awaiting_amount: Decimal = ZERO
    problems: list = field(default_factory=list)  # every way the ledger and the work disagree

    def lines(self, currency: str = "USD") -> list[str]:
        def m(amount):
            return money(amount, currency)

        head = (
            f"money: {self.approved} assignments approved ({self.approved_now} by the simulated review), ledger rewards "
            f"{m(self.rewards)}, owed {m(self.owed)}; {self.awaiting} awaiting review ({m(self.awaiting_amount)})"
        )
        if not self.problems:
            return [head + ": the ledger reconciles with the work"]
        return [head, *(f"money does NOT reconcile: {p}" for p in self.problems)]


def review_and_reconcile(campaign, report, *, approve: bool) -> MoneyFigures:
    """Approve the campaign's submitted work when ``approve``, then reconcile; sets ``report.money``."""
    figures = MoneyFigures()
    batch = campaign.batch
    if approve:
        submitted = Assignment.objects.filter(hit__batch=batch, state=Assignment.State.SUBMITTED).order_by("pk")
        for assignment in submitted.select_related("hit__batch", "hit__task_type", "worker").iterator(chunk_size=2000):
            payments.approve_assignment(assignment, REVIEW_MESSAGE, settle=False)
            figures.approved_now += 1
    _reconcile(batch, figures)
    report.money = figures
    report.currency = getattr(batch, "currency", "") or "USD"
    return figures


def _reconcile(batch, figures: MoneyFigures) -> None:
    work = Assignment.objects.filter(hit__batch=batch).aggregate(
        approved=Count("pk", filter=Q(state=Assignment.State.APPROVED)),
        due=Sum("hit__reward", filter=Q(state=Assignment.State.APPROVED)),
    )
    entries = LedgerEntry.objects.filter(batch=batch).exclude(state=LedgerEntry.State.REFUSED)
    ledger = entries.filter(kind=LedgerEntry.Kind.REWARD).aggregate(
        n=Count("pk"), assignments=Count("assignment_id", distinct=True), amount=Sum("amount"),
        not_approved=Count("pk", filter=~Q(assignment__state=Assignment.State.APPROVED)),
    )
    rows = payouts.payouts(batch=batch)
    t = payouts.totals(rows)
    figures.approved = work["approved"]
    figures.rewards = cents(ledger["amount"])
    figures.owed = t.owed
    figures.awaiting, figures.awaiting_amount = t.awaiting_review, t.awaiting_amount
    problems = figures.problems
    if ledger["n"] != ledger["assignments"]:
        problems.append(f"{ledger['n'] - ledger['assignments']} assignments have more than one reward entry")
    if ledger["assignments"] != work["approved"]:
        problems.append(f"{work['approved']} assignments approved but {ledger['assignments']} rewarded in the ledger")
    if ledger["not_approved"]:
        problems.append(f"{ledger['not_approved']} reward entries are for work that is not approved")
    if figures.rewards != cents(work["due"]):
        problems.append(f"the ledger's rewards {figures.rewards} are not the approved HITs' rewards {cents(work['due'])}")
    if t.rewards != figures.rewards:
        problems.append(f"the payout report's rewards {t.rewards} are not the ledger's {figures.rewards}")
    if t.owed + t.paid != t.rewards + t.bonuses:
        problems.append(f"owed {t.owed} + paid {t.paid} is not rewards {t.rewards} + bonuses {t.bonuses}")
    paid_work = Assignment.objects.filter(hit__batch=batch, state=Assignment.State.APPROVED).exclude(hit__kind=HIT.Kind.QUALIFICATION)
    if t.approved != paid_work.count():
        problems.append(f"the payout report counts {t.approved} approved HITs, the work {paid_work.count()}")
