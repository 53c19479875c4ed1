"""``manage.py prolific_sync --campaign SLUG``: confirm, discard and end sessions, review, pay bonuses, update
groups (see hits.prolific.sync)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands.mturk_publish import campaign_for
from hits.prolific.client import ProlificError
from hits.prolific.sync import sync_batch


def prolific_batch(slug: str, what: str):
    campaign = campaign_for(slug)
    if campaign.batch is None or not campaign.batch.on_prolific:
        raise CommandError(f"campaign '{campaign.slug}' has no studies on Prolific {what} (run prolific_publish first)")
    return campaign.batch


class Command(BaseCommand):
    help = "Bring a campaign's Prolific studies and submissions in step with the platform (safe to repeat)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        batch = prolific_batch(options["campaign"], "to sync")
        try:
            report = sync_batch(batch)
        except ProlificError as exc:
            raise CommandError(str(exc)) from None
        figures = report.as_dict()
        if options["format"] == "json":
            self.stdout.write(json.dumps(figures, indent=2))
        else:
            self.stdout.write(", ".join(f"{key} {value}" for key, value in figures.items() if key != "errors"))
            for error in report.errors:
                self.stdout.write(self.style.WARNING(error))
