"""``budget``: tokens, cost, tool calls and deadline against the run's budget; context bloat.

The budget comes from the manifest or ``run.started.data.budget``: ``tokens``, ``usd``, ``tool_calls``,
``deadline`` (RFC 3339) or ``seconds``. For each limit: what was used, the share, the burn rate over the
run, and when the limit was (or at that rate would have been) reached. Separately, when the input
tokens per LLM call in the last quarter of the run are ``bloat_ratio`` times those of the first
quarter, the context is growing each step (context bloat) — the usual reason a budget runs out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, seconds_text, usd
from ._format import human_tokens, percent
from .finding import Finding

USAGE = """
SELECT r.bundle_id, r.run_id, CAST(r.budget AS VARCHAR), r.started_at, r.ended_at,
       (SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM llm_calls l WHERE l.bundle_id = r.bundle_id),
       (SELECT CAST(sum(CAST(cost_usd AS DECIMAL(18, 9))) AS DOUBLE) FROM llm_calls l WHERE l.bundle_id = r.bundle_id),
       (SELECT count(*) FROM llm_calls l WHERE l.bundle_id = r.bundle_id AND cost_usd IS NULL),
       (SELECT count(*) FROM tool_calls t WHERE t.bundle_id = r.bundle_id)
FROM runs r ORDER BY r.bundle_id
"""

# when the cumulative total first reached the limit: (ts, call count)
CROSSING = {
    "tokens": """SELECT min(ts) FROM (SELECT ts, sum(input_tokens + output_tokens) OVER (ORDER BY start_ns
                 ROWS UNBOUNDED PRECEDING) AS c FROM llm_calls WHERE bundle_id = ?) WHERE c >= ?""",
    "usd": """SELECT min(ts) FROM (SELECT ts, sum(CAST(cost_usd AS DECIMAL(18, 9))) OVER (ORDER BY start_ns
              ROWS UNBOUNDED PRECEDING) AS c FROM llm_calls WHERE bundle_id = ?) WHERE c >= ?""",
    "tool_calls": """SELECT min(ts) FROM (SELECT ts, row_number() OVER (ORDER BY start_ns) AS c
                     FROM tool_calls WHERE bundle_id = ?) WHERE c >= ?""",
}

BLOAT = """
WITH l AS (SELECT input_tokens, span_id, seq, ntile(4) OVER (ORDER BY start_ns) AS q, count(*) OVER () AS n
           FROM llm_calls WHERE bundle_id = ? AND input_tokens > 0)
SELECT avg(input_tokens) FILTER (WHERE q = 1), avg(input_tokens) FILTER (WHERE q = 4), any_value(n),
       regr_slope(input_tokens, rn), arg_max(span_id, input_tokens), max(input_tokens)
FROM (SELECT *, row_number() OVER () AS rn FROM l)
"""


def _when(t: datetime | None) -> str:
    return t.strftime("%H:%M:%S") if t else "?"


class Budget:
    code: ClassVar[str] = "budget"
    title: ClassVar[str] = "Budget used (tokens, cost, tool calls, deadline) and context bloat"
    defaults: ClassVar[Mapping[str, Any]] = {"warn_ratio": 0.8, "bloat_ratio": 3.0, "bloat_min_calls": 8}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        warn = float(config["warn_ratio"])
        for bid, run_id, budget_json, started, ended, tokens, cost, unpriced, tools in store.sql(USAGE):
            try:
                budget = json.loads(budget_json or "{}") or {}
            except ValueError:
                budget = {}
            run_s = (ended - started).total_seconds() if started and ended else None
            used: dict[str, float | None] = {"tokens": tokens, "usd": cost, "tool_calls": tools}
            for limit_key in ("tokens", "usd", "tool_calls"):
                limit = budget.get(limit_key)
                value = used[limit_key]
                if not isinstance(limit, (int, float)) or limit <= 0 or value is None:
                    continue
                share = value / limit
                if share < warn:
                    continue
                rate = (value / run_s * 60) if run_s else None
                crossed = store.sql(CROSSING[limit_key], [bid, limit])[0][0] if share >= 1 else None
                if crossed is not None:
                    when = f"ran out at {_when(crossed)}, {seconds_text((crossed - started).total_seconds())} in"
                elif rate and started:
                    eta = started + timedelta(minutes=limit / rate)
                    when = f"at that rate it would have run out at {_when(eta)}"
                else:
                    when = ""
                fmt = {"tokens": lambda v: human_tokens(int(v)) + " tokens", "usd": usd,
                       "tool_calls": lambda v: f"{int(v)} tool calls"}[limit_key]
                rate_txt = f", burning {fmt(rate)}/min" if rate else ""
                out.append(Finding(
                    code=self.code, severity="error" if share >= 1 else "warning", run_id=run_id,
                    bundle_id=bid,
                    summary=(f"Run {run_id} used {percent(share)} of its {limit_key.replace('_', ' ')} budget "
                             f"({fmt(value)} of {fmt(limit)}{rate_txt}); {when}."
                             .replace("; .", ".")),
                    evidence=evidence(),
                    fields={"limit": limit_key, "budget": limit, "used": value, "share": round(share, 4),
                            "rate_per_min": round(rate, 4) if rate else None,
                            "exhausted_at": crossed, "unpriced_calls": unpriced if limit_key == "usd" else None}))
            deadline = budget.get("deadline")
            seconds = budget.get("seconds")
            limit_s = None
            if isinstance(seconds, (int, float)):
                limit_s = float(seconds)
            elif isinstance(deadline, str) and started:
                try:
                    limit_s = (datetime.fromisoformat(deadline.replace("Z", "+00:00")).replace(tzinfo=None)
                               - started).total_seconds()
                except ValueError:
                    limit_s = None
            if limit_s and run_s and run_s / limit_s >= warn:
                share = run_s / limit_s
                out.append(Finding(
                    code=self.code, severity="error" if share >= 1 else "warning", run_id=run_id,
                    bundle_id=bid,
                    summary=(f"Run {run_id} took {seconds_text(run_s)}, {percent(share)} of its time budget "
                             f"({seconds_text(limit_s)})."),
                    fields={"limit": "deadline", "budget": limit_s, "used": run_s, "share": round(share, 4)}))
            first_q, last_q, n, slope, top_span, top = store.sql(BLOAT, [bid])[0]
            if (n or 0) >= int(config["bloat_min_calls"]) and first_q and last_q \
                    and last_q / first_q >= float(config["bloat_ratio"]):
                out.append(Finding(
                    code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id}'s context grew {last_q / first_q:.1f}× over {n} LLM calls "
                             f"(input {human_tokens(int(first_q))} → {human_tokens(int(last_q))} tokens per call, "
                             f"+{slope:.0f} per call): summarise or trim history."),
                    evidence=evidence([top_span]),
                    fields={"limit": "context_growth", "growth": round(last_q / first_q, 3),
                            "tokens_per_call_first_quarter": round(first_q, 1),
                            "tokens_per_call_last_quarter": round(last_q, 1),
                            "tokens_per_call_slope": round(slope, 3), "max_input_tokens": top,
                            "llm_calls": n}))
        return out
