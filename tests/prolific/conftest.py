"""Fixtures of the Prolific backend's tests: the local Prolific stand-in (hits.prolific.standin)."""

from __future__ import annotations

import pytest

from hits.prolific.standin import running_standin

TOKEN = "test-token"


@pytest.fixture(scope="module")
def _prolific_standin_server():
    """One stand-in per test module (starting one per test would cost a server each)."""
    with running_standin(token=TOKEN) as standin:
        yield standin


@pytest.fixture(scope="module")
def _gbp_standin_server():
    """A stand-in for a GBP workspace (VAT at its default for GBP, 20% of the fee)."""
    with running_standin(token=TOKEN, currency="GBP") as standin:
        yield standin


@pytest.fixture
def gbp_standin(_gbp_standin_server, settings):
    """``prolific_standin``'s twin for a GBP workspace."""
    yield from _pointed_at(_gbp_standin_server, settings)


@pytest.fixture
def prolific_standin(_prolific_standin_server, settings):
    """The module's Prolific stand-in, emptied for this test, with the platform's settings pointing at it.

    Yields the handle of ``running_standin``: ``.url``, ``.control(method, path, json=None)``, ``.state()``.
    Retries of the client wait nothing here (``PROLIFIC_RETRY_BASE_SECONDS = 0``); an injected throttle's
    ``Retry-After`` is still honoured."""
    yield from _pointed_at(_prolific_standin_server, settings)


def _pointed_at(standin, settings):
    standin.reset()
    settings.PROLIFIC_API_URL = standin.url
    settings.PROLIFIC_API_TOKEN = TOKEN
    settings.PROLIFIC_COMPLETION_URL = standin.url + "/submissions/complete"
    settings.PROLIFIC_RETRY_BASE_SECONDS = 0.0
    yield standin
    standin.reset()
