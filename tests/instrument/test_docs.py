"""The examples in docs/instrumenting.md run, and produce the telemetry the doc says they do."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.conftest import Telemetry

DOC = Path(__file__).resolve().parents[2] / "docs" / "instrumenting.md"


def _examples() -> dict[str, str]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    out = {}
    for block in blocks:
        first = block.splitlines()[0]
        if first.startswith("# example: "):
            out[first.removeprefix("# example: ").strip()] = block
    return out


def _run(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    monkeypatch.chdir(tmp_path)  # examples use the default workspace: the current directory
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(_examples()[name], f"{DOC.name}:{name}", "exec"), {"__name__": "__doc_example__"})
    return buf.getvalue()


def test_doc_has_the_examples() -> None:
    assert sorted(_examples()) == ["langgraph style", "llm_call", "plain loop"]


def test_plain_loop_example(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert _run("plain loop", monkeypatch, tmp_path) == "succeeded 2820 3\n"
    assert sorted(s.name for s in telemetry.finished()) == sorted(
        ["invoke_agent release-bot"] + ["chat gpt-4o"] * 3 + ["execute_tool run_tests"] * 2
        + ["execute_tool deploy"])
    assert (tmp_path / ".agenttrail" / "spool" / "release-42" / "events.jsonl").is_file()


def test_langgraph_style_example(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert _run("langgraph style", monkeypatch, tmp_path) == "1 source(s) found\n"
    spans = {s.name: s for s in telemetry.finished()}
    parent = {name: next((p for p, ps in spans.items() if s.parent and ps.context.span_id == s.parent.span_id), None)
              for name, s in spans.items()}
    assert parent == {"invoke_workflow research_then_write": None,
                      "plan": "invoke_workflow research_then_write", "chat claude-sonnet-4": "plan",
                      "research": "invoke_workflow research_then_write", "execute_tool web_search": "research",
                      "write": "invoke_workflow research_then_write"}
    assert {s.attributes["gen_ai.conversation.id"] for s in spans.values()} == {"thread-7"}
    assert spans["chat claude-sonnet-4"].attributes["gen_ai.usage.input_tokens"] == 1500  # 300 + 1200 cache read


def test_llm_call_example(telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _run("llm_call", monkeypatch, tmp_path)
    a = telemetry.span("chat gpt-4o").attributes
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (12, 3)
