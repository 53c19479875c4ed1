"""What the markets' syncs share in their reports: the figures as a dict, and errors recorded without stopping."""

from __future__ import annotations

import logging
from dataclasses import asdict

log = logging.getLogger("hits.sync")


class SyncErrors:
    """Mixed into a market's report dataclass, which has ``failed: int`` and ``errors: list`` fields."""

    market = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def error(self, what: str, exc: Exception) -> None:
        """One call that failed: counted, kept (shortened) for the researcher, logged; the sync goes on."""
        self.failed += 1
        self.errors.append(f"{what}: {exc}"[:300])
        log.warning("%s sync: %s: %s", self.market, what, exc)
