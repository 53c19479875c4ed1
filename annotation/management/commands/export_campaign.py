"""``manage.py export_campaign``: examples JSONL, raw judgments CSV and settings, to reproduce a study."""

from django.core.management.base import BaseCommand, CommandError

from annotation.management.campaigns import campaign_from_slug
from annotation.management.progress import ProgressBar
from annotation.services.export import export_campaign


class Command(BaseCommand):
    help = "Export a campaign into a directory: examples.jsonl, judgments.csv, verifications.csv, systems.csv, pairs.csv and campaign.json."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--out", required=True, help="Directory to write into (created if needed).")
        parser.add_argument("--pseudonymise", action="store_true", help="Replace worker ids by salted hashes.")
        parser.add_argument("--salt", default="", help="Salt of the pseudonyms (keep it secret to keep them unlinkable).")
        parser.add_argument("--progress", action="store_true", help="Show a progress bar on stderr even when it is not a terminal.")

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        bar = ProgressBar.for_command(self, options)
        try:
            result = export_campaign(
                campaign, options["out"], pseudonymise=options["pseudonymise"], salt=options["salt"], progress=bar
            )
        except OSError as exc:
            bar.close()
            raise CommandError(f"cannot write the export: {exc}") from None
        bar.close()
        self.stdout.write(f"Exported {result['examples']:,} examples and {result['judgments']:,} judgments to {result['dir']}")
