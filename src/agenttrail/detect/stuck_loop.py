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
    SELECT t.bundle_id, t.run_id, t.tool, coalesce(t.input_hash, '') AS input_hash, t.arguments, t.status,
           t.error, t.span_id, t.seq_start, t.start_ns, t.end_ns,
           hash(t.tool, t.input_hash, t.status, t.error, r.result) AS key
    FROM tool_calls t
    LEFT JOIN (SELECT bundle_id, span_id, attr_values[list_position(attr_keys, 'gen_ai.tool.call.result')] AS result
               FROM spans WHERE kind = 'tool') r ON t.source = 'span' AND r.bundle_id = t.bundle_id
                                                 AND r.span_id = t.span_id),
f AS (SELECT *, CASE WHEN key IS DISTINCT FROM lag(key) OVER w THEN 1 ELSE 0 END AS new_streak
      FROM c WINDOW w AS (PARTITION BY bundle_id ORDER BY start_ns, seq_start)),
g AS (SELECT *, sum(new_streak) OVER (PARTITION BY bundle_id ORDER BY start_ns, seq_start
                                      ROWS UNBOUNDED PRECEDING) AS streak
      FROM f),
long AS (SELECT bundle_id, streak FROM g GROUP BY ALL HAVING count(*) >= $min_repeats)
SELECT bundle_id, any_value(run_id), any_value(tool), any_value(input_hash), any_value(arguments),
       any_value(status), any_value(error), count(*) AS n,
       list(span_id ORDER BY start_ns), list(seq_start ORDER BY start_ns),
       (max(end_ns) - min(start_ns)) / 1e9 AS seconds
FROM g SEMI JOIN long USING (bundle_id, streak) GROUP BY bundle_id, streak
ORDER BY bundle_id, n DESC
"""


class StuckLoop:
    code: ClassVar[str] = "stuck_loop"
    title: ClassVar[str] = "Same call repeated with no change in result"
    defaults: ClassVar[Mapping[str, Any]] = {"min_repeats": 4, "error_repeats": 8}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for (bid, run_id, tool, ihash, args, status, error, n, spans, seqs,
             seconds) in store.sql(QUERY, {"min_repeats": int(config["min_repeats"])}):
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
