"""``duplicate_side_effect``: a side-effecting call executed more than once with the same identity.

Side-effecting tool calls (``@tool(side_effect=True)``, ``tool.started.data.side_effect``) that
succeeded twice or more with the same tool + argument hash (or the same idempotency key), and
operations with the same kind, target and argument hash that succeeded more than once. Typical cause:
a resume that replayed work done before the crash. Side effects with no idempotency key are reported
once per run as a warning: the next resume could duplicate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural
from ._format import command_text
from .finding import Finding

DUPLICATES = """
SELECT t.bundle_id, any_value(t.run_id), t.tool, coalesce(t.idempotency_key, t.input_hash) AS identity,
       any_value(t.arguments), any_value(t.input_hash), count(*) AS n,
       list(t.span_id ORDER BY t.start_ns), list(t.seq_start ORDER BY t.start_ns),
       (SELECT count(*) FROM events e WHERE e.bundle_id = t.bundle_id AND e.type = 'run.resumed'
          AND epoch_us(e.ts) * 1000 BETWEEN min(t.start_ns) AND max(t.start_ns)) AS resumes_between,
       bool_or(t.idempotency_key IS NOT NULL) AS keyed
FROM tool_calls t
WHERE t.side_effect AND t.status = 'ok'
GROUP BY t.bundle_id, t.tool, identity
HAVING count(*) > 1
ORDER BY t.bundle_id, n DESC
"""

OPERATIONS = """
SELECT bundle_id, any_value(run_id), kind, target, args_hash, count(*) AS n, list(operation_id),
       list(intent_seq ORDER BY intent_seq)
FROM operations WHERE status = 'succeeded' AND args_hash IS NOT NULL
GROUP BY bundle_id, kind, target, args_hash HAVING count(*) > 1
"""

UNKEYED = """
SELECT bundle_id, any_value(run_id), count(*) AS n, list(DISTINCT tool), list(span_id), list(seq_start)
FROM tool_calls WHERE side_effect AND idempotency_key IS NULL
GROUP BY bundle_id ORDER BY bundle_id
"""


class DuplicateSideEffect:
    code: ClassVar[str] = "duplicate_side_effect"
    title: ClassVar[str] = "Side effect executed more than once, or without an idempotency key"
    defaults: ClassVar[Mapping[str, Any]] = {"report_unkeyed": True}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for bid, run_id, tool, ident, args, ihash, n, spans, seqs, resumes, keyed in store.sql(DUPLICATES):
            cmd = command_text(tool, args, ihash or "")
            why = f" across {plural(resumes, 'resume')}" if resumes else ""
            out.append(Finding(
                code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} executed side-effecting `{cmd}` {n} times with the same "
                         f"{'idempotency key' if keyed else 'arguments'}{why}; check the target for "
                         f"duplicates and make the tool idempotent."),
                evidence=evidence(spans, seqs),
                fields={"tool": tool, "command": cmd, "identity": ident, "executions": n,
                        "resumes_between": resumes, "idempotency_key": ident if keyed else None}))
        for bid, run_id, kind, target, ahash, n, op_ids, seqs in store.sql(OPERATIONS):
            out.append(Finding(
                code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} completed operation {kind} → {target} {n} times with the same "
                         f"arguments (operations {', '.join(op_ids)})."),
                evidence=evidence(event_seqs=seqs),
                fields={"kind": kind, "target": target, "args_hash": ahash, "executions": n,
                        "operation_ids": op_ids}))
        if config.get("report_unkeyed", True):
            for bid, run_id, n, tools, spans, seqs in store.sql(UNKEYED):
                out.append(Finding(
                    code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id} made {plural(n, 'side-effecting call')} "
                             f"({', '.join(sorted(tools))}) without an idempotency key: a resume could "
                             f"repeat them."),
                    evidence=evidence(spans, seqs),
                    fields={"unkeyed_calls": n, "tools": sorted(tools)}))
        return out
