"""Render the HTML postmortem from a loaded store: ``render_report(store) -> str``.

One self-contained file: plotly.js, CSS and the page script are inlined once; data travels as JSON in
``<script type="application/json">`` blocks that the page script reads (never as HTML it parses).
Templates are jinja2 with autoescape on. The output depends only on the bundles: no wall clock, no
random ids, stable ordering, so the same bundle renders the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import jinja2
from markupsafe import Markup

from ..detect import run_detectors
from ..detect.finding import Finding
from ..detect.registry import Analysis, available
from ..store import Store, queries
from . import _content, _data, charts
from ._data import Limits

__all__ = ["Limits", "render_report"]


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agenttrail.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson_script"] = lambda v: Markup(json_for_script(v))
    env.filters["num"] = _num
    env.filters["bytes"] = _bytes
    env.filters["usd"] = _usd
    env.filters["short"] = _short
    env.filters["when"] = _when
    return env


@cache
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    # a literal "</script" inside the library would end our <script> element early
    return get_plotlyjs().replace("</script", "<\\/script")


@cache
def _asset(name: str) -> str:
    from importlib.resources import files

    return (files("agenttrail.report") / "templates" / name).read_text(encoding="utf-8")


def _agenttrail_version() -> str:
    try:
        return version("agenttrail")
    except PackageNotFoundError:
        return "dev"


def json_for_script(value: Any) -> str:
    """JSON that is inert inside <script type="application/json">: no '<', '>', '&', U+2028/9."""
    text = json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:,.3g}"
    return f"{value:,}"


def _bytes(n: Any) -> str:
    n = float(n or 0)
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} GB"


def _usd(value: Any) -> str:
    if value is None:
        return "—"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _visible(s: str) -> str:
    """C0 control characters (NUL, ESC, ...) as visible escapes; newlines and tabs kept."""
    if not any((ord(c) < 32 and c not in "\n\t") or c == "\x7f" for c in s):
        return s
    return "".join(f"\\x{ord(c):02x}" if (ord(c) < 32 and c not in "\n\t") or c == "\x7f" else c
                   for c in s)


def _short(text: Any, n: int = 200) -> str:
    s = _visible("" if text is None else str(text))
    return s if len(s) <= n else s[: n - 1] + "…"


def _when(value: Any) -> str:
    """A timestamp to the millisecond: ``2026-05-26 10:00:00.123``."""
    if value is None:
        return "—"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    return str(value)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.2f} s"
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s"


def _budget(run: Mapping[str, Any]) -> dict[str, Any]:
    try:
        doc = json.loads(run.get("budget") or "{}")
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _run_page(store: Store, run: dict[str, Any], findings: list[Finding], titles: dict[str, str],
              limits: Limits) -> dict[str, Any]:
    bid = int(run["bundle_id"])
    bundle = store.bundles[bid - 1]
    t0, t1 = _data.run_bounds(store, bid)
    budget = _budget(run)
    models = _data.cost_by_model(store, bid)
    cost, unpriced = _data.total_cost(models)
    loops = _data.loop_windows(store, bid, findings, t0)
    failure = _data.failure_start(store, bid, findings, t0)
    span_evidence = sorted({s for f in findings for s in f.evidence.span_ids})
    event_evidence = sorted({s for f in findings for s in f.evidence.event_seqs})
    figures: list[dict[str, Any]] = []

    def add(key: str, title: str, fig: dict[str, Any] | None, note: str = "") -> None:
        if fig is not None:
            figures.append({"id": f"b{bid}-{key}", "key": key, "title": title, "note": note,
                            "figure": fig, "config": charts.CONFIG})

    budget_tokens = budget.get("tokens") if isinstance(budget.get("tokens"), int) else None
    add("tokens", "Cumulative tokens", charts.tokens_over_time(store, bid, t0, budget_tokens, loops,
                                                               failure, limits))
    add("attribution", "Where the tokens and time went", charts.attribution(store, bid, loops, limits),
        "Phase: the node an LLM call ran in. Tool: the tool whose result the LLM call read "
        "(the last one that finished before it started).")
    spans = _data.span_rows(store, bid, t0, span_evidence, limits)
    add("timeline", "Timeline", charts.timeline(store, bid, t0, loops, failure, limits),
        f"One lane per span name (the busiest {limits.lanes}); drag to zoom, double-click to reset"
        + (", click a span to open it." if spans["total"] <= limits.bar_spans
           else "; busy stretches are shown, not single spans."))
    add("latency", "Tool latency", charts.tool_latency(store, bid))
    ckpt_count, ckpts = _content.checkpoints(bundle)
    ckpt_event_count, ckpt_events = (0, []) if ckpt_count else _data.checkpoint_events(store, bid)
    finding_views = [_data.finding_view(f, i, titles) for i, f in enumerate(findings, 1)]
    return {
        "bid": bid, "run": run, "budget": budget, "duration": _duration(
            run["duration_s"] if run.get("duration_s") is not None else (t1 - t0) / 1e9),
        "models": models, "cost": cost, "unpriced": unpriced,
        "findings": finding_views, "figures": figures, "loops": loops, "failure": failure,
        "events": _data.event_rows(store, bid, t0, event_evidence, limits), "spans": spans,
        "tools": _data.tool_summary(store, bid), "tool_failures": _data.tool_failures(store, bid),
        "operations": _data.operations(store, bid), "approvals": _data.approvals(store, bid),
        "checkpoints": ckpts, "checkpoint_count": ckpt_count,
        "checkpoint_events": ckpt_events, "checkpoint_event_count": ckpt_event_count,
        "last_state": _content.last_state(bundle), "progress": _content.progress_files(bundle),
        "screenshots": _content.screenshots(bundle), "env": _content.env_pairs(bundle),
        "diff": _content.workspace_diff(bundle),
        "warnings": store.rows("SELECT file, line, message FROM load_warnings WHERE bundle_id = ? "
                               "ORDER BY file, line NULLS FIRST, message", [bid]),
        "files": store.rows("SELECT path, bytes FROM files WHERE bundle_id = ? ORDER BY path", [bid]),
        "t0_iso": run.get("started_at"),
    }


def render_report(store: Store, *, analysis: Analysis | None = None, limits: Limits | None = None) -> str:
    """The whole report as one HTML string.

    ``analysis`` reuses findings already computed (default: run every detector); ``limits`` bounds
    what is embedded for very large runs. Costs come from the store (``open_store(..., prices=)``).
    """
    limits = limits or Limits()
    analysis = analysis if analysis is not None else run_detectors(store)
    titles = {code: str(getattr(cls, "title", code)) for code, cls in available().items()}
    runs = queries.run(store, "run_summary")
    pages = []
    for run in runs:
        mine = [f for f in analysis.findings if (f.bundle_id or 1) == run["bundle_id"]]
        pages.append(_run_page(store, run, mine, titles, limits))
    compare = None
    if len(pages) > 1:
        compare = {"figure": charts.comparison(runs), "config": charts.CONFIG}
    return _env().get_template("report.html.j2").render(
        pages=pages, compare=compare, plotly_js=_plotly_js(), css=_asset("report.css"),
        script=_asset("report.js"), version=_agenttrail_version(),
        detector_errors=[d.as_dict() for d in analysis.failures])
