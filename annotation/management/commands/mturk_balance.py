"""``manage.py mturk_balance --campaign SLUG [--sandbox]``: can the MTurk account pay for the campaign?"""

from __future__ import annotations

from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_publish import campaign_for, mturk_backend
from annotation.models import Campaign
from annotation.services.costs import campaign_cost_preview
from hits.models import LedgerEntry
from hits.mturk import fees
from hits.mturk.client import MTurk, MTurkError


class Command(BaseCommand):
    help = "Show the MTurk account balance against the campaign's cost preview and what it has committed."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--sandbox", action="store_true")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        backend = mturk_backend(campaign, options["sandbox"])
        try:
            balance = Decimal(MTurk(sandbox=backend == Campaign.Backend.MTURK_SANDBOX).call("GetAccountBalance")["AvailableBalance"])
        except MTurkError as exc:
            raise CommandError(str(exc)) from None
        preview = campaign_cost_preview(campaign, backend)
        committed = fees.committed(campaign.batch) if campaign.batch_id else Decimal("0.00")
        paid = Decimal("0.00")
        if campaign.batch_id:
            paid = sum(LedgerEntry.objects.filter(batch_id=campaign.batch_id, state=LedgerEntry.State.PAID).values_list("amount", flat=True), Decimal("0.00"))
        self.stdout.write(f"Available balance ({backend}): ${balance}")
        self.stdout.write(f"Cost preview: ${preview.total} (rewards ${preview.rewards} + fees ${preview.fees})")
        self.stdout.write(f"Committed on MTurk: ${committed}; paid so far: ${paid}")
        if balance < preview.total:
            raise CommandError(f"the balance of ${balance} cannot cover the cost preview of ${preview.total}")
        self.stdout.write(self.style.SUCCESS("The balance covers the cost preview."))
