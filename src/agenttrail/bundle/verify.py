"""``agenttrail bundle verify``: is this bundle whole and consistent?"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

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
    span_ids: set[str] = set()
    for tf in b.trace_files:
        for _, doc in b.iter_jsonl(tf) if tf.name == model.TRACE_JSONL else [(1, _load(tf, r))]:
            for rs in doc.get("resourceSpans") or []:
                for ss in rs.get("scopeSpans") or []:
                    span_ids.update(str(s.get("spanId", "")).lower() for s in ss.get("spans") or [])
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
    # -- tool_calls.csv header
    tc = b.file(model.TOOL_CALLS)
    if tc is not None:
        with open(tc, newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        if tuple(header[: len(model.TOOL_CALLS_HEADER)]) != model.TOOL_CALLS_HEADER:
            r.errors.append(f"{model.TOOL_CALLS}:1: header must start with "
                            f"{','.join(model.TOOL_CALLS_HEADER)}")
        else:
            r.checked.append("tool_calls.csv header")
    for w in b.warnings.items:
        r.errors.append(f"{w.where()}: {w.message}") if w.line else r.warnings.append(
            f"{w.where()}: {w.message}")
    return r


def _load(path: Path, r: VerifyResult) -> dict:  # type: ignore[type-arg]
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        r.errors.append(f"{path.name}:{getattr(e, 'lineno', '?')}: not valid JSON")
        return {}
    return doc if isinstance(doc, dict) else {}
