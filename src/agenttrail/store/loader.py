"""Load bundles into DuckDB: ``runs``, ``spans``, ``events``, ``tool_calls``, ``llm_calls`` ...

All parsing is DuckDB SQL over the files (no per-row Python). Each file is read once with
``read_json`` and an explicit schema straight into its final table; only a file with a damaged line is
re-read line by line, so every bad line is reported as ``file:line`` and the rest still loads. The
schema is documented in docs/store-schema.md; ``queries/sql/*.sql`` hold the named queries.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..bundle import model
from ..bundle.reader import Bundle, open_bundle
from ..errors import StoreError
from . import _sql, cache, pricing

# (what is being done, step number, number of steps); the CLI turns it into a progress bar.
Progress = Callable[[str, int, int], None]

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    bundle_id INTEGER, run_id VARCHAR, status VARCHAR, agent_name VARCHAR, workflow_name VARCHAR,
    started_at TIMESTAMP, ended_at TIMESTAMP, failure_type VARCHAR, failure_message VARCHAR,
    budget JSON, bundle_path VARCHAR, manifest JSON);
CREATE TABLE IF NOT EXISTS load_warnings (
    bundle_id INTEGER, file VARCHAR, line BIGINT, message VARCHAR);
CREATE TABLE IF NOT EXISTS files (
    bundle_id INTEGER, path VARCHAR, bytes BIGINT, sha256 VARCHAR);
CREATE TABLE IF NOT EXISTS events (
    bundle_id INTEGER, run_id VARCHAR, seq BIGINT, ts TIMESTAMP, type VARCHAR, actor VARCHAR,
    trace_id VARCHAR, span_id VARCHAR, data JSON, payload_ref VARCHAR, redaction VARCHAR, lineno BIGINT,
    worker_id VARCHAR);
CREATE TABLE IF NOT EXISTS features (
    bundle_id INTEGER, run_id VARCHAR, idx BIGINT, name VARCHAR, passes BOOLEAN, item JSON, file VARCHAR);
CREATE TABLE IF NOT EXISTS workspace_changes (
    bundle_id INTEGER, run_id VARCHAR, path VARCHAR, change VARCHAR);
CREATE TABLE IF NOT EXISTS checkpoints (
    bundle_id INTEGER, run_id VARCHAR, checkpoint_id VARCHAR, parent_checkpoint_id VARCHAR,
    ts TIMESTAMP, thread_id VARCHAR, step BIGINT, "values" JSON, metadata JSON, pending_writes JSON,
    lineno BIGINT);
CREATE TABLE IF NOT EXISTS tool_calls_csv (
    bundle_id INTEGER, run_id VARCHAR, ts TIMESTAMP, tool VARCHAR, input_hash VARCHAR,
    latency_ms DOUBLE, status VARCHAR, error VARCHAR, call_id VARCHAR, span_id VARCHAR,
    operation_id VARCHAR, idempotency_key VARCHAR, side_effect BOOLEAN, exit_code INTEGER,
    error_type VARCHAR);
"""


@dataclass
class Store:
    """A DuckDB connection holding one or more loaded bundles."""

    con: duckdb.DuckDBPyConnection
    bundles: list[Bundle] = field(default_factory=list)
    cache_path: Path | None = None
    from_cache: bool = False
    load_seconds: float = 0.0
    # seconds per loading phase (events, spans, other files, derive, cache write), for benchmarks
    timings: dict[str, float] = field(default_factory=dict)

    def sql(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self.con.execute(query, params or []).fetchall()

    def rows(self, query: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(query, params or [])
        cols = [d[0] for d in cur.description or []]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def close(self) -> None:
        self.con.close()


# Inputs this big are loaded straight into the cache file (then closed and re-opened read-only) rather
# than into memory and copied there. Measured at 1M spans: 6.4-7.6 s load + 0.5 s checkpoint against
# 4.7-5.3 s + 3.6 s for the copy, and 1.1 GB peak RSS instead of 1.6 GB. Smaller inputs load faster in
# memory.
DIRECT_CACHE_BYTES = 64 * 1024 * 1024


def open_store(paths: Iterable[str | Path], database: str | Path = ":memory:", *,
               use_cache: bool = False, cache_dir: Path | None = None,
               cache_min_seconds: float = 0.5, prices: Path | None = None,
               progress: Progress | None = None, direct_cache_bytes: int = DIRECT_CACHE_BYTES) -> Store:
    """Open bundles (directories or packed files) and load them all into one store.

    ``database``: ``":memory:"`` or a ``.duckdb`` file to load into. ``use_cache``: re-open the
    bundles from ``<cache dir>/store/<key>.duckdb`` when they were loaded before (the key covers the
    manifests, every file's size and mtime, the bundle paths, the price table and this schema), and
    write that cache after a load that took at least ``cache_min_seconds`` (bundles whose JSON files
    total ``direct_cache_bytes`` or more are loaded straight into it).
    """
    t0 = time.perf_counter()
    bundles = [open_bundle(p) for p in paths]
    price_rows = pricing.load_prices(prices)
    key = cache.key(bundles, price_rows) if use_cache else None
    if key is not None:
        hit = cache.open_cached(key, cache_dir)
        if hit is not None:
            return Store(con=hit[0], bundles=bundles, cache_path=hit[1], from_cache=True,
                         load_seconds=time.perf_counter() - t0)
    direct = None
    if key is not None and str(database) == ":memory:" and _json_bytes(bundles) >= direct_cache_bytes:
        direct = cache.building(key, cache_dir)
    try:
        con = duckdb.connect(str(direct or database))
    except duckdb.Error:
        if direct is None:
            raise
        cache.discard(direct)
        direct, con = None, duckdb.connect(str(database))
    store = Store(con=con, bundles=bundles)
    try:
        _fill(con, bundles, price_rows, progress, store.timings)
    except BaseException:
        if direct is not None:
            con.close()
            cache.discard(direct)
        raise
    store.load_seconds = time.perf_counter() - t0
    if direct is not None and key is not None:
        t = time.perf_counter()
        con.close()  # checkpoints: the file is complete
        hit = cache.open_cached(key, cache_dir) if cache.publish(direct, key, cache_dir) else None
        store.timings["cache_write"] = time.perf_counter() - t
        if hit is None:  # could not be moved into place (removed): load again, in memory
            return open_store(paths, database, use_cache=False, prices=prices, progress=progress)
        store.con, store.cache_path = hit
    elif key is not None and store.load_seconds >= cache_min_seconds and str(database) == ":memory:":
        t = time.perf_counter()
        store.cache_path = cache.write(con, key, cache_dir)
        store.timings["cache_write"] = time.perf_counter() - t
    return store


def _json_bytes(bundles: Sequence[Bundle]) -> int:
    """Bytes of the JSON files a load reads (the rest of a bundle is small or not loaded)."""
    files = [f for b in bundles for f in (b.events_file, *b.trace_files, b.file(model.CHECKPOINTS))]
    return sum(f.stat().st_size for f in files if f is not None)


def _fill(con: duckdb.DuckDBPyConnection, bundles: Sequence[Bundle], price_rows: list[pricing.PriceRow],
          progress: Progress | None, timings: dict[str, float]) -> None:
    con.execute("SET TimeZone = 'UTC'; SET enable_progress_bar = false")
    con.execute(SCHEMA)
    _create_spans_table(con)
    pricing.create_table(con, price_rows)
    steps = len(bundles) * 4 + 1
    for i, b in enumerate(bundles, 1):
        try:
            _load_bundle(con, i, b, progress, (i - 1) * 4, steps, timings)
        except duckdb.Error as e:
            raise StoreError(f"{b.source}: could not load into DuckDB: {str(e).splitlines()[0]}",
                             "run `agenttrail bundle verify` on it to find the damaged file") from e
    if progress:
        progress("deriving llm_calls, tool_calls, operations", steps, steps)
    t = time.perf_counter()
    with _unordered(con):
        _derive(con)
    timings["derive"] = time.perf_counter() - t


def _create_spans_table(con: duckdb.DuckDBPyConnection) -> None:
    """``span_rows`` takes its columns from the same SELECT that fills it; ``spans`` is the view over it."""
    empty = _sql.typed_spans(_sql.raw_spans_fast('auto')).replace(_sql.MAX_OBJECT, str(_sql.OBJECT_SIZE))
    con.execute(f"CREATE TABLE span_rows AS {empty}",
                {"file": _empty_trace_file(), "bundle_id": 0, "run_id": ""})
    con.execute(_sql.SPANS_VIEW)


def _step(progress: Progress | None, what: str, i: int, n: int) -> None:
    if progress:
        progress(what, i, n)


def _lines(con: duckdb.DuckDBPyConnection, path: Path, table: str) -> None:
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_sql.LINES}", [str(path)])


def _warn_bad_lines(con: duckdb.DuckDBPyConnection, bundle_id: int, table: str, rel: str,
                    objects: bool = False) -> None:
    """A warning (file:line) per line that is not JSON — or, with ``objects``, not a JSON object."""
    con.execute(
        f"INSERT INTO load_warnings SELECT ?, ?, lineno, 'not valid JSON; line skipped' "
        f"FROM {table} WHERE NOT coalesce(json_valid(line), false) AND trim(line) <> '' "
        f"ORDER BY lineno LIMIT 50", [bundle_id, rel])
    if objects:
        con.execute(
            f"INSERT INTO load_warnings SELECT ?, ?, lineno, "
            f"CASE json_type(CAST(line AS JSON)) WHEN 'ARRAY' THEN 'a JSON array' WHEN 'VARCHAR' THEN 'a JSON string' "
            f"WHEN 'BOOLEAN' THEN 'a JSON boolean' WHEN 'NULL' THEN 'JSON null' ELSE 'a JSON number' END "
            f"|| ', not an object; line skipped' "
            f"FROM {table} WHERE coalesce(json_valid(line), false) AND json_type(CAST(line AS JSON)) <> 'OBJECT' "
            f"ORDER BY lineno LIMIT 50", [bundle_id, rel])


def _fast_or_careful(con: duckdb.DuckDBPyConnection, fast: str,
                     fast_params: Sequence[Any] | dict[str, Any], careful: Callable[[], None], *,
                     ordered: bool = False) -> None:
    """Run the one-pass read; when the file has a damaged line, fall back to the line-by-line read.

    ``fast`` reads with ``maximum_object_size={max_object}``: DuckDB's default first (parallel, small
    buffers), then 1 GiB when a line (or the one document of a trace.json) is longer than that.
    """
    params = fast_params if isinstance(fast_params, dict) else list(fast_params)
    for size in (_sql.OBJECT_SIZE, _sql.LARGE_OBJECT_SIZE):
        try:
            with nullcontext() if ordered else _unordered(con):
                con.execute(fast.replace(_sql.MAX_OBJECT, str(size)), params)
            return
        except (duckdb.InvalidInputException, duckdb.ConversionException) as e:
            if "maximum_object_size" not in str(e) or size == _sql.LARGE_OBJECT_SIZE:
                break
    careful()


@contextmanager
def _unordered(con: duckdb.DuckDBPyConnection) -> Generator[None]:
    """Let a bulk insert write its rows in whatever order its threads finish (measured at 1M spans:
    15-20% faster, less memory). Only for statements that number nothing by position: ``row_number()
    OVER ()`` line numbers (the careful paths, checkpoints) need the file order and run outside this."""
    con.execute("SET preserve_insertion_order = false")
    try:
        yield
    finally:
        con.execute("RESET preserve_insertion_order")


_EVENT_SELECT = """
    SELECT ?, coalesce(run_id, ?), seq, CAST(TRY_CAST(ts AS TIMESTAMPTZ) AS TIMESTAMP), type, actor,
           lower(trace_id), lower(span_id), data, payload_ref, redaction, lineno,
           -- data is parsed only when its text names a worker (one memmem instead of 2M JSON parses)
           coalesce(worker_id, CASE WHEN contains(data, '"worker_id"') THEN data->>'worker_id' END)
"""


def _load_events(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle, ev: Path) -> None:
    def careful() -> None:
        _lines(con, ev, "_ev_lines")
        _warn_bad_lines(con, bid, "_ev_lines", ev.name, objects=True)
        con.execute(f"""
            INSERT INTO events {_EVENT_SELECT}
            FROM (SELECT lineno, j->>'run_id' AS run_id, TRY_CAST(j->>'seq' AS BIGINT) AS seq,
                         j->>'ts' AS ts, j->>'type' AS type, j->>'actor' AS actor,
                         j->>'trace_id' AS trace_id, j->>'span_id' AS span_id, j->'data' AS data,
                         j->>'payload_ref' AS payload_ref, j->>'redaction' AS redaction,
                         j->>'worker_id' AS worker_id
                  FROM (SELECT lineno, CAST(line AS JSON) AS j FROM _ev_lines
                        WHERE coalesce(json_valid(line), false) AND trim(line) <> '')
                  WHERE json_type(j) = 'OBJECT')
        """, [bid, b.run_id])
        con.execute("DROP TABLE _ev_lines")
        _nothing_readable(con, bid, ev, "events", "one JSON event object a line (seq, ts, run_id, type)")

    _fast_or_careful(con, f"""
        INSERT INTO events {_EVENT_SELECT}
        FROM (SELECT *, NULL::BIGINT AS lineno
              FROM read_json(?, columns={_sql.EVENT_COLUMNS}, format='newline_delimited',
                             maximum_object_size={_sql.MAX_OBJECT}))
    """, [bid, b.run_id, str(ev)], careful)
    incomplete = "bundle_id = ? AND (seq IS NULL OR ts IS NULL OR type IS NULL)"
    row = con.execute(f"SELECT count(*) FROM events WHERE {incomplete} AND lineno IS NULL", [bid]).fetchone()
    if row and row[0]:
        # rare: re-read line by line so the warnings below can name each line
        con.execute("DELETE FROM events WHERE bundle_id = ?", [bid])
        careful()
    con.execute("""
        INSERT INTO load_warnings
        SELECT ?, ?, lineno, 'event lacks ' || CASE WHEN seq IS NULL THEN 'an integer seq'
               WHEN ts IS NULL THEN 'an RFC 3339 ts' ELSE 'a type' END || '; kept'
        FROM events WHERE bundle_id = ? AND (seq IS NULL OR ts IS NULL OR type IS NULL)
        ORDER BY lineno LIMIT 50""", [bid, ev.name, bid])


def _nothing_readable(con: duckdb.DuckDBPyConnection, bid: int, path: Path, table: str, expected: str) -> None:
    """A file none of whose lines could be read is a schema error (exit 2), not partial data."""
    row = con.execute(f"SELECT count(*) FROM {table} WHERE bundle_id = ?", [bid]).fetchone()
    if row and row[0]:
        return
    first = con.execute("SELECT min(line) FROM load_warnings WHERE bundle_id = ? AND file = ?",
                        [bid, path.name]).fetchone()
    if first and first[0] is not None:
        from ..errors import BundleFormatError

        raise BundleFormatError(f"{path}:{first[0]}: no line of {path.name} could be read as {expected}",
                                "check the file is what its name says; `agenttrail bundle verify` lists "
                                "every problem")


def _load_spans(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle, tf: Path) -> None:
    fmt = "newline_delimited" if tf.name == model.TRACE_JSONL else "auto"

    def careful() -> None:
        if tf.name == model.TRACE_JSON:
            # one document, possibly pretty-printed over many lines: read it whole
            con.execute("CREATE OR REPLACE TEMP TABLE _tr_lines AS "
                        "SELECT 1 AS lineno, content AS line FROM read_text(?)", [str(tf)])
        else:
            _lines(con, tf, "_tr_lines")
        _warn_bad_lines(con, bid, "_tr_lines", tf.name)
        con.execute(f"INSERT INTO load_warnings SELECT ?, ?, lineno, message FROM ({_sql.TRACE_SHAPE_WARNINGS}) "
                    "WHERE message IS NOT NULL ORDER BY lineno LIMIT 50", [bid, tf.name])
        con.execute(f"INSERT INTO span_rows BY NAME {_sql.typed_spans(_sql.RAW_SPANS_LINES)}",
                    {"bundle_id": bid, "run_id": b.run_id})
        con.execute("DROP TABLE _tr_lines")
        _nothing_readable(con, bid, tf, "spans", "OTLP/JSON traces (resourceSpans → scopeSpans → spans)")

    with open(tf, encoding="utf-8", errors="replace") as fh:
        head = fh.read(1 << 16)
    fast = _sql.typed_spans(_sql.raw_spans_fast(fmt, head))
    _fast_or_careful(con, f"INSERT INTO span_rows BY NAME {fast}",
                     {"file": str(tf), "bundle_id": bid, "run_id": b.run_id}, careful)


def _load_checkpoints(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle, path: Path) -> None:
    select = """
        SELECT ?, ?, checkpoint_id, parent_checkpoint_id, CAST(TRY_CAST(ts AS TIMESTAMPTZ) AS TIMESTAMP),
               thread_id, TRY_CAST(step AS BIGINT), coalesce("values", channel_values), metadata,
               pending_writes, lineno"""

    def careful() -> None:
        _lines(con, path, "_ck_lines")
        _warn_bad_lines(con, bid, "_ck_lines", path.name, objects=True)
        con.execute(f"""
            INSERT INTO checkpoints {select}
            FROM (SELECT lineno, j->>'checkpoint_id' AS checkpoint_id,
                         j->>'parent_checkpoint_id' AS parent_checkpoint_id, j->>'ts' AS ts,
                         j->>'thread_id' AS thread_id, j->>'step' AS step, j->'values' AS "values",
                         j->'channel_values' AS channel_values, j->'metadata' AS metadata,
                         j->'pending_writes' AS pending_writes
                  FROM (SELECT lineno, CAST(line AS JSON) AS j FROM _ck_lines
                        WHERE coalesce(json_valid(line), false) AND trim(line) <> '')
                  WHERE json_type(j) = 'OBJECT')""", [bid, b.run_id])
        con.execute("DROP TABLE _ck_lines")

    _fast_or_careful(con, f"""
        INSERT INTO checkpoints {select}
        FROM (SELECT *, row_number() OVER () AS lineno
              FROM read_json(?, columns={_sql.CHECKPOINT_COLUMNS}, format='newline_delimited',
                             maximum_object_size={_sql.MAX_OBJECT}))""", [bid, b.run_id, str(path)], careful,
                     ordered=True)  # lineno is the row's position in the file


def _load_tool_calls_csv(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle, csv_path: Path) -> None:
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE _csv AS SELECT * FROM "
                    "read_csv(?, header=true, all_varchar=true, auto_detect=true)", [str(csv_path)])
        cols = {r[0] for r in con.execute("DESCRIBE _csv").fetchall()}
        missing = [c for c in model.TOOL_CALLS_HEADER if c not in cols]
        if missing:
            raise duckdb.InvalidInputException(f"header lacks {', '.join(missing)}")

        def col(c: str) -> str:
            return f'nullif("{c}", \'\')' if c in cols else "NULL"

        con.execute(f"""
            INSERT INTO tool_calls_csv
            SELECT ?, ?, CAST(TRY_CAST(ts AS TIMESTAMPTZ) AS TIMESTAMP), tool, input_hash,
                   TRY_CAST(latency_ms AS DOUBLE), status, nullif(error, ''), {col('call_id')},
                   {col('span_id')}, {col('operation_id')}, {col('idempotency_key')},
                   TRY_CAST({col('side_effect')} AS BOOLEAN), TRY_CAST({col('exit_code')} AS INTEGER),
                   {col('error_type')}
            FROM _csv""", [bid, b.run_id])
        con.execute("DROP TABLE _csv")
    except duckdb.Error as e:
        con.execute("INSERT INTO load_warnings VALUES (?, ?, NULL, ?)",
                    [bid, model.TOOL_CALLS, f"could not read: {str(e).splitlines()[0]}"])


def _load_bundle(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle, progress: Progress | None,
                 step0: int, steps: int, timings: dict[str, float]) -> None:
    m = b.manifest
    for w in b.warnings.items:
        con.execute("INSERT INTO load_warnings VALUES (?, ?, ?, ?)", [bid, w.file, w.line, w.message])
    label = f"bundle {bid}/{steps // 4}"

    ev = b.events_file
    if ev is not None:
        _step(progress, f"{label}: events from {ev.name} ({_mb(ev)})", step0 + 1, steps)
        t = time.perf_counter()
        _load_events(con, bid, b, ev)
        timings["events"] = timings.get("events", 0.0) + time.perf_counter() - t
    for tf in b.trace_files:
        _step(progress, f"{label}: spans from {tf.name} ({_mb(tf)})", step0 + 2, steps)
        t = time.perf_counter()
        _load_spans(con, bid, b, tf)
        timings["spans"] = timings.get("spans", 0.0) + time.perf_counter() - t
    _step(progress, f"{label}: checkpoints, tool_calls.csv, files", step0 + 3, steps)
    t_other = time.perf_counter()
    ck = b.file(model.CHECKPOINTS)
    if ck is not None:
        _load_checkpoints(con, bid, b, ck)
    csv_path = b.file(model.TOOL_CALLS)
    if csv_path is not None:
        _load_tool_calls_csv(con, bid, b, csv_path)

    _load_progress(con, bid, b)

    listed = m.get("files") or {}
    file_rows = []
    for path in sorted(b.path.rglob("*")):
        if path.is_file():
            rel = path.relative_to(b.path).as_posix()
            info = listed.get(rel) or {}
            file_rows.append((bid, rel, path.stat().st_size, info.get("sha256")))
    if file_rows:
        con.executemany("INSERT INTO files VALUES (?, ?, ?, ?)", file_rows)

    failure = m.get("failure") or {}
    con.execute("""
        INSERT INTO runs VALUES (?, ?, ?, ?, ?, CAST(TRY_CAST(? AS TIMESTAMPTZ) AS TIMESTAMP),
                                 CAST(TRY_CAST(? AS TIMESTAMPTZ) AS TIMESTAMP), ?, ?, ?, ?, ?)""",
                [bid, b.run_id, m.get("status"), m.get("agent_name"), m.get("workflow_name"),
                 m.get("started_at"), m.get("ended_at"), failure.get("type"), failure.get("message"),
                 json.dumps(m.get("budget") or {}), str(b.source), json.dumps(m, default=str)])
    if not m.get("run_id"):
        _identity_from_telemetry(con, bid, b.run_id)
    timings["other_files"] = timings.get("other_files", 0.0) + time.perf_counter() - t_other


FEATURE_FILES = ("progress/feature-list.json", "progress/feature_list.json")


def _load_progress(con: duckdb.DuckDBPyConnection, bid: int, b: Bundle) -> None:
    """progress/feature-list.json items and the files workspace.diff changed."""
    for rel in FEATURE_FILES:
        path = b.file(rel)
        if path is None:
            continue
        try:
            con.execute("""
                INSERT INTO features
                WITH doc AS (SELECT CAST(content AS JSON) AS j FROM read_text(?)),
                items AS (SELECT unnest(from_json(CASE WHEN json_type(j) = 'ARRAY' THEN j
                                                       ELSE coalesce(j->'features', j->'items') END,
                                                  '["JSON"]')) AS item FROM doc)
                SELECT ?, ?, row_number() OVER (), coalesce(item->>'name', item->>'description',
                       item->>'id', item->>'title'),
                       coalesce(TRY_CAST(item->>'passes' AS BOOLEAN), TRY_CAST(item->>'passing' AS BOOLEAN),
                                lower(item->>'status') IN ('pass', 'passing', 'passed', 'done')),
                       item, ?
                FROM items""", [str(path), bid, b.run_id, rel])
        except duckdb.Error as e:
            con.execute("INSERT INTO load_warnings VALUES (?, ?, NULL, ?)",
                        [bid, rel, f"could not read the feature list: {str(e).splitlines()[0]}"])
        break
    diff = b.file(model.WORKSPACE_DIFF)
    if diff is not None:
        con.execute(f"""
            INSERT INTO workspace_changes
            SELECT ?, ?, path, any_value(change) FROM (
                SELECT regexp_extract(line, '^diff --git a/(.*) b/(.*)$', 2) AS path,
                       'modified' AS change
                FROM ({_sql.LINES}) WHERE line LIKE 'diff --git %')
            WHERE path <> '' GROUP BY path ORDER BY path""", [bid, b.run_id, str(diff)])


def _identity_from_telemetry(con: duckdb.DuckDBPyConnection, bid: int, fallback: str) -> None:
    """A bundle without a manifest run id: take it from its events, else the spans' session ids."""
    row = con.execute(f"""
        SELECT coalesce(
            (SELECT mode(run_id) FROM events WHERE bundle_id = $1 AND run_id <> $2),
            (SELECT mode({_sql.SESSION_ID}) FROM spans WHERE bundle_id = $1))""", [bid, fallback]).fetchone()
    run_id = row[0] if row else None
    if run_id:
        con.execute("UPDATE runs SET run_id = ? WHERE bundle_id = ?", [run_id, bid])
        con.execute("UPDATE span_rows SET run_id = ? WHERE bundle_id = ? AND run_id = ?", [run_id, bid, fallback])
        con.execute("UPDATE events SET run_id = ? WHERE bundle_id = ? AND run_id = ?", [run_id, bid, fallback])
        con.execute("UPDATE checkpoints SET run_id = ? WHERE bundle_id = ?", [run_id, bid])
        for table in ("tool_calls_csv", "features", "workspace_changes"):
            con.execute(f"UPDATE {table} SET run_id = ? WHERE bundle_id = ?", [run_id, bid])


_empty_trace: list[Path] = []


def _empty_trace_file() -> str:
    """A trace file with no spans, to give the ``spans`` table its columns when no bundle has one."""
    if not _empty_trace or not _empty_trace[0].exists():
        import tempfile

        fd, name = tempfile.mkstemp(prefix="agenttrail-empty-", suffix=".json")
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write('{"resourceSpans": []}')
        _empty_trace[:] = [Path(name)]
    return str(_empty_trace[0])


def _mb(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.1f} MB"


def _derive(con: duckdb.DuckDBPyConnection) -> None:
    """Tables reconciled from spans, events and tool_calls.csv, for every bundle at once."""
    # LLM calls: spans, plus model.call events whose span is not in the trace. A span whose tokens
    # were reported by an official instrumentation's child span (delegated_to) is not counted twice.
    con.execute(f"""
        CREATE OR REPLACE TABLE llm_calls AS
        WITH calls AS (
            SELECT bundle_id, run_id, span_id, trace_id, start_ts AS ts, duration_ms, provider,
                   coalesce(response_model, request_model) AS model, request_model,
                   coalesce(input_tokens, 0) AS input_tokens, coalesce(output_tokens, 0) AS output_tokens,
                   coalesce(cache_read_tokens, 0) AS cache_read_tokens,
                   coalesce(cache_write_tokens, 0) AS cache_write_tokens,
                   error_type, status_message AS error, 'span' AS source, start_ns, end_ns,
                   NULL::BIGINT AS seq
            FROM spans WHERE kind = 'llm' AND delegated_to IS NULL
            UNION ALL
            SELECT e.bundle_id, e.run_id, e.span_id, e.trace_id, e.ts,
                   TRY_CAST(e.data->>'duration_ms' AS DOUBLE), e.data->>'provider', e.data->>'model',
                   e.data->>'model',
                   coalesce(TRY_CAST(e.data->>'input_tokens' AS BIGINT), 0),
                   coalesce(TRY_CAST(e.data->>'output_tokens' AS BIGINT), 0),
                   coalesce(TRY_CAST(e.data->>'cache_read_tokens' AS BIGINT), 0),
                   coalesce(TRY_CAST(e.data->>'cache_write_tokens' AS BIGINT), 0),
                   e.data->>'error_type', e.data->>'error', 'event',
                   epoch_us(e.ts) * 1000
                       - CAST(coalesce(TRY_CAST(e.data->>'duration_ms' AS DOUBLE), 0) * 1e6 AS BIGINT),
                   epoch_us(e.ts) * 1000, e.seq
            FROM events e
            -- an inference whose span never reached the trace (the worker was killed before the
            -- spool thread wrote it, or the trace is missing) still counts, from its event
            ANTI JOIN spans sp ON sp.bundle_id = e.bundle_id AND sp.span_id = e.span_id
            WHERE e.type = 'model.call' AND e.data->>'delegated_to' IS NULL)
        SELECT c.*, {pricing.COST_SQL} AS cost_usd, p.prefix AS price_model
        FROM calls c LEFT JOIN (
            SELECT c2.model AS m, arg_max(p.prefix, length(p.prefix)) AS prefix
            FROM (SELECT DISTINCT model FROM calls) c2
            JOIN prices p ON starts_with(lower(c2.model), lower(p.prefix))
            GROUP BY c2.model) best ON best.m = c.model
        LEFT JOIN prices p ON p.prefix = best.prefix
    """)
    # Tool calls: one row per call, from spans, plus events whose span is missing, else tool_calls.csv.
    # Each event's data is parsed once, for all its keys (a path list), not once per key.
    con.execute("""
        CREATE OR REPLACE TABLE tool_calls AS
        WITH fin AS (
            SELECT bundle_id, run_id, v[1] AS call_id, span_id, ts, seq, v[2] AS status, v[3] AS error,
                   TRY_CAST(v[4] AS INTEGER) AS exit_code, TRY_CAST(v[5] AS DOUBLE) AS latency_ms,
                   v[6] AS error_type, v[7] AS operation_id
            FROM (SELECT *, json_extract_string(data, ['call_id', 'status', 'error', 'exit_code', 'latency_ms',
                                                       'error_type', 'operation_id']) AS v
                  FROM events WHERE type = 'tool.finished')),
        st AS (
            SELECT bundle_id, run_id, v[1] AS call_id, span_id, ts, seq, v[2] AS tool, v[3] AS input_hash,
                   v[4] AS arguments, TRY_CAST(v[5] AS BOOLEAN) AS side_effect, v[6] AS idempotency_key,
                   v[7] AS operation_id, v[8] AS worker_id
            FROM (SELECT *, json_extract_string(data, ['call_id', 'tool', 'input_hash', 'arguments', 'side_effect',
                                                       'idempotency_key', 'operation_id', 'worker_id']) AS v
                  FROM events WHERE type = 'tool.started')),
        span_bundles AS (SELECT DISTINCT bundle_id FROM spans WHERE kind = 'tool'),
        event_bundles AS (SELECT DISTINCT bundle_id FROM st),
        from_spans AS (
            SELECT s.bundle_id, s.run_id, coalesce(s.tool_call_id, st.call_id, s.span_id) AS call_id,
                   s.span_id, s.tool_name AS tool, coalesce(s.input_hash, st.input_hash) AS input_hash,
                   s.tool_arguments AS arguments, s.start_ts AS ts, s.duration_ms AS latency_ms,
                   CASE WHEN s.status_code = 2 THEN 'error' ELSE coalesce(f.status, 'ok') END AS status,
                   coalesce(f.error, CASE WHEN s.status_code = 2 THEN s.status_message END) AS error,
                   coalesce(s.error_type, f.error_type) AS error_type, f.exit_code,
                   coalesce(s.side_effect, st.side_effect, false) AS side_effect,
                   coalesce(s.idempotency_key, st.idempotency_key) AS idempotency_key,
                   coalesce(f.operation_id, st.operation_id) AS operation_id,
                   coalesce(s.worker_id, st.worker_id) AS worker_id,
                   st.seq AS seq_start, f.seq AS seq_end, s.start_ns, s.end_ns, 'span' AS source
            FROM spans s
            LEFT JOIN fin f ON f.bundle_id = s.bundle_id AND f.span_id = s.span_id
            LEFT JOIN st ON st.bundle_id = s.bundle_id AND st.span_id = s.span_id
            WHERE s.kind = 'tool'),
        from_events AS (
            SELECT st.bundle_id, st.run_id, st.call_id, st.span_id, st.tool, st.input_hash, st.arguments,
                   st.ts, coalesce(f.latency_ms, epoch_us(f.ts) / 1000.0 - epoch_us(st.ts) / 1000.0),
                   coalesce(f.status, 'unfinished') AS status, f.error, f.error_type, f.exit_code,
                   coalesce(st.side_effect, false), st.idempotency_key,
                   coalesce(f.operation_id, st.operation_id), st.worker_id, st.seq, f.seq,
                   epoch_us(st.ts) * 1000, epoch_us(coalesce(f.ts, st.ts)) * 1000, 'event'
            FROM st LEFT JOIN fin f USING (bundle_id, call_id)
            -- calls recorded by events whose span is not in the trace: a killed worker's last spans,
            -- or a bundle without a trace (the event log is written synchronously; spans are not)
            ANTI JOIN (SELECT bundle_id, span_id FROM spans WHERE kind = 'tool') sp
                ON sp.bundle_id = st.bundle_id AND sp.span_id = st.span_id),
        from_csv AS (
            SELECT c.bundle_id, c.run_id, c.call_id, c.span_id, c.tool, c.input_hash, NULL, c.ts,
                   c.latency_ms, c.status, c.error, c.error_type, c.exit_code,
                   coalesce(c.side_effect, false), c.idempotency_key, c.operation_id, NULL, NULL, NULL,
                   epoch_us(c.ts) * 1000,
                   epoch_us(c.ts) * 1000 + CAST(coalesce(c.latency_ms, 0) * 1e6 AS BIGINT), 'csv'
            FROM tool_calls_csv c
            WHERE c.bundle_id NOT IN (SELECT bundle_id FROM span_bundles)
              AND c.bundle_id NOT IN (SELECT bundle_id FROM event_bundles))
        SELECT * FROM from_spans UNION ALL SELECT * FROM from_events UNION ALL SELECT * FROM from_csv
    """)
    con.execute("""
        CREATE OR REPLACE TABLE operations AS
        WITH i AS (SELECT bundle_id, run_id, data->>'operation_id' AS operation_id, data->>'kind' AS kind,
                          data->>'target' AS target, data->>'args_hash' AS args_hash, seq, ts
                   FROM events WHERE type = 'operation.intent'),
             o AS (SELECT bundle_id, data->>'operation_id' AS operation_id,
                          last(data->>'status' ORDER BY seq) AS status,
                          last(data->>'external_id' ORDER BY seq) AS external_id,
                          max(seq) AS seq, max(ts) AS ts, count(*) AS outcomes
                   FROM events WHERE type = 'operation.outcome' GROUP BY ALL)
        SELECT i.bundle_id, i.run_id, i.operation_id, i.kind, i.target, i.args_hash,
               i.seq AS intent_seq, i.ts AS intent_ts, o.seq AS outcome_seq, o.ts AS outcome_ts,
               coalesce(o.status, 'pending') AS status, o.external_id, coalesce(o.outcomes, 0) AS outcomes
        FROM i LEFT JOIN o USING (bundle_id, operation_id)
    """)
    # Runs without a manifest identity take it from their events / spans.
    con.execute("""
        UPDATE runs SET
          started_at = coalesce(runs.started_at, x.first_ts), ended_at = coalesce(runs.ended_at, x.last_ts)
        FROM (SELECT bundle_id, min(ts) AS first_ts, max(ts) AS last_ts FROM events GROUP BY ALL) x
        WHERE x.bundle_id = runs.bundle_id AND (runs.started_at IS NULL OR runs.ended_at IS NULL)
    """)
    con.execute("""
        UPDATE runs SET
          started_at = coalesce(runs.started_at, x.first_ts), ended_at = coalesce(runs.ended_at, x.last_ts)
        FROM (SELECT bundle_id, min(start_ts) AS first_ts, max(end_ts) AS last_ts FROM spans GROUP BY ALL) x
        WHERE x.bundle_id = runs.bundle_id AND (runs.started_at IS NULL OR runs.ended_at IS NULL)
    """)
    # Runs whose manifest has no status or budget: from run.finished / run.started events.
    con.execute("""
        UPDATE runs SET status = coalesce(runs.status, x.status),
                        budget = CASE WHEN CAST(runs.budget AS VARCHAR) IN ('{}', 'null') OR runs.budget IS NULL
                                      THEN coalesce(x.budget, runs.budget) ELSE runs.budget END,
                        agent_name = coalesce(runs.agent_name, x.agent_name)
        FROM (SELECT bundle_id,
                     last(data->>'status' ORDER BY seq) FILTER (WHERE type = 'run.finished') AS status,
                     first(data->'budget' ORDER BY seq) FILTER (WHERE type = 'run.started') AS budget,
                     first(data->>'agent_name' ORDER BY seq) FILTER (WHERE type = 'run.started') AS agent_name
              FROM events WHERE type IN ('run.started', 'run.finished') GROUP BY ALL) x
        WHERE x.bundle_id = runs.bundle_id
    """)
