"""``rate_limit``: 429s and ``rate_limited`` events per endpoint, and the time they cost.

Counts ``rate_limited`` events (``data.endpoint``, ``data.retry_after_s``) and LLM/tool calls that
failed with a rate-limit error (HTTP 429, ``RateLimitError``, ``rate_limit`` in error.type or message).
The time cost is the sum of ``retry_after_s`` plus the duration of the failed calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, seconds_text
from .finding import Finding

QUERY = """
WITH hits AS (
    SELECT bundle_id, run_id, coalesce(data->>'endpoint', data->>'provider', 'unknown') AS endpoint,
           coalesce(TRY_CAST(data->>'retry_after_s' AS DOUBLE), 0) AS wait_s, NULL AS span_id, seq
    FROM events WHERE type = 'rate_limited'
    UNION ALL
    SELECT bundle_id, run_id, coalesce(provider, model, 'unknown'), coalesce(duration_ms, 0) / 1000.0,
           span_id, seq
    FROM llm_calls
    WHERE regexp_matches(coalesce(error_type, '') || ' ' || coalesce(error, ''),
                         '(?i)429|rate.?limit|too many requests')
      AND bundle_id NOT IN (SELECT bundle_id FROM events WHERE type = 'rate_limited')
    UNION ALL
    SELECT bundle_id, run_id, tool, coalesce(latency_ms, 0) / 1000.0, span_id, seq_start
    FROM tool_calls
    WHERE regexp_matches(coalesce(error_type, '') || ' ' || coalesce(error, ''),
                         '(?i)429|rate.?limit|too many requests'))
SELECT h.bundle_id, any_value(h.run_id), h.endpoint, count(*) AS n, sum(wait_s) AS wait_s,
       list(span_id), list(seq), any_value(epoch(r.ended_at) - epoch(r.started_at)) AS run_s
FROM hits h JOIN runs r USING (bundle_id)
GROUP BY h.bundle_id, h.endpoint
HAVING count(*) >= ?
ORDER BY h.bundle_id, n DESC
"""


class RateLimit:
    code: ClassVar[str] = "rate_limit"
    title: ClassVar[str] = "Rate limited (429) and the time it cost"
    defaults: ClassVar[Mapping[str, Any]] = {"min_events": 1, "warning_time_share": 0.05}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for bid, run_id, endpoint, n, wait_s, spans, seqs, run_s in store.sql(
                QUERY, [int(config["min_events"])]):
            share = (wait_s / run_s) if run_s else 0.0
            out.append(Finding(
                code=self.code,
                severity="warning" if share >= float(config["warning_time_share"]) else "info",
                run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} was rate-limited {n} times by {endpoint}, waiting "
                         f"{seconds_text(wait_s)} ({share * 100:.0f}% of the run); lower concurrency or "
                         f"raise the quota."),
                evidence=evidence(spans, seqs),
                fields={"endpoint": endpoint, "events": n, "wait_seconds": round(wait_s, 3),
                        "time_share": round(share, 4)}))
        return out
