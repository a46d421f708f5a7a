"""Plotly figures as plain dicts (rendered by the embedded plotly.js).

Every figure is aggregated in DuckDB first: a chart never carries more than a few thousand points,
whatever the size of the run. Text that comes from the run (span names, tools, models) is
HTML-escaped, because plotly interprets a small subset of HTML in labels.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ..store import Store
from ._data import Limits, run_bounds

KIND_COLORS = {"run": "#475569", "agent": "#64748b", "node": "#94a3b8", "llm": "#8b5cf6",
               "tool": "#0ea5e9", "other": "#cbd5e1"}
ERROR_COLOR = "#dc2626"
FAILED_COLOR = "#fca5a5"
LOOP_COLOR = "rgba(245, 158, 11, 0.16)"
FONT = {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", "size": 12, "color": "#1f2937"}
CONFIG = {"displaylogo": False, "responsive": True,
          "modeBarButtonsToRemove": ["lasso2d", "select2d", "toImage"]}


def _t(text: object) -> str:
    """Run-supplied text for a plotly label: escaped, single line, bounded."""
    s = str(text)
    s = s.replace("\r", " ").replace("\n", " ")
    if len(s) > 120:
        s = s[:119] + "…"
    return html.escape(s, quote=False)


def _layout(height: int, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "height": height, "font": FONT, "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
        "margin": {"l": 60, "r": 16, "t": 28, "b": 40}, "hovermode": "closest",
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": 11}},
    }
    base.update(extra)
    return base


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    ax: dict[str, Any] = {"title": {"text": title, "font": {"size": 11}}, "gridcolor": "#eef0f3",
                          "zeroline": False}
    ax.update(extra)
    return ax


def _marks(loops: Sequence[dict[str, Any]], failure: dict[str, Any] | None) -> tuple[list[Any], list[Any]]:
    """Shaded loop windows and the failure line, as layout shapes and annotations."""
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    for w in loops:
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": w["x0"], "x1": w["x1"],
                       "y0": 0, "y1": 1, "fillcolor": LOOP_COLOR, "line": {"width": 0}, "layer": "below"})
        notes.append({"x": w["x0"], "y": 1, "xref": "x", "yref": "paper", "xanchor": "left",
                      "yanchor": "bottom", "showarrow": False, "text": _t(w["label"]),
                      "font": {"size": 10, "color": "#92400e"}})
    if failure is not None:
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": failure["x"], "x1": failure["x"],
                       "y0": 0, "y1": 1, "line": {"color": ERROR_COLOR, "width": 1.5, "dash": "dot"}})
        notes.append({"x": failure["x"], "y": 1, "xref": "x", "yref": "paper", "xanchor": "right",
                      "yanchor": "bottom",
                      "showarrow": False, "text": _t(failure["label"]),
                      "font": {"size": 10, "color": ERROR_COLOR}, "bgcolor": "rgba(255,255,255,0.8)"})
    return shapes, notes


def tokens_over_time(store: Store, bid: int, t0: int, budget: int | None, loops: Sequence[dict[str, Any]],
                     failure: dict[str, Any] | None, limits: Limits) -> dict[str, Any] | None:
    """Cumulative tokens against time since the start, with the budget and the failure marked."""
    n = store.sql("SELECT count(*) FROM llm_calls WHERE bundle_id = ?", [bid])[0][0]
    if not n:
        return None
    # the running total at the end of each time bucket (≤ chart_points buckets); exact for small runs
    rows = store.sql("""
        WITH c AS (
            SELECT (CAST(coalesce(end_ns, start_ns) AS BIGINT) - $2) / 1e9 AS x,
                   sum(input_tokens + output_tokens) OVER (ORDER BY coalesce(end_ns, start_ns), span_id
                                                           ROWS UNBOUNDED PRECEDING) AS y,
                   sum(input_tokens) OVER (ORDER BY coalesce(end_ns, start_ns), span_id
                                           ROWS UNBOUNDED PRECEDING) AS yin,
                   row_number() OVER (ORDER BY coalesce(end_ns, start_ns), span_id) AS i
            FROM llm_calls WHERE bundle_id = $1),
        b AS (SELECT *, CASE WHEN $3 <= $4 THEN i ELSE CAST(floor(i * $4 / $3) AS BIGINT) END AS k FROM c)
        SELECT round(max(x), 6), CAST(max(y) AS BIGINT), CAST(max(yin) AS BIGINT) FROM b
        GROUP BY k ORDER BY k""", [bid, t0, n, limits.chart_points])
    xs = [0.0] + [r[0] for r in rows]
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "name": "tokens (in + out)", "x": xs,
         "y": [0] + [r[1] for r in rows], "line": {"shape": "hv", "color": "#8b5cf6", "width": 2},
         "hovertemplate": "%{y:,} tokens at %{x:.2f} s<extra></extra>"},
        {"type": "scatter", "mode": "lines", "name": "input tokens", "x": xs,
         "y": [0] + [r[2] for r in rows], "line": {"shape": "hv", "color": "#c4b5fd", "width": 1},
         "hovertemplate": "%{y:,} input tokens at %{x:.2f} s<extra></extra>"},
    ]
    shapes, notes = _marks(loops, failure)
    used = rows[-1][1] if rows else 0
    yaxis = _axis("tokens", rangemode="tozero", separatethousands=True)
    if budget:
        if used >= budget * 0.1:
            data.append({"type": "scatter", "mode": "lines", "name": f"budget {budget:,}",
                         "x": [0, xs[-1]], "y": [budget, budget],
                         "line": {"dash": "dash", "color": ERROR_COLOR, "width": 1.5},
                         "hoverinfo": "skip"})
        else:
            notes.append({"x": 1, "y": 1.0, "xref": "paper", "yref": "paper", "xanchor": "right",
                          "yanchor": "top", "showarrow": False,
                          "text": f"budget {budget:,} tokens ({used / budget * 100:.1f}% used; line off scale)",
                          "font": {"size": 10, "color": "#6b7280"}})
    return {"data": data, "layout": _layout(
        300, xaxis=_axis("seconds since start"), yaxis=yaxis, shapes=shapes, annotations=notes)}


def attribution(store: Store, bid: int, loops: Sequence[dict[str, Any]], limits: Limits,
                top: int = 10) -> dict[str, Any] | None:
    """Where tokens and time went: by phase, by loop, by tool, by model (buttons switch the measure)."""
    if not store.sql("SELECT count(*) FROM llm_calls WHERE bundle_id = ?", [bid])[0][0] and \
            not store.sql("SELECT count(*) FROM tool_calls WHERE bundle_id = ?", [bid])[0][0]:
        return None
    loop_ranges = [[w["x0"], w["x1"]] for w in loops]
    # phase: the nearest node/agent ancestor of each LLM call's span (three levels up is plenty)
    phase = store.sql("""
        WITH p AS (
            SELECT l.input_tokens + l.output_tokens AS tok, l.duration_ms AS ms,
                   CASE WHEN a1.kind IN ('node', 'agent') THEN a1.name
                        WHEN a2.kind IN ('node', 'agent') THEN a2.name
                        WHEN a3.kind IN ('node', 'agent') THEN a3.name END AS phase
            FROM llm_calls l
            LEFT JOIN spans s ON s.bundle_id = l.bundle_id AND s.span_id = l.span_id
            LEFT JOIN spans a1 ON a1.bundle_id = l.bundle_id AND a1.span_id = s.parent_span_id
            LEFT JOIN spans a2 ON a2.bundle_id = l.bundle_id AND a2.span_id = a1.parent_span_id
            LEFT JOIN spans a3 ON a3.bundle_id = l.bundle_id AND a3.span_id = a2.parent_span_id
            WHERE l.bundle_id = $1),
        nodes AS (SELECT name AS phase, sum(duration_ms) AS ms FROM spans
                  WHERE bundle_id = $1 AND kind IN ('node', 'agent') GROUP BY name)
        SELECT coalesce(p.phase, n.phase, '(no phase)') AS label, coalesce(sum(p.tok), 0),
               coalesce(any_value(n.ms), sum(p.ms), 0) / 1000
        FROM p FULL OUTER JOIN nodes n USING (phase) GROUP BY ALL""", [bid])
    # tool: tokens of the LLM calls that read each tool's result (the call right after it ended)
    tool = store.sql("""
        WITH l AS (SELECT bundle_id, CAST(start_ns AS BIGINT) AS s, input_tokens + output_tokens AS tok
                   FROM llm_calls WHERE bundle_id = $1),
             t AS (SELECT bundle_id, CAST(end_ns AS BIGINT) AS e, tool FROM tool_calls
                   WHERE bundle_id = $1 AND end_ns IS NOT NULL),
             tok AS (SELECT coalesce(t.tool, '(before any tool)') AS label, sum(l.tok) AS tok
                     FROM l ASOF LEFT JOIN t ON l.bundle_id = t.bundle_id AND l.s >= t.e GROUP BY ALL),
             secs AS (SELECT tool AS label, sum(latency_ms) / 1000 AS s FROM tool_calls
                      WHERE bundle_id = $1 GROUP BY ALL)
        SELECT label, coalesce(tok.tok, 0), coalesce(secs.s, 0)
        FROM tok FULL OUTER JOIN secs USING (label)""", [bid])
    model = store.sql("""
        SELECT coalesce(model, '(unknown)'), sum(input_tokens + output_tokens),
               coalesce(sum(duration_ms), 0) / 1000
        FROM llm_calls WHERE bundle_id = ? GROUP BY ALL""", [bid])
    loop_rows: list[tuple[str, float, float]] = []
    if loop_ranges:
        origin, end = run_bounds(store, bid)
        inside = store.sql("""
            SELECT coalesce(sum(input_tokens + output_tokens) FILTER (WHERE inl), 0),
                   coalesce(sum(input_tokens + output_tokens) FILTER (WHERE NOT inl), 0)
            FROM (SELECT *, list_bool_or(list_transform(CAST($2 AS DOUBLE[][]),
                          lambda w: (CAST(start_ns AS BIGINT) - $3) / 1e9 BETWEEN w[1] AND w[2])) AS inl
                  FROM llm_calls WHERE bundle_id = $1)""",
            [bid, loop_ranges, origin])[0]
        span = max(end - origin, 0) / 1e9
        in_s = sum(w[1] - w[0] for w in loop_ranges)
        loop_rows = [("in loops", float(inside[0]), in_s), ("outside loops", float(inside[1]),
                                                            max(span - in_s, 0.0))]
    panels = [("by phase", phase), ("by loop", loop_rows), ("by tool", tool), ("by model", model)]
    panels = [(title, rows) for title, rows in panels if rows]
    data: list[dict[str, Any]] = []
    tok_vis: list[bool] = []
    annotations: list[dict[str, Any]] = []
    # a 2-column grid of panels, sized in pixels by the number of bars in each row
    n_rows = (len(panels) + 1) // 2
    bars = [min(len(r), top + 1) for _, r in panels]
    row_px = [34 + 22 * max(bars[2 * i:2 * i + 2]) for i in range(n_rows)]
    gap_px, top_px, bottom_px = 46, 44, 24
    plot_px = sum(row_px) + gap_px * (n_rows - 1)
    layout = _layout(plot_px + top_px + bottom_px, showlegend=False, barmode="overlay",
                     margin={"l": 130, "r": 40, "t": top_px, "b": bottom_px})
    for i, (title, rows) in enumerate(panels):
        r, c = divmod(i, 2)
        y_top = 1 - (sum(row_px[:r]) + gap_px * r) / plot_px
        y_bot = y_top - (row_px[r] - 22) / plot_px
        ax = "" if i == 0 else str(i + 1)
        x_dom = [0.0, 0.40] if c == 0 else [0.62, 1.0]
        layout[f"yaxis{ax}"] = {"domain": [max(y_bot, 0), y_top], "anchor": f"x{ax}",
                                "autorange": "reversed", "tickfont": {"size": 11}, "automargin": c == 0}
        layout[f"xaxis{ax}"] = {"domain": x_dom, "anchor": f"y{ax}", "gridcolor": "#eef0f3",
                                "rangemode": "tozero", "separatethousands": True, "tickfont": {"size": 10}}
        annotations.append({"text": f"<b>{title}</b>", "xref": "paper", "yref": "paper",
                            "x": x_dom[0] if c else 0, "xanchor": "left", "y": y_top, "yanchor": "bottom",
                            "showarrow": False, "font": {"size": 12}, "xshift": -120})
        for measure, col, color, fmt in (("tokens", 1, "#8b5cf6", "%{x:,} tokens"),
                                         ("seconds", 2, "#0ea5e9", "%{x:,.2f} s")):
            ordered = sorted(((str(r[0]), float(r[col] or 0)) for r in rows), key=lambda r: (-r[1], r[0]))
            if len(ordered) > top:
                ordered = [*ordered[:top], ("(other)", sum(v for _, v in ordered[top:]))]
            total = sum(v for _, v in ordered) or 1
            data.append({
                "type": "bar", "orientation": "h", "name": measure, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                "y": [_t(k[:26] + "…" if len(k) > 27 else k) for k, _ in ordered],
                "x": [round(v, 3) if measure == "seconds" else int(v) for _, v in ordered],
                "text": [f"{v / total * 100:.0f}%" for _, v in ordered], "textposition": "outside",
                "cliponaxis": False, "marker": {"color": color}, "visible": measure == "tokens",
                "hovertemplate": f"%{{y}}: {fmt} (%{{text}})<extra></extra>"})
            tok_vis.append(measure == "tokens")
    layout["annotations"] = annotations
    layout["updatemenus"] = [{
        "type": "buttons", "direction": "right", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom",
        "pad": {"t": 0, "b": 8}, "showactive": True, "font": {"size": 11},
        "buttons": [
            {"label": "tokens", "method": "restyle", "args": [{"visible": tok_vis}]},
            {"label": "time", "method": "restyle", "args": [{"visible": [not v for v in tok_vis]}]}]}]
    return {"data": data, "layout": layout}


def timeline(store: Store, bid: int, t0: int, loops: Sequence[dict[str, Any]],
             failure: dict[str, Any] | None, limits: Limits) -> dict[str, Any] | None:
    """Swimlanes of spans (one lane per span name), LLM / tool / node coloured, errors red, loops shaded.

    Small runs draw every span as a bar (click one to open it in the span table); big runs draw,
    per lane, the stretches of time in which some span of that lane was running.
    """
    total = store.sql("SELECT count(*) FROM spans WHERE bundle_id = ?", [bid])[0][0]
    if not total:
        return None
    lanes = store.sql("""
        SELECT name, mode(kind), min(start_ns) AS first, count(*) FROM spans WHERE bundle_id = ?
        GROUP BY name ORDER BY sum(duration_ms) DESC NULLS LAST, name LIMIT ?""", [bid, limits.lanes])
    kind_rank = {"run": 0, "agent": 1, "node": 2, "llm": 3, "tool": 4}
    lanes = sorted(lanes, key=lambda r: (kind_rank.get(r[1], 5), r[2], r[0]))
    names = [r[0] for r in lanes]
    labels = {r[0]: _t(f"{r[0]} ({r[3]:,})") for r in lanes}
    data: list[dict[str, Any]] = []
    if total <= limits.bar_spans:
        rows = store.sql("""
            SELECT name, kind, span_id, (CAST(start_ns AS BIGINT) - ?) / 1e9, duration_ms / 1000,
                   status_code = 2, coalesce(status_message, '')
            FROM spans WHERE bundle_id = ? AND list_contains(?, name) ORDER BY start_ns, span_id""",
                         [t0, bid, names])
        groups: dict[str, list[tuple[Any, ...]]] = {}
        for r in rows:
            kind = r[1] or "other"
            key = ("failed " + kind if kind in ("run", "agent", "node") else "error") if r[5] else kind
            groups.setdefault(key, []).append(r)
        for key in sorted(groups, key=lambda k: ("error" in k or "failed" in k, kind_rank.get(k, 5), k)):
            g = groups[key]
            data.append({
                "type": "bar", "orientation": "h", "name": key, "y": [labels[r[0]] for r in g],
                "base": [round(r[3], 6) for r in g], "x": [max(round(r[4], 6), 0) for r in g],
                "customdata": [r[2] for r in g],
                "hovertext": [_t(f"{r[0]} · {r[4] * 1000:,.1f} ms" + (f" · {r[6]}" if r[6] else ""))
                              for r in g],
                "hovertemplate": "%{hovertext}<br>start %{base:.3f} s<extra></extra>",
                "marker": {"color": ERROR_COLOR if key == "error" else
                           FAILED_COLOR if key.startswith("failed") else KIND_COLORS.get(key, "#cbd5e1"),
                           "line": {"width": 0}}})
    else:
        lo, hi = store.sql("SELECT CAST(min(start_ns) AS BIGINT), CAST(max(end_ns) AS BIGINT) "
                           "FROM spans WHERE bundle_id = ?", [bid])[0]
        width = max((hi - lo) / limits.buckets, 1)
        rows = store.sql("""
            WITH s AS (SELECT name, CAST(floor((CAST(start_ns AS BIGINT) - $2) / $3) AS BIGINT) AS k0,
                              CAST(floor((CAST(end_ns AS BIGINT) - $2) / $3) AS BIGINT) AS k1,
                              status_code = 2 AS err
                       FROM spans WHERE bundle_id = $1 AND list_contains($4, name)),
            b AS (SELECT name, unnest(range(k0, least(k1, k0 + $5) + 1)) AS k, err,
                         least(k1, k0 + $5) AS k_end FROM s)
            -- an error is marked where its span ended
            SELECT name, k, count(*) FILTER (WHERE err AND k = k_end), count(*) FROM b
            GROUP BY ALL ORDER BY name, k""",
                         [bid, lo, width, names, limits.buckets])
        kinds = {r[0]: r[1] or "other" for r in lanes}
        segs: dict[str, list[tuple[float, float, str]]] = {}
        errs: dict[str, list[tuple[float, str, int]]] = {}
        def flush(name: str, k0: int, k1: int) -> None:
            a, b = (lo - t0 + k0 * width) / 1e9, (lo - t0 + (k1 + 1) * width) / 1e9
            segs.setdefault(kinds[name], []).append((a, b, name))

        cur: tuple[str, int, int] | None = None  # lane, first bucket, last bucket of a busy stretch
        for name, k, n_err, _n in rows:
            if cur is not None and (name != cur[0] or k != cur[2] + 1):
                flush(*cur)
                cur = None
            cur = (name, k, k) if cur is None else (name, cur[1], k)
            if n_err:
                errs.setdefault(name, []).append(((lo - t0 + (k + 0.5) * width) / 1e9, name, n_err))
        if cur is not None:
            flush(*cur)
        for kind in sorted(segs, key=lambda k: (kind_rank.get(k, 5), k)):
            g = segs[kind]
            data.append({
                "type": "bar", "orientation": "h", "name": kind, "y": [labels[s[2]] for s in g],
                "base": [round(s[0], 6) for s in g], "x": [round(s[1] - s[0], 6) for s in g],
                "hovertemplate": "%{y}<br>busy %{base:.1f} s → +%{x:.1f} s<extra></extra>",
                "marker": {"color": KIND_COLORS.get(kind, "#cbd5e1"), "line": {"width": 0}}})
        err_points = [p for name in names for p in errs.get(name, [])]
        if err_points:
            data.append({
                "type": "scatter", "mode": "markers", "name": "error",
                "x": [round(p[0], 6) for p in err_points], "y": [labels[p[1]] for p in err_points],
                "marker": {"symbol": "x-thin", "size": 7, "line": {"width": 1.5, "color": ERROR_COLOR}},
                "text": [f"{p[2]:,} failed" for p in err_points],
                "hovertemplate": "%{y}: %{text} near %{x:.1f} s<extra></extra>"})
    shapes, notes = _marks(loops, failure)
    layout = _layout(
        max(160, 60 + 26 * len(names)), barmode="overlay",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right",
                "font": {"size": 11}}, bargap=0.25, shapes=shapes, annotations=notes,
        margin={"l": 10, "r": 16, "t": 28, "b": 40},
        xaxis=_axis("seconds since start", rangeslider={"visible": False}),
        yaxis={"categoryorder": "array", "categoryarray": [labels[n] for n in names],
               "autorange": "reversed", "automargin": True, "tickfont": {"size": 11}})
    return {"data": data, "layout": layout}


def tool_latency(store: Store, bid: int, top: int = 20) -> dict[str, Any] | None:
    """Latency distribution per tool as box plots from quantiles computed in DuckDB."""
    rows = store.sql("""
        SELECT tool, quantile_cont(latency_ms, [0.0, 0.25, 0.5, 0.75, 1.0]), avg(latency_ms), count(*),
               count(*) FILTER (WHERE status = 'error')
        FROM tool_calls WHERE bundle_id = ? AND latency_ms IS NOT NULL
        GROUP BY tool ORDER BY count(*) DESC, tool LIMIT ?""", [bid, top])
    if not rows:
        return None
    lo = min(r[1][0] for r in rows)
    hi = max(r[1][4] for r in rows)
    log = lo > 0 and hi / lo > 100
    return {"data": [{
        "type": "box", "orientation": "h", "name": "latency",
        "y": [_t(f"{r[0]} ({r[3]:,} calls, {r[4]:,} failed)") for r in rows],
        "lowerfence": [round(r[1][0], 3) for r in rows], "q1": [round(r[1][1], 3) for r in rows],
        "median": [round(r[1][2], 3) for r in rows], "q3": [round(r[1][3], 3) for r in rows],
        "upperfence": [round(r[1][4], 3) for r in rows], "mean": [round(r[2], 3) for r in rows],
        "marker": {"color": "#0ea5e9"}, "fillcolor": "rgba(14,165,233,0.25)", "line": {"width": 1.2},
        "hoverinfo": "x+y"}],
        "layout": _layout(max(140, 50 + 34 * len(rows)), showlegend=False,
                          margin={"l": 10, "r": 16, "t": 16, "b": 40},
                          xaxis=_axis("latency (ms)", type="log" if log else "linear"),
                          yaxis={"automargin": True, "autorange": "reversed"})}


def comparison(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Runs side by side: tokens in / out and duration."""
    labels = [_t(f"{r['run_id']} (#{r['bundle_id']})") for r in runs]
    return {"data": [
        {"type": "bar", "name": "input tokens", "x": labels, "y": [int(r["input_tokens"]) for r in runs],
         "marker": {"color": "#c4b5fd"}},
        {"type": "bar", "name": "output tokens", "x": labels, "y": [int(r["output_tokens"]) for r in runs],
         "marker": {"color": "#8b5cf6"}},
        {"type": "scatter", "mode": "markers", "name": "duration (s)", "x": labels, "yaxis": "y2",
         "y": [r["duration_s"] for r in runs], "marker": {"color": "#0f172a", "size": 10, "symbol": "diamond"}},
    ], "layout": _layout(280, barmode="stack", margin={"l": 60, "r": 60, "t": 28, "b": 40},
                         yaxis=_axis("tokens", separatethousands=True),
                         yaxis2=_axis("seconds", overlaying="y", side="right", rangemode="tozero"))}
