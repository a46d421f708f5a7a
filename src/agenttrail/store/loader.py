"""Load bundles into DuckDB: ``runs``, ``spans``, ``events``, ``tool_calls``, ``llm_calls`` ...

All parsing is DuckDB SQL over the files (no per-row Python). The schema is documented in
docs/store-schema.md; ``queries/sql/*.sql`` hold the named queries that run against it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..bundle import model
from ..bundle.reader import Bundle, open_bundle
from ..errors import StoreError
from . import _sql

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    bundle_id INTEGER, run_id VARCHAR, status VARCHAR, agent_name VARCHAR, workflow_name VARCHAR,
    started_at TIMESTAMP, ended_at TIMESTAMP, failure_type VARCHAR, failure_message VARCHAR,
    budget JSON, bundle_path VARCHAR, manifest JSON);
CREATE TABLE IF NOT EXISTS load_warnings (
    bundle_id INTEGER, file VARCHAR, line BIGINT, message VARCHAR);
CREATE TABLE IF NOT EXISTS files (
    bundle_id INTEGER, path VARCHAR, bytes BIGINT, sha256 VARCHAR);
"""


@dataclass
class Store:
    """A DuckDB connection holding one or more loaded bundles."""

    con: duckdb.DuckDBPyConnection
    bundles: list[Bundle] = field(default_factory=list)

    def sql(self, query: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self.con.execute(query, params or []).fetchall()

    def rows(self, query: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(query, params or [])
        cols = [d[0] for d in cur.description or []]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def close(self) -> None:
        self.con.close()


def open_store(paths: Iterable[str | Path], database: str = ":memory:") -> Store:
    """Open bundles (directories or packed files) and load them all into one store."""
    bundles = [open_bundle(p) for p in paths]
    con = duckdb.connect(database)
    con.execute("SET TimeZone = 'UTC'")
    store = Store(con=con, bundles=bundles)
    con.execute(SCHEMA)
    for i, b in enumerate(bundles, 1):
        try:
            _load_bundle(con, i, b)
        except duckdb.Error as e:
            raise StoreError(f"{b.source}: could not load into DuckDB: {e}",
                             "run `agenttrail bundle verify` on it to find the damaged file") from e
    _derive(con)
    return store


def _lines(con: duckdb.DuckDBPyConnection, path: Path, table: str) -> None:
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_sql.LINES}", [str(path)])


def _warn_bad_lines(con: duckdb.DuckDBPyConnection, bundle_id: int, table: str, rel: str) -> None:
    con.execute(
        f"INSERT INTO load_warnings SELECT ?, ?, lineno, 'not valid JSON; line skipped' "
        f"FROM {table} WHERE NOT coalesce(json_valid(line), false) AND trim(line) <> '' "
        f"ORDER BY lineno LIMIT 50", [bundle_id, rel])


def _load_bundle(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle) -> None:
    m = b.manifest
    run_id = b.run_id
    for w in b.warnings.items:
        con.execute("INSERT INTO load_warnings VALUES (?, ?, ?, ?)", [bid, w.file, w.line, w.message])

    # -- events ------------------------------------------------------------------------------
    ev = b.events_file
    if ev is not None:
        _lines(con, ev, "_ev_lines")
        _warn_bad_lines(con, bid, "_ev_lines", ev.name)
        con.execute("""
            INSERT INTO events_raw
            SELECT ?, lineno, coalesce(j->>'run_id', ?), TRY_CAST(j->>'seq' AS BIGINT),
                   CAST(TRY_CAST(j->>'ts' AS TIMESTAMPTZ) AS TIMESTAMP), j->>'type', j->>'actor', j->>'trace_id',
                   j->>'span_id', j->'data', j->>'payload_ref', j->>'redaction', j
            FROM (SELECT lineno, CAST(line AS JSON) AS j FROM _ev_lines
                  WHERE coalesce(json_valid(line), false) AND trim(line) <> '')
            WHERE json_type(j) = 'OBJECT'
        """, [bid, run_id])
        con.execute("""
            INSERT INTO load_warnings
            SELECT ?, ?, lineno, 'event lacks ' || CASE WHEN seq IS NULL THEN 'an integer seq'
                   WHEN ts IS NULL THEN 'an RFC 3339 ts' ELSE 'a type' END || '; kept'
            FROM events_raw WHERE bundle_id = ? AND (seq IS NULL OR ts IS NULL OR type IS NULL)
            LIMIT 50""", [bid, ev.name, bid])

    # -- spans ------------------------------------------------------------------------------------
    for tf in b.trace_files:
        _lines(con, tf, "_tr_lines")
        if tf.name == model.TRACE_JSON:
            # one document, possibly pretty-printed over many lines: read it whole
            con.execute("CREATE OR REPLACE TEMP TABLE _tr_lines AS "
                        "SELECT 1 AS lineno, content AS line FROM read_text(?)", [str(tf)])
        _warn_bad_lines(con, bid, "_tr_lines", tf.name)
        con.execute(f"""
            INSERT INTO spans_raw
            WITH docs AS (
                SELECT lineno, CAST(line AS JSON) AS j FROM _tr_lines
                WHERE coalesce(json_valid(line), false) AND trim(line) <> ''),
            rs AS (SELECT lineno, unnest(from_json(coalesce(j->'resourceSpans', j->'resource_spans'),
                                                   '["JSON"]')) AS r FROM docs),
            ss AS (SELECT lineno, r->'resource'->'attributes' AS res,
                          unnest(from_json(coalesce(r->'scopeSpans', r->'scope_spans',
                                                    r->'instrumentationLibrarySpans'), '["JSON"]')) AS s
                   FROM rs),
            sp AS (SELECT lineno, res, s->'scope'->>'name' AS scope_name,
                          unnest(from_json(s->'spans', '["JSON"]')) AS x FROM ss)
            SELECT ?, lineno, lower(x->>'traceId'), lower(x->>'spanId'),
                   nullif(lower(x->>'parentSpanId'), ''), x->>'name',
                   TRY_CAST(x->>'kind' AS INTEGER),
                   TRY_CAST(x->>'startTimeUnixNano' AS HUGEINT),
                   TRY_CAST(x->>'endTimeUnixNano' AS HUGEINT),
                   coalesce(TRY_CAST(x->'status'->>'code' AS INTEGER),
                            CASE x->'status'->>'code' WHEN 'STATUS_CODE_ERROR' THEN 2
                                 WHEN 'STATUS_CODE_OK' THEN 1 ELSE 0 END),
                   x->'status'->>'message', scope_name,
                   {_sql.attrs_map("x->'attributes'")}, {_sql.attrs_map('res')}, x->'events'
            FROM sp
        """, [bid])

    # -- tool_calls.csv (used when spans and events lack the calls) ----------------------------------
    csv_path = b.file(model.TOOL_CALLS)
    if csv_path is not None:
        try:
            con.execute("CREATE OR REPLACE TEMP TABLE _csv AS SELECT * FROM "
                        "read_csv(?, header=true, all_varchar=true, auto_detect=true)", [str(csv_path)])
            cols = {r[0] for r in con.execute("DESCRIBE _csv").fetchall()}
            missing = [c for c in model.TOOL_CALLS_HEADER if c not in cols]
            if missing:
                raise duckdb.InvalidInputException(f"header lacks {', '.join(missing)}")

            def col(c: str) -> str:
                return f'"{c}"' if c in cols else "NULL"

            con.execute(f"""
                INSERT INTO tool_calls_csv
                SELECT ?, ?, CAST(TRY_CAST(ts AS TIMESTAMPTZ) AS TIMESTAMP), tool, input_hash,
                       TRY_CAST(latency_ms AS DOUBLE), status, error, {col('call_id')}, {col('span_id')}
                FROM _csv""", [bid, run_id])
        except duckdb.Error as e:
            con.execute("INSERT INTO load_warnings VALUES (?, ?, NULL, ?)",
                        [bid, model.TOOL_CALLS, f"could not read: {str(e).splitlines()[0]}"])

    # -- files --------------------------------------------------------------------------------------
    for path in sorted(b.path.rglob("*")):
        if path.is_file():
            rel = path.relative_to(b.path).as_posix()
            info = (m.get("files") or {}).get(rel) or {}
            con.execute("INSERT INTO files VALUES (?, ?, ?, ?)",
                        [bid, rel, path.stat().st_size, info.get("sha256")])

    # -- runs ----------------------------------------------------------------------------------------
    failure = m.get("failure") or {}
    con.execute("""
        INSERT INTO runs VALUES (?, ?, ?, ?, ?, CAST(TRY_CAST(? AS TIMESTAMPTZ) AS TIMESTAMP), CAST(TRY_CAST(? AS TIMESTAMPTZ) AS TIMESTAMP),
                                 ?, ?, ?, ?, ?)""",
                [bid, run_id, m.get("status"), m.get("agent_name"), m.get("workflow_name"),
                 m.get("started_at"), m.get("ended_at"), failure.get("type"), failure.get("message"),
                 json.dumps(m.get("budget") or {}), str(b.source), json.dumps(m, default=str)])


_RAW_TABLES = """
CREATE TABLE IF NOT EXISTS events_raw (
    bundle_id INTEGER, lineno BIGINT, run_id VARCHAR, seq BIGINT, ts TIMESTAMP, type VARCHAR,
    actor VARCHAR, trace_id VARCHAR, span_id VARCHAR, data JSON, payload_ref VARCHAR,
    redaction VARCHAR, raw JSON);
CREATE TABLE IF NOT EXISTS spans_raw (
    bundle_id INTEGER, lineno BIGINT, trace_id VARCHAR, span_id VARCHAR, parent_span_id VARCHAR,
    name VARCHAR, kind INTEGER, start_ns HUGEINT, end_ns HUGEINT, status_code INTEGER,
    status_message VARCHAR, scope_name VARCHAR, attributes MAP(VARCHAR, VARCHAR),
    resource MAP(VARCHAR, VARCHAR), span_events JSON);
CREATE TABLE IF NOT EXISTS tool_calls_csv (
    bundle_id INTEGER, run_id VARCHAR, ts TIMESTAMP, tool VARCHAR, input_hash VARCHAR,
    latency_ms DOUBLE, status VARCHAR, error VARCHAR, call_id VARCHAR, span_id VARCHAR);
"""

SCHEMA = SCHEMA + _RAW_TABLES


def _derive(con: duckdb.DuckDBPyConnection) -> None:
    """Typed tables built from the raw ones, for every bundle at once."""
    con.execute(f"""
        CREATE OR REPLACE TABLE spans AS
        WITH base AS (
            SELECT s.*, r.run_id AS bundle_run_id, {_sql.OPERATION} AS operation FROM spans_raw s
            JOIN runs r USING (bundle_id)),
        typed AS (
            SELECT bundle_id, trace_id, span_id, parent_span_id, name, kind AS span_kind,
                   start_ns, end_ns, (end_ns - start_ns) / 1e6 AS duration_ms,
                   make_timestamp(CAST(start_ns // 1000 AS BIGINT)) AS start_ts,
                   make_timestamp(CAST(end_ns // 1000 AS BIGINT)) AS end_ts,
                   status_code, status_message, scope_name, operation,
                   coalesce(attributes['agenttrail.run.id'], bundle_run_id) AS run_id,
                   {_sql.SPAN_COLUMNS}, attributes, resource, span_events
            FROM base)
        SELECT *, {_sql.KIND} AS kind FROM typed
    """)
    con.execute("""
        CREATE OR REPLACE TABLE events AS
        SELECT bundle_id, run_id, seq, ts, type, actor, trace_id, span_id, data, payload_ref,
               redaction, lineno FROM events_raw
    """)
    # LLM calls: spans when there are any for the bundle, else model.call events. A span whose tokens
    # were reported by an official instrumentation's child span (delegated_to) is not counted twice.
    con.execute("""
        CREATE OR REPLACE TABLE llm_calls AS
        SELECT bundle_id, run_id, span_id, trace_id, start_ts AS ts, duration_ms, provider,
               coalesce(response_model, request_model) AS model, request_model,
               coalesce(input_tokens, 0) AS input_tokens, coalesce(output_tokens, 0) AS output_tokens,
               coalesce(cache_read_tokens, 0) AS cache_read_tokens,
               coalesce(cache_write_tokens, 0) AS cache_write_tokens,
               error_type, status_message AS error, 'span' AS source, start_ns, end_ns
        FROM spans WHERE kind = 'llm' AND delegated_to IS NULL
        UNION ALL
        SELECT e.bundle_id, e.run_id, e.span_id, e.trace_id, e.ts,
               TRY_CAST(e.data->>'duration_ms' AS DOUBLE), e.data->>'provider', e.data->>'model',
               e.data->>'model',
               coalesce(TRY_CAST(e.data->>'input_tokens' AS BIGINT), 0),
               coalesce(TRY_CAST(e.data->>'output_tokens' AS BIGINT), 0),
               coalesce(TRY_CAST(e.data->>'cache_read_tokens' AS BIGINT), 0),
               coalesce(TRY_CAST(e.data->>'cache_write_tokens' AS BIGINT), 0),
               NULL, e.data->>'error', 'event',
               CAST(epoch_us(e.ts) AS HUGEINT) * 1000 - CAST(coalesce(TRY_CAST(e.data->>'duration_ms' AS DOUBLE), 0) * 1e6 AS HUGEINT),
               CAST(epoch_us(e.ts) AS HUGEINT) * 1000
        FROM events e
        WHERE e.type = 'model.call' AND e.data->>'delegated_to' IS NULL
          AND NOT EXISTS (SELECT 1 FROM spans s WHERE s.bundle_id = e.bundle_id AND s.kind = 'llm')
    """)
    # Tool calls: one row per call, from spans, else events, else tool_calls.csv.
    con.execute("""
        CREATE OR REPLACE TABLE tool_calls AS
        WITH fin AS (
            SELECT bundle_id, run_id, data->>'call_id' AS call_id, span_id, ts, seq,
                   data->>'status' AS status, data->>'error' AS error,
                   TRY_CAST(data->>'exit_code' AS INTEGER) AS exit_code,
                   TRY_CAST(data->>'latency_ms' AS DOUBLE) AS latency_ms, data
            FROM events WHERE type = 'tool.finished'),
        st AS (
            SELECT bundle_id, run_id, data->>'call_id' AS call_id, span_id, ts, seq, data
            FROM events WHERE type = 'tool.started'),
        from_spans AS (
            SELECT s.bundle_id, s.run_id, coalesce(s.tool_call_id, s.span_id) AS call_id, s.span_id,
                   s.tool_name AS tool, s.input_hash, s.tool_arguments AS arguments,
                   s.start_ts AS ts, s.duration_ms AS latency_ms,
                   CASE WHEN s.status_code = 2 THEN 'error' ELSE coalesce(f.status, 'ok') END AS status,
                   coalesce(f.error, CASE WHEN s.status_code = 2 THEN s.status_message END) AS error,
                   s.error_type, f.exit_code,
                   coalesce(TRY_CAST(s.attributes['agenttrail.tool.side_effect'] AS BOOLEAN), false) AS side_effect,
                   s.attributes['agenttrail.tool.idempotency_key'] AS idempotency_key,
                   st.seq AS seq_start, f.seq AS seq_end, s.start_ns, s.end_ns, 'span' AS source
            FROM spans s
            LEFT JOIN fin f ON f.bundle_id = s.bundle_id AND f.span_id = s.span_id
            LEFT JOIN st ON st.bundle_id = s.bundle_id AND st.span_id = s.span_id
            WHERE s.kind = 'tool'),
        from_events AS (
            SELECT st.bundle_id, st.run_id, st.call_id, st.span_id, st.data->>'tool' AS tool,
                   st.data->>'input_hash' AS input_hash, st.data->>'arguments' AS arguments,
                   st.ts, f.latency_ms, coalesce(f.status, 'unfinished') AS status, f.error,
                   f.data->>'error_type' AS error_type, f.exit_code,
                   coalesce(TRY_CAST(st.data->>'side_effect' AS BOOLEAN), false),
                   st.data->>'idempotency_key', st.seq, f.seq,
                   CAST(epoch_us(st.ts) AS HUGEINT) * 1000,
                   CAST(epoch_us(coalesce(f.ts, st.ts)) AS HUGEINT) * 1000, 'event'
            FROM st LEFT JOIN fin f USING (bundle_id, call_id)
            WHERE NOT EXISTS (SELECT 1 FROM from_spans x WHERE x.bundle_id = st.bundle_id)),
        from_csv AS (
            SELECT c.bundle_id, c.run_id, c.call_id, c.span_id, c.tool, c.input_hash, NULL, c.ts,
                   c.latency_ms, c.status, c.error, NULL, NULL, false, NULL, NULL, NULL,
                   CAST(epoch_us(c.ts) AS HUGEINT) * 1000,
                   CAST(epoch_us(c.ts) AS HUGEINT) * 1000 + CAST(coalesce(c.latency_ms, 0) * 1e6 AS HUGEINT),
                   'csv'
            FROM tool_calls_csv c
            WHERE NOT EXISTS (SELECT 1 FROM from_spans x WHERE x.bundle_id = c.bundle_id)
              AND NOT EXISTS (SELECT 1 FROM st WHERE st.bundle_id = c.bundle_id))
        SELECT * FROM from_spans UNION ALL SELECT * FROM from_events UNION ALL SELECT * FROM from_csv
    """)
    con.execute("""
        CREATE OR REPLACE TABLE operations AS
        WITH i AS (SELECT bundle_id, run_id, data->>'operation_id' AS operation_id, data->>'kind' AS kind,
                          data->>'target' AS target, data->>'args_hash' AS args_hash, seq, ts
                   FROM events WHERE type = 'operation.intent'),
             o AS (SELECT bundle_id, data->>'operation_id' AS operation_id, data->>'status' AS status,
                          data->>'external_id' AS external_id, seq, ts
                   FROM events WHERE type = 'operation.outcome')
        SELECT i.bundle_id, i.run_id, i.operation_id, i.kind, i.target, i.args_hash,
               i.seq AS intent_seq, i.ts AS intent_ts, o.seq AS outcome_seq, o.ts AS outcome_ts,
               coalesce(o.status, 'pending') AS status, o.external_id
        FROM i LEFT JOIN o USING (bundle_id, operation_id)
    """)
    # Runs without a manifest identity take it from their events / spans.
    con.execute("""
        UPDATE runs SET
          started_at = coalesce(runs.started_at, x.first_ts), ended_at = coalesce(runs.ended_at, x.last_ts)
        FROM (SELECT bundle_id, min(ts) AS first_ts, max(ts) AS last_ts FROM events GROUP BY ALL) x
        WHERE x.bundle_id = runs.bundle_id
    """)
    con.execute("""
        UPDATE runs SET
          started_at = coalesce(runs.started_at, x.first_ts), ended_at = coalesce(runs.ended_at, x.last_ts)
        FROM (SELECT bundle_id, min(start_ts) AS first_ts, max(end_ts) AS last_ts FROM spans GROUP BY ALL) x
        WHERE x.bundle_id = runs.bundle_id
    """)
