"""``slow_tool``: tool calls over a threshold (default 30 s), and LLM streams silent too long.

Per run and tool: how many calls exceeded ``threshold_s``, the slowest and the total time. LLM calls
whose first chunk came after ``stream_silence_s`` (``gen_ai.response.time_to_first_chunk``) or whose
``stream.stalled`` event reports ``silent_s`` over it are reported as silent streams.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural, seconds_text
from ._format import command_text
from .finding import Finding

TOOLS = """
SELECT bundle_id, any_value(run_id), tool, count(*) AS n, max(latency_ms) / 1000 AS max_s,
       sum(latency_ms) / 1000 AS total_s, arg_max(arguments, latency_ms), arg_max(input_hash, latency_ms),
       list(span_id ORDER BY latency_ms DESC), list(seq_start ORDER BY latency_ms DESC)
FROM tool_calls WHERE latency_ms > ? * 1000
GROUP BY bundle_id, tool ORDER BY bundle_id, total_s DESC
"""

STREAMS = """
SELECT bundle_id, any_value(run_id), count(*) AS n, max(silent_s), list(span_id), list(seq)
FROM (
    SELECT bundle_id, run_id, TRY_CAST(attr_values[list_position(attr_keys, 'gen_ai.response.time_to_first_chunk')] AS DOUBLE) AS silent_s,
           span_id, NULL::BIGINT AS seq FROM spans WHERE kind = 'llm'
    UNION ALL
    SELECT bundle_id, run_id, TRY_CAST(data->>'silent_s' AS DOUBLE), span_id, seq
    FROM events WHERE type IN ('stream.stalled', 'stream.silent', 'stream.interrupted'))
WHERE silent_s > ?
GROUP BY bundle_id ORDER BY bundle_id
"""


class SlowTool:
    code: ClassVar[str] = "slow_tool"
    title: ClassVar[str] = "Slow tool calls and silent streams"
    defaults: ClassVar[Mapping[str, Any]] = {"threshold_s": 30.0, "stream_silence_s": 60.0,
                                             "error_s": 300.0}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        threshold = float(config["threshold_s"])
        for bid, run_id, tool, n, max_s, total_s, args, ihash, spans, seqs in store.sql(TOOLS, [threshold]):
            cmd = command_text(tool, args, ihash or "")
            out.append(Finding(
                code=self.code, severity="error" if max_s >= float(config["error_s"]) else "warning",
                run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id}: {plural(n, f'{tool} call')} took over {threshold:g} s "
                         f"({seconds_text(total_s)} in all; slowest `{cmd}` {seconds_text(max_s)}); "
                         f"add a timeout or run it in the background."),
                evidence=evidence(spans, seqs),
                fields={"tool": tool, "slow_calls": n, "max_seconds": round(max_s, 3),
                        "total_seconds": round(total_s, 3), "slowest_command": cmd,
                        "threshold_s": threshold}))
        silence = float(config["stream_silence_s"])
        for bid, run_id, n, max_s, spans, seqs in store.sql(STREAMS, [silence]):
            out.append(Finding(
                code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id}: {plural(n, 'model stream')} stayed silent for over {silence:g} s "
                         f"(longest {seconds_text(max_s)}); set a stream idle timeout."),
                evidence=evidence(spans, seqs),
                fields={"silent_streams": n, "max_silent_seconds": round(max_s, 3),
                        "stream_silence_s": silence}))
        return out
