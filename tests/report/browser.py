"""Debian's Chromium driven by Playwright (``executable_path``; no browser is ever downloaded).

Browser tests fail in CI (``CI=true``) when Chromium or Playwright is missing, and skip locally with
the reason; ``scripts/install-browser.sh`` installs both.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def require_browser() -> None:
    problem = None
    if not CHROMIUM.exists():
        problem = f"{CHROMIUM} is missing"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            problem = "the playwright package is missing"
    if problem:
        msg = f"{problem}: run scripts/install-browser.sh"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)


@contextmanager
def chromium(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A fresh persistent context (own --user-data-dir) of Debian's Chromium."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="agenttrail-chromium-") as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=ARGS,
            viewport={"width": width, "height": height})
        try:
            yield ctx
        finally:
            ctx.close()


class Page:
    """A page with every console message and uncaught error recorded."""

    def __init__(self, ctx: Any) -> None:
        self.page = ctx.new_page()
        self.console: list[tuple[str, str]] = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))
        self.requests: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))

    def open(self, html_file: Path) -> Any:
        self.page.goto(html_file.resolve().as_uri())
        self.page.wait_for_function("window.__agenttrail && window.__agenttrail.ready", timeout=60_000)
        return self.page

    def errors(self) -> list[tuple[str, str]]:
        return [m for m in self.console if m[0] in ("error", "pageerror", "warning")]

    def screenshot(self, name: str, full_page: bool = False) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path
