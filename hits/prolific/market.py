"""Prolific behind the seam (``hits.markets.base.Market``): thin adapters over this package's functions."""

from __future__ import annotations

from decimal import Decimal

from hits.markets.base import Market


class ProlificMarket(Market):
    name = "prolific"
    label = "Prolific"
    backends = ("prolific",)

    def ready(self) -> None:
        # Its Celery tasks are sent by name from web requests (outbox): register them in every process.
        import hits.prolific.tasks  # noqa: F401

    def session_pages(self):
        """A participant works in the session this browser holds (``hits.prolific.views``)."""
        from hits.prolific import views

        return views

    def standin_module(self):
        from hits.prolific import standin

        return standin

    def publish(self, batch):
        from hits.prolific.publishing import publish_batch

        return publish_batch(batch)

    def sync(self, batch):
        from hits.prolific.sync import sync_batch

        return sync_batch(batch)

    def settle_soon(self, batch) -> None:
        from hits.outbox import send_after_commit

        send_after_commit("hits.prolific.settle_batch", batch.pk)

    def reward_of(self, assignment) -> Decimal:
        """A qualification item's share of its screening study's reward
        (``hits.prolific.pricing.screening_item_reward``); else the HIT's own."""
        hit = assignment.hit
        if hit.kind == hit.Kind.QUALIFICATION:
            from hits.prolific.pricing import screening_item_reward

            item = screening_item_reward(hit)
            if item is not None:
                return item
        return hit.reward

    def entry_fee(self, assignment, kind: str, amount: Decimal) -> tuple[Decimal, str]:
        """Prolific's service fee: the same share of rewards and bonuses (``hits.prolific.fees``)."""
        from hits.prolific import fees

        return fees.fee(amount, fees.fee_rate(assignment.hit.batch)), "Prolific service fee"

    def committed(self, batch) -> Decimal:
        from hits.prolific import fees

        return fees.committed(batch)

    def places_committed(self, batch) -> Decimal:
        from hits.prolific.publishing import committed

        return committed(batch)

    def in_places_tokens(self) -> tuple[str, ...]:
        from hits.prolific.pricing import SESSION_SHARE_TOKEN

        return (SESSION_SHARE_TOKEN,)

    def bonus_cost(self, batch, amount: Decimal) -> Decimal:
        """The bonus and Prolific's fee on it, estimated at the batch's rate (Prolific states it when it is sent)."""
        from hits.prolific import fees

        return amount + fees.fee(amount, fees.fee_rate(batch))

    def qualify(self, worker, task_type, state: str, reason: str, batch=None) -> None:
        from hits.prolific.groups import on_qualification_changed

        on_qualification_changed(worker, task_type, state, reason, batch)

    def block_in_batch(self, worker, batch, blocked: bool, reason: str) -> None:
        from hits.prolific.groups import on_batch_block_changed

        on_batch_block_changed(worker, batch, blocked, reason)

    def send_message(self, batch, subject: str, body: str, workers: list) -> dict:
        from hits.prolific.messages import send_message

        return send_message(batch, subject, body, workers)

    def reconcile(self, batch, save: bool = True):
        from hits.prolific.reconcile import reconcile_batch

        return reconcile_batch(batch, save=save)

    def preview(self, batch) -> list[dict]:
        from hits.prolific.publishing import planned_requests

        return planned_requests(batch)


market = ProlificMarket()
