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


@register.inclusion_tag("hits/_pay.html")
def pay(low, high, n_tests=0):
    """What a task pays: the reward range of its paid HITs, and "unpaid test" beside open test items."""
    return {"low": low, "high": high, "n_tests": n_tests}


@register.filter
def full_stop(text):
    """End a sentence once: a reason typed with its own full stop does not get a second one ("..")."""
    from hits.wording import full_stop as ended

    return ended(text) if text else "."


@register.filter
def money(amount, currency=None):
    """An amount as money, to the cent, in the currency of ``currency`` (a code, batch, campaign or HIT:
    ``hits.markets.money``; US dollars when none): ``{{ amount|money:campaign }}`` is "$0.32" or "£0.32" (aggregates
    come back from SQLite as floats with long tails)."""
    from decimal import Decimal, InvalidOperation

    from hits.markets.money import money as written
    from hits.markets.money import CENT

    try:
        amount = Decimal(str(amount or 0)).quantize(CENT)
    except InvalidOperation:
        pass  # not a number (already written): shown as it is
    return written(amount, currency)
