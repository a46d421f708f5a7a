"""``concurrent_writers``: two workers wrote events for one run at the same time (no fencing).

Signs, each reported with its numbers: events carrying two or more ``worker_id`` values interleaved
(A, B, A in ``seq`` order) while both were live; a ``seq`` number used twice; or ``seq`` going
backwards in file order. A clean hand-over (worker A finished, then B resumed) is not reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural
from .finding import Finding

# cheap first pass: only bundles with two workers or a repeated seq need the ordered pass below
SUSPECTS = """
SELECT bundle_id FROM events GROUP BY bundle_id
HAVING count(DISTINCT worker_id) > 1 OR count(seq) > count(DISTINCT seq)
"""

# worker of each event: its own worker_id, else the last run.started/run.resumed before it
QUERY = """
WITH suspects AS (SELECT unnest($bundles::INTEGER[]) AS bundle_id),
w AS (
    SELECT bundle_id, run_id, seq, ts, lineno,
           coalesce(worker_id, last_value(CASE WHEN type IN ('run.started', 'run.resumed') THEN worker_id END
                                          IGNORE NULLS) OVER (PARTITION BY bundle_id ORDER BY seq
                                                              ROWS UNBOUNDED PRECEDING)) AS worker
    FROM events WHERE bundle_id IN (SELECT bundle_id FROM suspects)),
sw AS (SELECT *, lag(worker) OVER (PARTITION BY bundle_id ORDER BY seq) AS prev FROM w),
switches AS (SELECT bundle_id, count(*) FILTER (WHERE worker IS DISTINCT FROM prev AND prev IS NOT NULL
                                                AND worker IS NOT NULL) AS n_switch,
                    list(seq ORDER BY seq) FILTER (WHERE worker IS DISTINCT FROM prev AND prev IS NOT NULL
                                                   AND worker IS NOT NULL) AS switch_seqs,
                    list(DISTINCT worker) FILTER (WHERE worker IS NOT NULL) AS workers
             FROM sw GROUP BY bundle_id),
dups AS (SELECT bundle_id, count(seq) - count(DISTINCT seq) AS dup_seqs FROM events
         WHERE bundle_id IN (SELECT bundle_id FROM suspects) GROUP BY bundle_id),
resumes AS (SELECT bundle_id, count(*) FILTER (WHERE type = 'run.resumed') AS n_resumed FROM events
            WHERE bundle_id IN (SELECT bundle_id FROM suspects) GROUP BY bundle_id)
SELECT r.bundle_id, r.run_id, s.n_switch, s.switch_seqs, s.workers, d.dup_seqs, coalesce(x.n_resumed, 0)
FROM runs r JOIN switches s USING (bundle_id) JOIN dups d USING (bundle_id)
LEFT JOIN resumes x USING (bundle_id)
ORDER BY r.bundle_id
"""


class ConcurrentWriters:
    code: ClassVar[str] = "concurrent_writers"
    title: ClassVar[str] = "Two workers writing one run (missing fencing)"
    defaults: ClassVar[Mapping[str, Any]] = {}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        suspects = [r[0] for r in store.sql(SUSPECTS)]
        if not suspects:
            return out
        for bid, run_id, n_switch, switch_seqs, workers, dup_seqs, n_resumed in store.sql(
                QUERY, {"bundles": suspects}):
            workers = sorted(workers or [])
            # a clean hand-over switches once per resume; more switches means interleaving
            interleaved = len(workers) >= 2 and n_switch > n_resumed
            if not interleaved and not dup_seqs:
                continue
            parts = []
            if interleaved:
                parts.append(f"events from {len(workers)} workers ({', '.join(workers)}) interleave "
                             f"{n_switch} times")
            if dup_seqs:
                parts.append(f"{plural(dup_seqs, 'seq number')} {'was' if dup_seqs == 1 else 'were'} "
                             "written twice")
            out.append(Finding(
                code=self.code, severity="error", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id}: {' and '.join(parts)}; two workers ran it at once — fence the run "
                         f"with a lease before resuming."),
                evidence=evidence(event_seqs=switch_seqs or []),
                fields={"workers": workers, "switches": n_switch, "duplicate_seqs": dup_seqs,
                        "resumes": n_resumed}))
        return out
