"""``unresolved_operation``: an ``operation.intent`` without a final ``operation.outcome``.

The run declared it was about to do something in the outside world (deploy, pay, send, write) and
never recorded whether it happened — or recorded ``unknown``. Retrying blindly could do it twice;
a person has to check the target first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence
from .finding import Finding

QUERY = """
SELECT o.bundle_id, o.run_id, o.operation_id, o.kind, o.target, o.status, o.intent_seq, o.intent_ts,
       o.outcome_seq, r.status AS run_status
FROM operations o JOIN runs r USING (bundle_id)
WHERE o.status IN ('pending', 'unknown')
ORDER BY o.bundle_id, o.intent_seq
"""


class UnresolvedOperation:
    code: ClassVar[str] = "unresolved_operation"
    title: ClassVar[str] = "Operation with no known outcome (needs a human)"
    defaults: ClassVar[Mapping[str, Any]] = {}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for bid, run_id, op_id, kind, target, status, iseq, its, oseq, run_status in store.sql(QUERY):
            what = f"{kind or 'operation'} → {target}" if target else (kind or "operation")
            state = ("has no outcome" if status == "pending" else "ended with outcome `unknown`")
            out.append(Finding(
                code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id}: operation {op_id} ({what}), declared at event #{iseq}, {state}; "
                         f"check {target or 'the target'} before retrying or resuming."),
                evidence=evidence(event_seqs=[iseq, oseq]),
                fields={"operation_id": op_id, "kind": kind, "target": target, "status": status,
                        "intent_seq": iseq, "intent_ts": its, "run_status": run_status,
                        "needs_human": True}))
        return out
