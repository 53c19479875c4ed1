"""What the markets' stand-in servers share (``hits.mturk.standin``, ``hits.prolific.standin``).

Standard library only, like the stand-ins themselves: a stand-in's clock, serving an HTTP server in a
thread, and dropping a connection without an answer (the "lost reply" every rehearsal needs)."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


def serve_in_thread(httpd: ThreadingHTTPServer, name: str) -> threading.Thread:
    """Serve ``httpd`` in a daemon thread (stopped by ``httpd.shutdown()`` then ``thread.join()``)."""
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    return thread


def drop_connection(handler: BaseHTTPRequestHandler) -> None:
    """Close the request's connection without a word: the caller cannot tell whether the request took effect."""
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
