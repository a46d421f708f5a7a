"""Render the HTML postmortem from a loaded store (jinja2, autoescape on; plotly.js inlined once)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jinja2

from ..detect import run_detectors
from ..store import Store, queries

MAX_TABLE_ROWS = 2000


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("agenttrail.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


@cache
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _json_for_script(value: Any) -> str:
    """JSON safe inside <script>: no '</' sequences, no HTML comment openers."""
    text = json.dumps(value, default=str, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _token_figure(store: Store, bundle_id: int, budget: int | None) -> dict[str, Any]:
    rows = store.sql("""
        SELECT strftime(ts, '%Y-%m-%dT%H:%M:%S.%f'),
               sum(input_tokens + output_tokens) OVER (ORDER BY start_ns ROWS UNBOUNDED PRECEDING)
        FROM llm_calls WHERE bundle_id = ? ORDER BY start_ns""", [bundle_id])
    # never plot a million points: keep at most 2,000 evenly spaced ones (and the last)
    if len(rows) > 2000:
        step = len(rows) / 2000
        rows = [rows[int(i * step)] for i in range(2000)] + [rows[-1]]
    data: list[dict[str, Any]] = [{
        "type": "scatter", "mode": "lines", "name": "tokens used",
        "x": [r[0] for r in rows], "y": [int(r[1]) for r in rows], "line": {"shape": "hv"}}]
    if budget and rows:
        data.append({"type": "scatter", "mode": "lines", "name": "budget",
                     "x": [rows[0][0], rows[-1][0]], "y": [budget, budget],
                     "line": {"dash": "dash", "color": "#c0392b"}})
    return {"data": data, "layout": {"title": {"text": "Cumulative tokens"}, "height": 320,
                                     "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
                                     "yaxis": {"title": {"text": "tokens"}}}}


def render_report(store: Store) -> str:
    runs = queries.run(store, "run_summary")
    analysis = run_detectors(store)
    findings = [f.as_dict() | {"bundle_id": f.bundle_id} for f in analysis.findings]
    pages = []
    for run in runs:
        bid = run["bundle_id"]
        budget = json.loads(run["budget"] or "{}").get("tokens") if run.get("budget") else None
        spans = store.rows("""
            SELECT span_id, parent_span_id, name, kind, round(duration_ms, 3) AS duration_ms,
                   strftime(start_ts, '%H:%M:%S.%f') AS start, status_code, status_message,
                   input_tokens, output_tokens, tool_name, error_type
            FROM spans WHERE bundle_id = ? ORDER BY start_ns LIMIT ?""", [bid, MAX_TABLE_ROWS])
        events = store.rows("""
            SELECT seq, strftime(ts, '%H:%M:%S.%f') AS ts, type, actor, span_id,
                   CAST(data AS VARCHAR) AS data
            FROM events WHERE bundle_id = ? ORDER BY seq LIMIT ?""", [bid, MAX_TABLE_ROWS])
        tools = store.rows("""
            SELECT tool, count(*) AS calls, count(*) FILTER (WHERE status = 'error') AS errors,
                   round(quantile_cont(latency_ms, 0.5), 1) AS p50_ms,
                   round(max(latency_ms), 1) AS max_ms
            FROM tool_calls WHERE bundle_id = ? GROUP BY tool ORDER BY calls DESC""", [bid])
        counts = store.sql("SELECT (SELECT count(*) FROM spans WHERE bundle_id = ?), "
                           "(SELECT count(*) FROM events WHERE bundle_id = ?)", [bid, bid])[0]
        env = store.sql("SELECT path FROM files WHERE bundle_id = ? AND path = 'env.txt'", [bid])
        env_text = ""
        if env:
            b = store.bundles[bid - 1]
            env_text = (b.path / "env.txt").read_text(encoding="utf-8", errors="replace")
        pages.append({
            "run": run, "spans": spans, "events": events, "tools": tools,
            "span_total": counts[0], "event_total": counts[1], "env": env_text,
            "findings": [f for f in findings if f["bundle_id"] == bid],
            "token_figure": _json_for_script(_token_figure(store, bid, budget)),
        })
    warnings = queries.run(store, "load_warnings")
    return _env().get_template("report.html.j2").render(
        pages=pages, warnings=warnings, plotly_js=_plotly_js(),
        detector_errors=[d.as_dict() for d in analysis.failures], max_rows=MAX_TABLE_ROWS)
