"""The old home of what the stand-ins share, now ``hits.markets.standin``: its names, importable from here as
before (``hits.prolific.standin`` still imports them from here until its split)."""

from hits.markets.standin import (  # noqa: F401
    Clock,
    ServedStandIn,
    StandInHandler,
    add_listen_arguments,
    drop_connection,
    serve_in_thread,
    serve_until_interrupted,
)
