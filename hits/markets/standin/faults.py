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
