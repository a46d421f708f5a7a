"""``stuck_loop``: the same call, again and again, with the same result — no progress.

A streak is a run of consecutive tool calls with one identity (tool + argument hash) whose result did
not change (same status, same error, same result hash when the result was captured). A streak of at
least ``min_repeats`` calls is reported; the longest per run first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, seconds_text
from ._format import command_text, short_error
from .finding import Finding

QUERY = """
WITH c AS (
    SELECT bundle_id, run_id, tool, coalesce(input_hash, '') AS input_hash, arguments, status, error,
           span_id, seq_start, start_ns, end_ns,
           tool || '#' || coalesce(input_hash, '') || '|' || status || '|' || coalesce(error, '') || '|'
             || coalesce(result_hash, '') AS key
    FROM (SELECT t.*, substr(sha256(s.attributes['gen_ai.tool.call.result']), 1, 16) AS result_hash
          FROM tool_calls t LEFT JOIN spans s ON s.bundle_id = t.bundle_id AND s.span_id = t.span_id
                                              AND t.source = 'span')),
o AS (SELECT *, row_number() OVER w - row_number() OVER (PARTITION BY bundle_id, key ORDER BY start_ns, seq_start) AS grp
      FROM c WINDOW w AS (PARTITION BY bundle_id ORDER BY start_ns, seq_start))
SELECT bundle_id, any_value(run_id), any_value(tool), any_value(input_hash), any_value(arguments),
       any_value(status), any_value(error), count(*) AS n,
       list(span_id ORDER BY start_ns), list(seq_start ORDER BY start_ns),
       (max(end_ns) - min(start_ns)) / 1e9 AS seconds
FROM o GROUP BY bundle_id, key, grp
HAVING count(*) >= ?
ORDER BY bundle_id, n DESC
"""


class StuckLoop:
    code: ClassVar[str] = "stuck_loop"
    title: ClassVar[str] = "Same call repeated with no change in result"
    defaults: ClassVar[Mapping[str, Any]] = {"min_repeats": 4, "error_repeats": 8}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for (bid, run_id, tool, ihash, args, status, error, n, spans, seqs,
             seconds) in store.sql(QUERY, [int(config["min_repeats"])]):
            cmd = command_text(tool, args, ihash)
            result = f"failing with {short_error(error)}" if status == "error" and error else (
                "failing" if status == "error" else "returning the same result")
            out.append(Finding(
                code=self.code, severity="error" if n >= int(config["error_repeats"]) else "warning",
                run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} called `{cmd}` {n} times in a row over {seconds_text(seconds)}, "
                         f"{result} every time: no progress."),
                evidence=evidence(spans, seqs),
                fields={"repeats": n, "tool": tool, "command": cmd, "input_hash": ihash,
                        "status": status, "error": error, "seconds": round(seconds, 3)}))
        return out
