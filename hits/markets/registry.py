"""Which market serves a batch: ``market_for(batch)``, ``market_named(name)``, ``all_markets()``.

The markets are loaded by name from ``MARKET_MODULES`` (each module's ``market`` is its ``Market``), so nothing in
the core imports a market package.  ``ready()`` (from ``AppConfig.ready``) loads them, lets each set itself up,
and routes the core's qualification and block signals to every market's ``qualify``/``block``.
"""

from __future__ import annotations

from importlib import import_module

# The crowd markets beside the platform's own pages ("local", ``hits.markets.local``), in the order their
# receivers run.
MARKET_MODULES = ("hits.mturk.market", "hits.prolific.market")
LOCAL = "local"

_markets: dict | None = None


class UnknownMarket(LookupError):
    """No market of that name, or none serves the batch's backend."""


def markets() -> dict:
    """``{name: Market}``: the local market, then those of ``MARKET_MODULES``, loaded on first use."""
    global _markets
    if _markets is None:
        found = {LOCAL: import_module("hits.markets.local").market}
        for module in MARKET_MODULES:
            market = import_module(module).market
            found[market.name] = market
        _markets = found
    return _markets


def all_markets() -> list:
    return list(markets().values())


def market_named(name: str):
    """The market called ``name`` ("local", "mturk", "prolific")."""
    try:
        return markets()[name]
    except KeyError:
        raise UnknownMarket(f"no market called '{name}' (known: {', '.join(markets())})") from None


def market_for(batch):
    """The market that serves ``batch`` (by its backend)."""
    for market in markets().values():
        if market.serves(batch):
            return market
    raise UnknownMarket(f"no market serves batch '{batch}' (its backend is '{batch.backend}')")


def session_pages():
    """The pages of the market whose participants work in sessions (Prolific's), or None."""
    return next((p for p in (m.session_pages() for m in all_markets()) if p is not None), None)


def ready() -> None:
    """Set every market up and connect the signals the markets follow (once per process)."""
    from hits.signals import batch_block_changed, qualification_changed, worker_blocked

    for market in all_markets():
        market.ready()
    qualification_changed.connect(_qualification_changed, dispatch_uid="markets-qualification")
    batch_block_changed.connect(_batch_block_changed, dispatch_uid="markets-batch-block")
    worker_blocked.connect(_worker_blocked, dispatch_uid="markets-block")


def _qualification_changed(sender, worker, task_type, state, reason, batch=None, **kwargs):
    for market in all_markets():
        market.qualify(worker, task_type, state, reason, batch)


def _batch_block_changed(sender, worker, batch, blocked, reason, **kwargs):
    for market in all_markets():
        market.block_in_batch(worker, batch, blocked, reason)


def _worker_blocked(sender, worker, blocked, reason, **kwargs):
    for market in all_markets():
        market.block(worker, blocked, reason)
