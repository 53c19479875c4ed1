"""A Prolific batch driven through the seam (``hits.markets.market_for``): synced and reconciled on the stand-in,
to the cent, as ``prolific_reconcile`` finds it."""

from __future__ import annotations

import pytest

from hits.markets.registry import market_for
from tests.prolific.pd_world import world  # noqa: F401 - a fixture
from tests.prolific.test_reconcile import paid_campaign  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db


def test_a_prolific_batch_syncs_and_reconciles_through_the_seam(paid_campaign):  # noqa: F811
    campaign, _ = paid_campaign
    market = market_for(campaign.batch)
    assert market.name == "prolific"
    report = market.sync(campaign.batch)
    assert report.studies == 1 and report.listed == 1 and report.failed == 0
    assert report.approved == 0  # decided once, by the earlier syncs
    # 3 rewards of $0.50 and Prolific's 33.33% on the reward ($0.17) and on the $1.00 bonus line ($0.33).
    assert market.reconcile(campaign.batch).as_dict() == {"ledger_total": "2.00", "market_total": "2.00", "currency": "USD",
                                                           "differences": []}
