"""The store: tables and columns, the careful path for damaged files, prices, the .duckdb cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agenttrail.errors import StoreError
from agenttrail.store import open_store
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
