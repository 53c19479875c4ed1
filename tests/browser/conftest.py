"""Headless Chromium (Debian's) driven by Playwright against the live test server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        yield browser
        browser.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        page = item.funcargs.get("page")
        if page is not None:
            ARTIFACTS.mkdir(exist_ok=True)
            try:
                page.screenshot(path=str(ARTIFACTS / f"{item.name}.png"), full_page=True)
            except Exception:  # noqa: BLE001 - a screenshot must not hide the real failure
                pass


@pytest.fixture
def page(chromium, live_server):
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800})
    page = context.new_page()
    # Generous: a busy 2-core CI machine runs spaCy and Celery work behind some of these pages.
    page.set_default_timeout(45_000)
    yield page
    context.close()


def log_in(page, username, password):
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def researcher_with_campaign(django_user_model, folder, username: str, password: str, name: str):
    """A researcher account and a campaign of hers imported from the web tests' small files (not launched)."""
    from annotation.services.campaign_import import import_campaign
    from annotation.services.roles import make_researcher
    from tests.web.conftest import REFERENCES, SUMMARIES

    user = django_user_model.objects.create_user(username=username, password=password)
    make_researcher(user)
    (folder / "r.jsonl").write_bytes(REFERENCES)
    (folder / "s.jsonl").write_bytes(SUMMARIES)
    return user, import_campaign(name=name, owner=user, references=folder / "r.jsonl", summaries=folder / "s.jsonl").campaign
