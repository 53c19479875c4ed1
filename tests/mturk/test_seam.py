"""An MTurk batch driven through the seam (``hits.markets.market_for``), as the core drives it: previewed without
a call, published, synced and reconciled on the stand-in, to the cent."""

from __future__ import annotations

from decimal import Decimal

import pytest

from hits.markets.models import Reconciliation
from hits.markets.registry import market_for
from hits.mturk.models import MTurkHIT
from tests.mturk.conftest import make_hit
from tests.mturk.test_reconcile import reviewed  # noqa: F401 - a fixture
from tests.mturk.test_standin_campaign import _state, standin  # noqa: F401 - the stand-in fixture

pytestmark = pytest.mark.django_db


def test_an_mturk_batch_is_previewed_then_published_and_synced_through_the_seam(standin, mturk_batch, task_type):  # noqa: F811
    hit = make_hit(mturk_batch, task_type)
    market = market_for(mturk_batch)
    planned = market.preview(mturk_batch)
    assert len(planned) == 1 and not MTurkHIT.objects.exists()
    report = market.publish(mturk_batch)
    assert report.published == 1
    published = MTurkHIT.objects.get()
    assert published.hit == hit and published.reward == Decimal(planned[0]["Reward"])
    assert market.sync(mturk_batch).failed == 0


def test_an_mturk_batch_reconciles_through_the_seam_to_the_cent(reviewed, standin):  # noqa: F811
    batch, *_ = reviewed
    result = market_for(batch).reconcile(batch, save=False)
    assert result.differences == []
    assert result.ledger_total == result.market_total == Decimal(_state(standin)["total_charged"]) == Decimal("1.26")
    assert not Reconciliation.objects.filter(batch=batch).exists()  # save=False stores nothing
