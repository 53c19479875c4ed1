"""``manage.py api_token USERNAME``: print a user's REST API token (created if needed)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token

from annotation.services.roles import is_researcher


class Command(BaseCommand):
    help = "Print the REST API token of a user, creating it if needed (--rotate replaces it: the old one stops working)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true", help="Delete the current token and issue a new one.")

    def handle(self, *args, **options):
        User = get_user_model()
        try:
            user = User.objects.get(username=options["username"])
        except User.DoesNotExist:
            raise CommandError(f"no user named '{options['username']}'") from None
        if not user.is_active:
            raise CommandError(f"user '{user.get_username()}' is inactive")
        if options["rotate"]:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        if not is_researcher(user):
            # Still issued (the API answers 403), but say why the token will not open anything yet.
            self.stderr.write(
                f"Note: '{user.get_username()}' is not a researcher; make them one with create_researcher to use the API."
            )
        self.stdout.write(token.key)
