"""``manage.py replay_presence``: what the adaptive third judge would have saved on a raw presence file."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.importing.raw_presence import RawPresenceError, read_raw_presence
from annotation.scoring.replay import RULES, replay_presence


class Command(BaseCommand):
    help = (
        "Replay a raw presence file (the released QA_presence.json format) HIT by HIT in its listed order, under the "
        "fixed rule (3 judges) and the adaptive one (2, and a third where they disagree): assignments, saving, labels "
        "changed and alpha over the first two judgments. HITs whose pairs do not all have 3 judgments are counted apart."
    )

    def add_arguments(self, parser):
        parser.add_argument("--raw", required=True, help="The raw presence file (e.g. ../shared/data/qapyramid/QA_presence.json).")
        parser.add_argument("--rule", choices=RULES, default="adaptive", help="The rule whose labels are compared with the fixed majority (default adaptive).")
        parser.add_argument("--format", choices=("json", "table"), default="table")

    def handle(self, *args, **options):
        try:
            hits = read_raw_presence(options["raw"])
        except RawPresenceError as exc:
            raise CommandError(str(exc)) from None
        result = replay_presence(hits, options["rule"])
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        self.stdout.write(render_table(result))


def render_table(r: dict) -> str:
    def share(x):
        return "n/a" if x is None else f"{x:.4f}"

    left_out = ", ".join(f"{n:,} with {p}" for p, n in r["hits_by_judgments"].items() if p != "3") or "none"
    lines = [
        f"HITs replayed (every pair has 3 judgments)   {r['hits']:>10,}",
        f"QA pairs in them                             {r['pairs']:>10,}",
        f"Need a third judge (first two disagree)      {r['third_needed']:>10,}",
        f"Assignments, fixed rule (3 per HIT)          {r['assignments_fixed']:>10,}",
        f"Assignments, adaptive rule                   {r['assignments_adaptive']:>10,}",
        f"Saved share                                  {r['saved_share'] * 100:>9.1f}%",
        f"Labels changed under the {r['rule']:<8} rule        {r['labels_changed']:>10,}",
        f"Alpha over the first two judgments           {share(r['alpha_first_two']):>10}",
        f"Alpha over all three                         {share(r['alpha_all']):>10}",
        f"HITs left out ({left_out} judgments per pair): {r['hits_left_out']:,}",
    ]
    return "\n".join(lines)
