"""Build a bundle from traces other tools wrote: OTLP/JSON files from any instrumentation (official
GenAI, OpenLLMetry, OpenInference, Logfire), Jaeger and Tempo trace JSON exports, and a LangGraph
checkpointer's history.

The bundle holds ``trace.jsonl`` (canonical OTLP/JSON, one document per line, GenAI attributes added
where another convention named the same thing), ``checkpoints.jsonl`` + ``last_state.json`` for a
LangGraph thread, and a manifest whose ``imported`` section says what came from where. It is written
atomically like a sealed one and scrubbed of secrets the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ... import names
from ...errors import BundleError, BundleFormatError
from .. import model
from .._scrub import scrub_block
from ..model import LoadWarning, WarningSink, sha256_file
from ..otlp import key_values
from . import jaeger, otlp_json
from .conventions import Tally, convention_of, conversation_id, genai_additions, is_pending_placeholder

__all__ = ["ImportResult", "import_bundle", "read_trace_documents"]

_SOURCE_SUFFIXES = (".json", ".jsonl", ".ndjson")


@dataclass
class ImportResult:
    path: Path
    spans: int
    run_id: str
    formats: dict[str, str]
    conventions: dict[str, int]
    warnings: list[LoadWarning] = field(default_factory=list)
    checkpoints: dict[str, Any] | None = None


def _files(sources: Sequence[Path]) -> list[Path]:
    out: list[Path] = []
    for src in sources:
        if src.is_dir():
            out += sorted(p for p in src.rglob("*") if p.is_file() and p.name.endswith(_SOURCE_SUFFIXES))
        elif src.is_file():
            out.append(src)
        else:
            raise BundleError(f"{src}: no such file or directory",
                              "pass OTLP/JSON, Jaeger or Tempo trace files (or a directory of them)")
    return out


def _shape(doc: Any) -> str | None:
    if jaeger.is_jaeger(doc):
        return "jaeger"
    if otlp_json.is_otlp(doc):
        d = doc.get("trace") if isinstance(doc.get("trace"), Mapping) else doc
        return "tempo" if "batches" in d or d is not doc else "otlp_json"
    return None


def read_trace_documents(path: Path, warnings: WarningSink) -> tuple[str, Iterator[dict[str, Any]]]:
    """(format, canonical OTLP documents) of one file; bad lines become warnings with file:line."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        whole: Any = json.loads(text)
    except ValueError:
        whole = None
    if whole is not None:
        shape = _shape(whole)
        if shape == "jaeger":
            return shape, jaeger.to_otlp(whole)
        if shape is not None:
            return shape, otlp_json.normalise_document(whole)
        if isinstance(whole, list) and all(otlp_json.is_otlp(d) for d in whole):
            return "otlp_json", (n for d in whole for n in otlp_json.normalise_document(d))
        raise BundleFormatError(
            f"{path}: not a trace export agenttrail knows (OTLP/JSON, Jaeger or Tempo JSON)",
            "export traces as OTLP/JSON (the collector's file exporter) or Jaeger/Tempo JSON")
    return "otlp_json", _jsonl_documents(path, text, warnings)


def _jsonl_documents(path: Path, text: str, warnings: WarningSink) -> Iterator[dict[str, Any]]:
    good = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as e:
            warnings.add(path.name, lineno, f"not valid JSON ({e.msg}); line skipped")
            continue
        shape = _shape(doc)
        if shape is None:
            warnings.add(path.name, lineno, "not an OTLP/JSON trace document; line skipped")
            continue
        good += 1
        yield from (jaeger.to_otlp(doc) if shape == "jaeger" else otlp_json.normalise_document(doc))
    if not good:
        raise BundleFormatError(f"{path}:1: no trace documents in this file",
                                "pass OTLP/JSON (one document, or one a line), Jaeger or Tempo JSON")


@dataclass
class _Extent:
    start: int | None = None
    end: int | None = None
    root_error: tuple[str, str] | None = None
    error_spans: int = 0

    def add(self, span: Mapping[str, Any], attrs: Mapping[str, Any], is_root: bool) -> None:
        s, e = int(span.get("startTimeUnixNano") or 0), int(span.get("endTimeUnixNano") or 0)
        if s:
            self.start = s if self.start is None else min(self.start, s)
        if e:
            self.end = e if self.end is None else max(self.end, e)
        status = span.get("status") or {}
        self.error_spans += status.get("code") == 2
        if is_root and status.get("code") == 2 and self.root_error is None:
            self.root_error = (str(attrs.get(names.ERROR_TYPE) or "span_error"),
                               str(status.get("message") or span.get("name") or ""))


def _rfc3339(ns: int | None) -> str | None:
    if not ns:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _enrich(doc: dict[str, Any], tally: Tally, extent: _Extent) -> int:
    """Add GenAI attributes, drop Logfire placeholders, tally conventions; returns spans kept."""
    kept = 0
    for rs in doc["resourceSpans"]:
        res = otlp_json.attr_dict(rs["resource"].get("attributes") or [])
        service = res.get("service.name")
        if isinstance(service, str) and service:
            tally.services[service] += 1
        for ss in rs["scopeSpans"]:
            scope_name = str(ss.get("scope", {}).get("name") or "")
            spans = []
            for span in ss["spans"]:
                attrs = otlp_json.attr_dict(span["attributes"])
                if is_pending_placeholder(attrs):
                    tally.pending_dropped += 1
                    continue
                tally.conventions[convention_of(attrs, scope_name)] += 1
                add = genai_additions(attrs)
                if add:
                    span["attributes"] += key_values(add)
                    attrs = {**attrs, **add}
                rid = conversation_id(attrs)
                if rid:
                    tally.run_ids[rid] += 1
                for key, counter in ((names.AGENT_NAME, tally.agents), (names.WORKFLOW_NAME, tally.workflows)):
                    v = attrs.get(key)
                    if isinstance(v, str) and v:
                        counter[v] += 1
                extent.add(span, attrs, is_root=not span.get("parentSpanId"))
                spans.append(span)
            ss["spans"] = spans
            kept += len(spans)
    return kept



def import_bundle(sources: Sequence[Path], out_dir: Path, *, run_id: str | None = None,
                  langgraph_sqlite: Path | None = None, thread_id: str | None = None,
                  scrub: bool = True) -> ImportResult:
    """Write a bundle at ``out_dir`` (which must not exist yet) from trace files and/or a LangGraph
    SQLite checkpointer's thread."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise BundleError(f"{out_dir}: already exists and is not empty", "choose a new directory with -o")
    if langgraph_sqlite is not None and not thread_id:
        raise BundleError("--langgraph-sqlite needs --thread-id", "pass the thread whose history to import")
    if not sources and langgraph_sqlite is None:
        raise BundleError("nothing to import", "pass trace files, or --langgraph-sqlite DB --thread-id T")
    files = _files(sources)
    warnings = WarningSink()
    tally, extent = Tally(), _Extent()
    formats: dict[str, str] = {}
    spans = secrets = 0
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        per_source: list[dict[str, Any]] = []
        if files:
            with open(tmp / model.TRACE_JSONL, "w", encoding="utf-8") as out:
                for f in files:
                    fmt, docs = read_trace_documents(f, warnings)
                    formats[str(f)] = fmt
                    n = 0
                    for doc in docs:
                        n += _enrich(doc, tally, extent)
                        line = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
                        if scrub:
                            line, k = scrub_block(line)
                            secrets += k
                        out.write(line)
                    spans += n
                    per_source.append({"path": str(f), "format": fmt, "spans": n, "sha256": sha256_file(f)})
        checkpoints = None
        if langgraph_sqlite is not None:
            checkpoints = _import_langgraph(langgraph_sqlite, str(thread_id), tmp)
            secrets += int(checkpoints.get("secrets_scrubbed") or 0)
        rid = run_id or (tally.run_ids.most_common(1)[0][0] if tally.run_ids else None) or thread_id
        if rid is None:
            rid = _first_trace_id(tmp / model.TRACE_JSONL) or out_dir.name
        manifest = {
            "format": model.FORMAT, "version": model.VERSION, "run_id": rid,
            "status": "failed" if extent.root_error else "succeeded",
            "started_at": _rfc3339(extent.start), "ended_at": _rfc3339(extent.end),
            "agent_name": _top(tally.agents) or _top(tally.services),
            "workflow_name": _top(tally.workflows),
            "failure": ({"type": extent.root_error[0], "message": extent.root_error[1]}
                        if extent.root_error else None),
            "producer": {"name": "agenttrail", "version": model.producer_version(), "importer": "agenttrail bundle import"},
            "redaction": {"content_capture": "unknown", "secrets_scrubbed": secrets, "scrubbed": scrub},
            "imported": {
                "sources": per_source, "spans": spans, "error_spans": extent.error_spans,
                "conventions": dict(sorted(tally.conventions.items())),
                "run_ids": dict(tally.run_ids.most_common(20)),
                "logfire_pending_spans_dropped": tally.pending_dropped,
                "langgraph": ({"database": str(langgraph_sqlite), **checkpoints}
                              if checkpoints is not None else None),
                "warnings": [w.as_dict() for w in warnings.items],
            },
            "sealed_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        }
        manifest["files"] = {p.relative_to(tmp).as_posix(): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
                             for p in sorted(tmp.rglob("*")) if p.is_file()}
        (tmp / model.MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
        if out_dir.exists():
            out_dir.rmdir()
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ImportResult(out_dir, spans, rid, formats, dict(tally.conventions), list(warnings.items),
                        checkpoints)


def _top(counter: Any) -> str | None:
    return counter.most_common(1)[0][0] if counter else None


def _first_trace_id(path: Path) -> str | None:
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            for rs in json.loads(line).get("resourceSpans") or []:
                for ss in rs.get("scopeSpans") or []:
                    for s in ss.get("spans") or []:
                        if s.get("traceId"):
                            return str(s["traceId"])
    return None


def _import_langgraph(db: Path, thread_id: str, bundle_dir: Path) -> dict[str, Any]:
    if not db.is_file():
        raise BundleError(f"{db}: no such LangGraph SQLite database", "pass the checkpointer's .sqlite file")
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver

        from ...integrations.langgraph import write_checkpoints
    except ImportError as e:
        raise BundleError(f"importing a LangGraph checkpointer needs the langgraph extra ({e.name} missing)",
                          "pip install 'agenttrail[langgraph]' langgraph-checkpoint-sqlite") from e
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        result = write_checkpoints(saver, thread_id, bundle_dir)
    except sqlite3.DatabaseError as e:
        raise BundleFormatError(f"{db}: not a LangGraph SQLite checkpointer ({e})",
                                "pass the database file given to SqliteSaver") from e
    finally:
        conn.close()
    if not result.get("checkpoints"):
        raise BundleError(f"{db}: thread {thread_id!r} has no checkpoints",
                          "check the thread id (config['configurable']['thread_id'])")
    return result
