"""The integration docs' setup snippets run (LangGraph) or at least compile (OpenAI Agents: the
snippet talks to the real API, its behaviour is covered by the triage example's tests)."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest

from tests.conftest import ROOT, Telemetry

DOCS = ROOT / "docs" / "integrations"


def _python_blocks(name: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), flags=re.S)


def test_langgraph_setup_snippet_runs(telemetry: Telemetry, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = types.ModuleType("docs_langgraph_snippet")  # LangGraph resolves the State's hints in it
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(_python_blocks("langgraph.md")[0], "langgraph.md", "exec"), module.__dict__)
    bundle = tmp_path / "build" / "lg-docs" / "_debug"
    events = [json.loads(x) for x in (bundle / "events.jsonl").read_text().splitlines()]
    kinds = [e["type"] for e in events if e["type"] != "checkpoint.saved"]
    assert kinds == ["run.started", "node.started", "node.finished", "node.started",
                     "approval.requested", "node.finished", "approval.decided", "node.started",
                     "tool.started", "tool.finished", "node.finished", "run.finished"]
    assert json.loads((bundle / "last_state.json").read_text()) == {
        "notes": ["prices fell 12%", "decision: approve"]}


@pytest.mark.parametrize("name", ["langgraph.md", "openai-agents.md"])
def test_every_python_block_compiles(name: str) -> None:
    blocks = _python_blocks(name)
    assert blocks, f"{name} has no python example"
    for i, block in enumerate(blocks):
        compile(block, f"{name}#{i}", "exec")
