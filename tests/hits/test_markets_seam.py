"""The seam between the HIT engine and the crowd markets (``hits.markets``): which market serves a batch, what a
market that cannot do something says, and that what moved into the seam is still where Django and the command
line look for it."""

from __future__ import annotations

import pytest
from django.core.management import call_command, load_command_class

from hits.markets.base import Market, NotOnAMarket
from hits.markets.models import Reconciliation
from hits.markets.registry import MARKET_MODULES, UnknownMarket, all_markets, market_for, market_named
from hits.models import Batch

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("backend, name", [
    (Batch.Backend.LOCAL, "local"), (Batch.Backend.MTURK_SANDBOX, "mturk"), (Batch.Backend.MTURK_LIVE, "mturk"),
    (Batch.Backend.PROLIFIC, "prolific"),
])
def test_every_backend_a_batch_can_have_is_served_by_one_market(backend, name):
    batch = Batch.objects.create(name="b", reference=f"test:seam-{backend}", backend=backend)
    assert market_for(batch).name == name
    assert [m.name for m in all_markets() if m.serves(batch)] == [name]


def test_the_registry_knows_the_local_pages_and_each_market_it_loads_by_name():
    assert [m.name for m in all_markets()] == ["local", "mturk", "prolific"]
    assert len(MARKET_MODULES) == 2
    assert all(isinstance(m, Market) for m in all_markets())
    assert market_named("prolific").label == "Prolific"


def test_an_unknown_market_or_backend_is_a_clear_error():
    with pytest.raises(UnknownMarket, match="no market called 'upwork' \\(known: local, mturk, prolific\\)"):
        market_named("upwork")
    batch = Batch(name="b", reference="test:seam-odd", backend="upwork")
    with pytest.raises(UnknownMarket, match="its backend is 'upwork'"):
        market_for(batch)


def test_a_local_batch_has_no_market_records_to_reconcile_and_nothing_to_publish():
    batch = Batch.objects.create(name="local campaign", reference="test:seam-local")
    with pytest.raises(NotOnAMarket, match="runs on the platform's own pages"):
        market_for(batch).reconcile(batch)
    assert market_for(batch).preview(batch) == []
    assert market_for(batch).committed(batch) == 0
    assert market_for(batch).bonus_cost(batch, 1) is None  # the budget cap counts market money only


def test_the_reconciliation_record_kept_its_table_and_app():
    assert Reconciliation._meta.app_label == "hits"
    assert Reconciliation._meta.db_table == "hits_reconciliation"


@pytest.mark.parametrize("command, standin", [("mturk_standin", "StandIn"), ("prolific_standin", "ProlificStandIn")])
def test_the_stand_in_commands_reach_their_stand_in_through_the_seam(command, standin, capsys):
    assert load_command_class("hits", command).help
    assert hasattr(market_named(command.split("_")[0]).standin_module(), standin)
    with pytest.raises(SystemExit):
        call_command(command, "--help")
    assert "--port" in capsys.readouterr().out
