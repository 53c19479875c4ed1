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


@register.filter
def money(value):
    """An amount as money: "$0.32" (aggregates come back from SQLite as floats with long tails)."""
    from decimal import Decimal

    from hits.mturk.fees import CENT

    return f"${Decimal(str(value or 0)).quantize(CENT)}"


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
    """``{{ amount|money:campaign }}``: the amount written in the currency of a code, batch, campaign or HIT
    (``hits.currency``): ``$1.20``, ``£1.20``."""
    from hits.currency import money as written

    if amount is None or amount == "":
        return ""
    return written(amount, currency)
