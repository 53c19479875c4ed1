"""``manage.py mturk_expire --campaign SLUG [--keep]``: stop a campaign's MTurk HITs now; delete the reviewed ones."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_publish import campaign_for
from hits.mturk.client import MTurkError
from hits.mturk.sync import expire_batch


class Command(BaseCommand):
    help = "Expire every MTurk HIT of the campaign (no new workers) and delete those whose work is all reviewed."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--keep", action="store_true", help="Expire only; do not delete.")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        if campaign.batch is None or not campaign.batch.on_mturk:
            raise CommandError(f"campaign '{campaign.slug}' has no HITs on MTurk")
        try:
            report = expire_batch(campaign.batch, delete=not options["keep"])
        except MTurkError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Expired {report.expired} HITs, deleted {report.deleted}.")
