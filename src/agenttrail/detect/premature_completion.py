"""``premature_completion``: the run said it succeeded, but the evidence says otherwise.

A run whose status is ``succeeded`` is reported when its last ``evaluation`` event's verdict is not
``pass``, when items of ``progress/feature-list.json`` are still failing, or (``require_evaluation``)
when no evaluation ran at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence
from .finding import Finding

QUERY = """
SELECT r.bundle_id, r.run_id,
       (SELECT arg_max(data->>'verdict', seq) FROM events e WHERE e.bundle_id = r.bundle_id AND e.type = 'evaluation'),
       (SELECT max(seq) FROM events e WHERE e.bundle_id = r.bundle_id AND e.type = 'evaluation'),
       (SELECT count(*) FROM events e WHERE e.bundle_id = r.bundle_id AND e.type = 'evaluation'),
       (SELECT count(*) FROM features f WHERE f.bundle_id = r.bundle_id),
       (SELECT count(*) FROM features f WHERE f.bundle_id = r.bundle_id AND NOT coalesce(f.passes, false)),
       (SELECT list(f.name ORDER BY f.idx) FROM features f WHERE f.bundle_id = r.bundle_id
          AND NOT coalesce(f.passes, false)),
       (SELECT max(seq) FROM events e WHERE e.bundle_id = r.bundle_id AND e.type = 'run.finished')
FROM runs r
WHERE r.status = 'succeeded'
ORDER BY r.bundle_id
"""


class PrematureCompletion:
    code: ClassVar[str] = "premature_completion"
    title: ClassVar[str] = "Declared success while evaluations or features fail"
    defaults: ClassVar[Mapping[str, Any]] = {"require_evaluation": True}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for bid, run_id, verdict, eval_seq, n_eval, n_feat, n_fail, failing, fin_seq in store.sql(QUERY):
            reasons: list[str] = []
            if n_eval and verdict != "pass":
                reasons.append(f"its last evaluation (event #{eval_seq}) said {verdict}")
            if n_fail:
                names = ", ".join(f"`{x}`" for x in (failing or [])[:3])
                reasons.append(f"{n_fail} of {n_feat} feature-list items still fail ({names}"
                               f"{', …' if n_fail > 3 else ''})")
            severity = "error"
            if not reasons and not n_eval and config.get("require_evaluation", True):
                reasons.append("no evaluation ran at all")
                severity = "warning"
            if not reasons:
                continue
            out.append(Finding(
                code=self.code, severity=severity, run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} declared success but {' and '.join(reasons)}; gate completion on a "
                         f"passing evaluation."),
                evidence=evidence(event_seqs=[eval_seq, fin_seq]),
                fields={"last_verdict": verdict, "evaluations": n_eval, "features": n_feat,
                        "failing_features": failing or [], "failing_feature_count": n_fail}))
        return out
