"""The fleet view over several runs: failure modes by how often they occur and what they wasted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .finding import Finding, severity_rank


def fleet_summary(runs: Sequence[Mapping[str, Any]], findings: Sequence[Finding]) -> dict[str, Any]:
    """Runs by status, and per finding code: runs affected, findings, tokens and USD wasted.

    Tokens/cost wasted are the ``tokens`` / ``cost_usd`` fields detectors report for the part of a run
    they explain (a retry loop's tokens); codes without such fields count 0.
    """
    statuses: dict[str, int] = {}
    for r in runs:
        key = str(r.get("status") or "unknown")
        statuses[key] = statuses.get(key, 0) + 1
    modes: dict[str, dict[str, Any]] = {}
    for f in findings:
        m = modes.setdefault(f.code, {"code": f.code, "runs": set(), "findings": 0,
                                      "tokens_wasted": 0, "cost_wasted_usd": 0.0, "worst": "info"})
        m["runs"].add((f.bundle_id, f.run_id))  # the same run id in two bundles is two runs
        m["findings"] += 1
        m["tokens_wasted"] += int(f.fields.get("tokens") or 0)
        m["cost_wasted_usd"] += float(f.fields.get("cost_usd") or 0.0)
        if severity_rank(f.severity) > severity_rank(m["worst"]):
            m["worst"] = f.severity
    out = [{**m, "runs": len(m["runs"]), "cost_wasted_usd": round(m["cost_wasted_usd"], 6)}
           for m in modes.values()]
    by_count = sorted(out, key=lambda m: (-m["runs"], -m["findings"], m["code"]))
    by_waste = sorted((m for m in out if m["tokens_wasted"] or m["cost_wasted_usd"]),
                      key=lambda m: (-m["cost_wasted_usd"], -m["tokens_wasted"], m["code"]))
    return {"runs": len(runs), "statuses": dict(sorted(statuses.items())),
            "failure_modes": by_count, "by_waste": [m["code"] for m in by_waste]}
