"""The Prolific stand-in in tests: ``running_standin`` serves one in a thread on a free port and yields a
``RunningStandIn`` (``.url``, ``.token``, ``.control(method, path, json)``, ``.state()``, ``.reset()``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from contextlib import contextmanager
from typing import Any, Iterator

from hits.prolific.standin.common import CONTROL, Refused
from hits.prolific.standin.state import DEFAULT_TOKEN, ProlificStandIn


class RunningStandIn:
    """A stand-in served in a thread, as ``running_standin`` yields it."""

    def __init__(self, server: ProlificStandIn):
        self.server, self.url, self.token = server, server.url, server.token

    def control(self, method: str, path: str, json: Any = None) -> Any:
        """Call the control API (``path`` under ``/__control/``); raises ``Refused`` with its answer on an error."""
        path = path if path.startswith(CONTROL) else CONTROL + "/" + path.lstrip("/")
        data = None if json is None else _dumps(json)
        request = urllib.request.Request(self.url + path, data=data, method=method.upper(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            answer = exc.read()
            try:
                error = _loads(answer)["error"]
                raise Refused(exc.code, error.get("detail"), error.get("title")) from None
            except (ValueError, KeyError, TypeError):
                raise Refused(exc.code, answer.decode("utf-8", "replace")) from None
        return _loads(text) if text else None

    def state(self) -> dict:
        return self.control("GET", "state/")

    def reset(self, balance=None) -> None:
        self.control("POST", "reset/", {} if balance is None else {"balance": str(balance)})


# ``control``'s argument ``json`` hides the module there.
_dumps = lambda value: json.dumps(value).encode()  # noqa: E731
_loads = json.loads


@contextmanager
def running_standin(token: str = DEFAULT_TOKEN, **options) -> Iterator[RunningStandIn]:
    """A Prolific stand-in on a free port of 127.0.0.1, served in a thread while the block runs.

    ``options``: ``balance`` (in the currency), ``fee_rate``, ``page_size``, ``settle_seconds``, ``currency``,
    ``vat_rate`` (see ``ProlificStandIn``)."""
    server = ProlificStandIn(port=0, token=token, **options).start()
    try:
        yield RunningStandIn(server)
    finally:
        server.stop()
