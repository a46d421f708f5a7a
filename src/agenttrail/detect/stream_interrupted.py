"""``stream_interrupted``: dropped model streams, and partial tool calls dispatched anyway.

Every ``stream.interrupted`` event is counted. When one says ``partial_tool_call: true`` and a tool
call starts after it (within ``dispatch_window_s``) before any complete model call, the agent ran a
tool call it only half received — its arguments may be truncated: an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural
from ._format import command_text
from .finding import Finding

QUERY = """
WITH si AS (
    SELECT bundle_id, run_id, seq, ts, span_id, coalesce(TRY_CAST(data->>'partial_tool_call' AS BOOLEAN), false) AS partial,
           TRY_CAST(data->>'received_bytes' AS BIGINT) AS received_bytes
    FROM events WHERE type = 'stream.interrupted'),
nxt AS (
    SELECT si.bundle_id, si.seq,
           (SELECT arg_min(t.tool || chr(0) || coalesce(t.arguments, '') || chr(0) || coalesce(t.input_hash, '')
                           || chr(0) || coalesce(t.span_id, '') || chr(0) || coalesce(CAST(t.seq_start AS VARCHAR), ''),
                           t.start_ns)
            FROM tool_calls t
            WHERE t.bundle_id = si.bundle_id AND t.start_ns >= epoch_us(si.ts) * 1000
              AND t.start_ns <= epoch_us(si.ts) * 1000 + CAST(? * 1e9 AS BIGINT)
              AND NOT EXISTS (SELECT 1 FROM llm_calls l WHERE l.bundle_id = si.bundle_id
                              AND l.start_ns > epoch_us(si.ts) * 1000 AND l.end_ns < t.start_ns
                              AND l.error IS NULL)) AS dispatched
    FROM si WHERE si.partial)
SELECT si.bundle_id, si.run_id, si.seq, si.span_id, si.partial, si.received_bytes, nxt.dispatched
FROM si LEFT JOIN nxt USING (bundle_id, seq)
ORDER BY si.bundle_id, si.seq
"""


class StreamInterrupted:
    code: ClassVar[str] = "stream_interrupted"
    title: ClassVar[str] = "Dropped streams; partial tool calls dispatched anyway"
    defaults: ClassVar[Mapping[str, Any]] = {"dispatch_window_s": 120.0}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        by_run: dict[tuple[int, str], list[tuple[Any, ...]]] = {}
        for row in store.sql(QUERY, [float(config["dispatch_window_s"])]):
            by_run.setdefault((row[0], row[1]), []).append(row)
        out: list[Finding] = []
        for (bid, run_id), rows in by_run.items():
            dispatched = [r for r in rows if r[6]]
            for r in dispatched:
                tool, args, ihash, span_id, seq = str(r[6]).split(chr(0))
                cmd = command_text(tool, args or None, ihash)
                out.append(Finding(
                    code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id} dispatched `{cmd}` after the stream carrying it was cut "
                             f"(event #{r[2]}, {r[5] if r[5] is not None else '?'} bytes received): its "
                             f"arguments may be truncated; drop partial tool calls instead."),
                    evidence=evidence([span_id], [r[2], int(seq) if seq else None]),
                    fields={"interrupted_seq": r[2], "tool": tool, "command": cmd,
                            "received_bytes": r[5], "partial_tool_call": True, "dispatched": True}))
            rest = [r for r in rows if not r[6]]
            if rest:
                partial = sum(1 for r in rest if r[4])
                out.append(Finding(
                    code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id}: {plural(len(rest), 'model stream')} dropped mid-response"
                             + (f" ({partial} inside a tool call, not dispatched)" if partial else "")
                             + "; check the provider connection and retry policy."),
                    evidence=evidence([r[3] for r in rest], [r[2] for r in rest]),
                    fields={"interruptions": len(rest), "partial_tool_calls": partial,
                            "dispatched": False}))
        return out
