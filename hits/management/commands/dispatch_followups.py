"""``manage.py dispatch_followups``: send follow-up tasks stored while the broker was down."""

from django.core.management.base import BaseCommand

from hits.models import FollowUp
from hits.outbox import flush


class Command(BaseCommand):
    help = "Send the follow-up tasks that could not reach the broker when they were due."

    def handle(self, *args, **options):
        sent = flush()
        self.stdout.write(f"Sent {sent} follow-ups; {FollowUp.objects.count()} still waiting.")
