"""Issue 38, findings 2 and 3: a batch pays in its Prolific workspace's currency (read from Prolific, recorded once,
never mixed, written with its symbol), and the ledger books the fees and VAT Prolific states, which the reconcile
reads back from Prolific instead of recomputing them with the campaign's own fee rate."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Campaign
from hits.models import Batch, LedgerEntry
from hits.prolific import publishing
from hits.prolific.client import Prolific
from hits.prolific.models import ProlificBonus
from hits.prolific.reconcile import reconcile_batch
from tests.prolific.pd_world import approve_all, finished_session, make_batch, publish_study, run_sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def gbp_world(gbp_standin, settings):
    """A batch on a GBP workspace (VAT 20% of the fee) whose campaign estimates Prolific's fee at 25%, while
    Prolific charges 33.33%: what the ledger books must follow Prolific, not the estimate."""
    settings.PROLIFIC_APPROVE_AFTER_HOURS = 1000
    batch = make_batch(slug="pd-gbp")
    Batch.objects.filter(pk=batch.pk).update(prolific_fee_rate=Decimal("0.25"))
    batch.prolific_fee_rate = Decimal("0.25")
    study = publish_study(gbp_standin, batch)
    with Prolific() as client:
        publishing.read_place_charges(client, study)  # as the publish does after creating a study
    return gbp_standin, batch, study


def _spent(standin) -> Decimal:
    return Decimal(standin.state()["totals"]["spent"]) / 100


def test_the_ledger_books_the_fees_and_vat_prolific_states_and_the_reconcile_reads_them_back(gbp_world):
    standin, batch, study = gbp_world
    # One place at £0.50: fee 33.33% -> 17p, VAT 20% of it -> 3p, as the cost calculator states.
    assert (study.place_fee, study.place_vat) == (Decimal("0.20"), Decimal("0.03"))
    session, work = finished_session(standin, study, 3)
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    standin.control("POST", "/__control/clock/", {"advance_seconds": 3600})
    bonus = ProlificBonus.objects.get(batch=batch)
    # The £1.00 bulk: fee 33p + VAT 7p (Prolific's answer: total_amount 140 - amount 100).
    assert (bonus.state, bonus.fees, bonus.vat) == ("paid", Decimal("0.40"), Decimal("0.07"))
    fees = LedgerEntry.objects.filter(batch=batch, kind=LedgerEntry.Kind.FEE, state=LedgerEntry.State.PAID)
    assert sum(e.amount for e in fees) == Decimal("0.60")  # 0.20 + 0.40, not the estimate's 25%
    paid = sum(e.amount for e in LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID))
    assert paid == _spent(standin) == Decimal("2.10")  # £1.50 of rewards, £0.50 of fees, £0.10 of VAT
    result = reconcile_batch(batch)
    assert (result.currency, result.ledger_total, result.market_total, result.differences) == (
        "GBP", Decimal("2.10"), Decimal("2.10"), [])


def test_the_reconcile_reports_a_fee_prolific_charged_that_the_ledger_lacks(gbp_world):
    """Prolific's side is read, never computed with the campaign's rate: a ledger fee short of what Prolific states
    shows as a difference (today's reconcile agreed by construction)."""
    standin, batch, study = gbp_world
    session, work = finished_session(standin, study, 1)
    run_sync(batch)
    approve_all(work)
    run_sync(batch)
    fee = LedgerEntry.objects.get(batch=batch, kind=LedgerEntry.Kind.FEE)
    assert fee.amount == Decimal("0.20")
    LedgerEntry.objects.filter(pk=fee.pk).update(amount=Decimal("0.13"))  # what the campaign's 25% would say
    result = reconcile_batch(batch, save=False)
    assert result.market_total == Decimal("0.70") and result.ledger_total == Decimal("0.63")
    assert [(d.kind, d.assignment, d.amount) for d in result.differences] == [
        ("charged_not_booked", session.session_id, Decimal("0.07"))]
    assert "Prolific charged £0.70, the ledger has £0.63 paid" in result.differences[0].detail


def test_a_batch_records_its_workspaces_currency_once_and_never_mixes(gbp_standin, prolific_standin):
    """A batch publishing from a GBP workspace records GBP; published later from a USD workspace it is refused."""
    batch = make_batch(slug="pd-mix")
    with Prolific(base_url=gbp_standin.url) as client:
        assert publishing.publish_batch(batch, client).stopped == ""
    batch.refresh_from_db()
    assert batch.currency == "GBP"
    with Prolific(base_url=prolific_standin.url) as client, pytest.raises(publishing.PublishRefused,
                                                                         match="pays in GBP, but the Prolific workspace is in USD"):
        publishing.publish_batch(batch, client)
    assert Batch.objects.get(pk=batch.pk).currency == "GBP"


def test_the_hourly_minimum_is_the_currencys():
    """£0.20 for 2 minutes is £6.00 an hour: Prolific's GBP minimum, though under its $8.00 one."""
    from hits.prolific import pricing

    in_pounds = pricing.HourlyRate("presence", Decimal("0.20"), 2, currency="GBP")
    assert in_pounds.passes and in_pounds.minimum == Decimal("6.00")
    in_dollars = pricing.HourlyRate("presence", Decimal("0.20"), 2, currency="USD")
    assert not in_dollars.passes
    assert in_dollars.refusal() == ("presence: a session of 1 HIT(s) at $0.20 pays $0.20 for 2 min, $6.00/h, below "
                                    "Prolific's minimum of $8.00/h (PROLIFIC_MIN_HOURLY_USD); a reward of at least "
                                    "$0.27 per HIT would pass")
    low = pricing.HourlyRate("presence", Decimal("0.15"), 2, 6, currency="GBP")
    assert low.refusal().startswith("presence: a session of 6 HIT(s) at £0.15 pays £0.90 for 2 min, £27.00/h")
    low = pricing.HourlyRate("presence", Decimal("0.15"), 12, 6, currency="GBP")
    assert low.refusal().startswith("presence: a session of 6 HIT(s) at £0.15 pays £0.90 for 12 min, £4.50/h, below "
                                    "Prolific's minimum of £6.00/h (PROLIFIC_MIN_HOURLY_GBP)")


@pytest.mark.django_db(transaction=True)
def test_the_rehearsal_on_a_gbp_workspace_reconciles_to_the_penny_in_pounds(gbp_standin, tmp_path, settings, eager_celery,
                                                                           capsys, client, researcher):
    """The README's recipe (its test's smaller campaign) on a stand-in started with ``--currency GBP``, VAT at 20%,
    and a campaign whose fee estimate (25%) is not what Prolific charges (33.33%)."""
    from tests.prolific.test_end_to_end import _campaign

    settings.SUBMIT_RATE_LIMIT = "100000/60"
    campaign = _campaign(tmp_path / "campaign")
    Campaign.objects.filter(pk=campaign.pk).update(prolific_fee_rate=Decimal("0.25"))
    call_command("prolific_publish", "--campaign", campaign.slug, "--dry-run", "--format", "json")
    planned = json.loads(capsys.readouterr().out)
    assert planned["currency"] == "GBP" and {r["currency"] for r in planned["hourly"]} == {"GBP"}
    described = next(r["body"]["description"] for r in planned["requests"] if r["path"].endswith("/studies/"))
    assert "£" in described and "$" not in described
    call_command("simulate_crowd", campaign=campaign.slug, backend="prolific", workers=10, careless=1, accuracy=1.0)
    out = capsys.readouterr().out
    campaign.refresh_from_db()
    batch = campaign.batch
    assert campaign.state == Campaign.State.FINISHED, out
    assert batch.currency == "GBP"
    state = gbp_standin.state()
    assert state["totals"]["vat"] > 0 and state["totals"]["bonuses"] > 0
    with pytest.raises(SystemExit) as ended:
        call_command("prolific_reconcile", "--campaign", campaign.slug, "--format", "json")
        raise SystemExit(0)
    result = json.loads(capsys.readouterr().out)
    assert ended.value.code == 0 and result["differences"] == [] and result["currency"] == "GBP"
    spent = Decimal(state["totals"]["spent"]) / 100
    paid = sum(e.amount for e in LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID))
    assert Decimal(result["ledger_total"]) == Decimal(result["market_total"]) == paid == spent

    # The payout page writes the campaign's money in pounds.
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    client.force_login(researcher)
    page = client.get(reverse("campaign-payouts", args=[campaign.slug])).content.decode()
    assert f"£{result['ledger_total']}" in page and "$" + result["ledger_total"] not in page
