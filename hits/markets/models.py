"""The seam's own records, and the markets' models loaded for Django.

``Reconciliation`` is every market's reconcile report (``hits.markets.reconcile``), app ``hits`` as before.
Django loads an app's models from its ``models`` module: ``hits.models`` imports this module, which imports
each registered market's ``models`` by name (``registry.MARKET_MODULES``), so the core never names a market.
"""

from __future__ import annotations

from importlib import import_module

from django.db import models

from hits.markets.registry import MARKET_MODULES


class Reconciliation(models.Model):
    """One run of ``manage.py mturk_reconcile``: the ledger's paid total, what MTurk's own records say it
    charged (rewards, bonuses and their fees), and every difference found (``hits.mturk.reconcile``)."""

    batch = models.ForeignKey("hits.Batch", on_delete=models.CASCADE, related_name="reconciliations")
    # The crowd market whose records were read ("mturk" or "prolific").
    market = models.CharField(max_length=10, default="mturk")
    created_at = models.DateTimeField(auto_now_add=True)
    ledger_total = models.DecimalField(max_digits=10, decimal_places=2)
    market_total = models.DecimalField(max_digits=10, decimal_places=2)
    # [{"kind", "hit", "assignment", "amount", "detail"}, ...]; empty when the two sides agree.
    differences = models.JSONField(default=list)
    hits_checked = models.PositiveIntegerField(default=0)
    # HITs MTurk has deleted: read from the records kept here (statuses as last listed), not from MTurk.
    hits_from_records = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "MTurk reconciliation"

    def __str__(self) -> str:
        return f"reconciliation of batch {self.batch_id} at {self.created_at:%Y-%m-%d %H:%M}"

    @property
    def agrees(self) -> bool:
        return not self.differences


def load_market_models() -> None:
    """Import every registered market's ``models`` module (its package's, beside ``market``)."""
    for name in MARKET_MODULES:
        import_module(name.rsplit(".", 1)[0] + ".models")


load_market_models()
