"""A small progress bar for long commands, written to stderr.

It draws only when stderr is a terminal or ``--progress`` was given, so
scripts and logs that read stdout see exactly what they saw before.  It is a
``progress(done, total, message)`` callable, the same shape the services
accept and the web jobs use.
"""

from __future__ import annotations

import time


class ProgressBar:
    """``[#####.....]  50%  5/10  message``, redrawn in place with a carriage return."""

    def __init__(self, stream, enabled: bool, width: int = 30, min_interval: float = 0.1):
        self.stream = stream
        self.enabled = enabled
        self.width = width
        self.min_interval = min_interval
        self._last = 0.0
        self._drawn = False

    @classmethod
    def for_command(cls, command, options) -> "ProgressBar":
        """The bar of a management command: on with ``--progress`` or when stderr is a terminal."""
        stream = command.stderr._out if hasattr(command.stderr, "_out") else command.stderr
        isatty = getattr(stream, "isatty", lambda: False)
        return cls(stream, bool(options.get("progress")) or bool(isatty()))

    def __call__(self, done: int, total: int, message: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        final = total and done >= total
        # Redrawing costs a write per call: skip redraws closer than min_interval, except the last one.
        if not final and now - self._last < self.min_interval:
            return
        self._last = now
        share = min(1.0, done / total) if total else 0.0
        filled = round(share * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {share:4.0%}  {done:,}/{total:,}"
        if message:
            line += f"  {message}"
        self.stream.write("\r" + line.ljust(self.width + 40))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line so that what follows starts on a new one."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
