"""``agenttrail tui``: a bad bundle path is one clear message and exit 2, before any screen is drawn."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _tui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from agenttrail.cli import main; main()", "tui", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)


def test_missing_path_exits_2_with_a_message(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    r = _tui(str(missing))
    assert r.returncode == 2
    assert r.stderr == (f"agenttrail: error: {missing}: no such file or directory\n"
                        "  what to do: pass the bundle directory (e.g. <workspace>/_debug) or a packed .tar.zst\n")
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_directory_that_is_not_a_bundle_exits_2(tmp_path: Path, fixture_bundle: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi", encoding="utf-8")
    r = _tui(str(fixture_bundle), str(tmp_path))
    assert r.returncode == 2
    assert r.stderr.startswith(f"agenttrail: error: {tmp_path}: not a bundle")


def test_tui_is_registered() -> None:
    from click.testing import CliRunner

    from agenttrail.cli import _register_optional, cli

    _register_optional()
    r = CliRunner().invoke(cli, ["tui", "--help"])
    assert r.exit_code == 0
    assert "Explore bundles in the terminal" in r.output
