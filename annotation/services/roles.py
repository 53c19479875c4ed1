"""Who may do what: admins, researchers and crowd workers.

Three roles, decided from data that already exists (no extra table):

- **admin**: a Django staff user or superuser; sees and manages everything,
  and keeps the Django admin site.
- **researcher**: an admin, a member of the Django group ``researchers``, or a
  user who owns a campaign or has one shared with them.  A researcher sees
  and manages only the campaigns they own or that are shared with them.
- **worker only**: any other signed-in user (typically one with a
  ``hits.Worker`` profile); they see their own HITs and nothing of the
  researcher pages or the REST API.

``annotation.selectors.campaigns_visible_to`` stays the one definition of
"which campaigns a user sees"; the checks here reuse it.  The
``researchers`` group is created on first use with ``get_or_create`` so no
migration is needed.
"""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import transaction

from annotation.models import Campaign
from annotation.selectors.campaigns import campaigns_visible_to
from hits.models import Worker

RESEARCHERS_GROUP = "researchers"


class SharingError(ValueError):
    """A share or unshare request that cannot be carried out (the message says why)."""


def is_admin(user) -> bool:
    """Staff users and superusers: they see everything."""
    return bool(user and user.is_authenticated and user.is_active and (user.is_staff or user.is_superuser))


def is_researcher(user) -> bool:
    """Admins, members of the ``researchers`` group, and owners or sharers of a campaign."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    if is_admin(user) or user.groups.filter(name=RESEARCHERS_GROUP).exists():
        return True
    return Campaign.objects.filter(owner=user).exists() or user.shared_campaigns.exists()


def researchers():
    """The users ``is_researcher`` says yes to, as a queryset (owner and sharer choices)."""
    from django.contrib.auth import get_user_model
    from django.db.models import Q

    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(
            Q(is_staff=True) | Q(is_superuser=True) | Q(groups__name=RESEARCHERS_GROUP)
            | Q(campaigns__isnull=False) | Q(shared_campaigns__isnull=False)
        )
        .distinct()
        .order_by("username")
    )


def is_worker_only(user) -> bool:
    """A signed-in user who is neither admin nor researcher (a crowd worker: their own HITs only)."""
    return bool(user and user.is_authenticated) and not is_researcher(user)


def can_view_campaign(user, campaign: Campaign) -> bool:
    """True when ``campaign`` is among ``campaigns_visible_to(user)`` (owner, shared-with or staff)."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    return campaigns_visible_to(user).filter(pk=campaign.pk).exists()


def can_manage_campaign(user, campaign: Campaign) -> bool:
    """Launch, pause, edit, share: the owner, a user it is shared with, or an admin."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    if is_admin(user) or campaign.owner_id == user.pk:
        return True
    return campaign.shared_with.filter(pk=user.pk).exists()


def can_view_job(user, job) -> bool:
    """A job of a campaign follows the campaign's current permissions (an unshared researcher loses its
    exports with it); a job without a campaign (an import still running or failed) is its starter's."""
    if is_admin(user):
        return True
    if job.campaign_id:
        return can_manage_campaign(user, job.campaign)
    return job.created_by_id is not None and job.created_by_id == user.pk


def researchers_group() -> Group:
    """The ``researchers`` group, created on first use."""
    group, _ = Group.objects.get_or_create(name=RESEARCHERS_GROUP)
    return group


def make_researcher(user) -> None:
    """Add ``user`` to the ``researchers`` group (idempotent)."""
    user.groups.add(researchers_group())


@transaction.atomic
def share_campaign(campaign: Campaign, user, by) -> bool:
    """Share ``campaign`` with ``user`` on behalf of ``by``; returns False if it was already shared.

    Only someone who may manage the campaign can share it.  The user it is
    shared with becomes a researcher (they now own-or-share a campaign) and
    is also added to the ``researchers`` group, so unsharing later does not
    silently turn them into a crowd worker.  Sharing never turns a crowd
    worker's account (one with a worker identity that is not a researcher
    yet) into a researcher's, which would show them the answer keys of the
    tests and gold items they are checked with: an admin does that first,
    deliberately (the ``researchers`` group).
    """
    if not can_manage_campaign(by, campaign):
        raise PermissionDenied("You may not share this campaign.")
    if not user.is_active:
        raise SharingError(f"User '{user.get_username()}' is inactive.")
    if not is_researcher(user) and Worker.objects.filter(user=user).exists():
        raise SharingError(
            f"User '{user.get_username()}' is a crowd worker, not a researcher: an admin must add them to the "
            f"'{RESEARCHERS_GROUP}' group before a campaign can be shared with them."
        )
    if campaign.owner_id == user.pk:
        raise SharingError(f"User '{user.get_username()}' owns this campaign already.")
    if campaign.shared_with.filter(pk=user.pk).exists():
        return False
    campaign.shared_with.add(user)
    make_researcher(user)
    return True


@transaction.atomic
def unshare_campaign(campaign: Campaign, user, by) -> bool:
    """Stop sharing ``campaign`` with ``user``; returns False if it was not shared with them."""
    if not can_manage_campaign(by, campaign):
        raise PermissionDenied("You may not change who this campaign is shared with.")
    if not campaign.shared_with.filter(pk=user.pk).exists():
        return False
    campaign.shared_with.remove(user)
    return True
