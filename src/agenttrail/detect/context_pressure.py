"""``context_pressure``: handoffs written while the context was far from full ("context anxiety").

A ``context.handoff`` event (``context_tokens``, ``context_window``) below ``low_ratio`` of the window
means the agent summarised and restarted early, losing working memory for nothing. Reported with the
context growth per LLM call, which tells how soon the window really would have filled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural
from ._format import human_tokens, percent
from .finding import Finding

QUERY = """
WITH h AS (
    SELECT bundle_id, run_id, seq, data->>'reason' AS reason,
           TRY_CAST(data->>'context_tokens' AS DOUBLE) AS used,
           TRY_CAST(data->>'context_window' AS DOUBLE) AS win
    FROM events WHERE type = 'context.handoff')
SELECT h.bundle_id, any_value(h.run_id), count(*) AS handoffs,
       count(*) FILTER (WHERE used / win < ?) AS early, min(used / win), list(seq ORDER BY seq),
       any_value(reason), any_value(win),
       (SELECT regr_slope(input_tokens, start_ns / 1e9) FROM llm_calls l WHERE l.bundle_id = h.bundle_id),
       (SELECT (max(input_tokens) - min(input_tokens)) / greatest(count(*) - 1, 1) FROM llm_calls l
         WHERE l.bundle_id = h.bundle_id)
FROM h WHERE win > 0
GROUP BY h.bundle_id ORDER BY h.bundle_id
"""


class ContextPressure:
    code: ClassVar[str] = "context_pressure"
    title: ClassVar[str] = "Handoff or summary while context use was low"
    defaults: ClassVar[Mapping[str, Any]] = {"low_ratio": 0.5}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        low = float(config["low_ratio"])
        for bid, run_id, n, early, min_ratio, seqs, reason, win, _slope, per_call in store.sql(QUERY, [low]):
            if not early:
                continue
            calls_left = ((win * (1 - min_ratio)) / per_call) if per_call and per_call > 0 else None
            tail = (f"; at +{human_tokens(int(per_call))} tokens per call the window had room for about "
                    f"{calls_left:.0f} more calls" if calls_left else "")
            out.append(Finding(
                code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} handed off {plural(early, 'time')} with the context "
                         f"{percent(min_ratio)} full (of {human_tokens(int(win))})"
                         + (f", reason: {reason}" if reason else "") + tail
                         + "; raise the handoff threshold."),
                evidence=evidence(event_seqs=seqs),
                fields={"handoffs": n, "early_handoffs": early, "min_context_ratio": round(min_ratio, 4),
                        "context_window": win, "tokens_per_call": round(per_call, 1) if per_call else None,
                        "calls_left_estimate": round(calls_left, 1) if calls_left else None}))
        return out
