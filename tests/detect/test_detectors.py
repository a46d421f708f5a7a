"""Every built-in detector on small fixture bundles: the exact finding, and a bundle where it must not fire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agenttrail.detect import run_detectors
from agenttrail.store import open_store
from tests.detect.builder import BundleBuilder, iso


def findings(bundle: Path, code: str, **config: Any) -> list[dict[str, Any]]:
    store = open_store([bundle])
    try:
        analysis = run_detectors(store, [code], {code: config} if config else None)
    finally:
        store.close()
    assert analysis.failures == []
    return [f.as_dict() for f in analysis.findings]


def _tool_loop(b: BundleBuilder, cmds: list[str], start: float, *, fail: str | None = None) -> float:
    t = start
    for cmd in cmds:
        b.llm(t, 1.0, 2000, 50)
        b.tool(t + 1, "run_command", {"cmd": cmd}, error="npm ERR! code ERESOLVE" if cmd == fail else None)
        t += 3
    return t


# -- stuck_loop ------------------------------------------------------------------------------------


def test_stuck_loop_fires_on_identical_calls_with_identical_results(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.started()
    for i in range(5):
        b.tool(1 + i * 2, "read_file", {"path": "PROGRESS.md"}, result="# nothing new")
    b.tool(20, "read_file", {"path": "other.md"}, result="x")
    got = findings(b.write(), "stuck_loop")
    assert [(f["severity"], f["repeats"], f["command"]) for f in got] == [("warning", 5, "PROGRESS.md")]
    assert got[0]["summary"] == ("Run r1 called `PROGRESS.md` 5 times in a row over 9.0 s, returning the "
                                 "same result every time: no progress.")
    assert len(got[0]["evidence"]["span_ids"]) == 5


def test_stuck_loop_silent_when_the_result_changes(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    for i in range(6):
        b.tool(1 + i * 2, "read_file", {"path": "log.txt"}, result=f"line {i}")
    assert findings(b.write(), "stuck_loop") == []


# -- budget -----------------------------------------------------------------------------------------


def test_budget_tokens_exhausted_with_crossing_time(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, budget={"tokens": 10_000, "tool_calls": 100})
    b.started()
    for i in range(6):
        b.llm(i * 60, 1.0, 2000, 500)  # 2.5k tokens per call: crosses 10k at the 4th call (t=180 s)
    got = findings(b.write(), "budget")
    assert len(got) == 1
    f = got[0]
    assert (f["severity"], f["limit"], f["used"], f["budget"], f["share"]) == ("error", "tokens", 15000, 10000, 1.5)
    assert str(f["exhausted_at"]) == "2026-05-26 10:03:00"
    assert f["summary"].startswith("Run r1 used 150% of its tokens budget (15k tokens of 10k tokens, "
                                   "burning 3.0k tokens/min); ran out at 10:03:00, 3.0 min in.")


def test_budget_cost_uses_the_price_table(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, budget={"usd": 0.05})
    b.started()
    for i in range(4):
        b.llm(i * 10, 1.0, 4000, 1000)  # gpt-4o: 4000*2.5e-6 + 1000*10e-6 = $0.02 per call
    got = findings(b.write(), "budget")
    assert [(f["limit"], round(f["used"], 6), f["share"]) for f in got] == [("usd", 0.08, 1.6)]
    assert "of its usd budget ($0.0800 of $0.0500" in got[0]["summary"]


def test_budget_context_bloat(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    for i in range(12):
        b.llm(i * 10, 1.0, 1000 + i * 1000, 50)
    got = findings(b.write(), "budget")
    assert [f["limit"] for f in got] == ["context_growth"]
    assert got[0]["tokens_per_call_first_quarter"] == 2000.0  # calls 1..3: 1k, 2k, 3k
    assert got[0]["tokens_per_call_last_quarter"] == 11000.0  # calls 10..12
    assert got[0]["growth"] == 5.5


def test_budget_silent_under_the_warning_ratio(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, budget={"tokens": 100_000, "tool_calls": 50})
    for i in range(10):
        b.llm(i * 10, 1.0, 2000, 100)
    assert findings(b.write(), "budget") == []


# -- duplicate_side_effect --------------------------------------------------------------------------


def test_duplicate_side_effect_across_a_resume(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.started(worker_id="w1")
    b.tool(1, "send_email", {"to": "ceo@example.com"}, side_effect=True, idempotency_key="mail-1")
    b.event(5, "run.resumed", {"worker_id": "w2", "from_checkpoint": "c1"})
    b.tool(6, "send_email", {"to": "ceo@example.com"}, side_effect=True, idempotency_key="mail-1")
    got = findings(b.write(), "duplicate_side_effect")
    assert [(f["severity"], f["executions"], f["resumes_between"]) for f in got] == [("error", 2, 1)]
    assert got[0]["summary"] == ("Run r1 executed side-effecting `ceo@example.com` 2 times with the same "
                                 "idempotency key across 1 resume; check the target for duplicates and make "
                                 "the tool idempotent.")


def test_duplicate_side_effect_unkeyed_warning_and_clean_run(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, "unkeyed")
    b.tool(1, "deploy", {"env": "prod"}, side_effect=True)
    got = findings(b.write(), "duplicate_side_effect")
    assert [(f["severity"], f["unkeyed_calls"], f["tools"]) for f in got] == [("warning", 1, ["deploy"])]
    clean = BundleBuilder(tmp_path, "clean")
    clean.tool(1, "deploy", {"env": "prod"}, side_effect=True, idempotency_key="d1")
    clean.tool(2, "deploy", {"env": "staging"}, side_effect=True, idempotency_key="d2")
    clean.tool(3, "read_file", {"path": "a"})
    clean.tool(4, "read_file", {"path": "a"})  # repeated, but not a side effect
    assert findings(clean.write(), "duplicate_side_effect") == []


# -- unresolved_operation ---------------------------------------------------------------------------


def test_unresolved_operation(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.event(1, "operation.intent", {"operation_id": "op-1", "kind": "deploy", "target": "prod",
                                    "args_hash": "abc"})
    b.event(2, "operation.intent", {"operation_id": "op-2", "kind": "charge", "target": "card-42"})
    b.event(3, "operation.outcome", {"operation_id": "op-2", "status": "succeeded", "external_id": "ch_1"})
    b.event(4, "operation.intent", {"operation_id": "op-3", "kind": "email", "target": "bob"})
    b.event(5, "operation.outcome", {"operation_id": "op-3", "status": "unknown"})
    got = findings(b.write(), "unresolved_operation")
    assert [(f["operation_id"], f["status"]) for f in got] == [("op-1", "pending"), ("op-3", "unknown")]
    assert got[0]["summary"] == ("Run r1: operation op-1 (deploy → prod), declared at event #1, has no "
                                 "outcome; check prod before retrying or resuming.")
    assert got[0]["needs_human"] is True


def test_unresolved_operation_silent_when_resolved(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.event(1, "operation.intent", {"operation_id": "op-1", "kind": "deploy", "target": "prod"})
    b.event(2, "operation.outcome", {"operation_id": "op-1", "status": "failed"})
    assert findings(b.write(), "unresolved_operation") == []


# -- premature_completion ---------------------------------------------------------------------------


def test_premature_completion_failed_eval_and_features(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, status="succeeded")
    b.event(1, "evaluation", {"verdict": "pass"})
    b.event(2, "evaluation", {"verdict": "fail", "checks": ["build"]})
    b.finished(3, "succeeded")
    b.file("progress/feature-list.json", json.dumps([
        {"description": "login works", "passes": True},
        {"description": "chart renders", "passes": False},
        {"description": "export csv", "passes": False}]))
    got = findings(b.write(), "premature_completion")
    assert len(got) == 1
    assert got[0]["summary"] == ("Run r1 declared success but its last evaluation (event #2) said fail and "
                                 "2 of 3 feature-list items still fail (`chart renders`, `export csv`); gate "
                                 "completion on a passing evaluation.")
    assert got[0]["failing_features"] == ["chart renders", "export csv"]


def test_premature_completion_no_evaluation_is_a_warning_and_pass_is_silent(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, "noeval", status="succeeded")
    b.finished(1, "succeeded")
    got = findings(b.write(), "premature_completion")
    assert [(f["severity"], f["evaluations"]) for f in got] == [("warning", 0)]
    ok = BundleBuilder(tmp_path, "ok", status="succeeded")
    ok.event(1, "evaluation", {"verdict": "pass"})
    ok.finished(2, "succeeded")
    assert findings(ok.write(), "premature_completion") == []
    failed = BundleBuilder(tmp_path, "failed", status="failed")
    failed.event(1, "evaluation", {"verdict": "fail"})
    assert findings(failed.write(), "premature_completion") == []


# -- context_pressure -------------------------------------------------------------------------------


def test_context_pressure_early_handoff(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    for i in range(5):
        b.llm(i * 10, 1.0, 10_000 + i * 2_000, 100)
    b.event(60, "context.handoff", {"reason": "context limit approaching", "context_tokens": 40_000,
                                    "context_window": 200_000})
    got = findings(b.write(), "context_pressure")
    assert len(got) == 1
    assert got[0]["min_context_ratio"] == 0.2
    assert got[0]["calls_left_estimate"] == 80.0  # 160k free / 2k per call
    assert got[0]["summary"].startswith("Run r1 handed off 1 time with the context 20% full (of 200k)")


def test_context_pressure_silent_for_a_late_handoff(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.event(1, "context.handoff", {"context_tokens": 170_000, "context_window": 200_000})
    assert findings(b.write(), "context_pressure") == []


# -- rate_limit -------------------------------------------------------------------------------------


def test_rate_limit_per_endpoint(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.started()
    for i in range(3):
        b.event(10 + i, "rate_limited", {"endpoint": "api.openai.com/v1/chat", "retry_after_s": 20})
    b.event(30, "rate_limited", {"endpoint": "api.github.com", "retry_after_s": 1})
    b.finished(100)
    got = findings(b.write(), "rate_limit")
    assert [(f["endpoint"], f["events"], f["wait_seconds"], f["severity"]) for f in got] == [
        ("api.openai.com/v1/chat", 3, 60.0, "warning"), ("api.github.com", 1, 1.0, "info")]
    assert got[0]["summary"] == ("Run r1 was rate-limited 3 times by api.openai.com/v1/chat, waiting 1.0 min "
                                 "(60% of the run); lower concurrency or raise the quota.")


def test_rate_limit_from_429_spans_and_silent_without(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, "spans")
    b.span(0, 2, "chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                 "error.type": "openai.RateLimitError"}, status=2, message="Error code: 429")
    b.llm(3, 1.0)
    got = findings(b.write(), "rate_limit")
    assert [(f["endpoint"], f["events"]) for f in got] == [("openai", 1)]
    clean = BundleBuilder(tmp_path, "clean")
    clean.llm(0, 1.0)
    clean.tool(2, "run_command", {"cmd": "ls"}, error="No such file")
    assert findings(clean.write(), "rate_limit") == []


# -- stream_interrupted -----------------------------------------------------------------------------


def test_stream_interrupted_partial_tool_call_dispatched(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.llm(0, 1.0)
    b.event(2, "stream.interrupted", {"received_bytes": 812, "partial_tool_call": True})
    b.tool(3, "write_file", {"path": "src/app.ts"})
    b.event(10, "stream.interrupted", {"received_bytes": 40, "partial_tool_call": False})
    got = findings(b.write(), "stream_interrupted")
    assert [(f["severity"], f.get("command"), f.get("interruptions")) for f in got] == [
        ("error", "src/app.ts", None), ("warning", None, 1)]
    assert got[0]["summary"] == ("Run r1 dispatched `src/app.ts` after the stream carrying it was cut "
                                 "(event #1, 812 bytes received): its arguments may be truncated; drop partial "
                                 "tool calls instead.")


def test_stream_interrupted_silent_without_interruptions(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.llm(0, 1.0)
    b.tool(2, "write_file", {"path": "a"})
    assert findings(b.write(), "stream_interrupted") == []


# -- slow_tool --------------------------------------------------------------------------------------


def test_slow_tool_over_threshold_and_silent_stream(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.tool(0, "run_command", {"cmd": "npm install"}, duration=94)
    b.tool(100, "run_command", {"cmd": "npm test"}, duration=31)
    b.tool(140, "run_command", {"cmd": "ls"}, duration=2)
    b.llm(150, 80, **{"gen_ai.response.time_to_first_chunk": 75.0})
    got = findings(b.write(), "slow_tool")
    assert [(f["severity"], f.get("slow_calls"), f.get("silent_streams")) for f in got] == [
        ("warning", 2, None), ("warning", None, 1)]
    assert got[0]["summary"] == ("Run r1: 2 run_command calls took over 30 s (2.1 min in all; slowest "
                                 "`npm install` 1.6 min); add a timeout or run it in the background.")
    assert findings(b.dir, "slow_tool", threshold_s=100, stream_silence_s=90) == []


# -- concurrent_writers -----------------------------------------------------------------------------


def test_concurrent_writers_interleaved(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.started(worker_id="host-a:1")
    for i, w in enumerate(["host-a:1", "host-b:2", "host-a:1", "host-b:2"]):
        b.event(1 + i, "node.started", {"node": "act"}, worker_id=w)
    got = findings(b.write(), "concurrent_writers")
    assert [(f["workers"], f["switches"], f["duplicate_seqs"]) for f in got] == [
        (["host-a:1", "host-b:2"], 3, 0)]


def test_concurrent_writers_duplicate_seq_and_clean_handover(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, "dup")
    b.event(0, "run.started", {"worker_id": "w1"}, seq=1)
    b.event(1, "node.started", {}, seq=2)
    b.event(1, "node.started", {}, seq=2)
    got = findings(b.write(), "concurrent_writers")
    assert [f["duplicate_seqs"] for f in got] == [1]
    clean = BundleBuilder(tmp_path, "handover")
    clean.started(worker_id="w1")
    clean.event(1, "node.started", {})
    clean.event(5, "run.resumed", {"worker_id": "w2"})
    clean.event(6, "node.started", {})
    assert findings(clean.write(), "concurrent_writers") == []


# -- workspace_drift --------------------------------------------------------------------------------


def test_workspace_drift(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.event(0, "plan", {"write_paths": ["src/**", "package.json"]})
    b.file("workspace.diff", "diff --git a/src/app.ts b/src/app.ts\n+x\n"
                             "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\n-y\n"
                             "diff --git a/package.json b/package.json\n")
    b.tool(1, "write_file", {"path": "/etc/hosts"})
    got = findings(b.write(), "workspace_drift")
    assert len(got) == 1
    assert got[0]["outside_paths"] == [".github/workflows/ci.yml", "/etc/hosts"]
    assert got[0]["summary"] == ("Run r1 changed 2 files outside its declared write paths (src/**, "
                                 "package.json): `.github/workflows/ci.yml`, `/etc/hosts`; review them before "
                                 "merging.")


def test_workspace_drift_silent_inside_paths_or_without_declaration(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, "inside")
    b.event(0, "plan", {"write_paths": ["src/"]})
    b.file("workspace.diff", "diff --git a/src/a/b.ts b/src/a/b.ts\n")
    assert findings(b.write(), "workspace_drift") == []
    nodecl = BundleBuilder(tmp_path, "nodecl")
    nodecl.event(0, "plan", {"done_criteria": "tests pass"})
    nodecl.file("workspace.diff", "diff --git a/x b/x\n")
    assert findings(nodecl.write(), "workspace_drift") == []


# -- cancellation -----------------------------------------------------------------------------------


def test_cancellation_two_terminal_states_and_work_after(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, status="cancelled")
    b.started()
    b.finished(10, "cancelled", "user pressed stop")
    b.event(12, "tool.started", {"tool": "run_command", "call_id": "c9"})
    b.event(14, "tool.finished", {"tool": "run_command", "call_id": "c9", "status": "ok"})
    b.finished(15, "succeeded")
    got = findings(b.write(), "cancellation")
    assert [(f["severity"], f.get("terminal_states"), f.get("events_after_finish")) for f in got] == [
        ("error", ["cancelled", "succeeded"], None), ("error", None, 2)]
    assert got[0]["summary"].startswith("Run r1 finished 2 times (cancelled then succeeded)")
    assert got[1]["summary"].startswith("Run r1 recorded 2 events (tool.finished, tool.started) up to 4.0 s "
                                        "after it finished")


def test_cancellation_silent_for_a_clean_end_and_a_resumed_run(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path, "clean", status="failed")
    b.started()
    b.finished(5, "failed")
    assert findings(b.write(), "cancellation") == []
    r = BundleBuilder(tmp_path, "resumed", status="succeeded")
    r.started()
    r.finished(5, "failed")
    r.event(6, "run.resumed", {"worker_id": "w2"})
    r.event(7, "node.started", {})
    r.finished(8, "succeeded")
    assert findings(r.write(), "cancellation") == []


def test_iso_helper_is_rfc3339() -> None:
    assert iso(1.5) == "2026-05-26T10:00:01.500000Z"
