"""A HIT's money is held against the budget cap from before its CreateHIT until MTurk's records settle it: kept
while the answer is lost (a bonus cannot take it meanwhile), released when MTurk refuses the HIT for good, and
never counted twice once the HIT is recorded (``hits.budget``)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits import budget, payments
from hits.models import Batch, BudgetReservation
from hits.mturk import fees
from hits.mturk.models import MTurkHIT
from hits.mturk.publishing import creation_key, publish_batch
from tests.mturk.conftest import make_hit, published_on_mturk, submitted_on_mturk

pytestmark = pytest.mark.django_db

HIT_COST = Decimal("0.72")  # $0.20 x 3 places + MTurk's 20%
BONUS = Decimal("0.50")  # $0.60 with MTurk's 20%


@pytest.fixture
def rehearsal(standin, settings, mturk_batch, task_type):
    """A batch with one HIT on MTurk and a worker's submission on it, one HIT waiting, and a cap with room for the
    waiting HIT or a bonus, not both."""
    settings.MTURK_MAX_RETRIES = 0
    published = published_on_mturk(mturk_batch, task_type, "ONMTURK1")
    work = submitted_on_mturk(published, 1)[0]
    waiting = make_hit(mturk_batch, task_type)
    Batch.objects.filter(pk=mturk_batch.pk).update(budget_cap=HIT_COST * 2 + Decimal("0.59"))
    mturk_batch.refresh_from_db()
    return standin, mturk_batch, waiting, work


def test_a_lost_createhit_reply_keeps_the_hits_money_held_until_mturks_records_settle_it(rehearsal):
    standin, batch, waiting, work = rehearsal
    standin.inject("CreateHIT", "lost_reply")
    standin.inject("ListHITs", "service_fault")  # and the check of MTurk's records fails too: the answer stays open
    report = publish_batch(batch)
    assert report.published == 0 and [u["hit"] for u in report.unsettled] == [waiting.pk]
    assert len(standin.dump()["hits"]) == 1  # MTurk did create it
    # The HIT's money stays held: a bonus that only fits if it were not would let MTurk hold more than the cap.
    assert fees.committed(batch) == HIT_COST * 2
    with pytest.raises(payments.BudgetExceeded) as refused:
        payments.pay_bonus(work, BONUS, "Thorough work")
    assert f"over its budget cap of ${batch.budget_cap}" in str(refused.value) and "$2.04" in str(refused.value)
    # The next publish reads MTurk's records: the HIT is recorded, its reservation settled, counted once.
    standin.clear_faults()
    publish_batch(batch)
    assert MTurkHIT.objects.filter(hit=waiting).exists()
    assert BudgetReservation.objects.get(key=creation_key(waiting)).state == BudgetReservation.State.SETTLED
    assert fees.committed(batch) == HIT_COST * 2


def test_a_createhit_refused_for_good_releases_the_hits_money(rehearsal):
    standin, batch, waiting, work = rehearsal
    # Over MTurk's 30-day limit: CreateHIT is refused for good (RequestError), MTurk creates nothing.
    Batch.objects.filter(pk=batch.pk).update(mturk_auto_approval_delay=31 * 24 * 3600)
    batch.refresh_from_db()
    report = publish_batch(batch)
    assert [r["hit"] for r in report.refused] == [waiting.pk] and len(standin.dump()["hits"]) == 0
    assert BudgetReservation.objects.get(key=creation_key(waiting)).state == BudgetReservation.State.RELEASED
    assert fees.committed(batch) == HIT_COST
    # The room is free again: the bonus fits.
    entry = payments.pay_bonus(work, BONUS, "Thorough work")
    assert entry.amount == BONUS and fees.committed(batch) == HIT_COST + Decimal("0.60")
    # A retry reserves again, with the cap checked: the HIT no longer fits beside the bonus.
    Batch.objects.filter(pk=batch.pk).update(mturk_auto_approval_delay=None)
    from hits.mturk.publishing import retry_publish

    retry_publish(batch)
    report = publish_batch(Batch.objects.get(pk=batch.pk))
    assert report.published == 0 and f"budget cap of ${batch.budget_cap} reached" in report.stopped


def test_a_reservation_is_refused_naming_the_cap_and_reused_by_a_retry(mturk_batch):
    Batch.objects.filter(pk=mturk_batch.pk).update(budget_cap=Decimal("1.00"))
    mturk_batch.refresh_from_db()
    held = budget.reserve(mturk_batch, Decimal("0.72"), "call-1", "HIT 1 (3 places)")
    assert budget.reserve(mturk_batch, Decimal("0.72"), "call-1", "HIT 1 (3 places)").pk == held.pk  # a retry: same money
    assert budget.committed(mturk_batch) == Decimal("0.72")
    with pytest.raises(budget.CapReached) as refused:
        budget.reserve(mturk_batch, Decimal("0.72"), "call-2", "HIT 2 (3 places)")
    assert str(refused.value) == (
        "HIT 2 (3 places) ($0.72) would bring the batch to $1.44, over its budget cap of $1.00 ($0.72 already committed or reserved)"
    )
    assert not BudgetReservation.objects.filter(key="call-2").exists()
    assert budget.release("call-1") and budget.committed(mturk_batch) == Decimal("0.00")
