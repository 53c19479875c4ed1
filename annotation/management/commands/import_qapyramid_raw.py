"""``manage.py import_qapyramid_raw``: a campaign from the released QAPyramid raw presence judgments."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.importing.readers import CampaignImportError
from annotation.services.raw_import import import_qapyramid_raw


class Command(BaseCommand):
    help = "Import QA_presence.json (systems, examples and predicates by id, QA pairs, workers, judgments), all or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path", help="The raw judgments file (QA_presence.json).")
        parser.add_argument("--campaign", required=True, help="Name of the campaign to create (its slug is the slugified name).")
        parser.add_argument("--slug", help="Slug (default: the slugified name).")

    def handle(self, *args, **options):
        try:
            report = import_qapyramid_raw(options["path"], name=options["campaign"], slug=options["slug"])
        except CampaignImportError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self.stdout.write(report.summary_line())
