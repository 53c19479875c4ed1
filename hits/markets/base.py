"""The interface every crowd market implements: publish, sync, pay, qualify or filter, block, reconcile, preview.

A market is a thin adapter over its own package's functions (``hits.mturk.market``, ``hits.prolific.market``,
``hits.markets.local``); the rest of ``hits`` calls it through ``hits.markets.registry``, never the package.
Where a market has nothing to do (the platform's own pages publish nothing), the default here says so.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal

from hits.markets.money import ZERO


class NotOnAMarket(Exception):
    """What was asked needs a crowd market (e.g. reconcile), and the batch runs on the platform's own pages."""


@dataclass
class Delivery:
    """What became of a message to one worker: ``status`` "sent", "failed" (the market refused it for that worker)
    or "unknown" (no clear answer: it may have arrived); ``code`` the market's own failure code, ``detail`` why."""

    status: str
    detail: str = ""
    code: str = ""
    emailed: bool = False


class Market(ABC):
    name: str = ""  # "local", "mturk", "prolific": what the registry knows it by
    label: str = ""  # as a researcher reads it
    backends: tuple[str, ...] = ()  # the ``Batch.backend`` values it serves

    def serves(self, batch) -> bool:
        return batch.backend in self.backends

    # --- set-up -----------------------------------------------------------------------------------------------

    def ready(self) -> None:
        """Load what must be there in every process (Celery tasks sent by name, admin pages): ``AppConfig.ready``."""

    def worker_urls(self) -> list:
        """URL patterns of the market's own worker pages, included with ``hits.urls``."""
        return []

    def session_pages(self):
        """The pages of a market whose participants work in sessions (an object with ``is_participant``,
        ``browser_session``, ``go_on`` and ``progress``), or None."""
        return None

    def standin_module(self):
        """The market's stand-in (the module or package whose server ``manage.py <market>_standin`` runs), or None."""
        return None

    # --- publish and sync -------------------------------------------------------------------------------------

    @abstractmethod
    def publish(self, batch):
        """Publish the batch's open work on the market now; the market's report (or None: nothing to publish)."""

    def publish_soon(self, batch) -> None:
        """New HITs exist in the batch: publish them once the transaction commits (a no-op where nothing is sent)."""

    @abstractmethod
    def sync(self, batch):
        """Read the market's records of the batch and act on them; the market's report (None: nothing to read)."""

    def settle_soon(self, batch) -> None:
        """Decisions or bonuses were recorded: send them once the transaction commits."""

    # --- pay --------------------------------------------------------------------------------------------------

    def reward_of(self, assignment) -> Decimal:
        """What approving the assignment pays."""
        return assignment.hit.reward

    def entry_fee(self, assignment, kind: str, amount: Decimal) -> tuple[Decimal, str] | None:
        """The market's fee on a ledger entry of ``kind`` and ``amount`` and its wording, or None: no fee."""
        return None

    def committed(self, batch) -> Decimal:
        """The money the batch has committed on the market, against its budget cap (``hits.budget.committed``)."""
        return ZERO

    def places_committed(self, batch) -> Decimal:
        """What the market's records say the batch's published places commit (``hits.budget.places``)."""
        return ZERO

    def in_places_tokens(self) -> tuple[str, ...]:
        """Request-token prefixes of ledger bonus lines that the places count already (``hits.budget.given``)."""
        return ()

    def bonus_cost(self, batch, amount: Decimal) -> Decimal | None:
        """What a bonus of ``amount`` commits, its fee included (None: the budget cap does not apply)."""
        return None

    def extra_places_cost(self, hit, extra: int) -> tuple[Decimal, Decimal] | None:
        """``(cost of extra places on the HIT, money of places waiting to be published)`` for the budget cap; None:
        the places commit nothing the cap counts."""
        return None

    def can_grow(self, hit, extra: int) -> bool:
        """Whether the HIT itself can take ``extra`` more places (else they go to a HIT of their own)."""
        return True

    # --- qualify or filter, block -----------------------------------------------------------------------------

    def qualify(self, worker, task_type, state: str, reason: str, batch=None) -> None:
        """A worker's qualification for a task type changed (``state``): mirror it where the market filters."""

    def block_in_batch(self, worker, batch, blocked: bool, reason: str) -> None:
        """A worker was blocked (or unblocked) in one batch."""

    def block(self, worker, blocked: bool, reason: str) -> None:
        """A worker was blocked (or unblocked) everywhere."""

    # --- messages to workers -------------------------------------------------------------------------------

    message_subject_limit = 200  # characters the market takes in a subject
    message_body_limit = 4096  # ... and in a message

    def send_message(self, batch, subject: str, body: str, workers: list) -> dict:
        """Send a message to ``workers`` (``Worker`` rows of ``batch``) through the market: ``{worker pk: Delivery}``
        for every one of them.  Called once the message is recorded (``hits.messaging``); never raises for one
        worker's refusal, which is that worker's ``Delivery``."""
        return {w.pk: Delivery("failed", f"{self.label} cannot carry messages", "unsupported") for w in workers}

    # --- reconcile and preview --------------------------------------------------------------------------------

    @abstractmethod
    def reconcile(self, batch, save: bool = True):
        """The ledger against the market's own records (``hits.markets.reconcile.ReconcileResult``)."""

    @abstractmethod
    def preview(self, batch) -> list[dict]:
        """The requests publishing the batch would send, with their costs; nothing is sent."""
