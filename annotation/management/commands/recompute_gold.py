"""``manage.py recompute_gold``: recompute a campaign's gold labels and scores from scratch."""

from django.core.management.base import BaseCommand

from annotation.management.campaigns import campaign_from_slug
from annotation.management.progress import ProgressBar
from annotation.services.scores import recompute_gold


class Command(BaseCommand):
    help = "Recompute every crowd gold label (majority of the judgments that count) and every score of a campaign."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--progress", action="store_true", help="Show a progress bar on stderr even when it is not a terminal.")

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        bar = ProgressBar.for_command(self, options)
        result = recompute_gold(campaign, progress=bar)
        bar.close()
        self.stdout.write(f"Recomputed {result['gold_labels']:,} crowd gold labels and the scores of {result['summaries']:,} summaries.")
