"""docs/bundle-format.md: its Python runs and its console sessions print what the page says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from agenttrail.cli import _register_optional, cli
from tests.conftest import ROOT, Telemetry

DOC = (ROOT / "docs" / "bundle-format.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, flags=re.S)


def test_python_blocks_run_and_console_session_matches(telemetry: Telemetry, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _register_optional()
    python = _blocks("python")
    namespace: dict[str, object] = {}
    exec(compile(python[0], "bundle-format.md", "exec"), namespace)
    assert namespace["r"].bundle_path == tmp_path / "build" / "docs-ws" / "_debug"  # type: ignore[attr-defined]
    compile(python[1], "bundle-format.md", "exec")
    session = next(b for b in _blocks("console") if "bundle verify" in b)
    ran = 0
    for chunk in re.split(r"^\$ ", session, flags=re.M)[1:]:
        command, *expected = chunk.rstrip("\n").split("\n")
        args = shlex.split(command)
        assert args[0] == "agenttrail"
        r = CliRunner().invoke(cli, args[1:])
        assert r.exit_code == 0, (command, r.output)
        if expected:
            assert r.output.splitlines() == expected, command
        ran += 1
    assert ran == 4
