"""``manage.py expire_assignments``: return assignments held past their deadline to the pool."""

from django.core.management.base import BaseCommand

from hits.services import expire_assignments


class Command(BaseCommand):
    help = "Expire assignments held past their deadline; their places return to the pool."

    def handle(self, *args, **options):
        self.stdout.write(f"Expired {expire_assignments()} assignments.")
