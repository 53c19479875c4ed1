"""``manage.py compare_judges``: the campaign's automatic judges against its gold labels and QAPyramid."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.management.campaigns import campaign_from_slug


def _f(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def _undefined(tau: dict) -> str:
    if tau.get("n_examples") is None:
        return "—"
    return f"{tau.get('n_undefined', 0)}/{tau['n_examples']}"


class Command(BaseCommand):
    help = "Presence accuracy and present-class F1, and Kendall's tau (system and summary level) of each judge's latest run, and of ROUGE."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--format", choices=["json", "table"], default="table")
        parser.add_argument(
            "--subgroup", action="append", default=[], metavar="NAME=SYS1,SYS2",
            help="Also correlate over these systems only (repeatable).",
        )

    def handle(self, *args, **options):
        from annotation.automation.autoscore import compare_judges

        campaign = campaign_from_slug(options["campaign"])
        subgroups = {}
        for item in options["subgroup"]:
            name, _, members = item.partition("=")
            systems = [m.strip() for m in members.split(",") if m.strip()]
            if not name.strip() or not systems:
                raise CommandError(f"--subgroup {item!r}: write NAME=system1,system2")
            subgroups[name.strip()] = systems
        try:
            result = compare_judges(campaign, subgroups or None)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=2))
            return
        if not result["runs"]:
            self.stdout.write(f"no finished autoscore run on '{campaign.slug}' yet: run `manage.py autoscore --campaign {campaign.slug}`")
            return
        self.stdout.write(
            f"{'judge':<28} {'mode':<18} {'acc':>6} {'F1 pres':>7} {'tau sys':>8} {'tau summ':>8} {'undefined':>9}"
        )
        for run in result["runs"]:
            presence = run["presence"] or {}
            tau = ((run["correlation"] or {}).get("all") or {}).get("kendall") or {}
            self.stdout.write(
                f"{run['judge']:<28} {run['mode']:<18} {_f(presence.get('accuracy')):>6} {_f(presence.get('f1_present')):>7} "
                f"{_f(tau.get('system')):>8} {_f(tau.get('summary')):>8} {_undefined(tau):>9}"
            )
        for variant, figures in (result["rouge"] or {}).items():
            tau = figures["all"]["kendall"]
            self.stdout.write(
                f"{variant + ' recall':<28} {'':<18} {'':>6} {'':>7} {_f(tau['system']):>8} {_f(tau['summary']):>8} {_undefined(tau):>9}"
            )
        self.stdout.write(
            "acc = accuracy (what the paper calls micro-F1 on these binary labels); F1 pres = F1 of the 'present' class. "
            "Summary-level tau: mean over all examples, an undefined one (systems tied) counting as 0; "
            "undefined = how many of the examples that was."
        )
