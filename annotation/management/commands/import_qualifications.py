"""``manage.py import_qualifications``: define a campaign's qualification tests and gold items from JSON."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.importing.safe_json import JSONProblem, load_json
from annotation.management.campaigns import campaign_from_slug
from annotation.services.qualification_tests import QualificationDefinitionError, define_qualifications


class Command(BaseCommand):
    help = "Replace a campaign's qualification tests (and presence gold items) with those of a JSON file."

    def add_arguments(self, parser):
        parser.add_argument("path", help="JSON file with generation / verification / presence / presence_gold lists.")
        parser.add_argument("--campaign", required=True, help="Campaign slug.")

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        path = Path(options["path"])
        try:
            definition = load_json(path.read_bytes(), storable=False)
        except FileNotFoundError:
            raise CommandError(f"{path}: file not found") from None
        except JSONProblem as exc:
            raise CommandError(f"{path.name}: {exc.describe()}; nothing was changed") from None
        try:
            counts = define_qualifications(campaign, definition)
        except QualificationDefinitionError as exc:
            raise CommandError(f"{path.name}: {exc}; nothing was changed") from None
        self.stdout.write(
            f"Qualification tests of '{campaign.slug}': " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        )
