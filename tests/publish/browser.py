"""Playwright for Python driving Debian's chromium (Playwright's own browser download cannot work
here): a skip with the reason when either is missing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchbook.paths import BUILD_DIR

ARTIFACTS_DIR = Path(os.environ.get("BENCHBOOK_TEST_ARTIFACTS", BUILD_DIR / "test-artifacts")) / "publish"
CHROMIUM_NAMES = ("chromium", "chromium-browser")


def chromium_path() -> str:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("chromium not installed (make deps installs Debian's chromium as root)")


def launch(playwright):
    """Debian's chromium, headless; as root it needs --no-sandbox."""
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    return playwright.chromium.launch(executable_path=chromium_path(), args=args, headless=True)


def sync_playwright():
    try:
        from playwright.sync_api import sync_playwright as sp  # noqa: PLC0415 the probe: skip without playwright
    except ImportError:
        pytest.skip("playwright not installed (it is in the pip lock: make venv)")
    return sp()


class PageWatch:
    """Console errors, failed requests and every requested URL of a page."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.urls: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}"))
        page.on("request", lambda r: self.urls.append(r.url))
        page.on("response", lambda r: self.failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
