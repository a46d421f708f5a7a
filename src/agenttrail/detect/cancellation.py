"""``cancellation``: more than one terminal state, or work recorded after the run finished.

Reported when a run has two or more ``run.finished`` events, when the manifest's status disagrees
with the last ``run.finished``, or when model/tool/operation events follow the first ``run.finished``
(work that kept running after cancel or failure — often a background task nobody awaited).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural
from .finding import Finding

QUERY = """
WITH fin AS (
    SELECT bundle_id, list(data->>'status' ORDER BY seq) AS statuses, min(seq) AS first_seq,
           list(seq ORDER BY seq) AS seqs
    FROM events WHERE type = 'run.finished' GROUP BY bundle_id),
after AS (
    SELECT e.bundle_id, count(*) AS n, list(e.seq ORDER BY e.seq) AS seqs, list(DISTINCT e.type) AS types,
           max(epoch(e.ts)) - any_value(epoch(f.ts)) AS seconds_after
    FROM events e JOIN (SELECT bundle_id, seq, ts FROM events WHERE type = 'run.finished') f
         ON f.bundle_id = e.bundle_id AND f.seq = (SELECT min(seq) FROM events x
                                                     WHERE x.bundle_id = e.bundle_id AND x.type = 'run.finished')
    WHERE e.seq > f.seq AND e.type NOT IN ('run.finished', 'run.resumed', 'run.started')
      AND NOT EXISTS (SELECT 1 FROM events r WHERE r.bundle_id = e.bundle_id AND r.type = 'run.resumed'
                      AND r.seq > f.seq AND r.seq < e.seq)
    GROUP BY e.bundle_id)
SELECT r.bundle_id, r.run_id, r.status, fin.statuses, fin.seqs, a.n, a.seqs, a.types, a.seconds_after,
       (SELECT count(*) FROM events x WHERE x.bundle_id = r.bundle_id AND x.type = 'run.resumed') AS resumes
FROM runs r LEFT JOIN fin USING (bundle_id) LEFT JOIN after a USING (bundle_id)
ORDER BY r.bundle_id
"""


class Cancellation:
    code: ClassVar[str] = "cancellation"
    title: ClassVar[str] = "Several terminal states, or work after the run finished"
    defaults: ClassVar[Mapping[str, Any]] = {}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for (bid, run_id, manifest_status, statuses, fin_seqs, n_after, after_seqs, types,
             seconds_after, resumes) in store.sql(QUERY):
            statuses = statuses or []
            # a resumed run finishes once per attempt; only distinct endings after its last resume count
            terminal = len(statuses) - resumes if resumes else len(statuses)
            if terminal > 1 or (len(set(statuses)) > 1 and not resumes):
                out.append(Finding(
                    code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id} finished {len(statuses)} times "
                             f"({' then '.join(str(s) for s in statuses)}): two code paths both ended "
                             f"the run; make finishing idempotent and keep the first outcome."),
                    evidence=evidence(event_seqs=fin_seqs),
                    fields={"terminal_states": statuses, "finished_seqs": fin_seqs}))
            elif statuses and manifest_status and manifest_status != statuses[-1]:
                out.append(Finding(
                    code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id}: the manifest says {manifest_status} but the last run.finished "
                             f"event says {statuses[-1]}."),
                    evidence=evidence(event_seqs=fin_seqs),
                    fields={"terminal_states": statuses, "manifest_status": manifest_status}))
            if n_after:
                out.append(Finding(
                    code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                    summary=(f"Run {run_id} recorded {plural(n_after, 'event')} "
                             f"({', '.join(sorted(types))}) up to {seconds_after:.1f} s after it finished: "
                             f"work kept running after {statuses[0] if statuses else 'the end'}; "
                             f"cancel and await background tasks."),
                    evidence=evidence(event_seqs=after_seqs),
                    fields={"events_after_finish": n_after, "types": sorted(types),
                            "seconds_after": round(seconds_after, 3)}))
        return out
