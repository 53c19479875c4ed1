"""Template helpers for HIT pages."""

from django import template

register = template.Library()


@register.filter
def errors_for(errors, name):
    """The messages for one form field (``errors`` maps field names to lists)."""
    if not errors:
        return []
    return errors.get(name, [])


@register.filter
def seconds_until(moment):
    """Whole seconds from now until ``moment`` (0 once it has passed): a countdown's start, by the server's clock."""
    from django.utils import timezone

    if not moment:
        return 0
    return max(0, int((moment - timezone.now()).total_seconds()))


@register.simple_tag
def status_poll_seconds():
    """How often an open HIT page asks for its status (``HIT_STATUS_POLL_SECONDS``)."""
    from django.conf import settings

    return settings.HIT_STATUS_POLL_SECONDS
