"""What the Prolific stand-in (``hits.prolific.standin``) shows of a study's time and pay per hour, as Prolific
computes them (standard library only, like the stand-in).

- ``maximum_allowed_time``: Prolific sets it from the estimate X when none is given, and never under
  2 + X + 2 sqrt(X) minutes (participant help, "Timed Out Submissions"): ``least_maximum``.
- Reward per hour (study object: ``estimated_reward_per_hour``, ``average_completion_time``,
  ``average_reward_per_hour``): the study's ``reward`` (bonuses are apart) over its ``estimated_completion_time``,
  then over the median completion time of its completed submissions ("Prolific uses the median completion time
  to work out your study's average reward per hour", researcher help): ``reward_per_hour``.
"""

from __future__ import annotations

import math


def least_maximum(estimated: int) -> int:
    """Prolific's least ``maximum_allowed_time`` for an estimate of ``estimated`` minutes: 2 + X + 2 sqrt(X)."""
    return math.ceil(2 + estimated + 2 * math.sqrt(estimated))


def reward_per_hour(study: dict, submissions: list[dict]) -> dict:
    """The study object's pay per hour, in cents: ``estimated_reward_per_hour`` always; once submissions are
    completed, ``average_completion_time`` (minutes, the median) and ``average_reward_per_hour``."""
    shown = {"estimated_reward_per_hour": round(study["reward"] * 60 / study["estimated_completion_time"])}
    times = sorted((s["completed_at"] - s["started_at"]) / 60 for s in submissions if s.get("completed_at") is not None)
    if times:
        middle = len(times) // 2
        median = times[middle] if len(times) % 2 else (times[middle - 1] + times[middle]) / 2
        shown["average_completion_time"] = round(median, 2)
        shown["average_reward_per_hour"] = round(study["reward"] * 60 / max(median, 1 / 60))
    return shown
