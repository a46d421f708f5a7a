"""CLI tests keep the store cache in their own temporary directory, never in the user's ~/.cache."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTRAIL_CACHE_DIR", str(tmp_path / "cache"))
