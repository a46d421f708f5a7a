"""``agenttrail bundle verify``: is this bundle whole and consistent?"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import model
from .model import sha256_file
from .reader import Bundle, open_bundle


@dataclass
class VerifyResult:
    bundle: Bundle
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        out = [f"bundle {self.bundle.source} (run {self.bundle.run_id})"]
        out += [f"  ok       {c}" for c in self.checked]
        out += [f"  warning  {w}" for w in self.warnings]
        out += [f"  ERROR    {e}" for e in self.errors]
        out.append("verdict: " + ("OK" if self.ok else f"{len(self.errors)} error(s)"))
        return out



def verify(path: str | Path) -> VerifyResult:
    b = open_bundle(path)
    r = VerifyResult(b)
    m = b.manifest
    # -- manifest schema
    if (b.path / model.MANIFEST).is_file():
        for key, kind in (("format", str), ("version", int), ("run_id", str), ("status", str)):
            if not isinstance(m.get(key), kind):
                r.errors.append(f"manifest.json: '{key}' missing or not a {kind.__name__}")
        if m.get("format") not in (None, model.FORMAT):
            r.errors.append(f"manifest.json: format is {m.get('format')!r}, expected {model.FORMAT!r}")
        if m.get("status") is not None and m.get("status") not in model.RUN_STATUSES:
            r.errors.append(f"manifest.json: status {m.get('status')!r} not one of {model.RUN_STATUSES}")
        if not r.errors:
            r.checked.append("manifest.json schema")
    else:
        r.warnings.append("manifest.json missing")
    # -- hashes and referenced files
    files = m.get("files") or {}
    bad = 0
    for rel, info in files.items():
        p = b.path / rel
        if not p.is_file():
            r.errors.append(f"{rel}: listed in the manifest but missing")
            bad += 1
        elif info.get("sha256") and sha256_file(p) != info["sha256"]:
            r.errors.append(f"{rel}: sha256 differs from the manifest (changed after sealing)")
            bad += 1
        elif info.get("bytes") is not None and p.stat().st_size != info["bytes"]:
            r.errors.append(f"{rel}: size differs from the manifest")
            bad += 1
    if files and not bad:
        r.checked.append(f"{len(files)} files match their manifest hashes")
    # -- events: seq strictly increasing, required keys, payload refs
    if files:
        unlisted = sorted(p.relative_to(b.path).as_posix() for p in b.path.rglob("*")
                          if p.is_file() and p.relative_to(b.path).as_posix() not in files
                          and p.name != model.MANIFEST)
        if unlisted:
            r.warnings.append(f"{len(unlisted)} file(s) not in the manifest's index (kept): "
                              + ", ".join(unlisted[:10]) + (" ..." if len(unlisted) > 10 else ""))
    span_ids = _check_traces(b, r)
    ev = b.events_file
    if ev is not None:
        last: dict[str, int] = {}
        n = 0
        unlinked = 0
        for lineno, e in b.iter_jsonl(ev):
            n += 1
            missing = [k for k in ("seq", "ts", "run_id", "type") if k not in e]
            if missing:
                r.errors.append(f"{ev.name}:{lineno}: missing {', '.join(missing)}")
                continue
            run = str(e["run_id"])
            if not isinstance(e["seq"], int) or e["seq"] <= last.get(run, 0):
                r.errors.append(f"{ev.name}:{lineno}: seq {e['seq']!r} not strictly increasing "
                                f"(previous {last.get(run, 0)})")
            else:
                last[run] = e["seq"]
            ref = e.get("payload_ref")
            if isinstance(ref, str) and "://" not in ref and not (b.path / ref).is_file():
                r.errors.append(f"{ev.name}:{lineno}: payload_ref {ref!r} not in the bundle")
            sid = e.get("span_id")
            if span_ids and sid and str(sid).lower() not in span_ids:
                unlinked += 1
        r.checked.append(f"{n} events, seq strictly increasing" if not any(
            "seq" in x for x in r.errors) else f"{n} events read")
        if span_ids:
            if unlinked:
                r.warnings.append(f"{unlinked} events name a span_id that is not in the trace")
            else:
                r.checked.append("every event's span_id is in the trace")
    # -- tool_calls.csv: header, then every row as wide as the header
    tc = b.file(model.TOOL_CALLS)
    if tc is not None:
        _check_tool_calls(tc, r)
    for w in b.warnings.items:
        r.errors.append(f"{w.where()}: {w.message}") if w.line else r.warnings.append(
            f"{w.where()}: {w.message}")
    return r


_MAX_PER_FILE = 20


def _check_traces(b: Bundle, r: VerifyResult) -> set[str]:
    """Span ids of the trace files; each document and span id checked, problems at file:line."""
    span_ids: set[str] = set()
    if len(b.trace_files) > 1:
        r.warnings.append("both trace.json and trace.jsonl present: readers load both (spans may repeat)")
    for tf in b.trace_files:
        problems = spans = docs = 0
        pairs = b.iter_jsonl(tf) if tf.name == model.TRACE_JSONL else [(1, _load(tf, r))]
        for lineno, doc in pairs:
            resource_spans = doc.get("resourceSpans", doc.get("resource_spans"))
            if not isinstance(resource_spans, list):
                if doc and problems < _MAX_PER_FILE:
                    r.errors.append(f"{tf.name}:{lineno}: not an OTLP trace document (no resourceSpans)")
                problems += bool(doc)
                continue
            docs += 1
            for rs in resource_spans:
                for ss in rs.get("scopeSpans") or rs.get("scope_spans") or []:
                    for sp in ss.get("spans") or []:
                        spans += 1
                        tid, sid = str(sp.get("traceId", "")), str(sp.get("spanId", ""))
                        if not (_is_hex(tid, 32) and _is_hex(sid, 16)):
                            if problems < _MAX_PER_FILE:
                                r.errors.append(f"{tf.name}:{lineno}: span {sp.get('name')!r} has ids "
                                                f"{tid!r}/{sid!r}, not 32/16 hex digits")
                            problems += 1
                        span_ids.add(sid.lower())
        if problems > _MAX_PER_FILE:
            r.errors.append(f"{tf.name}: {problems - _MAX_PER_FILE} more problems not listed")
        if not problems:
            r.checked.append(f"{tf.name}: {spans} spans in {docs} document(s), ids well-formed")
    return span_ids


def _is_hex(value: str, n: int) -> bool:
    return len(value) == n and all(c in "0123456789abcdefABCDEF" for c in value)


def _check_tool_calls(path: Path, r: VerifyResult) -> None:
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        if tuple(header[: len(model.TOOL_CALLS_HEADER)]) != model.TOOL_CALLS_HEADER:
            r.errors.append(f"{model.TOOL_CALLS}:1: header must start with "
                            f"{','.join(model.TOOL_CALLS_HEADER)}")
            return
        bad = rows = 0
        try:
            for row in reader:
                rows += 1
                if len(row) != len(header) and row:
                    if bad < _MAX_PER_FILE:
                        r.errors.append(f"{model.TOOL_CALLS}:{reader.line_num}: {len(row)} fields, "
                                        f"the header has {len(header)}")
                    bad += 1
        except csv.Error as e:
            r.errors.append(f"{model.TOOL_CALLS}:{reader.line_num}: {e}")
            bad += 1
    if not bad:
        r.checked.append(f"tool_calls.csv: header and {rows} rows")


def _load(path: Path, r: VerifyResult) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        r.errors.append(f"{path.name}:{getattr(e, 'lineno', '?')}: not valid JSON")
        return {}
    return doc if isinstance(doc, dict) else {}
