"""``manage.py create_researcher USERNAME``: a researcher account (member of the ``researchers`` group)."""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.services.roles import make_researcher


class Command(BaseCommand):
    help = (
        "Create a researcher account, or make an existing user a researcher. "
        "The password is read from an environment variable (never from the command line, where it would be logged)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument(
            "--password-from-env",
            metavar="VAR",
            help="Set the password from this environment variable (without it, a new user has an unusable password).",
        )

    @transaction.atomic
    def handle(self, *args, **options):
        username = options["username"].strip()
        if not username:
            raise CommandError("The user name is empty.")
        password = None
        if options["password_from_env"]:
            var = options["password_from_env"]
            password = os.environ.get(var)
            if not password:
                raise CommandError(f"Environment variable {var} is not set or empty.")
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username, defaults={"email": options["email"]})
        if password is not None:
            user.set_password(password)
        elif created:
            user.set_unusable_password()
        user.save()
        make_researcher(user)
        verb = "Created" if created else "Updated"
        note = "" if password is not None or not created else " (no password: set one with --password-from-env or changepassword)"
        self.stdout.write(self.style.SUCCESS(f"{verb} researcher '{user.get_username()}'{note}."))
