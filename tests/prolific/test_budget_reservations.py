"""A study's places are held against the budget cap from before its create call until Prolific's records settle
it: kept while the reply is lost (nothing else can take that money meanwhile), counted once the study is found."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction

from annotation.services.pipeline import launch_campaign
from hits import budget
from hits.models import Batch, BudgetReservation
from hits.prolific import fees, publishing
from hits.prolific.models import ProlificStudy
from hits.prolific.publishing import publish_batch
from tests.prolific.test_publish import campaign, market, prolific_settings  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


def test_a_lost_study_create_reply_keeps_its_places_held_until_the_study_is_found(campaign, market):  # noqa: F811
    launch_campaign(campaign)
    campaign.refresh_from_db()
    batch = campaign.batch
    (plan,) = publishing.plans(batch)
    cost = publishing.plan_commitment(plan, plan.places, batch.prolific_fee_rate)
    Batch.objects.filter(pk=batch.pk).update(budget_cap=cost + Decimal("1.00"))
    batch.refresh_from_db()
    market.fault("POST", "^/api/v1/studies/$")
    market.fault("GET", "^/api/v1/studies/$", kind="error")
    publish_batch(batch)
    assert len(market.studies) == 1 and ProlificStudy.objects.get(batch=batch).prolific_id is None
    # Prolific has the study (its places paid up front): the money stays committed, so a commitment that only fits
    # without it is refused, naming the cap.
    assert budget.reserved(batch) == cost and fees.committed(batch) == cost
    with pytest.raises(budget.CapReached, match=rf"over its budget cap of \${batch.budget_cap} \(\${cost} already"):
        with transaction.atomic():
            budget.check(budget.locked(batch), Decimal("1.33"), "the bonus of $1.00 and its fee")
    # The next publish finds it: recorded, the reservation settled, its money counted once.
    publish_batch(batch)
    assert ProlificStudy.objects.get(batch=batch).prolific_id is not None
    assert BudgetReservation.objects.get(batch=batch).state == BudgetReservation.State.SETTLED
    assert budget.reserved(batch) == 0 and fees.committed(batch) == cost
