"""``manage.py invite``: an invitation link for a campaign's workers, printed for the researcher to send."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotation.management.campaigns import campaign_from_slug
from annotation.services.pipeline import ensure_batch
from config.baseurl import SERVED_AT, served_address
from hits.invitations import InvitationBoundsError, check_invitation, create_invitation, invitation_url


class Command(BaseCommand):
    help = "Create a sign-up link for new workers of a campaign and print it."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", required=True, help="Campaign slug.")
        parser.add_argument("--uses", type=int, default=100, help="How many accounts the link may create (default 100).")
        parser.add_argument("--expires", type=float, default=14, help="Days until the link expires (default 14; 0: never).")
        parser.add_argument("--note", default="", help="A line shown on the sign-up page.")

    def handle(self, *args, **options):
        campaign = campaign_from_slug(options["campaign"])
        values = dict(max_uses=options["uses"], expires_in_days=options["expires"] or None,
                      note=options["note"] or f"Invitation to {campaign.name}"[:200])
        try:
            check_invitation(**values)  # before the campaign's batch is made for it
        except InvitationBoundsError as exc:
            option = {"max_uses": "--uses", "expires_in_days": "--expires", "note": "--note"}[exc.field]
            raise CommandError(f"{option}: {exc}") from None
        invitation = create_invitation(batch=ensure_batch(campaign), **values)
        expiry = f"until {invitation.expires_at:%Y-%m-%d %H:%M} UTC" if invitation.expires_at else "without expiry"
        self.stderr.write(f"{invitation.max_uses} use{'s' if invitation.max_uses != 1 else ''}, {expiry}:")
        if not settings.PUBLIC_BASE_URL:
            # Say where the address comes from: a served-at file left by an earlier `make demo` may be stale.
            source = f"{settings.DATA_DIR / SERVED_AT}, written by make demo" if served_address() else "the default address"
            self.stderr.write(f"(address from {source}; set PUBLIC_BASE_URL to choose another)")
        self.stdout.write(invitation_url(invitation))
