"""MTurk's documented bounds on the times a HIT is created with (CreateHIT), checked where a researcher sets them.

A value outside them makes MTurk refuse every CreateHIT of the campaign (a RequestError): the settings form,
the API and the import refuse it first, naming the bound.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator

# (MTurk's parameter, lowest, highest), in seconds.
ASSIGNMENT_DURATION = ("AssignmentDurationInSeconds", 30, 31_536_000)  # 30 seconds to 365 days
LIFETIME = ("LifetimeInSeconds", 30, 31_536_000)
AUTO_APPROVAL_DELAY = ("AutoApprovalDelayInSeconds", 0, 2_592_000)  # up to 30 days
# Launch refuses an automatic approval sooner than this many sync intervals: the sync must see (and review)
# the work before MTurk approves and pays it on its own.
AUTO_APPROVAL_SYNC_MARGIN = 3


def bound_text(bound: tuple[str, int, int]) -> str:
    name, low, high = bound
    return f"MTurk's {name} must be from {low:,} to {high:,} seconds"


def bound_validators(bound: tuple[str, int, int]) -> list:
    """Model-field validators for one bound, each message naming it (the form, the API and the import show it)."""
    name, low, high = bound
    return [
        MinValueValidator(low, message=f"{bound_text(bound)}; %(show_value)s is below {low:,}"),
        MaxValueValidator(high, message=f"{bound_text(bound)}; %(show_value)s is above {high:,}"),
    ]


def out_of_bounds(bound: tuple[str, int, int], value) -> str:
    """Why ``value`` is outside ``bound`` ("" when inside)."""
    name, low, high = bound
    if value is None or low <= value <= high:
        return ""
    return f"{bound_text(bound)}; {value} is {'below' if value < low else 'above'} {low if value < low else high:,}"
