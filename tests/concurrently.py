"""Running calls at the same moment, each in a thread of its own with its own database connection."""

from __future__ import annotations

import threading

from django.db import connections


def at_once(calls, timeout: float = 120) -> list:
    """Run the calls in threads released together; return what each returned (or raised), in order."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait(timeout=30)
            results[index] = call()
        except BaseException as exc:  # noqa: BLE001 - the caller looks at what each call raised
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return results
