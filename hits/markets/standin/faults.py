"""The faults every stand-in can inject: a connection dropped without an answer (the "lost reply" every
rehearsal needs).  Standard library only, like the stand-ins themselves."""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler


def drop_connection(handler: BaseHTTPRequestHandler) -> None:
    """Close the request's connection without a word: the caller cannot tell whether the request took effect."""
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def fired(faults: list[dict], fault: dict, left: str) -> None:
    """``fault`` hits a request: counted in its ``fired``; one fewer of its ``left`` (None: until cleared),
    and out of ``faults`` once none is left."""
    fault["fired"] += 1
    if fault[left] is not None:
        fault[left] -= 1
        if fault[left] == 0:
            faults.remove(fault)
