"""``manage.py mturk_reconcile --campaign SLUG [--format json]``: the campaign's ledger against MTurk's records.

Prints the totals on both sides (the ledger's paid entries; what MTurk's own
listings say it charged: rewards, bonuses and their fees) and every
difference: charged but not booked, booked but not charged, unknown HITs
(the campaign's annotation on a HIT the platform never recorded), and HITs
that could not be checked.  The result is stored and shown on the campaign's
payout page.  Exit code 0 when the two sides agree, 1 when any difference
(or unchecked HIT) is found.  See ``hits.mturk.reconcile``.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_publish import campaign_for
from hits.markets.money import money
from hits.mturk.client import MTurkError
from hits.mturk.reconcile import reconcile_batch


class Command(BaseCommand):
    help = "Compare a campaign's ledger with what MTurk charged; exit 1 on any difference."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        batch = campaign.batch
        if batch is None or not batch.on_mturk:
            raise CommandError(f"campaign '{campaign.slug}' has no work on MTurk to reconcile")
        try:
            result = reconcile_batch(batch)
        except MTurkError as exc:  # not expected: every call is caught per HIT
            raise CommandError(str(exc)) from None
        finish(
            self, result, options["format"], market="MTurk", place="HIT", item="assignment",
            summary=(
                f"Ledger (paid): ${result.ledger_total}; MTurk charged: ${result.market_total}; "
                f"{result.hits_checked} HITs checked ({result.hits_from_records} deleted ones from the records kept), "
                f"{result.calls} MTurk requests."
            ),
        )


def finish(command: BaseCommand, result, output: str, *, market: str, place: str, item: str, summary: str) -> None:
    """Print a reconciliation (JSON: ``ledger_total``, ``market_total``, ``currency``, ``differences``; or text) and exit 1 on
    any difference.  Shared by ``mturk_reconcile`` and ``prolific_reconcile``."""
    if output == "json":
        command.stdout.write(json.dumps(result.as_dict(), indent=2))
    else:
        command.stdout.write(summary)
        for d in result.differences:
            amount = "?" if d.amount is None else money(d.amount, result.currency)
            command.stdout.write(f"{d.kind}: {place} {d.hit or '-'} {item} {d.assignment or '-'} {amount}: {d.detail}")
        if not result.differences:
            command.stdout.write(command.style.SUCCESS(f"No difference: the ledger and {market} agree to the cent."))
        else:
            command.stdout.write(command.style.WARNING(f"{len(result.differences)} difference(s)."))
    if result.differences:
        sys.exit(1)
