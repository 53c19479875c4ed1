"""Template helpers for HIT pages."""

from django import template

register = template.Library()


@register.filter
def errors_for(errors, name):
    """The messages for one form field (``errors`` maps field names to lists)."""
    if not errors:
        return []
    return errors.get(name, [])
