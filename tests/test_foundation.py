"""The foundation's promise: the demo run fails, leaves a bundle, and the analyzer explains it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agenttrail.cli import cli


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTTRAIL_CACHE_DIR", str(tmp_path / "cache"))


def _spans(bundle: Path) -> list[dict]:
    """Every span in trace.jsonl, read with plain json (independent of the store)."""
    out = []
    for line in (bundle / "trace.jsonl").read_text().splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s["attrs"] = {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]}
                    out.append(s)
    return out


def test_demo_bundle_has_the_contract_files(demo_bundle: Path) -> None:
    names = {p.name for p in demo_bundle.iterdir()}
    assert {"manifest.json", "events.jsonl", "trace.jsonl", "tool_calls.csv", "env.txt",
            "workspace.tar.zst", "checkpoints.jsonl", "last_state.json", "progress"} <= names
    m = json.loads((demo_bundle / "manifest.json").read_text())
    assert (m["format"], m["version"], m["run_id"], m["status"]) == ("agenttrail.bundle", 1, "s_123", "failed")
    assert m["failure"]["type"] == "iteration_cap"
    assert m["redaction"]["content_capture"] == "SPAN_AND_EVENT"
    assert m["redaction"]["secrets_scrubbed"] >= 1  # the demo workspace's .env key
    assert set(m["files"]) >= {"events.jsonl", "trace.jsonl", "tool_calls.csv", "env.txt"}
    # content capture is on in the demo, so each inference's details event is kept as OTLP/JSON
    logs = [json.loads(x) for x in (demo_bundle / "logs.jsonl").read_text().splitlines()]
    assert [d["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]["eventName"] for d in logs] == [
        "gen_ai.client.inference.operation.details"] * 31
    header = (demo_bundle / "tool_calls.csv").read_text().splitlines()[0]
    assert header.startswith("ts,tool,input_hash,latency_ms,status,error")


def test_demo_spans_carry_exact_genai_attributes(demo_bundle: Path) -> None:
    spans = _spans(demo_bundle)
    root = [s for s in spans if "parentSpanId" not in s]
    assert len(root) == 1 and root[0]["name"] == "invoke_agent web-builder"
    assert root[0]["attrs"]["gen_ai.operation.name"] == "invoke_agent"
    assert root[0]["attrs"]["gen_ai.agent.name"] == "web-builder"
    assert root[0]["status"]["code"] == 2
    chats = [s for s in spans if s["name"] == "chat gpt-4o"]
    assert len(chats) == 31
    assert all(s["kind"] == 3 for s in chats)  # OTLP SPAN_KIND_CLIENT
    assert set(chats[0]["attrs"]) >= {"gen_ai.operation.name", "gen_ai.provider.name",
                                      "gen_ai.request.model", "gen_ai.response.model",
                                      "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"}
    assert chats[0]["attrs"]["gen_ai.provider.name"] == "openai"
    tools = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    assert len(tools) == 30
    assert {s["attrs"]["gen_ai.tool.name"] for s in tools} == {"read_file", "write_file", "run_command"}
    assert all(s["attrs"]["gen_ai.conversation.id"] == "s_123" for s in spans)


def _analyze(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["analyze", *args])
    return result.exit_code, result.stdout, result.stderr


def test_analyze_json_finds_the_retry_loop_with_right_numbers(demo_bundle: Path) -> None:
    code, out, _ = _analyze(str(demo_bundle), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert [r["run_id"] for r in doc["runs"]] == ["s_123"]
    loops = [f for f in doc["findings"] if f["code"] == "retry_loop"]
    assert len(loops) == 1
    f = loops[0]
    assert f["severity"] == "error" and f["run_id"] == "s_123"
    assert f["iterations"] == 8 and f["period"] == 3
    assert f["commands"] == ["npm cache clean --force", "rm -rf node_modules package-lock.json",
                             "npm install"]
    spans = _spans(demo_bundle)
    trig = f["trigger"]
    trigger_span = next(s for s in spans if s["spanId"] == trig["span_id"])
    assert trig["tool"] == "run_command" and trig["command"] == "npm install"
    assert trig["error"] == "npm ERR! code ERESOLVE"
    assert trigger_span["attrs"]["gen_ai.tool.call.arguments"] == '{"cmd":"npm install"}'
    # the first failing tool call is the trigger
    tool_spans = sorted((s for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"),
                        key=lambda s: int(s["startTimeUnixNano"]))
    first_error = next(s for s in tool_spans if s["status"].get("code") == 2)
    assert first_error["spanId"] == trig["span_id"]
    # token share computed here, from the spans: LLM calls starting after the trigger ended and no
    # later than the loop's last tool call ended, over all LLM tokens of the run
    lo = int(trigger_span["endTimeUnixNano"])
    hi = int(tool_spans[-1]["endTimeUnixNano"])
    chats = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "chat"]

    def tok(s: dict) -> int:
        return int(s["attrs"]["gen_ai.usage.input_tokens"]) + int(s["attrs"]["gen_ai.usage.output_tokens"])

    total = sum(tok(s) for s in chats)
    in_loop = sum(tok(s) for s in chats if lo <= int(s["startTimeUnixNano"]) <= hi)
    assert f["tokens_total"] == total
    assert f["tokens"] == in_loop
    assert f["token_share"] == round(in_loop / total, 4)
    assert 0.5 < f["token_share"] < 1
    assert trig["span_id"] in f["evidence"]["span_ids"]
    assert len(f["evidence"]["event_seqs"]) == 27
    assert f"{round(in_loop / total * 100):.0f}% of its tokens" in f["summary"]


def test_analyze_text_and_fail_on(demo_bundle: Path) -> None:
    code, out, _ = _analyze(str(demo_bundle))
    assert code == 0
    assert "Run s_123 · web-builder · FAILED (iteration_cap" in out
    assert "ERROR   retry_loop" in out
    assert "3-command retry loop (8 iterations) after `npm install` failed with npm ERR! code ERESOLVE." in out
    assert _analyze(str(demo_bundle), "--fail-on", "error")[0] == 1
    assert _analyze(str(demo_bundle), "--fail-on", "warning")[0] == 1
    code, md, _ = _analyze(str(demo_bundle), "--format", "markdown")
    assert code == 0 and "- **error** `retry_loop`" in md


def test_report_is_self_contained_with_working_evidence_links(demo_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", str(demo_bundle), "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert "<script src=" not in html and "<link " not in html  # nothing fetched at view time
    assert "Run s_123" in html and "retry_loop" in html
    import re

    for target in set(re.findall(r'class="evidence" href="#([^"]+)"', html)):
        assert f'id="{target}"' in html, target
    assert len(html.encode()) < 6_000_000
