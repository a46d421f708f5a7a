"""``agenttrail bundle recover``: seal the spool a dead worker left behind."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import BundleError
from .spool import last_seq
from .writer import BundleOptions, seal_spool

SPOOL = Path(".agenttrail") / "spool"


def unsealed_runs(workspace: Path) -> list[Path]:
    """Spool directories whose run never wrote ``run.finished``... or finished but was not sealed."""
    root = workspace / SPOOL
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / "events.jsonl").exists())


def recover(workspace: Path, *, run_id: str | None = None, out_dir: Path | None = None,
            scrub: bool = True) -> list[Path]:
    workspace = workspace.resolve()
    spools = unsealed_runs(workspace)
    if run_id is not None:
        spools = [p for p in spools if _run_id(p) == run_id]
    if not spools:
        raise BundleError(f"{workspace}: no spooled run{f' {run_id!r}' if run_id else ''} under {SPOOL}",
                          "pass the workspace the agent ran in (the directory given to agenttrail.run)")
    out: list[Path] = []
    for spool in spools:
        status, failure = _final_status(spool)
        target = out_dir or workspace / "_debug"
        if len(spools) > 1:
            target = target.with_name(f"{target.name}-{spool.name}")
        opts = BundleOptions(scrub=scrub)
        out.append(seal_spool(spool, target, status=status, failure=failure, options=opts,
                              recovered=True, capture_mode=_capture(spool)))
    return out


def _run_id(spool: Path) -> str:
    try:
        return str(json.loads((spool / "run.json").read_text())["run_id"])
    except (OSError, ValueError, KeyError):
        return spool.name


def _capture(spool: Path) -> str:
    return "unknown"


def _final_status(spool: Path) -> tuple[str, dict[str, str] | None]:
    """The run's status from its last ``run.finished`` event; a run without one was killed."""
    from .spool import spool_files

    status, failure = None, None
    for path in spool_files(spool, "events.jsonl"):
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if '"run.finished"' not in line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                data = ev.get("data") or {}
                status = data.get("status")
                if data.get("failure_type"):
                    failure = {"type": data["failure_type"], "message": data.get("reason") or ""}
    if status is None:
        n = last_seq(spool)
        return "failed", {"type": "worker_lost",
                          "message": f"the worker stopped without finishing the run (last event #{n})"}
    return status, failure
