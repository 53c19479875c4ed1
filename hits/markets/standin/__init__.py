"""What the markets' stand-in servers share (``hits.mturk.standin``, ``hits.prolific.standin``), written once:
the clock (``clock``), the served HTTP server and its handler's shared part (``server``), and the faults every
stand-in injects (``faults``).  Standard library only, like the stand-ins themselves: importing it loads
neither Django nor the platform."""

from hits.markets.standin.clock import Clock
from hits.markets.standin.faults import drop_connection, fired
from hits.markets.standin.server import ServedStandIn, StandInHandler, add_listen_arguments, serve_in_thread, serve_until_interrupted

__all__ = [
    "Clock", "ServedStandIn", "StandInHandler", "add_listen_arguments", "drop_connection", "fired", "serve_in_thread",
    "serve_until_interrupted",
]
