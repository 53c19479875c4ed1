"""``manage.py prolific_reconcile --campaign SLUG [--format json]``: the campaign's ledger against Prolific's
records, with ``mturk_reconcile``'s keys (``ledger_total``, ``market_total``, ``currency``, ``differences``).  Stored and shown
on the payout page.  Exit code 0 when the two sides agree, 1 on any difference.  See ``hits.prolific.reconcile``."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_reconcile import finish
from annotation.management.commands.prolific_sync import prolific_batch
from hits.markets.money import money
from hits.prolific.client import ProlificError
from hits.prolific.reconcile import reconcile_batch


class Command(BaseCommand):
    help = "Compare a campaign's ledger with what Prolific charged; exit 1 on any difference."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        batch = prolific_batch(options["campaign"], "to reconcile")
        try:
            result = reconcile_batch(batch)
        except ProlificError as exc:  # e.g. no token
            raise CommandError(str(exc)) from None
        finish(
            self, result, options["format"], market="Prolific", place="study", item="submission",
            summary=(
                f"Ledger (paid): {money(result.ledger_total, result.currency)}; Prolific charged: "
                f"{money(result.market_total, result.currency)}; "
                f"{result.hits_checked} studies checked, {result.calls} Prolific requests."
            ),
        )
