"""How long a HIT of a task type typically takes: the figure the worker's home page shows and the Prolific
backend prices a session with (``hits.prolific.pricing``)."""

from __future__ import annotations

from hits.models import Assignment

#: Submissions the typical time is taken over (the latest ones).
RECENT_SUBMISSIONS = 100


def typical_seconds(task_type, batch=None) -> float | None:
    """The median work time (seconds) of this task type's last ``RECENT_SUBMISSIONS`` submissions, those of
    ``batch`` only when given (None before any)."""
    done = Assignment.objects.filter(hit__task_type=task_type, work_seconds__isnull=False)
    if batch is not None:
        done = done.filter(hit__batch=batch)
    seconds = list(done.order_by("-submitted_at").values_list("work_seconds", flat=True)[:RECENT_SUBMISSIONS])
    if not seconds:
        return None
    seconds.sort()
    return float(seconds[len(seconds) // 2])


def typical_minutes(task_type) -> int | None:
    """``typical_seconds`` in whole minutes, at least 1 (None before any submission)."""
    seconds = typical_seconds(task_type)
    return None if seconds is None else max(1, round(seconds / 60))


def shown_minutes(task_type) -> int | None:
    """What every worker page (home, join, HIT) says a HIT of this type takes, in whole minutes: the measured
    ``typical_minutes``, else the protocol's figure its handler gives (``protocol_minutes``), else None."""
    measured = typical_minutes(task_type)
    if measured is not None:
        return measured
    from hits.handlers import task_handler

    try:
        return getattr(task_handler(task_type.slug), "protocol_minutes", None)
    except LookupError:
        return None
