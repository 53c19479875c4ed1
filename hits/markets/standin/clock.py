"""A stand-in's clock: simulated time that can run faster than the wall clock and be moved forward.

Standard library only, like the stand-ins themselves."""

from __future__ import annotations

import time


class Clock:
    """Stand-in time: ``time_scale`` simulated seconds per real second, plus whatever ``advance`` added."""

    def __init__(self, time_scale: float = 1.0, start: float | None = None):
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.time_scale = float(time_scale)
        self.restart(time.time() if start is None else start)

    def restart(self, start: float) -> None:
        self._wall0, self._sim0 = time.time(), float(start)

    def now(self) -> float:
        return self._sim0 + (time.time() - self._wall0) * self.time_scale

    def advance(self, seconds: float) -> None:
        self._sim0 += float(seconds)
