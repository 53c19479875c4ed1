"""``manage.py mturk_expire --campaign SLUG [--keep]``: stop a campaign's MTurk HITs now; delete the reviewed ones.

A running campaign is paused first, so the stop sticks: the sync keeps a paused campaign's HITs expired
until a researcher resumes it (and only then gives them a new lifetime)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_publish import campaign_for
from annotation.models import Campaign
from annotation.services.pipeline import pause_campaign
from hits.mturk.client import MTurkError
from hits.mturk.sync import expire_batch


class Command(BaseCommand):
    help = (
        "Pause the campaign and expire every MTurk HIT of it (no new workers); delete those whose places are all "
        "used and whose work is all reviewed.  Resume the campaign to publish again."
    )

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--keep", action="store_true", help="Expire only; do not delete.")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        if campaign.batch is None or not campaign.batch.on_mturk:
            raise CommandError(f"campaign '{campaign.slug}' has no HITs on MTurk")
        if campaign.state == Campaign.State.RUNNING:
            pause_campaign(campaign)
            self.stdout.write(f"Campaign '{campaign.slug}' paused: its HITs stay expired until you resume it.")
        campaign.batch.refresh_from_db()
        try:
            report = expire_batch(campaign.batch, delete=not options["keep"])
        except MTurkError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Expired {report.expired} HITs, deleted {report.deleted}.")
        for error in report.errors:
            self.stderr.write(f"not done, the next sync tries again: {error}")
