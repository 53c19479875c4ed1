"""``manage.py load_demo``: the demo campaign and a demo researcher account, for ``make demo``."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from annotation.models import Campaign
from annotation.services.roles import make_researcher
from annotation.services.campaign_import import import_campaign
from annotation.services.qualification_tests import define_qualifications

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_SLUG = "demo-news"


class Command(BaseCommand):
    help = "Create the demo researcher account (a new password each run) and import the demo campaign once."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="researcher")
        parser.add_argument("--password", help="Password to set (default: a new random one, printed).")

    @transaction.atomic
    def handle(self, *args, **options):
        User = get_user_model()
        user, _ = User.objects.get_or_create(username=options["username"], defaults={"email": ""})
        password = options["password"] or secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = True
        user.is_superuser = True
        user.save()
        make_researcher(user)
        if not Campaign.objects.filter(slug=DEMO_SLUG).exists():
            report = import_campaign(
                name="Demo news",
                slug=DEMO_SLUG,
                owner=user,
                description="Six made-up local news stories summarised by four systems.",
                references=DEMO_DIR / "references.jsonl",
                summaries=DEMO_DIR / "summaries.jsonl",
                # The default for new campaigns, shown off: two presence judges, a third where they disagree.
                campaign_settings={"presence_judges": Campaign.PresenceJudges.ADAPTIVE},
            )
            self.stdout.write(report.summary_line())
            definition = json.loads((DEMO_DIR / "qualifications.json").read_text(encoding="utf-8"))
            counts = define_qualifications(report.campaign, definition)
            self.stdout.write("Qualification tests: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
        else:
            self.stdout.write(f"Demo campaign '{DEMO_SLUG}' already present.")
        self.stdout.write(
            self.style.SUCCESS(f"Demo researcher/admin account: username '{user.username}', password '{password}'")
        )
