"""``manage.py worker_report``: every worker of a campaign with their status and figures."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from annotation.management.campaigns import campaign_from_slug
from annotation.selectors.campaigns import campaign_workers


class Command(BaseCommand):
    help = "List the campaign's workers: status per task type (qualified/pending/failed/revoked/blocked) and figures."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--format", choices=["json", "table"], default="table")

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        rows = campaign_workers(campaign)
        if options["format"] == "json":
            report = [
                {
                    "worker": row["worker"].external_id,
                    "status": row["status"],
                    "figures": {**row["figures"], "hits_done": row["hits_done"], "seconds_per_hit": row["seconds_per_hit"], "excluded": row["excluded"]},
                }
                for row in rows
            ]
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(f"{'worker':<24} {'generation':<11} {'verification':<13} {'presence':<10} {'HITs':>5}  figures")
        for row in rows:
            f = row["figures"]
            figures = (
                f"kept {_pct(f['generation']['valid_share']['value'])}, agree {_pct(f['verification']['agreement']['value'])}, "
                f"gold {_pct(f['presence']['gold_accuracy']['value'])}"
            )
            s = row["status"]
            self.stdout.write(
                f"{row['worker'].external_id:<24} {s.get('generation', '-'):<11} {s.get('verification', '-'):<13} "
                f"{s.get('presence', '-'):<10} {row['hits_done']:>5}  {figures}"
            )


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"
