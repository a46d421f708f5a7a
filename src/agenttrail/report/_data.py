"""What the report shows, read from the store: plain dicts and lists, in a stable order.

Every query orders its rows completely (ties broken by ids), so the same bundle renders the same
bytes. Big runs are aggregated in DuckDB and the row tables are capped; the rows that findings point
at (their evidence) and the errors are always kept, so every evidence link resolves.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..detect.finding import Finding
from ..store import Store, first_value_map


@dataclass(frozen=True)
class Limits:
    """How much of a run the report embeds. Totals are always shown; rows past these are left out."""

    events: int = 100_000
    spans: int = 20_000
    event_bytes: int = 5_000_000  # estimated JSON bytes of embedded event rows
    span_bytes: int = 2_500_000
    error_rows: int = 10_000
    preview_chars: int = 240
    detail_chars: int = 4_000
    bar_spans: int = 3_000  # above this the timeline shows busy segments per lane, not single spans
    lanes: int = 24
    buckets: int = 600
    chart_points: int = 2_000


def columns(store: Store, table: str) -> set[str]:
    """The columns of a table, or an empty set when it does not exist (optional tables)."""
    rows = store.sql("SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table])
    return {r[0] for r in rows}


def run_bounds(store: Store, bid: int) -> tuple[int, int]:
    """(first ns, last ns) of a run over its spans, events and calls; the report's time origin."""
    lo, hi = store.sql("""
        SELECT min(lo), max(hi) FROM (
            SELECT CAST(min(start_ns) AS BIGINT) lo, CAST(max(end_ns) AS BIGINT) hi FROM spans WHERE bundle_id = $1
            UNION ALL SELECT CAST(epoch_ns(min(ts)) AS BIGINT), CAST(epoch_ns(max(ts)) AS BIGINT)
                      FROM events WHERE bundle_id = $1
            UNION ALL SELECT CAST(min(start_ns) AS BIGINT), CAST(max(end_ns) AS BIGINT)
                      FROM llm_calls WHERE bundle_id = $1
            UNION ALL SELECT CAST(min(start_ns) AS BIGINT), CAST(max(end_ns) AS BIGINT)
                      FROM tool_calls WHERE bundle_id = $1
            UNION ALL SELECT CAST(epoch_ns(started_at) AS BIGINT), CAST(epoch_ns(ended_at) AS BIGINT)
                      FROM runs WHERE bundle_id = $1)""", [bid])[0]
    lo = int(lo or 0)
    return lo, int(hi if hi is not None else lo)


# -- cost ---------------------------------------------------------------------------------------------


def cost_by_model(store: Store, bid: int) -> list[dict[str, Any]]:
    """Tokens, seconds and USD per model. Cost comes from the store (``llm_calls.cost_usd``, priced
    by its ``prices`` table); a model without a price has none, never zero."""
    has_cost = "cost_usd" in columns(store, "llm_calls")
    has_prices = has_cost and "price_model" in columns(store, "llm_calls") and bool(columns(store, "prices"))
    rows = store.rows(f"""
        WITH m AS (
            SELECT coalesce(model, '(unknown)') AS model, count(*) AS calls,
                   CAST(sum(input_tokens) AS BIGINT) AS input_tokens,
                   CAST(sum(output_tokens) AS BIGINT) AS output_tokens,
                   CAST(sum(cache_read_tokens) AS BIGINT) AS cache_read_tokens,
                   round(coalesce(sum(duration_ms), 0) / 1000, 3) AS seconds,
                   {"sum(cost_usd)" if has_cost else "NULL"} AS cost_usd,
                   {"any_value(price_model)" if has_prices else "NULL"} AS price_model
            FROM llm_calls WHERE bundle_id = ? GROUP BY 1)
        SELECT m.*, {"p.input_per_m, p.output_per_m" if has_prices else "NULL AS input_per_m, NULL AS output_per_m"}
        FROM m {"LEFT JOIN prices p ON p.prefix = m.price_model" if has_prices else ""}
        ORDER BY m.input_tokens + m.output_tokens DESC, m.model""", [bid])
    return rows


def total_cost(models: Sequence[dict[str, Any]]) -> tuple[float | None, list[str]]:
    """(USD of the priced models or None if none is priced, names of the models with no price)."""
    priced = [m["cost_usd"] for m in models if m["cost_usd"] is not None]
    unpriced = [m["model"] for m in models if m["cost_usd"] is None]
    return (sum(priced) if priced else None), unpriced


# -- findings -----------------------------------------------------------------------------------------

_NUMBER_LABELS = {
    "token_share": ("of tokens", "percent"), "time_share": ("of time", "percent"),
    "tokens": ("tokens", "int"), "tokens_total": ("tokens in the run", "int"),
    "llm_calls": ("LLM calls", "int"), "seconds": ("seconds", "float"), "iterations": ("iterations", "int"),
    "period": ("commands per cycle", "int"), "calls": ("tool calls", "int"),
    "failed_calls": ("failed calls", "int"), "cost_usd": ("spent", "usd"),
}


def _number_text(key: str, value: Any) -> tuple[str, str]:
    label, kind = _NUMBER_LABELS.get(key, (key.replace("_", " "), "auto"))
    if isinstance(value, bool):
        return label, "yes" if value else "no"
    if kind == "usd" and isinstance(value, int | float):
        return label, f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    if kind == "percent" and isinstance(value, int | float):
        return label, f"{value * 100:.0f}%"
    if isinstance(value, int):
        return label, f"{value:,}"
    if isinstance(value, float):
        return label, f"{value:,.3f}".rstrip("0").rstrip(".")
    return label, str(value)


def finding_view(f: Finding, index: int, titles: dict[str, str], evidence_links: int = 12) -> dict[str, Any]:
    """A finding as the template shows it: summary, numbers, commands, trigger, evidence anchors."""
    d = f.as_dict()
    numbers: list[tuple[str, str]] = []
    lists: list[tuple[str, list[str]]] = []
    for key, value in f.fields.items():
        if key in ("trigger", "commands"):
            continue
        if isinstance(value, str | int | float | bool):
            numbers.append(_number_text(key, value))
        elif isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            lists.append((key.replace("_", " "), [str(v) for v in value[:20]]))
    trigger = f.fields.get("trigger") if isinstance(f.fields.get("trigger"), dict) else None
    return {
        "index": index, "code": f.code, "severity": f.severity, "summary": f.summary,
        "title": titles.get(f.code, f.code), "bundle_id": f.bundle_id or 0, "numbers": numbers,
        "lists": lists, "commands": [str(c) for c in (d.get("commands") or [])][:12],
        "trigger": trigger, "span_ids": list(f.evidence.span_ids), "event_seqs": list(f.evidence.event_seqs),
        "links": evidence_links,
        "json": json.dumps(d, default=str, sort_keys=True, indent=1),
    }


def loop_windows(store: Store, bid: int, findings: Iterable[Finding], t0: int) -> list[dict[str, Any]]:
    """Time ranges (seconds since start) of the loops findings report, for shading the charts."""
    out: list[dict[str, Any]] = []
    for f in findings:
        if "iterations" not in f.fields or not f.evidence.span_ids:
            continue
        trigger = f.fields.get("trigger") or {}
        seconds = f.fields.get("seconds")
        # the loop starts when its trigger ended (as the detector counts it) and lasts `seconds`;
        # without a trigger span, the evidence spans' extent (capped evidence: may be shorter)
        ids = [s for s in f.evidence.span_ids if s != trigger.get("span_id")] or f.evidence.span_ids
        lo, hi = store.sql("""SELECT CAST(min(start_ns) AS BIGINT), CAST(max(end_ns) AS BIGINT)
                              FROM spans WHERE bundle_id = ? AND list_contains(?, span_id)""", [bid, ids])[0]
        if trigger.get("span_id"):
            row = store.sql("SELECT CAST(end_ns AS BIGINT) FROM spans WHERE bundle_id = ? AND span_id = ?",
                            [bid, trigger["span_id"]])
            if row and row[0][0] is not None:
                lo = row[0][0]
        if lo is not None and isinstance(seconds, int | float):
            hi = int(lo + float(seconds) * 1e9)
        if lo is None or hi is None:
            continue
        out.append({"code": f.code, "x0": (lo - t0) / 1e9, "x1": (hi - t0) / 1e9,
                    "label": f"{f.code} ×{f.fields['iterations']}"})
    return out


def failure_start(store: Store, bid: int, findings: Sequence[Finding], t0: int) -> dict[str, Any] | None:
    """When things started to go wrong: the top finding's trigger, else the first error."""
    for f in findings:
        trig = f.fields.get("trigger")
        if isinstance(trig, dict) and trig.get("span_id"):
            row = store.sql("SELECT CAST(end_ns AS BIGINT) FROM spans WHERE bundle_id = ? AND span_id = ?",
                            [bid, trig["span_id"]])
            if row and row[0][0] is not None:
                label = str(trig.get("command") or trig.get("tool") or f.code)
                return {"x": (row[0][0] - t0) / 1e9, "label": f"{label} failed"}
    row = store.sql("""
        SELECT x, label FROM (
            SELECT CAST(end_ns AS BIGINT) x, coalesce(tool, 'tool') || ' failed' label FROM tool_calls
            WHERE bundle_id = $1 AND status = 'error'
            UNION ALL SELECT CAST(end_ns AS BIGINT), name || ' failed' FROM spans
            WHERE bundle_id = $1 AND status_code = 2 AND kind <> 'run'
            UNION ALL SELECT CAST(epoch_ns(ts) AS BIGINT), 'error event' FROM events
            WHERE bundle_id = $1 AND type = 'error')
        WHERE x IS NOT NULL ORDER BY x, label LIMIT 1""", [bid])
    if not row:
        return None
    return {"x": (row[0][0] - t0) / 1e9, "label": row[0][1]}


# -- rows for the virtual tables -------------------------------------------------------------------------

def _dictionary(values: Sequence[str | None]) -> tuple[list[str], list[int]]:
    """Column → (sorted distinct values, index per row); -1 for NULL."""
    distinct = sorted({v for v in values if v is not None})
    pos = {v: i for i, v in enumerate(distinct)}
    return distinct, [pos[v] if v is not None else -1 for v in values]


def _strings(values: Sequence[str]) -> dict[str, Any]:
    """A text column: dictionary-encoded when values repeat, else plain (the page decodes both)."""
    distinct = set(values)
    if len(distinct) <= len(values) // 2:
        d, idx = _dictionary(values)
        return {"dict": d, "idx": idx}
    return {"plain": list(values)}


def _deltas(values: Sequence[int]) -> list[int]:
    """Integers as differences from the previous one (small numbers in the JSON; decoded in the page)."""
    out: list[int] = []
    prev = 0
    for v in values:
        out.append(v - prev)
        prev = v
    return out


def _us(ns: int | None, t0: int) -> int:
    return 0 if ns is None else (ns - t0) // 1000


def _row_cap(store: Store, table: str, text_sql: str, bid: int, rows: int, budget: int,
             preview: int, fixed: int) -> int:
    """How many rows fit the byte budget, from the average preview length (deterministic)."""
    avg = store.sql(f"SELECT coalesce(avg(least(length({text_sql}), ?)), 0) FROM {table} "
                    "WHERE bundle_id = ?", [preview, bid])[0][0]
    return max(min(rows, int(budget / (float(avg) * 1.1 + fixed))), 1)


def event_rows(store: Store, bid: int, t0: int, evidence: Sequence[int], limits: Limits) -> dict[str, Any]:
    """The event log, columnar: every evidence row and error, then the first and last events."""
    total = store.sql("SELECT count(*) FROM events WHERE bundle_id = ?", [bid])[0][0]
    cap = _row_cap(store, "events", "CAST(data AS VARCHAR)", bid, limits.events, limits.event_bytes,
                   limits.preview_chars, 40)
    keep = max(cap - min(len(evidence), cap), 0)
    rows = store.sql("""
        WITH ev AS (
            SELECT seq, lineno, ts, type, actor, span_id, CAST(data AS VARCHAR) AS text,
                   (type = 'error' OR type LIKE '%.failed' OR data->>'status' IN ('error', 'failed')
                    OR coalesce(data->>'error', '') <> '') AS err
            FROM events WHERE bundle_id = $1),
        numbered AS (
            SELECT *, row_number() OVER (ORDER BY seq NULLS LAST, lineno) AS rn,
                   row_number() OVER (PARTITION BY err ORDER BY seq NULLS LAST, lineno) AS err_rn,
                   list_contains($2, seq) AS evid
            FROM ev)
        SELECT seq, lineno, CAST(epoch_ns(ts) AS BIGINT), type, actor, span_id,
               left(text, CASE WHEN evid OR err THEN $6 ELSE $5 END), length(text), err, evid
        FROM numbered
        WHERE evid OR (err AND err_rn <= $3) OR rn <= $4 OR rn > $7 - $4
        ORDER BY seq NULLS LAST, lineno""",
        [bid, list(evidence), min(limits.error_rows, keep // 4), (keep - min(limits.error_rows, keep // 4)) // 2,
         limits.preview_chars, limits.detail_chars, total])
    types, type_idx = _dictionary([r[3] for r in rows])
    actors, actor_idx = _dictionary([r[4] for r in rows])
    spans, span_idx = _dictionary([r[5] for r in rows])
    texts = [r[6] or "" for r in rows]
    return {
        "total": int(total), "shown": len(rows),
        # seq (or -line for events without one) and µs since start, both as deltas
        "seq": _deltas([r[0] if r[0] is not None else -r[1] for r in rows]),
        "t": _deltas([_us(r[2], t0) for r in rows]),
        "types": types, "type": type_idx, "actors": actors, "actor": actor_idx,
        "spans": spans, "span": span_idx, "text": _strings(texts),
        # flags: 1 = error, 2 = text cut
        "flags": [(1 if r[8] else 0) | (2 if (r[6] is not None and r[7] > len(r[6])) else 0) for r in rows],
    }


def span_rows(store: Store, bid: int, t0: int, evidence: Sequence[str], limits: Limits) -> dict[str, Any]:
    """The spans, columnar: evidence and errors first, then structure (run/agent/node), then time order."""
    total = store.sql("SELECT count(*) FROM spans WHERE bundle_id = ?", [bid])[0][0]
    cap = _row_cap(store, "spans", "name", bid, limits.spans, limits.span_bytes, 80, 60)
    with_attrs = total <= 2_000
    # rank on light columns only; the attributes map is built for the chosen rows alone (span_rows, the
    # table behind the spans view, by rowid)
    rows = store.sql(f"""
        WITH s AS (
            SELECT rowid AS rid, span_id, kind, CAST(start_ns AS BIGINT) AS start_ns,
                   status_code = 2 AS err, list_contains($2, span_id) AS evid
            FROM span_rows WHERE bundle_id = $1),
        ranked AS (
            SELECT *, row_number() OVER (
                ORDER BY CASE WHEN evid THEN 0 WHEN err THEN 1
                              WHEN kind IN ('run', 'agent', 'node') THEN 2 ELSE 3 END,
                         start_ns, span_id) AS rank,
                   row_number() OVER (PARTITION BY err ORDER BY start_ns, span_id) AS err_rn
            FROM s),
        chosen AS (SELECT rid, evid, err_rn FROM ranked WHERE rank <= $3 OR evid)
        SELECT x.span_id, x.parent_span_id, x.name, x.kind, CAST(x.start_ns AS BIGINT), x.duration_ms,
               x.status_code = 2, x.status_message, x.input_tokens, x.output_tokens,
               coalesce(x.response_model, x.request_model), x.tool_name, x.error_type,
               CASE WHEN c.evid OR (x.status_code = 2 AND c.err_rn <= 200) OR $4
                    THEN left(CAST(to_json({first_value_map("x.attr_keys", "x.attr_values")}) AS VARCHAR), $5) END
        FROM chosen c JOIN span_rows x ON x.rowid = c.rid
        ORDER BY x.start_ns, x.span_id""",
        [bid, list(evidence), cap, with_attrs, limits.detail_chars])
    ids = [r[0] for r in rows]
    pos = {sid: i for i, sid in enumerate(ids)}
    names, name_idx = _dictionary([r[2] for r in rows])
    kinds, kind_idx = _dictionary([r[3] for r in rows])
    parent = [pos.get(r[1], -1) if r[1] else -1 for r in rows]
    return {
        "total": int(total), "shown": len(rows), "id": ids,
        "parent": parent,
        # parents that are not embedded themselves, by row
        "parent_id": {str(i): r[1] for i, r in enumerate(rows) if r[1] and parent[i] < 0},
        "names": names, "name": name_idx, "kinds": kinds, "kind": kind_idx,
        "t": _deltas([_us(r[4], t0) for r in rows]),
        "dur": [round(r[5], 3) if r[5] is not None else None for r in rows],
        "err": [1 if r[6] else 0 for r in rows],
        "msg": _strings([(r[7] or r[12] or "")[: limits.preview_chars] if r[6] else "" for r in rows]),
        "tok": [[int(r[8] or 0), int(r[9] or 0)] if (r[8] or r[9]) else 0 for r in rows],
        "model": _strings([r[10] or "" for r in rows]),
        "attrs": {str(i): r[13] for i, r in enumerate(rows) if r[13]},
    }


# -- tools, operations ----------------------------------------------------------------------------------

def tool_summary(store: Store, bid: int) -> list[dict[str, Any]]:
    return store.rows("""
        SELECT tool, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
               count(*) FILTER (WHERE status NOT IN ('ok', 'error')) AS other,
               round(quantile_cont(latency_ms, 0.5), 1) AS p50_ms,
               round(quantile_cont(latency_ms, 0.95), 1) AS p95_ms,
               round(max(latency_ms), 1) AS max_ms, round(coalesce(sum(latency_ms), 0) / 1000, 3) AS total_s
        FROM tool_calls WHERE bundle_id = ? GROUP BY tool ORDER BY calls DESC, tool""", [bid])


def tool_failures(store: Store, bid: int, limit: int = 100) -> list[dict[str, Any]]:
    """Failed calls grouped by tool and error text: how often, first and last occurrence."""
    return store.rows("""
        SELECT tool, coalesce(error, error_type, '(no error text)') AS error, count(*) AS count,
               arg_min(span_id, start_ns) AS first_span, arg_min(seq_end, start_ns) AS first_seq,
               arg_max(span_id, start_ns) AS last_span, arg_max(seq_end, start_ns) AS last_seq,
               arg_min(arguments, start_ns) AS arguments, max(exit_code) AS exit_code
        FROM tool_calls WHERE bundle_id = ? AND status = 'error'
        GROUP BY ALL ORDER BY count DESC, tool, error LIMIT ?""", [bid, limit])


def operations(store: Store, bid: int, limit: int = 500) -> list[dict[str, Any]]:
    if not columns(store, "operations"):
        return []
    return store.rows("""
        SELECT operation_id, kind, target, status, external_id, intent_seq, outcome_seq,
               status NOT IN ('succeeded', 'failed') AS unresolved
        FROM operations WHERE bundle_id = ?
        ORDER BY unresolved DESC, intent_seq NULLS LAST, operation_id LIMIT ?""", [bid, limit])


def approvals(store: Store, bid: int, limit: int = 500) -> list[dict[str, Any]]:
    """Approval requests and their decisions (and human signals), in order."""
    return store.rows("""
        WITH req AS (SELECT data->>'operation_id' AS operation_id, seq, actor FROM events
                     WHERE bundle_id = $1 AND type = 'approval.requested'),
             dec AS (SELECT data->>'operation_id' AS operation_id, data->>'decision' AS decision,
                            coalesce(data->>'by', actor) AS by, seq FROM events
                     WHERE bundle_id = $1 AND type = 'approval.decided')
        SELECT 'approval' AS what, coalesce(req.operation_id, dec.operation_id) AS operation_id,
               req.seq AS requested_seq, dec.seq AS decided_seq, dec.decision, dec.by,
               dec.seq IS NULL AS unresolved
        FROM req FULL OUTER JOIN dec USING (operation_id)
        UNION ALL
        SELECT 'signal', data->>'kind', seq, NULL, data->>'kind', coalesce(data->>'by', actor), false
        FROM events WHERE bundle_id = $1 AND type = 'signal'
        ORDER BY unresolved DESC, coalesce(requested_seq, decided_seq), operation_id LIMIT $2""",
                      [bid, limit])


def checkpoint_events(store: Store, bid: int, limit: int = 50) -> tuple[int, list[dict[str, Any]]]:
    """checkpoint.saved events (the count and the last ones) for runs without checkpoints.jsonl."""
    total = store.sql("SELECT count(*) FROM events WHERE bundle_id = ? AND type = 'checkpoint.saved'",
                      [bid])[0][0]
    rows = store.rows("""
        SELECT seq, strftime(ts, '%Y-%m-%d %H:%M:%S.%g') AS ts, data->>'checkpoint_id' AS checkpoint_id,
               data->>'step' AS step
        FROM events WHERE bundle_id = ? AND type = 'checkpoint.saved'
        ORDER BY seq DESC LIMIT ?""", [bid, limit])
    return int(total), rows
