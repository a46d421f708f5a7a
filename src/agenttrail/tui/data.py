"""What the TUI reads from the store: plain functions over one DuckDB cursor, no Textual.

DuckDB connections are not safe for concurrent use across threads, so every function takes the cursor
of the thread calling it (the UI thread's own, or a worker's ``store.con.cursor()``). Big lists (events,
tool calls) are *materialized* once per filter/sort into a table of the in-memory ``tui`` database
(attached to the store, so every cursor sees it) in display order; a window of rows is then fetched by
``rowid`` in about a millisecond at any position, where ``LIMIT/OFFSET`` needs a sort per page.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import duckdb

from ..store import Store
from ..store import queries as named_queries

Cursor = duckdb.DuckDBPyConnection

TUI_DB = "tui"
FETCH_CHUNK = 5_000  # rows per fetch when a worker reads a big result into Python


def attach_views_db(con: Cursor) -> None:
    """The scratch database for materialized views; separate so a read-only store stays untouched."""
    attached = {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
    if TUI_DB not in attached:
        con.execute(f"ATTACH ':memory:' AS {TUI_DB}")


def table_columns(con: Cursor, table: str) -> set[str]:
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND table_catalog = current_database() AND table_schema = 'main'", [table]).fetchall()
    return {r[0] for r in rows}


# ---------------------------------------------------------------------------------------------------
# runs and findings


@dataclass(frozen=True)
class RunInfo:
    bundle_id: int
    run_id: str
    status: str | None
    agent_name: str | None
    workflow_name: str | None
    started_at: Any
    duration_s: float | None
    failure_type: str | None
    failure_message: str | None
    llm_calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    tool_calls: int
    tool_errors: int
    spans: int
    events: int
    warnings: int
    cost_usd: float | None
    bundle_path: str


def runs(con: Cursor) -> list[RunInfo]:
    """One ``RunInfo`` per loaded run (the ``run_summary`` named query plus cost when the store has it)."""
    cur = con.execute(named_queries.text("run_summary"))
    cols = [d[0] for d in cur.description or []]
    rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    cost = _cost_by_bundle(con)
    out: list[RunInfo] = []
    for r in rows:
        out.append(RunInfo(
            bundle_id=int(r["bundle_id"]), run_id=str(r["run_id"]), status=r.get("status"),
            agent_name=r.get("agent_name"), workflow_name=r.get("workflow_name"),
            started_at=r.get("started_at"),
            duration_s=float(r["duration_s"]) if r.get("duration_s") is not None else None,
            failure_type=r.get("failure_type"), failure_message=r.get("failure_message"),
            llm_calls=int(r.get("llm_calls") or 0), input_tokens=int(r.get("input_tokens") or 0),
            output_tokens=int(r.get("output_tokens") or 0),
            cache_read_tokens=int(r.get("cache_read_tokens") or 0),
            tool_calls=int(r.get("tool_calls") or 0), tool_errors=int(r.get("tool_errors") or 0),
            spans=int(r.get("spans") or 0), events=int(r.get("events") or 0),
            warnings=int(r.get("warnings") or 0), cost_usd=cost.get(int(r["bundle_id"])),
            bundle_path=str(r.get("bundle_path") or "")))
    return out


def _cost_by_bundle(con: Cursor) -> dict[int, float]:
    """Cost per run when the store prices LLM calls (a ``cost_usd`` column); empty when it does not."""
    if "cost_usd" not in table_columns(con, "llm_calls"):
        return {}
    rows = con.execute("SELECT bundle_id, sum(cost_usd) FROM llm_calls GROUP BY 1 "
                       "HAVING count(cost_usd) > 0").fetchall()
    return {int(b): float(c) for b, c in rows}


# ---------------------------------------------------------------------------------------------------
# spans: the timeline


@dataclass
class SpanNode:
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    status_code: int
    error: str | None
    tool: str | None
    input_hash: str | None
    depth: int = 0
    children: list[SpanNode] = field(default_factory=list["SpanNode"])
    flagged: bool = False  # named in a finding's evidence
    repeated: bool = False  # a tool call whose identity (tool + argument hash) repeats in the run

    @property
    def failed(self) -> bool:
        return self.status_code == 2

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6


@dataclass
class SpanTree:
    roots: list[SpanNode]
    by_id: dict[str, SpanNode]
    start_ns: int
    end_ns: int
    order: list[SpanNode] = field(default_factory=list[SpanNode])  # depth-first, every span expanded


def span_tree(con: Cursor, bundle_id: int, flagged: set[str] | None = None,
              repeat_threshold: int = 3, should_stop: Callable[[], bool] = lambda: False) -> SpanTree:
    """The run's spans as a tree ordered by start time, marked with errors, evidence and repeats.

    ``should_stop`` is asked between chunks of rows: when it says so the tree is left empty.
    """
    cur = con.execute("""
        SELECT span_id, parent_span_id, name, kind, CAST(start_ns AS BIGINT), CAST(end_ns AS BIGINT),
               status_code, coalesce(status_message, error_type), tool_name, input_hash
        FROM spans WHERE bundle_id = ? ORDER BY start_ns, span_id""", [bundle_id])
    by_id: dict[str, SpanNode] = {}
    # in chunks: fetching holds the GIL, and the UI thread must get it back every few milliseconds
    while rows := cur.fetchmany(FETCH_CHUNK):
        if should_stop():
            return SpanTree(roots=[], by_id={}, start_ns=0, end_ns=0)
        for r in rows:
            node = SpanNode(span_id=r[0], parent_id=r[1], name=r[2] or "", kind=r[3] or "other",
                            start_ns=int(r[4] or 0), end_ns=int(r[5] or r[4] or 0),
                            status_code=int(r[6] or 0), error=r[7], tool=r[8], input_hash=r[9])
            by_id.setdefault(node.span_id, node)
    identities: dict[tuple[str, str], int] = {}
    for node in by_id.values():
        if node.kind == "tool" and node.tool:
            key = (node.tool, node.input_hash or "")
            identities[key] = identities.get(key, 0) + 1
    roots: list[SpanNode] = []
    for node in by_id.values():
        parent = by_id.get(node.parent_id) if node.parent_id else None
        (parent.children if parent is not None and parent is not node else roots).append(node)
        node.flagged = node.span_id in (flagged or set())
        if node.kind == "tool" and node.tool:
            node.repeated = identities[(node.tool, node.input_hash or "")] >= repeat_threshold
    order: list[SpanNode] = []
    stack = [(r, 0) for r in reversed(roots)]
    while stack:  # depth without recursion: traces can be deep
        node, depth = stack.pop()
        node.depth = depth
        order.append(node)
        stack.extend((c, depth + 1) for c in reversed(node.children))
    lo = min((n.start_ns for n in by_id.values()), default=0)
    hi = max((n.end_ns for n in by_id.values()), default=0)
    return SpanTree(roots=roots, by_id=by_id, start_ns=lo, end_ns=hi, order=order)


@contextmanager
def gc_deferred(freeze: Callable[[], bool] = lambda: True) -> Generator[None]:
    """Build a big, long-lived object graph (a 500k-span tree) without Python's cyclic GC.

    Each full collection while the nodes pile up scans all of them with the GIL held: the UI thread
    stalled up to 150 ms at a time, and the build took 3.0 s instead of 1.8 s at 500k spans. After the
    build the objects are frozen (``gc.freeze``) so later collections skip them too; they are still
    freed by reference counting when the tree is dropped (it has no cycles). ``gc.unfreeze()`` when the
    app closes hands everything back to the collector; ``freeze`` says no when the result is dropped.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze():
            gc.freeze()
        if was_enabled:
            gc.enable()


def span_detail(con: Cursor, bundle_id: int, span_id: str) -> dict[str, Any] | None:
    cur = con.execute("""
        SELECT span_id, parent_span_id, trace_id, name, kind, operation, status_code, status_message,
               error_type, start_ts, end_ts, duration_ms, provider, request_model, tool_name, input_hash,
               input_tokens, output_tokens, attributes, span_events
        FROM spans WHERE bundle_id = ? AND span_id = ? LIMIT 1""", [bundle_id, span_id])
    cols = [d[0] for d in cur.description or []]
    row = cur.fetchone()
    if row is None:
        return None
    out = dict(zip(cols, row, strict=True))
    out["attributes"] = dict(sorted((out.get("attributes") or {}).items()))
    events = out.get("span_events")
    out["span_events"] = json.loads(events) if isinstance(events, str) else events
    out["linked_events"] = [
        {"seq": s, "type": t, "actor": a} for s, t, a in con.execute(
            "SELECT seq, type, actor FROM events WHERE bundle_id = ? AND span_id = ? ORDER BY seq LIMIT 50",
            [bundle_id, span_id]).fetchall()]
    out["children"] = [
        {"span_id": s, "name": n} for s, n in con.execute(
            "SELECT span_id, name FROM spans WHERE bundle_id = ? AND parent_span_id = ? "
            "ORDER BY start_ns LIMIT 50", [bundle_id, span_id]).fetchall()]
    return out


# ---------------------------------------------------------------------------------------------------
# materialized lists


@dataclass(frozen=True)
class View:
    """A materialized list: ``table`` in display order, ``count`` rows, read by ``rowid``."""

    table: str
    count: int
    columns: tuple[str, ...]


def materialize(con: Cursor, kind: str, select_sql: str, params: Sequence[Any]) -> View:
    """Create (once) the table holding ``select_sql``'s rows in order; the same query reuses it."""
    digest = hashlib.sha256((select_sql + json.dumps(list(params), default=str)).encode()).hexdigest()[:16]
    table = f"{TUI_DB}.{kind}_{digest}"
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = ?",
                         [TUI_DB, f"{kind}_{digest}"]).fetchone()
    if not (exists and exists[0]):
        con.execute(f"CREATE OR REPLACE TABLE {table} AS {select_sql}", list(params))
    cur = con.execute(f"SELECT * FROM {table} LIMIT 0")
    columns = tuple(d[0] for d in cur.description or [])
    count = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    return View(table=table, count=int(count[0]) if count else 0, columns=columns)


def fetch_window(con: Cursor, view: View, offset: int, limit: int) -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT * FROM {view.table} WHERE rowid >= ? AND rowid < ? ORDER BY rowid",
                       [offset, offset + limit]).fetchall()


EVENT_COLUMNS = ("seq", "ts", "type", "actor", "span_id", "data")


def events_view(con: Cursor, bundle_id: int, type_: str | None = None, actor: str | None = None) -> View:
    where: list[str] = ["bundle_id = ?"]
    params: list[Any] = [bundle_id]
    if type_:
        where.append("type = ?")
        params.append(type_)
    if actor:
        where.append("actor = ?")
        params.append(actor)
    return materialize(con, "events", f"""
        SELECT seq, ts, type, actor, span_id, left(CAST(data AS VARCHAR), 400) AS data
        FROM events WHERE {' AND '.join(where)} ORDER BY seq, lineno""", params)


def event_facets(con: Cursor, bundle_id: int) -> tuple[list[str], list[str]]:
    """The event types and actors of a run, for the filters."""
    types = [r[0] for r in con.execute(
        "SELECT DISTINCT type FROM events WHERE bundle_id = ? AND type IS NOT NULL ORDER BY 1",
        [bundle_id]).fetchall()]
    actors = [r[0] for r in con.execute(
        "SELECT DISTINCT actor FROM events WHERE bundle_id = ? AND actor IS NOT NULL ORDER BY 1",
        [bundle_id]).fetchall()]
    return types, actors


def row_of_seq(con: Cursor, view: View, seq: int) -> int | None:
    """The row showing ``seq``, or the first one after it; None when there is none."""
    row = con.execute(f"SELECT rowid FROM {view.table} WHERE seq >= ? ORDER BY rowid LIMIT 1",
                      [seq]).fetchone()
    return int(row[0]) if row else None


def search(con: Cursor, view: View, text: str, start: int, backwards: bool = False) -> int | None:
    """The next row (wrapping around) from ``start`` whose text columns contain ``text``, any case."""
    searchable = [c for c in view.columns if c not in ("ts",)]
    match = " OR ".join(f"contains(lower(CAST({c} AS VARCHAR)), ?)" for c in searchable)
    params = [text.lower()] * len(searchable)
    if backwards:
        row = con.execute(f"SELECT coalesce(max(rowid) FILTER (WHERE rowid < ?), max(rowid)) "
                          f"FROM {view.table} WHERE {match}", [start, *params]).fetchone()
    else:
        row = con.execute(f"SELECT coalesce(min(rowid) FILTER (WHERE rowid > ?), min(rowid)) "
                          f"FROM {view.table} WHERE {match}", [start, *params]).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def event_detail(con: Cursor, bundle_id: int, seq: int) -> dict[str, Any] | None:
    cur = con.execute("""
        SELECT e.seq, e.ts, e.type, e.actor, e.run_id, e.trace_id, e.span_id, e.payload_ref, e.redaction,
               e.data, e.lineno, s.name AS span_name, s.kind AS span_kind
        FROM events e LEFT JOIN spans s ON s.bundle_id = e.bundle_id AND s.span_id = e.span_id
        WHERE e.bundle_id = ? AND e.seq = ? ORDER BY e.lineno LIMIT 1""", [bundle_id, seq])
    cols = [d[0] for d in cur.description or []]
    row = cur.fetchone()
    if row is None:
        return None
    out = dict(zip(cols, row, strict=True))
    data = out.get("data")
    out["data"] = json.loads(data) if isinstance(data, str) else data
    return out


TOOL_SORTS: dict[str, str] = {
    "time": "start_ns, seq_start",
    "latency": "latency_ms DESC NULLS LAST, start_ns",
    "status": "CASE status WHEN 'error' THEN 0 WHEN 'unfinished' THEN 1 ELSE 2 END, start_ns",
    "tool": "tool, start_ns",
}


def tool_calls_view(con: Cursor, bundle_id: int, sort: str = "time") -> View:
    order = TOOL_SORTS[sort]
    return materialize(con, "tools", f"""
        SELECT seq_start AS seq, ts, tool, status, round(latency_ms, 1) AS latency_ms,
               input_hash, left(arguments, 400) AS arguments, left(error, 400) AS error,
               span_id, call_id, exit_code
        FROM tool_calls WHERE bundle_id = ? ORDER BY {order}""", [bundle_id])


def tool_groups_view(con: Cursor, bundle_id: int) -> View:
    """Tool calls grouped by identity (tool + argument hash), most repeated first."""
    return materialize(con, "toolgroups", """
        SELECT tool, input_hash, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
               round(sum(latency_ms), 1) AS total_ms, min(seq_start) AS first_seq,
               left(any_value(arguments), 400) AS arguments, min(span_id) AS span_id
        FROM tool_calls WHERE bundle_id = ?
        GROUP BY tool, input_hash ORDER BY calls DESC, errors DESC, tool, input_hash""", [bundle_id])


def tool_call_detail(con: Cursor, bundle_id: int, span_id: str | None, call_id: str | None,
                     seq: int | None) -> dict[str, Any] | None:
    cur = con.execute("""
        SELECT * EXCLUDE (bundle_id) FROM tool_calls WHERE bundle_id = ?
          AND (span_id IS NOT DISTINCT FROM ? AND call_id IS NOT DISTINCT FROM ?
               AND seq_start IS NOT DISTINCT FROM ?) LIMIT 1""", [bundle_id, span_id, call_id, seq])
    cols = [d[0] for d in cur.description or []]
    row = cur.fetchone()
    if row is None:
        return None
    out = dict(zip(cols, row, strict=True))
    args = out.get("arguments")
    if isinstance(args, str):
        try:
            out["arguments"] = json.loads(args)
        except ValueError:
            pass
    if span_id:
        out["linked_events"] = [
            {"seq": s, "type": t} for s, t in con.execute(
                "SELECT seq, type FROM events WHERE bundle_id = ? AND span_id = ? ORDER BY seq LIMIT 20",
                [bundle_id, span_id]).fetchall()]
    return out


# ---------------------------------------------------------------------------------------------------
# SQL console


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: Any  # a pyarrow.Table: sliced per visible window
    count: int


def run_query(con: Cursor, sql: str) -> QueryResult:
    """Run any SQL; a result set comes back as an Arrow table (zero-copy windows for the virtual table)."""
    rel: Any = con.sql(sql)  # None for some statements, whatever the stubs say
    if rel is None:  # a statement without a result set
        import pyarrow as pa

        return QueryResult(columns=(), rows=pa.table({}), count=0)
    table = rel.to_arrow_table()
    return QueryResult(columns=tuple(table.column_names), rows=table, count=table.num_rows)


def named_query_list() -> list[tuple[str, str]]:
    """(name, description) of every named query in queries/sql/."""
    return [(n, named_queries.description(n)) for n in named_queries.names()]


def prepare(store: Store) -> Store:
    """Give the store a connection that can hold the TUI's scratch tables.

    A store re-opened from the ``.duckdb`` cache is read-only, and a read-only DuckDB cannot attach
    an in-memory database; then the cache file is attached read-only to a fresh in-memory connection
    and every table and view of it is exposed as a view of the same name, so queries stay unqualified
    and every cursor (each worker's) sees them.
    """
    try:
        attach_views_db(store.con)
        return store
    except duckdb.Error:
        path = getattr(store, "cache_path", None)
        if path is None:
            raise
    store.con.close()
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("ATTACH ? AS cached (READ_ONLY)", [str(path)])
    names = con.execute("""
        SELECT table_name FROM duckdb_tables() WHERE database_name = 'cached' AND schema_name = 'main'
        UNION ALL
        SELECT view_name FROM duckdb_views() WHERE database_name = 'cached' AND schema_name = 'main'
          AND NOT internal""").fetchall()
    for (name,) in names:
        con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM cached.main."{name}"')
    attach_views_db(con)
    store.con = con
    return store
