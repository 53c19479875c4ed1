"""Prolific's REST API over httpx: token auth, pagination, and retries only where a retry is safe.

Every request carries ``Authorization: Token <PROLIFIC_API_TOKEN>`` to ``PROLIFIC_API_URL`` (Prolific
itself, or the stand-in of ``manage.py prolific_standin`` for rehearsals).

What is retried, and when:

- a request that changes nothing (GET), or that repeats to the same end (a study transition to a state,
  a submission transition, adding participants to a group): ``safe=True``.  Throttling (429, honouring
  ``Retry-After``), 5xx answers and connection failures are retried up to ``PROLIFIC_MAX_RETRIES`` times,
  waiting ``PROLIFIC_RETRY_BASE_SECONDS * 2**n * U(0.5, 1)`` before retry n;
- a request that creates something or moves money (create a study, create or pay a bulk bonus): sent
  once (``safe=False``).  A 429 is still retried, since Prolific refused it before doing anything; any
  other failure raises ``ProlificError`` with ``ambiguous`` telling whether the request may have taken
  effect (no answer, or a 5xx): the caller then reads Prolific's records before doing anything more
  (``hits.prolific.bonuses``, ``hits.prolific.publishing``), never re-sends blind.

A 4xx other than 429 is Prolific refusing the request: never retried, never ambiguous.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Callable, Iterator

import httpx
from django.conf import settings

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"


class ProlificError(Exception):
    """A request Prolific refused or did not answer.

    ``status``: the HTTP status (None when no answer came); ``detail``: Prolific's error body or the
    failure's text; ``ambiguous``: the request may have taken effect on Prolific (no answer or a 5xx), so
    its records must be read before anything that could repeat it; ``attempts``: requests sent."""

    def __init__(self, message: str, *, status: int | None = None, detail: Any = None, ambiguous: bool = False,
                 attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.ambiguous = ambiguous
        self.attempts = attempts

    @property
    def transient(self) -> bool:
        return self.status is None or self.status == 429 or self.status >= 500


class Prolific:
    """One client per use; ``sleep`` is replaceable so tests need not wait out back-offs."""

    def __init__(self, base_url: str | None = None, token: str | None = None, *, timeout: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep, transport: httpx.BaseTransport | None = None):
        self.base_url = (base_url or settings.PROLIFIC_API_URL).rstrip("/")
        token = settings.PROLIFIC_API_TOKEN if token is None else token
        if not token:
            raise ProlificError("PROLIFIC_API_TOKEN is not set: Prolific's API needs a token (Settings > API tokens on Prolific)")
        self._http = httpx.Client(
            base_url=self.base_url, timeout=timeout, transport=transport,
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
        )
        self._sleep = sleep
        self.requests_sent = 0

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Prolific":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def path(path: str) -> str:
        """``/studies/`` -> ``/api/v1/studies/`` (a path already under the prefix is kept)."""
        return path if path.startswith(API_PREFIX) else API_PREFIX + ("" if path.startswith("/") else "/") + path

    def request(self, method: str, path: str, *, json: Any = None, params: dict | None = None, safe: bool | None = None) -> Any:
        """Send one request and return its decoded JSON body (None for an empty body).

        ``safe`` defaults to True for GET and False otherwise (see the module's notes)."""
        method = method.upper()
        safe = (method == "GET") if safe is None else safe
        url = self.path(path)
        attempts = 0
        while True:
            attempts += 1
            self.requests_sent += 1
            try:
                response = self._http.request(method, url, json=json, params=params)
            except httpx.HTTPError as exc:  # no answer: connection refused or dropped, timeout
                error = ProlificError(f"{method} {url}: no answer from Prolific ({exc.__class__.__name__}: {exc})",
                                      status=None, detail=str(exc), ambiguous=not isinstance(exc, httpx.ConnectError),
                                      attempts=attempts)
                if safe and attempts <= settings.PROLIFIC_MAX_RETRIES:
                    self._back_off(attempts, None)
                    continue
                raise error from exc
            status = response.status_code
            if status < 400:
                return response.json() if response.content else None
            detail = _body(response)
            error = ProlificError(f"{method} {url}: Prolific answered {status}: {_summary(detail)}", status=status,
                                  detail=detail, ambiguous=status >= 500, attempts=attempts)
            retry = status == 429 or (safe and status >= 500)
            if retry and attempts <= settings.PROLIFIC_MAX_RETRIES:
                self._back_off(attempts, response.headers.get("Retry-After"))
                continue
            raise error

    def get(self, path: str, params: dict | None = None) -> Any:
        return self.request("GET", path, params=params)

    def paginate(self, path: str, params: dict | None = None) -> Iterator[dict]:
        """Every item of a listing, following Prolific's ``_links.next.href`` (or a top-level ``next``)."""
        page = self.get(path, params)
        while True:
            yield from (page or {}).get("results", [])
            following = _next_link(page)
            if not following:
                return
            page = self.request("GET", following)

    def _back_off(self, attempt: int, retry_after: str | None) -> None:
        delay = settings.PROLIFIC_RETRY_BASE_SECONDS * 2 ** (attempt - 1) * random.uniform(0.5, 1.0)
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), 300.0))
            except ValueError:
                pass
        log.info("Prolific: retrying in %.2f s (attempt %d)", delay, attempt + 1)
        self._sleep(delay)


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:500]


def _summary(detail: Any) -> str:
    if isinstance(detail, dict):
        error = detail.get("error", detail)
        if isinstance(error, dict):
            return str(error.get("detail") or error.get("title") or error)[:300]
        return str(error)[:300]
    return str(detail)[:300]


def _next_link(page: Any) -> str | None:
    if not isinstance(page, dict):
        return None
    links = page.get("_links") or {}
    following = links.get("next") if isinstance(links, dict) else None
    if isinstance(following, dict):
        following = following.get("href")
    following = following or page.get("next")
    if not following:
        return None
    # An absolute link keeps only its path and query: the client's base URL (Prolific or the stand-in) is used.
    parsed = httpx.URL(following)
    return parsed.raw_path.decode() if parsed.is_absolute_url else following
