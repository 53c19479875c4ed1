"""``manage.py mturk_sync --campaign SLUG``: list MTurk assignments, review, pay bonuses, expire (see hits.mturk.sync)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_publish import campaign_for
from hits.mturk.client import MTurkError
from hits.mturk.sync import notify_workers, sync_batch


class Command(BaseCommand):
    help = "Bring a campaign's MTurk HITs and assignments in step with the platform (safe to repeat)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--notify-subject", default="", help="Also send this message to the campaign's MTurk workers.")
        parser.add_argument("--notify-message", default="")
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        campaign = campaign_for(options["campaign"])
        if campaign.batch is None or not campaign.batch.on_mturk:
            raise CommandError(f"campaign '{campaign.slug}' has no HITs on MTurk (run mturk_publish first)")
        if bool(options["notify_subject"]) != bool(options["notify_message"]):
            raise CommandError("--notify-subject and --notify-message go together")
        try:
            report = sync_batch(campaign.batch)
            notified = notify_workers(campaign.batch, options["notify_subject"], options["notify_message"]) if options["notify_subject"] else None
        except MTurkError as exc:
            raise CommandError(str(exc)) from None
        figures = {**report.as_dict(), "notified": notified.reached if notified else 0}
        if notified and notified.failures:
            figures["not_notified"] = notified.failures
        if options["format"] == "json":
            self.stdout.write(json.dumps(figures, indent=2))
        else:
            self.stdout.write(", ".join(f"{key} {value}" for key, value in figures.items()))
