"""Fixtures for the TUI tests: the deterministic bundles and a helper that waits for the workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.worker import WorkerFailed

from agenttrail.tui.app import AgentTrailApp

from .fixture import write_bundle


@pytest.fixture(scope="session")
def fixture_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("tui") / "run")


@pytest.fixture(scope="session")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("tui") / "hostile", hostile=True)


@pytest.fixture(scope="session")
def second_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("tui") / "other", loops=0)


async def settle(pilot: Pilot[int]) -> AgentTrailApp:
    """Wait until loading and every worker it started are done and their results are on screen."""
    app = pilot.app
    assert isinstance(app, AgentTrailApp)
    for _ in range(100):
        try:
            await app.workers.wait_for_complete()
        except WorkerFailed:
            pass  # shown in the error modal; tests assert on that
        await pilot.pause()
        if app.ctx is not None and not any(w.is_running for w in app.workers):
            await pilot.pause()
            return app
    raise AssertionError("the app did not finish loading")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio


async def settle_failed(pilot: Pilot[int]) -> None:
    """Wait for workers when one of them is expected to fail."""
    try:
        await pilot.app.workers.wait_for_complete()
    except WorkerFailed:
        pass
    await pilot.pause()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app loads through the store cache; keep the tests' caches out of the user's."""
    monkeypatch.setenv("AGENTTRAIL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
