"""The market of the platform's own pages: local workers take HITs on the site and are paid outside it."""

from __future__ import annotations

from hits.markets.base import Market, NotOnAMarket


class LocalMarket(Market):
    name = "local"
    label = "Local workers"
    backends = ("local",)

    def publish(self, batch):
        """Nothing to publish: the batch's open HITs are on the platform's pages already."""
        return None

    def sync(self, batch):
        """Nothing to read: the platform's own records are the only ones."""
        return None

    def reconcile(self, batch, save: bool = True):
        raise NotOnAMarket(
            f"batch '{batch}' runs on the platform's own pages: there are no market records to reconcile with "
            "(its ledger entries are owed until marked paid)"
        )

    def preview(self, batch) -> list[dict]:
        """No requests: nothing is sent anywhere."""
        return []


market = LocalMarket()
