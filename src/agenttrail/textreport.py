"""Plain-text and Markdown renderings of an analysis document (``analyze --format text|markdown``).

Renderers return strings; the CLI prints them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

_SEV_ORDER = {"error": 0, "warning": 1, "info": 2}


def _tok(n: Any) -> str:
    n = int(n or 0)
    if n >= 1_000_000:
        return f"{n / 1e6:.2f}M"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def _dur(seconds: Any) -> str:
    if seconds is None:
        return "?"
    s = float(seconds)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"


def _ts(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(value or "?")


def _clean(text: Any) -> str:
    """One line, no control characters: nothing in a bundle can drive the terminal."""
    s = str(text)
    return "".join(ch if ch.isprintable() else " " for ch in s)


def _cost(run: Mapping[str, Any]) -> str:
    cost, unpriced = run.get("cost_usd"), int(run.get("unpriced_llm_calls") or 0)
    if cost is None:
        return " · cost unknown (no price for the model)" if unpriced else ""
    return f" · ${float(cost):,.2f}" + (f" (+{unpriced} unpriced calls)" if unpriced else "")


def run_header(run: Mapping[str, Any]) -> list[str]:
    status = str(run.get("status") or "unknown").upper()
    head = f"Run {_clean(run['run_id'])} · {_clean(run.get('agent_name') or '?')}"
    if run.get("workflow_name"):
        head += f" / {_clean(run['workflow_name'])}"
    head += f" · {status}"
    if run.get("failure_type"):
        head += f" ({_clean(run['failure_type'])}: {_clean(run.get('failure_message') or '')})"
    lines = [head]
    lines.append(
        f"  started {_ts(run.get('started_at'))} · duration {_dur(run.get('duration_s'))} · "
        f"{run.get('llm_calls', 0)} LLM calls · "
        f"{_tok(int(run.get('input_tokens') or 0) + int(run.get('output_tokens') or 0))} tokens "
        f"(in {_tok(run.get('input_tokens'))}, out {_tok(run.get('output_tokens'))}, "
        f"cached {_tok(run.get('cache_read_tokens'))}) · {run.get('tool_calls', 0)} tool calls "
        f"({run.get('tool_errors', 0)} failed)" + _cost(run))
    lines.append(f"  bundle: {_clean(run.get('bundle_path'))}")
    return lines


def _finding_details(f: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    if f.get("commands"):
        out.append("commands: " + " → ".join(f"`{_clean(c)}`" for c in f["commands"]))
    trig = f.get("trigger")
    if isinstance(trig, Mapping):
        where = []
        if trig.get("span_id"):
            where.append(f"span {trig['span_id']}")
        if trig.get("seq") is not None:
            where.append(f"event #{trig['seq']}")
        err = _clean((trig.get("error") or "").strip().splitlines()[0]) if trig.get("error") else ""
        out.append(f"trigger: {_clean(trig.get('tool'))} `{_clean(trig.get('command', ''))}`"
                   + (f" ({', '.join(where)})" if where else "") + (f": {err}" if err else ""))
    ev = f.get("evidence") or {}
    spans, seqs = ev.get("span_ids") or [], ev.get("event_seqs") or []
    if spans or seqs:
        first = []
        if spans:
            first.append(f"span {spans[0]}")
        if seqs:
            first.append(f"event #{seqs[0]}")
        out.append(f"evidence: {len(spans)} spans, {len(seqs)} events (first: {', '.join(first)})")
    return out


def render_text(doc: Mapping[str, Any]) -> str:
    lines: list[str] = []
    warnings = doc.get("warnings") or []
    if warnings:
        lines.append(f"Load warnings ({len(warnings)}): the analysis below ran on what could be read")
        for w in warnings[:20]:
            where = f"{w['file']}:{w['line']}" if w.get("line") else w["file"]
            lines.append(f"  bundle {w['bundle_id']} {where}: {_clean(w['message'])}")
        if len(warnings) > 20:
            lines.append(f"  … {len(warnings) - 20} more (agenttrail sql BUNDLE --query load_warnings)")
        lines.append("")
    for run in doc.get("runs") or []:
        lines.extend(run_header(run))
        lines.append("")
    findings = sorted(doc.get("findings") or [], key=lambda f: _SEV_ORDER.get(f["severity"], 3))
    if findings:
        counts: dict[str, int] = {}
        for f in findings:
            counts[f["severity"]] = counts.get(f["severity"], 0) + 1
        lines.append("Findings (" + ", ".join(f"{n} {s}" for s, n in counts.items()) + ")")
        for f in findings:
            lines.append(f"  {f['severity'].upper():<7} {f['code']:<22} {_clean(f['summary'])}")
            lines.extend(f"  {'':<7} {'':<22} {d}" for d in _finding_details(f))
    else:
        lines.append("No findings.")
    fleet = doc.get("fleet")
    if fleet:
        lines.append("")
        lines.extend(fleet_lines(fleet))
    errors = doc.get("detector_errors") or []
    if errors:
        lines.append("")
        lines.append("Detectors that failed (their findings are missing):")
        lines.extend(f"  {e['detector']}: {_clean(e['error'])}" for e in errors)
    return "\n".join(lines) + "\n"


def fleet_lines(fleet: Mapping[str, Any]) -> list[str]:
    statuses = ", ".join(f"{n} {s}" for s, n in fleet["statuses"].items())
    lines = [f"Fleet: {fleet['runs']} runs ({statuses})"]
    modes = fleet.get("failure_modes") or []
    if not modes:
        return [*lines, "  no failure modes found"]
    lines.append(f"  {'failure mode':<24} {'runs':>5} {'findings':>9} {'tokens wasted':>14} {'cost wasted':>12}")
    for m in modes:
        cost = f"${m['cost_wasted_usd']:,.2f}" if m["cost_wasted_usd"] else "-"
        toks = _tok(m["tokens_wasted"]) if m["tokens_wasted"] else "-"
        lines.append(f"  {m['code']:<24} {m['runs']:>5} {m['findings']:>9} {toks:>14} {cost:>12}")
    if fleet.get("by_waste"):
        lines.append("  most wasteful first: " + ", ".join(fleet["by_waste"]))
    return lines


def render_markdown(doc: Mapping[str, Any]) -> str:
    lines: list[str] = ["# agenttrail analysis", ""]
    warnings = doc.get("warnings") or []
    if warnings:
        lines += ["## Load warnings", ""]
        lines += [f"- bundle {w['bundle_id']} `{w['file']}{':' + str(w['line']) if w.get('line') else ''}`: "
                  f"{_md(w['message'])}" for w in warnings[:50]]
        lines.append("")
    lines += ["## Runs", "", "| run | agent | status | failure | duration | tokens | tool calls (failed) |",
              "|---|---|---|---|---|---|---|"]
    for r in doc.get("runs") or []:
        toks = int(r.get("input_tokens") or 0) + int(r.get("output_tokens") or 0)
        lines.append(f"| {_md(r['run_id'])} | {_md(r.get('agent_name') or '')} | {r.get('status')} | "
                     f"{_md(r.get('failure_type') or '')} | {_dur(r.get('duration_s'))} | {_tok(toks)} | "
                     f"{r.get('tool_calls', 0)} ({r.get('tool_errors', 0)}) |")
    lines += ["", "## Findings", ""]
    findings = sorted(doc.get("findings") or [], key=lambda f: _SEV_ORDER.get(f["severity"], 3))
    if not findings:
        lines.append("No findings.")
    for f in findings:
        lines.append(f"- **{f['severity']}** `{f['code']}` — {_md(f['summary'])}")
        lines.extend(f"  - {_md(d)}" for d in _finding_details(f))
    fleet = doc.get("fleet")
    if fleet:
        lines += ["", "## Fleet", "", f"{fleet['runs']} runs: "
                  + ", ".join(f"{n} {s}" for s, n in fleet["statuses"].items()), "",
                  "| failure mode | runs | findings | tokens wasted | cost wasted |", "|---|---|---|---|---|"]
        lines += [f"| `{m['code']}` | {m['runs']} | {m['findings']} | {_tok(m['tokens_wasted'])} | "
                  f"${m['cost_wasted_usd']:,.2f} |" for m in fleet.get("failure_modes") or []]
    errors = doc.get("detector_errors") or []
    if errors:
        lines += ["", "## Detectors that failed", ""]
        lines += [f"- `{e['detector']}`: {_md(e['error'])}" for e in errors]
    return "\n".join(lines) + "\n"


def _md(text: Any) -> str:
    return _clean(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int = 60) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, (dict, list)):
            v = json.dumps(v, default=str)
        s = _clean("" if v is None else v)
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    body = [[cell(v) for v in r] for r in rows]
    widths = [max([len(c), *(len(r[i]) for r in body)]) for i, c in enumerate(columns)]
    out = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"
