"""Invitation links: who may sign up as a worker, how many times, until when.

A link is used up in the same transaction that creates the account: one
conditional UPDATE takes a use only while uses are left, the link is not
revoked and not expired, so concurrent sign-ups on a 1-use link create one
account (PostgreSQL re-checks the condition on the row it waited for; SQLite
serialises writers), and the CHECK constraint ``uses <= max_uses`` refuses
anything else.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from config.baseurl import public_base_url
from hits.models import Batch, Invitation


class InvitationClosed(Exception):
    """The link is used up, expired or revoked."""


class InvitationBoundsError(ValueError):
    """A value out of bounds; ``field`` names it (max_uses, expires_in_days or note)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


MAX_USES = 100_000
MAX_DAYS = 3650
NOTE_CHARS = 200


def check_invitation(max_uses: int, expires_in_days: float | None, note: str) -> None:
    """``InvitationBoundsError`` for a value out of bounds (checked before anything is written)."""
    if not 1 <= max_uses <= MAX_USES:
        raise InvitationBoundsError("max_uses", f"an invitation needs between 1 and {MAX_USES} uses")
    if expires_in_days is not None and not 0 <= expires_in_days <= MAX_DAYS:  # also refuses nan and inf
        raise InvitationBoundsError("expires_in_days", f"an invitation expires after 0 to {MAX_DAYS} days (0: never)")
    if len(note) > NOTE_CHARS:
        raise InvitationBoundsError("note", f"an invitation's note has at most {NOTE_CHARS} characters")


def create_invitation(*, batch: Batch | None = None, max_uses: int = 100, expires_in_days: float | None = 14, note: str = "", by=None) -> Invitation:
    """A new sign-up link; ``expires_in_days`` None for one that never expires.  Bounds (``MAX_USES``,
    ``MAX_DAYS``, ``NOTE_CHARS``) are checked here for every caller (``check_invitation``)."""
    check_invitation(max_uses, expires_in_days, note)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days is not None else None
    return Invitation.objects.create(batch=batch, max_uses=max_uses, expires_at=expires_at, note=note, created_by=by)


def invitation_url(invitation: Invitation, request=None) -> str:
    """The sign-up link; its address as ``config.baseurl.public_base_url`` gives it (the request's, when given)."""
    return public_base_url(request) + reverse("join", args=[invitation.token])


def revoke_invitation(invitation: Invitation) -> None:
    """Close the link at once (accounts made with it stay)."""
    Invitation.objects.filter(pk=invitation.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def take_use(invitation: Invitation) -> None:
    """Use the link once, inside the caller's transaction (the account it creates); ``InvitationClosed`` when
    no use is left for this request."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("take_use must run inside the transaction that creates the account")
    now = timezone.now()
    taken = Invitation.objects.filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now), pk=invitation.pk, revoked_at__isnull=True, uses__lt=F("max_uses")
    ).update(uses=F("uses") + 1)
    if not taken:
        raise InvitationClosed("this invitation link is used up, expired or revoked")
