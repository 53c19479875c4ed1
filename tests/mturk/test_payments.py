"""Approve, reject and bonus: local state and the ledger change together, once."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.models import Assignment, LedgerEntry, Worker
from hits.payments import BudgetExceeded, PaymentError, approve_assignment, pay_bonus, reject_assignment
from tests.mturk.conftest import make_hit, submitted_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker():
    return Worker.objects.create(external_id="w1")


def test_approving_local_work_records_the_reward_once_as_owed(local_batch, task_type, worker):
    assignment = submitted_assignment(make_hit(local_batch, task_type), worker)
    approve_assignment(assignment, "Good work", by=None)
    approve_assignment(assignment, "clicked twice")
    assignment.refresh_from_db()
    assert assignment.state == Assignment.State.APPROVED and assignment.review_message == "Good work"
    entries = list(LedgerEntry.objects.values_list("kind", "amount", "state"))
    assert entries == [("reward", Decimal("0.20"), "owed")]  # no MTurk fee for local workers


def test_approving_mturk_work_records_reward_and_commission_pending(mturk_batch, task_type, worker):
    assignment = submitted_assignment(make_hit(mturk_batch, task_type, reward=Decimal("0.32")), worker)
    approve_assignment(assignment)
    entries = {e.kind: e for e in LedgerEntry.objects.all()}
    assert entries["reward"].amount == Decimal("0.32") and entries["reward"].state == "pending"
    # 20% of $0.32 = $0.064, rounded half up to $0.06; the fee points at the reward it is charged on.
    assert entries["fee"].amount == Decimal("0.06") and entries["fee"].fee_for == entries["reward"]


def test_rejection_needs_a_message_and_pays_nothing(local_batch, task_type, worker):
    assignment = submitted_assignment(make_hit(local_batch, task_type), worker)
    with pytest.raises(PaymentError, match="message"):
        reject_assignment(assignment, "   ")
    assert Assignment.objects.get(pk=assignment.pk).state == Assignment.State.SUBMITTED
    reject_assignment(assignment, "The answers do not come from the sentence.")
    assignment.refresh_from_db()
    assert assignment.state == Assignment.State.REJECTED
    assert not LedgerEntry.objects.exists()
    with pytest.raises(PaymentError, match="rejected"):
        pay_bonus(assignment, Decimal("0.10"), "thanks")
    # A rejection can be overturned: the reward is then recorded.
    approve_assignment(assignment, "On second look, fine.")
    assert LedgerEntry.objects.get().kind == "reward"


def test_approved_work_cannot_be_rejected_and_open_work_cannot_be_reviewed(local_batch, task_type, worker):
    hit = make_hit(local_batch, task_type)
    assignment = submitted_assignment(hit, worker)
    approve_assignment(assignment)
    with pytest.raises(PaymentError, match="approved"):
        reject_assignment(assignment, "no")
    open_one = Assignment.objects.create(
        hit=hit, worker=Worker.objects.create(external_id="w2"), accepted_at=assignment.accepted_at,
        expires_at=assignment.expires_at,
    )
    with pytest.raises(PaymentError, match="assigned"):
        approve_assignment(open_one)


def test_bonus_on_mturk_adds_fee_and_unique_tokens(mturk_batch, task_type, worker):
    assignment = submitted_assignment(make_hit(mturk_batch, task_type), worker)
    first = pay_bonus(assignment, Decimal("0.50"), "Very careful answers")
    second = pay_bonus(assignment, "0.25", "And again")
    assert first.request_token != second.request_token and len(first.request_token) <= 64
    assert LedgerEntry.objects.get(fee_for=first).amount == Decimal("0.10")
    assert Assignment.objects.get(pk=assignment.pk).bonus == Decimal("0.75")


@pytest.mark.parametrize(
    "amount, reason, message",
    [("0", "r", "more than"), ("-1", "r", "more than"), ("abc", "r", "not an amount"), ("99", "r", "at most"), ("0.5", " ", "reason")],
)
def test_bad_bonus_is_refused_with_nothing_written(local_batch, task_type, worker, amount, reason, message):
    assignment = submitted_assignment(make_hit(local_batch, task_type), worker)
    with pytest.raises(PaymentError, match=message):
        pay_bonus(assignment, amount, reason)
    assert not LedgerEntry.objects.exists() and Assignment.objects.get(pk=assignment.pk).bonus == 0


def test_bonus_over_the_budget_cap_is_refused(mturk_batch, task_type, worker):
    mturk_batch.budget_cap = Decimal("1.00")
    mturk_batch.save()
    assignment = submitted_assignment(make_hit(mturk_batch, task_type), worker)
    pay_bonus(assignment, Decimal("0.80"), "great")  # 0.80 + 0.16 fee = 0.96 committed
    with pytest.raises(BudgetExceeded, match="budget cap"):
        pay_bonus(assignment, Decimal("0.05"), "a little more")  # 0.96 + 0.05 + 0.01 = 1.02
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1
