"""prolific_reconcile: the ledger against Prolific's records, mturk_reconcile's keys; agreeing, and a difference
when Prolific's side differs."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from hits.markets.models import Reconciliation
from tests.prolific.pd_world import approve_all, finished_session, run_sync, world  # noqa: F401 - world: a fixture

pytestmark = pytest.mark.django_db


def _paid(standin, batch, study, sessions=1, hits=3):
    """Sessions of ``hits`` HITs each, all approved, reviewed on Prolific and their bonuses paid and settled."""
    done = [finished_session(standin, study, hits) for _ in range(sessions)]
    run_sync(batch)
    for _, work in done:
        approve_all(work)
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    return done


@pytest.fixture
def paid_campaign(world):
    from annotation.models import Campaign

    standin, batch, study = world
    ((session, _),) = _paid(standin, batch, study)
    return Campaign.objects.create(name="P", slug="p-rec", batch=batch, backend=Campaign.Backend.PROLIFIC), session


def _reconcile(slug, capsys):
    with pytest.raises(SystemExit) as ended:
        call_command("prolific_reconcile", "--campaign", slug, "--format", "json")
        raise SystemExit(0)
    return ended.value.code, json.loads(capsys.readouterr().out)


def test_the_ledger_and_prolific_agree(paid_campaign, capsys):
    campaign, _ = paid_campaign
    code, result = _reconcile(campaign.slug, capsys)
    assert code == 0 and set(result) == {"ledger_total", "market_total", "currency", "differences"}
    # 3 rewards of $0.50 and Prolific's 33.33% on the reward ($0.17) and on the $1.00 bonus line ($0.33).
    assert result == {"ledger_total": "2.00", "market_total": "2.00", "currency": "USD", "differences": []}
    stored = Reconciliation.objects.get()
    assert stored.market == "prolific" and stored.agrees


def test_a_payment_prolific_made_that_the_ledger_lacks_is_a_difference(paid_campaign, prolific_standin, capsys):
    campaign, session = paid_campaign
    from hits.prolific.client import Prolific

    with Prolific() as client:  # someone paid a bonus on Prolific's site, outside the platform
        made = client.request("POST", "/submissions/bonus-payments/", json={
            "study_id": session.study.prolific_id, "csv_bonuses": f"{session.participant_id},0.30"})
        client.request("POST", f"/bulk-bonus-payments/{made['id']}/pay/")
    prolific_standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    code, result = _reconcile(campaign.slug, capsys)
    assert code == 1 and result["market_total"] == "2.40" and result["ledger_total"] == "2.00"
    assert result["differences"] == [{
        "kind": "charged_not_booked", "hit": session.study.prolific_id, "assignment": session.session_id, "amount": "0.40",
    }]


def test_the_ledgers_fees_are_what_prolific_charged_for_a_bulk_of_several_lines(world, capsys):
    """Two participants' $0.50 bonuses in one bulk: Prolific's fee is on the bulk ($0.33), not per line (2 x $0.17)."""
    from annotation.models import Campaign
    from hits.models import LedgerEntry

    prolific_standin, batch, study = world
    _paid(prolific_standin, batch, study, sessions=2, hits=2)
    totals = prolific_standin.state()["totals"]
    fees = sum(e.amount for e in LedgerEntry.objects.filter(batch=batch, kind=LedgerEntry.Kind.FEE, state=LedgerEntry.State.PAID))
    assert int(fees * 100) == totals["fees"] == 17 + 17 + 33
    campaign = Campaign.objects.create(name="P2", slug="p-rec2", batch=batch, backend=Campaign.Backend.PROLIFIC)
    code, result = _reconcile(campaign.slug, capsys)
    assert code == 0 and result["differences"] == [] and result["ledger_total"] == result["market_total"] == "2.67"
