"""``workspace_drift``: files changed outside the paths the run declared it would write.

Declared paths (globs) come from ``plan`` or ``run.started`` events: ``data.write_paths`` (or
``allowed_paths``). Changed files come from ``workspace.diff`` and from ``write_file``-like tool calls
whose arguments name a ``path``. A run that declared nothing is not judged.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from ..store import Store
from ._common import evidence, plural
from .finding import Finding

DECLARED = """
SELECT bundle_id, any_value(run_id),
       list(CAST(coalesce(data->'write_paths', data->'allowed_paths') AS VARCHAR) ORDER BY seq), list(seq)
FROM events WHERE type IN ('plan', 'run.started')
  AND coalesce(data->'write_paths', data->'allowed_paths') IS NOT NULL
GROUP BY bundle_id ORDER BY bundle_id
"""

CHANGED = """
SELECT path, 'workspace.diff', NULL, NULL FROM workspace_changes WHERE bundle_id = ?
UNION ALL
SELECT coalesce(json_extract_string(arguments, '$.path'), json_extract_string(arguments, '$.file'),
                json_extract_string(arguments, '$.kwargs.path')), tool, span_id, seq_start
FROM tool_calls WHERE bundle_id = ? AND status = 'ok' AND side_effect IS NOT NULL
  AND regexp_matches(tool, '(?i)write|edit|create|delete|move|patch') AND json_valid(arguments)
"""


def _matches(path: str, globs: list[str]) -> bool:
    p = path.lstrip("./")
    return any(fnmatch.fnmatch(p, g.lstrip("./")) or p.startswith(g.rstrip("*").rstrip("/").lstrip("./") + "/")
               for g in globs)


class WorkspaceDrift:
    code: ClassVar[str] = "workspace_drift"
    title: ClassVar[str] = "Files changed outside the declared write paths"
    defaults: ClassVar[Mapping[str, Any]] = {}

    def detect(self, store: Store, config: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        for bid, run_id, declared_json, decl_seqs in store.sql(DECLARED):
            globs: list[str] = []
            for d in declared_json:
                v = json.loads(d)
                globs.extend([v] if isinstance(v, str) else [str(x) for x in v])
            outside: dict[str, tuple[str, Any, Any]] = {}
            for path, source, span_id, seq in store.sql(CHANGED, [bid, bid]):
                if path and not _matches(path, globs) and path not in outside:
                    outside[path] = (source, span_id, seq)
            if not outside:
                continue
            paths = sorted(outside)
            shown = ", ".join(f"`{p}`" for p in paths[:3]) + (", …" if len(paths) > 3 else "")
            out.append(Finding(
                code=self.code, severity="warning", run_id=run_id, bundle_id=bid,
                summary=(f"Run {run_id} changed {plural(len(paths), 'file')} outside its declared write "
                         f"paths ({', '.join(globs)}): {shown}; review them before merging."),
                evidence=evidence([v[1] for v in outside.values()],
                                  [*decl_seqs, *(v[2] for v in outside.values())]),
                fields={"declared_paths": globs, "outside_paths": paths,
                        "sources": {p: outside[p][0] for p in paths}}))
        return out
