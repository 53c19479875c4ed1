"""``manage.py import_campaign``: import references, system summaries and predicates, all or nothing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.importing.readers import CampaignImportError
from annotation.management.progress import ProgressBar
from annotation.models import Campaign
from annotation.services.campaign_import import IMPORT_SETTINGS, MARKETS, PREDICATES_AUTO, import_campaign
from annotation.services.roles import researchers


class Command(BaseCommand):
    help = (
        "Import a campaign from a references file and system summaries (JSONL/CSV, or a directory of "
        "<system>.summary files with ids.txt), from a folder in the REALSumm/PyrXSum layout, or from the released "
        "QAPyramid data set (--qapyramid). "
        "Nothing is written if any line is bad."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="Campaign name.")
        parser.add_argument("--slug", help="Campaign slug (default: the slugified name).")
        parser.add_argument("--references", help="References: JSONL {id, reference, source?} or CSV.")
        parser.add_argument(
            "--summaries", help="Summaries: JSONL {id, system, summary} or a directory of <system>.summary + ids.txt."
        )
        parser.add_argument("--folder", help="A folder in the REALSumm/PyrXSum layout (ids.txt, references.txt, ...).")
        parser.add_argument(
            "--qapyramid", metavar="FILE.jsonl",
            help="The released QAPyramid data set: JSONL {example_id, reference, source?, QAs, QA_labels, system_outputs}.",
        )
        parser.add_argument(
            "--predicates",
            default=PREDICATES_AUTO,
            help="'auto' (spaCy, default), 'none', or a JSONL file {id, start, end, lemma?} of reference offsets.",
        )
        parser.add_argument(
            "--owner",
            help="Username of the researcher who owns the campaign (required once the platform has researchers: "
            "a campaign without an owner is seen by admins only).",
        )
        parser.add_argument("--description", default="", help="Free-text description.")
        parser.add_argument(
            "--market", choices=list(MARKETS),
            help="Where the campaign runs: 'local' (the platform's own pages, the default), 'mturk' (the MTurk sandbox; "
            "mturk_publish --campaign SLUG) or 'prolific' (prolific_publish --campaign SLUG). A --folder may give it "
            "in settings.json as \"backend\".",
        )
        parser.add_argument("--prolific-hits-per-submission", type=int, metavar="N",
                            help="Prolific: HITs in one participant's session (1..100; default: about 12 minutes of work).")
        parser.add_argument("--prolific-fee-rate", metavar="SHARE",
                            help="Prolific: its service fee as a share of rewards and bonuses (default 0.3333, its published figure).")
        for stage in ("generation", "verification", "presence"):
            paper = Campaign._meta.get_field(f"reward_{stage}").default
            parser.add_argument(
                f"--reward-{stage}", metavar="DOLLARS",
                help=f"The reward of one {stage} HIT in dollars, to the cent (default {paper}, the paper's). With "
                "--market prolific it must pass Prolific's minimum hourly pay; without it the import chooses one that does.",
            )
        for option, text in (
            ("--mturk-assignment-duration", "Seconds an MTurk worker may keep an assignment (30..31,536,000)."),
            ("--mturk-hit-lifetime", "Seconds a HIT stays on MTurk (30..31,536,000)."),
            ("--mturk-auto-approval-delay", "Seconds until MTurk approves submitted work on its own (0..2,592,000)."),
        ):
            parser.add_argument(option, type=int, default=None, help=text)
        parser.add_argument(
            "--human-share", type=float, metavar="S",
            help="Budgeted presence: the share of presence HITs people judge, between 0 and 1 (default 1: every HIT, "
            "the paper's protocol); the judge labels the rest.",
        )
        parser.add_argument(
            "--judge-scoring", choices=["label", "probability"],
            help="Budgeted presence: units only the judge labels count as its label or its calibrated probability "
            "(default: probability).",
        )
        parser.add_argument(
            "--routing-rule", choices=["active", "uncertainty"],
            help="Budgeted presence: how the HITs people judge are chosen: 'active' (random draws with known "
            "probabilities favouring the judge's unsure HITs; unbiased scores with 95%% intervals; the default) or "
            "'uncertainty' (the HITs the judge is least sure of; no valid interval). A --folder may give it in settings.json.",
        )
        parser.add_argument(
            "--presence-judges", choices=["fixed", "adaptive"],
            help="Presence judges per HIT: 'fixed' (3 always, the paper) or 'adaptive' (2, and a third where they "
            "disagree; the default for new campaigns). A --folder may give it in settings.json.",
        )
        parser.add_argument(
            "--third-judge-rate", metavar="SHARE",
            help="Expected share (0..1) of presence HITs needing the third judge, for cost previews (default 0.278).",
        )
        parser.add_argument("--progress", action="store_true", help="Show a progress bar on stderr even when it is not a terminal.")

    def handle(self, *args, **options):
        owner = None
        if options["owner"]:
            try:
                owner = get_user_model().objects.get(username=options["owner"])
            except get_user_model().DoesNotExist:
                raise CommandError(f"no user named '{options['owner']}'") from None
        else:
            names = list(researchers().values_list("username", flat=True)[:6])
            if names:
                listed = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                raise CommandError(
                    f"--owner is required: name the researcher who owns the campaign ({listed}); "
                    "without an owner only admins would see it. Nothing imported."
                )
        bar = ProgressBar.for_command(self, options)
        try:
            report = import_campaign(
                name=options["name"],
                slug=options["slug"],
                owner=owner,
                description=options["description"],
                references=options["references"],
                summaries=options["summaries"],
                predicates=options["predicates"],
                folder=options["folder"],
                qapyramid=options["qapyramid"],
                progress=bar,
                campaign_settings={name: options[option.lstrip("-").replace("-", "_")] for name, option in IMPORT_SETTINGS.items()
                                   if options.get(option.lstrip("-").replace("-", "_")) is not None},
            )
        except CampaignImportError as exc:
            bar.close()
            if options["verbosity"] >= 2:
                for problem in exc.problems[1:]:
                    self.stderr.write(f"  also: {problem}")
            raise CommandError(f"nothing imported: {exc}") from None
        bar.close()
        self.stdout.write(report.summary_line())
        if owner is not None:
            self.stdout.write(f"Owner: {owner.get_username()} (and the admins; share it from its settings page).")
        else:
            self.stdout.write("No owner: only admins see this campaign (the platform has no researcher yet).")
        if report.prolific_rewards:
            minimum = report.prolific_rewards[0].rate.minimum
            self.stdout.write(f"Rewards on Prolific (a session's reward over its estimated minutes, at least ${minimum}/h, "
                              "PROLIFIC_MIN_HOURLY_USD, as prolific_publish checks it):")
            for reward in report.prolific_rewards:
                self.stdout.write(f"  {reward.line()}")
        if report.systems_without_labels:
            self.stdout.write("Systems without gold labels: " + ", ".join(report.systems_without_labels))
