"""``manage.py prolific_release_browser SESSION_ID``: a participant who lost the browser that holds their Prolific
session (see hits.prolific.holding) opens the study link in a new browser once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from hits.prolific.holding import release
from hits.prolific.models import ProlificSession


class Command(BaseCommand):
    help = ("Let the next browser that opens a Prolific session's study link hold the session (the participant lost "
            "the browser that held it); the browser that held it is signed out of it.")

    def add_arguments(self, parser):
        parser.add_argument("session_id", help="Prolific's SESSION_ID (the submission's id)")

    def handle(self, *args, **options):
        session_id = options["session_id"].lower()
        session = ProlificSession.objects.filter(session_id=session_id).exclude(
            state=ProlificSession.State.DISCARDED).first()
        if session is None:
            raise CommandError(f"no Prolific session {session_id} here")
        release(session)
        self.stdout.write(f"Prolific session {session_id} of {session.participant_id}: the next browser to open "
                          "its study link holds it.")
