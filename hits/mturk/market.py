"""MTurk behind the seam (``hits.markets.base.Market``): thin adapters over this package's functions."""

from __future__ import annotations

from decimal import Decimal

from hits.markets.base import Market


class MTurkMarket(Market):
    name = "mturk"
    label = "Amazon Mechanical Turk"
    backends = ("mturk-sandbox", "mturk-live")

    def ready(self) -> None:
        # Its Celery tasks are sent by name from web requests (outbox): register them in every process.
        import hits.mturk.admin  # noqa: F401
        import hits.mturk.tasks  # noqa: F401

    def worker_urls(self) -> list:
        from django.urls import path

        from hits.mturk import views

        # The HIT page inside MTurk's frame (the ExternalQuestion URL).
        return [path("mturk/hit/", views.mturk_hit_page, name="mturk-hit")]

    def standin_module(self):
        from hits.mturk import standin

        return standin

    def publish(self, batch):
        from hits.mturk.publishing import publish_batch

        return publish_batch(batch)

    def publish_soon(self, batch) -> None:
        from hits.mturk.publishing import publish_soon

        publish_soon(batch)

    def sync(self, batch):
        from hits.mturk.sync import sync_batch

        return sync_batch(batch)

    def settle_soon(self, batch) -> None:
        from hits.outbox import send_after_commit

        send_after_commit("hits.mturk.settle_batch", batch.pk)

    def reward_of(self, assignment) -> Decimal:
        """The reward MTurk shows for the assignment's HIT (as published), else the HIT's own."""
        published = getattr(assignment.hit, "mturk", None)
        return published.reward if published is not None else assignment.hit.reward

    def reward_fee(self, assignment, amount: Decimal | None = None, max_assignments: int | None = None) -> Decimal:
        """MTurk's commission on the assignment's reward (``amount``: the reward), as approving it books it, at the
        HIT's places on MTurk (``max_assignments``: as MTurk listed them)."""
        from hits.mturk.fees import mturk_fee

        if max_assignments is None:
            published = getattr(assignment.hit, "mturk", None)
            max_assignments = published.max_assignments if published is not None else assignment.hit.max_assignments
        return mturk_fee(self.reward_of(assignment) if amount is None else amount, max_assignments)

    def entry_fee(self, assignment, kind: str, amount: Decimal) -> tuple[Decimal, str]:
        from hits.models import LedgerEntry
        from hits.mturk.fees import bonus_fee

        fee = bonus_fee(amount) if kind == LedgerEntry.Kind.BONUS else self.reward_fee(assignment, amount)
        return fee, "MTurk commission"

    def committed(self, batch) -> Decimal:
        from hits.mturk.fees import committed

        return committed(batch)

    def places_committed(self, batch) -> Decimal:
        from hits.mturk.fees import hits_committed

        return hits_committed(batch)

    def bonus_cost(self, batch, amount: Decimal) -> Decimal:
        from hits.mturk.fees import bonus_fee

        return amount + bonus_fee(amount)

    def extra_places_cost(self, hit, extra: int) -> tuple[Decimal, Decimal]:
        """(reward + MTurk's fee at the places the HIT will have) x ``extra``, and the money of the batch's places
        waiting to be published."""
        from hits.mturk import fees
        from hits.mturk.models import MTurkHIT
        from hits.mturk.publishing import mturk_reward, waiting_commitment

        published = MTurkHIT.objects.filter(hit=hit).first()
        reward = published.reward if published else mturk_reward(hit)
        assignments = (published.max_assignments + extra) if published else hit.max_assignments + extra
        cost = (reward + fees.mturk_fee(reward, assignments)) * extra
        return cost, waiting_commitment(hit.batch)

    def can_grow(self, hit, extra: int) -> bool:
        """Not a HIT MTurk deleted or no longer has, and never from under 10 assignments to 10 or more (MTurk
        refuses; the commission would also double)."""
        from hits.mturk.models import MTurkHIT

        published = MTurkHIT.objects.filter(hit=hit).first()
        return published is None or (
            published.deleted_at is None and published.gone_at is None
            and (published.max_assignments >= 10 or published.max_assignments + extra < 10)
        )

    def qualify(self, worker, task_type, state: str, reason: str, batch=None) -> None:
        from hits.mturk.qualifications import on_qualification_changed

        on_qualification_changed(worker, task_type, state, reason, batch)

    def block_in_batch(self, worker, batch, blocked: bool, reason: str) -> None:
        from hits.mturk.qualifications import on_batch_block_changed

        on_batch_block_changed(worker, batch, blocked, reason)

    def block(self, worker, blocked: bool, reason: str) -> None:
        from hits.mturk.qualifications import on_worker_blocked

        on_worker_blocked(worker, blocked, reason)

    def send_message(self, batch, subject: str, body: str, workers: list) -> dict:
        from hits.mturk.messages import send_message

        return send_message(batch, subject, body, workers)

    def reconcile(self, batch, save: bool = True):
        from hits.mturk.reconcile import reconcile_batch

        return reconcile_batch(batch, save=save)

    def preview(self, batch) -> list[dict]:
        from hits.mturk.publishing import planned_requests

        return planned_requests(batch)


market = MTurkMarket()
