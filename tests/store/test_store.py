"""The store: tables and columns, the careful path for damaged files, prices, the .duckdb cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agenttrail.detect import run_detectors
from agenttrail.errors import BundleFormatError, StoreError
from agenttrail.store import Store, open_store
from tests.detect.builder import BundleBuilder, iso


def test_documented_tables_exist_with_their_key_columns(demo_bundle: Path) -> None:
    store = open_store([demo_bundle])
    tables = {r[0] for r in store.sql("SELECT table_name FROM duckdb_tables() UNION "
                                      "SELECT view_name FROM duckdb_views() WHERE NOT internal")}
    assert {"runs", "spans", "span_rows", "events", "llm_calls", "tool_calls", "operations", "checkpoints", "files",
            "load_warnings", "prices", "features", "workspace_changes"} <= tables
    assert store.sql("SELECT checkpoint_id, step, \"values\"->>'messages' FROM checkpoints ORDER BY step") == [
        ("ckpt-010", 10, "23"), ("ckpt-020", 20, "43"), ("ckpt-030", 30, "63")]
    # gpt-4o-2024-08-06 is priced by the gpt-4o prefix; cost recomputed here from the token columns
    rows = store.sql("SELECT input_tokens, output_tokens, cache_read_tokens, cost_usd, price_model FROM llm_calls")
    assert len(rows) == 31 and {r[4] for r in rows} == {"gpt-4o"}
    for i, o, c, cost, _ in rows:
        assert cost == pytest.approx(((i - c) * 2.5 + c * 1.25 + o * 10.0) / 1e6)
    store.close()


def test_damaged_trace_line_is_reported_and_the_rest_loads(demo_bundle: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    lines = (b / "trace.jsonl").read_text().splitlines()
    total = len(lines)
    lines[2] = lines[2][:50]
    (b / "trace.jsonl").write_text("\n".join(lines) + "\n")
    store = open_store([b])
    assert store.sql("SELECT file, line, message FROM load_warnings") == [
        ("trace.jsonl", 3, "not valid JSON; line skipped")]
    assert store.sql("SELECT count(*) FROM spans")[0][0] == total - 1  # one span per line in our writer
    store.close()


def test_user_prices_override_and_bad_price_file(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.llm(0, 1.0, 1_000_000, 1_000_000, model="my-local-model")
    b.llm(2, 1.0, 1_000_000, 0, model="gpt-4o")
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."my-local"]\ninput = 1.0\noutput = 2.0\n[models."gpt-4o"]\ninput = 5\noutput = 20\n')
    store = open_store([b.write()], prices=prices)
    assert store.sql("SELECT model, cost_usd FROM llm_calls ORDER BY model") == [
        ("gpt-4o", 5.0), ("my-local-model", 3.0)]
    store.close()
    unpriced = open_store([b.dir])
    assert unpriced.sql("SELECT model, cost_usd FROM llm_calls ORDER BY model") == [
        ("gpt-4o", 2.5), ("my-local-model", None)]
    unpriced.close()
    prices.write_text('[models."x"]\ninput = "cheap"\n')
    with pytest.raises(StoreError, match=r"prices.toml: models.'x' needs numeric input and output prices"):
        open_store([b.dir], prices=prices)


def test_cache_hit_and_invalidation(demo_bundle: Path, tmp_path: Path) -> None:
    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    cache = tmp_path / "cache"
    first = open_store([b], use_cache=True, cache_dir=cache, cache_min_seconds=0)
    assert not first.from_cache and first.cache_path is not None and first.cache_path.is_file()
    n_spans = first.sql("SELECT count(*) FROM spans")[0][0]
    first.close()
    again = open_store([b], use_cache=True, cache_dir=cache, cache_min_seconds=0)
    assert again.from_cache and again.sql("SELECT count(*) FROM spans")[0][0] == n_spans
    assert again.sql("SELECT count(*) FROM llm_calls WHERE cost_usd IS NOT NULL")[0][0] == 31
    again.close()
    # editing a file (even without touching the manifest) misses the cache
    with open(b / "events.jsonl", "a") as fh:
        fh.write(json.dumps({"seq": 999, "ts": "2026-11-29T08:09:07Z", "run_id": "s_123",
                             "type": "error", "data": {"message": "late"}}) + "\n")
    edited = open_store([b], use_cache=True, cache_dir=cache, cache_min_seconds=0)
    assert not edited.from_cache
    assert edited.sql("SELECT count(*) FROM events WHERE seq = 999")[0][0] == 1
    edited.close()
    assert len(list((cache / "store").glob("*.duckdb"))) == 2


def test_lines_that_are_json_but_not_objects_are_named_not_dropped_silently(tmp_path: Path) -> None:
    b = tmp_path / "b"
    b.mkdir()
    good = {"seq": 1, "ts": "2026-01-01T00:00:00Z", "run_id": "r", "type": "note", "data": {}}
    (b / "events.jsonl").write_text("\n".join([json.dumps(good), '["not", "an", "event"]', "42", '"text"',
                                                "null", "true"]) + "\n")
    (b / "checkpoints.jsonl").write_text('{"checkpoint_id": "c1", "step": 1}\n[1, 2]\n')
    store = open_store([b])
    events = store.sql("SELECT seq, type FROM events")
    checkpoints = store.sql("SELECT checkpoint_id, step, lineno FROM checkpoints")
    warnings = store.sql("SELECT file, line, message FROM load_warnings WHERE line IS NOT NULL ORDER BY file, line")
    store.close()
    assert events == [(1, "note")]
    assert checkpoints == [("c1", 1, 1)]
    assert warnings == [
        ("checkpoints.jsonl", 2, "a JSON array, not an object; line skipped"),
        ("events.jsonl", 2, "a JSON array, not an object; line skipped"),
        ("events.jsonl", 3, "a JSON number, not an object; line skipped"),
        ("events.jsonl", 4, "a JSON string, not an object; line skipped"),
        ("events.jsonl", 5, "JSON null, not an object; line skipped"),
        ("events.jsonl", 6, "a JSON boolean, not an object; line skipped")]


def _snapshot(store: Store) -> list[object]:
    return [store.sql(q) for q in (
        "SELECT kind, count(*), sum(input_tokens), sum(output_tokens) FROM spans GROUP BY kind ORDER BY kind",
        "SELECT count(*), sum(cost_usd) FROM llm_calls",
        "SELECT tool, status, count(*) FROM tool_calls GROUP BY ALL ORDER BY ALL",
        "SELECT count(*), max(seq) FROM events",
        "SELECT attributes FROM spans WHERE kind = 'llm' ORDER BY start_ns LIMIT 1")]


def test_big_bundles_load_straight_into_the_cache_file(demo_bundle: Path, tmp_path: Path) -> None:
    """Past ``direct_cache_bytes`` the load goes into the cache file itself (no copy afterwards): the
    store then reads from it, holds what an in-memory load holds, and the next open is a cache hit."""
    cache = tmp_path / "cache"
    memory = open_store([demo_bundle])
    expected, findings = _snapshot(memory), [f.as_dict() for f in run_detectors(memory).findings]
    memory.close()
    direct = open_store([demo_bundle], use_cache=True, cache_dir=cache, direct_cache_bytes=0)
    assert not direct.from_cache and direct.cache_path is not None and "cache_write" in direct.timings
    assert _snapshot(direct) == expected
    assert [f.as_dict() for f in run_detectors(direct).findings] == findings
    direct.close()
    assert sorted(p.name for p in (cache / "store").iterdir()) == [direct.cache_path.name]  # no temp files
    again = open_store([demo_bundle], use_cache=True, cache_dir=cache, direct_cache_bytes=0)
    assert again.from_cache and again.cache_path == direct.cache_path and _snapshot(again) == expected
    again.close()


def test_unwritable_cache_dir_still_loads(demo_bundle: Path, tmp_path: Path) -> None:
    """A cache directory that cannot be created costs the cache, never the analysis."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    for direct_bytes in (0, 1 << 40):
        store = open_store([demo_bundle], use_cache=True, cache_dir=blocker, cache_min_seconds=0,
                           direct_cache_bytes=direct_bytes)
        assert store.cache_path is None and not store.from_cache
        assert store.sql("SELECT count(*) FROM llm_calls")[0][0] == 31
        store.close()
    assert blocker.read_text() == "a file where the cache directory would go"


def test_failed_direct_load_leaves_no_cache_file(tmp_path: Path) -> None:
    """A bundle that cannot be loaded at all fails as it would in memory (exit 2 in the CLI), and the
    half-written cache file is removed."""
    b = tmp_path / "bad"
    b.mkdir()
    (b / "events.jsonl").write_text('{not json\n')
    cache = tmp_path / "cache"
    with pytest.raises(BundleFormatError, match=r"events.jsonl:1: no line of events.jsonl could be read"):
        open_store([b], use_cache=True, cache_dir=cache, direct_cache_bytes=0)
    assert list((cache / "store").iterdir()) == []


def test_store_into_a_duckdb_file(demo_bundle: Path, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    open_store([demo_bundle], database=db).close()
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT run_id, status FROM runs").fetchall() == [("s_123", "failed")]
    con.close()


def test_events_lacking_required_keys_are_kept_and_named_by_line(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.started()
    b.event(1, "node.started", {})
    b.write()
    lines = (b.dir / "events.jsonl").read_text().splitlines()
    lines.insert(1, json.dumps({"ts": iso(0.5), "run_id": "r1", "type": "note"}))  # no seq, line 2
    lines.append("")
    lines.append(json.dumps({"seq": 9, "run_id": "r1", "type": "note"}))  # no ts, line 5
    (b.dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    store = open_store([b.dir])
    assert store.sql("SELECT file, line, message FROM load_warnings ORDER BY line") == [
        ("events.jsonl", 2, "event lacks an integer seq; kept"), ("events.jsonl", 5, "event lacks an RFC 3339 ts; kept")]
    assert store.sql("SELECT count(*) FROM events")[0][0] == 4
    store.close()


def test_snake_case_and_mixed_otlp_spellings(tmp_path: Path) -> None:
    span = {"traceId": "AB", "spanId": "CD", "name": "chat m", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}
    snake = {"resource_spans": [{"scope_spans": [{"spans": [span]}]}]}
    camel = {"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "spanId": "EF"}]}]}]}
    for name, lines in (("snake", [snake]), ("mixed", [snake, camel])):
        d = tmp_path / name
        d.mkdir()
        (d / "trace.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        store = open_store([d])
        got = store.sql("SELECT span_id, trace_id, operation, kind FROM spans ORDER BY span_id")
        store.close()
        expected = [("cd", "ab", "chat", "llm")] + ([("ef", "ab", "chat", "llm")] if name == "mixed" else [])
        assert got == expected, name


def test_calls_whose_spans_never_reached_the_trace_count_from_their_events(
        demo_bundle: Path, tmp_path: Path) -> None:
    """A killed worker's last spans may be missing (spans are spooled by a background thread; events are
    written synchronously): those tool and LLM calls still count, from the event log."""
    b = tmp_path / "b"
    shutil.copytree(demo_bundle, b)
    kept, dropped = [], []
    for line in (b / "trace.jsonl").read_text().splitlines():
        name = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"]
        if name in ("execute_tool read_file", "chat gpt-4o") and name not in dropped:
            dropped.append(name)
        else:
            kept.append(line)
    assert sorted(dropped) == ["chat gpt-4o", "execute_tool read_file"]
    (b / "trace.jsonl").write_text("\n".join(kept) + "\n")
    store = open_store([b])
    assert store.sql("SELECT source, count(*) FROM tool_calls GROUP BY 1 ORDER BY 1") == [
        ("event", 1), ("span", 29)]
    assert store.sql("SELECT tool, status FROM tool_calls WHERE source = 'event'") == [("read_file", "ok")]
    assert store.sql("SELECT source, count(*) FROM llm_calls GROUP BY 1 ORDER BY 1") == [
        ("event", 1), ("span", 30)]
    full = open_store([demo_bundle])
    assert store.sql("SELECT sum(input_tokens + output_tokens) FROM llm_calls") == full.sql(
        "SELECT sum(input_tokens + output_tokens) FROM llm_calls")
    store.close()
    full.close()
