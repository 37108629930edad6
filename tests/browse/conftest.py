"""The real browser the browse tests drive: Debian's chromium through Playwright."""

from __future__ import annotations

import shutil

import pytest

# Headless, and nothing that reaches out: this machine's network is closed but for 127.0.0.1.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture  # function scope: Playwright's event loop must be gone before any async test runs
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (`.ci/run` installs it: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()
