"""What every campaign command shares."""

from django.core.management.base import CommandError

from annotation.models import Campaign


def campaign_from_slug(slug: str) -> Campaign:
    """The campaign with this slug, or a one-line command error."""
    try:
        return Campaign.objects.get(slug=slug)
    except Campaign.DoesNotExist:
        raise CommandError(f"no campaign with slug '{slug}'") from None
