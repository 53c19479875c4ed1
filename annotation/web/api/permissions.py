"""Who may call the API: researchers and admins only; campaign objects only for those who may see them.

Anonymous callers get 401 (they can authenticate), crowd workers 403 (no
role can help them), and a researcher asking for a campaign that is not
theirs gets 404, so the API never confirms that someone else's campaign
exists.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from annotation.services.roles import can_manage_campaign, is_researcher


class IsResearcher(BasePermission):
    """Signed in as an admin or a researcher."""

    message = "The API is for researchers and admins; crowd workers use the HIT pages."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and is_researcher(request.user))


class CanManageCampaignOrReadOnly(BasePermission):
    """Reads for anyone who sees the campaign; writes only for who may manage it (owner, shared-with, admin)."""

    message = "Only the campaign's owner, the researchers it is shared with, and admins may change it."

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return can_manage_campaign(request.user, obj)
