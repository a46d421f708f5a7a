"""``retry_loop``: a repeating cycle of tool calls after a failure, and what it cost.

A tool call's identity is its tool name plus its argument hash. After the first failing call (the
*trigger*), the detector looks for the longest stretch of calls that repeats with a period of 1..k
calls for at least ``min_iterations`` full cycles. Tokens are attributed to the loop when an LLM call
*starts* after the trigger ended and no later than the loop's last call ended — the calls that chose
the loop's commands — and compared with all LLM tokens of the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..store import Store
from ._format import command_text, human_tokens, percent, short_error
from .finding import Evidence, Finding


@dataclass(frozen=True)
class Call:
    tool: str
    input_hash: str
    arguments: str | None
    status: str
    error: str | None
    span_id: str | None
    seq: int | None
    start_ns: int
    end_ns: int

    @property
    def identity(self) -> str:
        return f"{self.tool}#{self.input_hash}"

    @property
    def failed(self) -> bool:
        return self.status == "error"


def find_cycle(ids: Sequence[str], max_period: int, min_iterations: int) -> tuple[int, int, int] | None:
    """The longest periodic stretch: (start, end exclusive, period), or None.

    For each period k, ``ids[j] == ids[j + k]`` over a maximal range of j means ids[s : e + k] repeats
    with period k. Longest coverage wins; ties go to the shorter period.
    """
    best: tuple[int, int, int] | None = None
    n = len(ids)
    for k in range(1, max_period + 1):
        j = 0
        while j + k < n:
            if ids[j] != ids[j + k]:
                j += 1
                continue
            s = j
            while j + k < n and ids[j] == ids[j + k]:
                j += 1
            start, end = s, j + k
            if len(set(ids[start:start + k])) != k:
                continue  # a shorter period explains it (e.g. a a a a with k=2)
            if (end - start) // k >= min_iterations and (
                    best is None or end - start > best[1] - best[0]):
                best = (start, end, k)
    return best


MAX_EVIDENCE = 200

# Positions j with id[j] == id[j + k], grouped into maximal runs per period k (gaps and islands): a run
# of matches from s to j_end - 1 means ids[s : j_end + k] repeats with period k — what find_cycle walks.
def _islands_sql(max_period: int) -> str:
    # lead(id, k) per period k in one ordered pass; a join on id would pair every repeat with every other
    eqs = ", ".join(f"coalesce(id = lead(id, {k}) OVER w, false)" for k in range(1, max_period + 1))
    return f"""
WITH c AS (SELECT i, id FROM _rl_calls WHERE bundle_id = $bid),
e AS (SELECT i, [{eqs}] AS eq FROM c WINDOW w AS (ORDER BY i)),
m AS (SELECT i, k FROM (SELECT i, unnest(eq) AS hit, generate_subscripts(eq, 1) AS k FROM e) WHERE hit),
isl AS (SELECT k, min(i) AS s, max(i) + 1 AS j_end
        FROM (SELECT k, i, i - row_number() OVER (PARTITION BY k ORDER BY i) AS g FROM m) GROUP BY k, g
        HAVING (max(i) + 1 + k - min(i)) // k >= $min_iterations)
SELECT isl.k, isl.s, isl.j_end + isl.k AS e, count(DISTINCT c.id) AS distinct_ids
FROM isl JOIN c ON c.i >= isl.s AND c.i < isl.s + isl.k
GROUP BY ALL ORDER BY isl.k, isl.s
"""


def find_cycle_sql(store: Store, bundle_id: int, max_period: int,
                   min_iterations: int) -> tuple[int, int, int] | None:
    """``find_cycle`` over a bundle's calls in ``_rl_calls``, computed in DuckDB (same answer)."""
    best: tuple[int, int, int] | None = None
    if max_period < 1:
        return None
    for k, start, end, distinct_ids in store.sql(_islands_sql(max_period),
                                                 {"bid": bundle_id, "min_iterations": min_iterations}):
        if distinct_ids != k:
            continue  # a shorter period explains it
        if best is None or end - start > best[1] - best[0]:
            best = (start, end, k)
    return best


class RetryLoop:
    code: ClassVar[str] = "retry_loop"
    title: ClassVar[str] = "Retry loop after a failure"
    defaults: ClassVar[Mapping[str, Any]] = {"max_period": 6, "min_iterations": 3,
                                             "error_token_share": 0.25}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        findings: list[Finding] = []
        store.con.execute("""
            CREATE OR REPLACE TEMP TABLE _rl_calls AS
            SELECT bundle_id, row_number() OVER (PARTITION BY bundle_id ORDER BY start_ns, seq_start) - 1 AS i,
                   tool || '#' || coalesce(input_hash, '') AS id, tool, coalesce(input_hash, '') AS input_hash,
                   arguments, status, error, span_id, seq_start, CAST(start_ns AS BIGINT) AS start_ns,
                   CAST(end_ns AS BIGINT) AS end_ns
            FROM tool_calls
            WHERE bundle_id IN (SELECT DISTINCT bundle_id FROM tool_calls WHERE status = 'error')""")
        try:
            runs = store.sql("SELECT bundle_id, run_id FROM runs WHERE bundle_id IN "
                             "(SELECT bundle_id FROM _rl_calls) ORDER BY bundle_id")
            for bundle_id, run_id in runs:
                finding = self._one(store, bundle_id, run_id, config)
                if finding is not None:
                    findings.append(finding)
        finally:
            store.con.execute("DROP TABLE IF EXISTS _rl_calls")
        return findings

    @staticmethod
    def _calls(store: Store, bundle_id: int, lo: int, hi: int) -> list[Call]:
        rows = store.sql("""SELECT tool, input_hash, arguments, status, error, span_id, seq_start, start_ns, end_ns
                            FROM _rl_calls WHERE bundle_id = ? AND i >= ? AND i < ? ORDER BY i""",
                         [bundle_id, lo, hi])
        return [Call(*r) for r in rows]

    def _one(self, store: Store, bundle_id: int, run_id: str, config: Mapping[str, Any]) -> Finding | None:
        first_fail = store.sql("SELECT min(i) FROM _rl_calls WHERE bundle_id = ? AND status = 'error'",
                               [bundle_id])[0][0]
        if first_fail is None:
            return None
        found = find_cycle_sql(store, bundle_id, int(config["max_period"]), int(config["min_iterations"]))
        if found is None:
            return None
        start, end, period = found
        # the trigger: the first failure at or before the loop; the loop is what follows it
        trigger_i = first_fail if first_fail <= start else store.sql(
            "SELECT min(i) FROM _rl_calls WHERE bundle_id = ? AND status = 'error' AND i >= ? AND i < ?",
            [bundle_id, start, end])[0][0]
        if trigger_i is None:
            return None
        loop_start = max(start, trigger_i + 1)
        iterations = (end - loop_start) // period
        if iterations < int(config["min_iterations"]):
            return None
        trigger = self._calls(store, bundle_id, trigger_i, trigger_i + 1)[0]
        head = self._calls(store, bundle_id, loop_start, min(end, loop_start + MAX_EVIDENCE))
        cycle = head[:period]
        last = self._calls(store, bundle_id, end - 1, end)[0]
        loop_failures = store.sql("SELECT count(*) FROM _rl_calls WHERE bundle_id = ? AND status = 'error' "
                                  "AND i >= ? AND i < ?", [bundle_id, loop_start, end])[0][0]
        n_loop = end - loop_start
        window_lo, window_hi = trigger.end_ns, last.end_ns
        tokens_total, tokens_loop, n_llm, cost_loop = store.sql("""
            SELECT coalesce(sum(input_tokens + output_tokens), 0),
                   coalesce(sum(input_tokens + output_tokens)
                            FILTER (WHERE start_ns >= $lo AND start_ns <= $hi), 0),
                   count(*) FILTER (WHERE start_ns >= $lo AND start_ns <= $hi),
                   sum(CAST(cost_usd AS DECIMAL(18, 9))) FILTER (WHERE start_ns >= $lo AND start_ns <= $hi)
            FROM llm_calls WHERE bundle_id = $bid""",
            {"lo": window_lo, "hi": window_hi, "bid": bundle_id})[0]
        run_lo, run_hi = store.sql("""
            SELECT min(s), max(e) FROM (
                SELECT CAST(start_ns AS BIGINT) s, CAST(end_ns AS BIGINT) e FROM spans WHERE bundle_id = ?
                UNION ALL SELECT CAST(start_ns AS BIGINT), CAST(end_ns AS BIGINT) FROM tool_calls WHERE bundle_id = ?
                UNION ALL SELECT CAST(start_ns AS BIGINT), CAST(end_ns AS BIGINT) FROM llm_calls WHERE bundle_id = ?)""",
            [bundle_id, bundle_id, bundle_id])[0]
        run_seconds = max((run_hi or 0) - (run_lo or 0), 1) / 1e9
        loop_seconds = max(window_hi - window_lo, 0) / 1e9
        token_share = (tokens_loop / tokens_total) if tokens_total else 0.0
        commands = [command_text(c.tool, c.arguments, c.input_hash) for c in cycle]
        trigger_cmd = command_text(trigger.tool, trigger.arguments, trigger.input_hash)
        error = short_error(trigger.error)
        tokens_phrase = (f"{percent(token_share)} of its tokens ({human_tokens(int(tokens_loop))})"
                         if tokens_total else f"{percent(loop_seconds / run_seconds)} of its time")
        summary = (f"Run {run_id} spent {tokens_phrase} in a {period}-command retry loop "
                   f"({iterations} iterations) after `{trigger_cmd}` failed"
                   + (f" with {error}" if error else "") + ".")
        severity = "error" if token_share >= float(config["error_token_share"]) else "warning"
        evidence = Evidence(
            span_ids=[s for s in [trigger.span_id, *(c.span_id for c in head)] if s][:MAX_EVIDENCE],
            event_seqs=[s for s in [trigger.seq, *(c.seq for c in head)] if s is not None][:MAX_EVIDENCE])
        return Finding(
            code=self.code, severity=severity, run_id=run_id, summary=summary, evidence=evidence,
            bundle_id=bundle_id,
            fields={
                "token_share": round(token_share, 4),
                "tokens": int(tokens_loop),
                "tokens_total": int(tokens_total),
                "llm_calls": int(n_llm),
                "cost_usd": None if cost_loop is None else round(float(cost_loop), 6),
                "time_share": round(min(loop_seconds / run_seconds, 1.0), 4),
                "seconds": round(loop_seconds, 3),
                "iterations": iterations,
                "period": period,
                "calls": n_loop,
                "failed_calls": loop_failures,
                "commands": commands,
                "trigger": {"tool": trigger.tool, "command": trigger_cmd, "error": trigger.error,
                            "span_id": trigger.span_id, "seq": trigger.seq,
                            "input_hash": trigger.input_hash},
            })


__all__ = ["Call", "RetryLoop", "find_cycle", "find_cycle_sql"]
