"""Seal a run's spool into a debug bundle, atomically (temporary directory + rename)."""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._secrets import scrub as _scrub
from . import model
from ._scrub import Scrubber, iter_blocks, scrub_block
from .model import producer_version, sha256_file
from .spool import spool_files


@dataclass
class BundleOptions:
    """What goes into a bundle beyond the event log and the trace. Recorded in the manifest."""

    scrub: bool = True
    workspace: bool = True
    workspace_exclude: list[str] = field(default_factory=lambda: [
        ".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".cache", ".agenttrail", "_debug", "_debug.*", ".*.tmp-*", "*.pyc"])
    workspace_max_file_bytes: int = 5 << 20
    workspace_max_total_bytes: int = 200 << 20
    progress_globs: list[str] = field(default_factory=lambda: [
        "PROGRESS.md", "progress.md", "feature-list.json", "feature_list.json",
        "claude-progress.txt", "init.sh", "NOTES.md", "TODO.md"])
    screenshot_globs: list[str] = field(default_factory=lambda: ["screenshots/*.png", "*.png"])
    env_prefixes: list[str] = field(default_factory=lambda: [
        "AGENTTRAIL_", "IMAGE_", "MODEL", "HARNESS_", "GIT_COMMIT", "OTEL_SERVICE_NAME"])

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> BundleOptions:
        opts = cls()
        for key, value in values.items():
            if not hasattr(opts, key):
                raise ValueError(f"unknown bundle option {key!r}")
            setattr(opts, key, value)
        return opts

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _default_scrubber() -> Scrubber:
    return _scrub



def _spool_parts(spool: Path, name: str) -> list[Path]:
    return spool_files(spool, name)


def _copy_lines(parts: Iterable[Path], dest: Path, scrub: Scrubber | None) -> int:
    """Concatenate JSONL parts into dest, scrubbing them block by block. Returns secrets scrubbed.

    A torn last line (the worker died mid-write) is kept as it was, newline-terminated, so the reader
    reports it with its line number and reads the rest.
    """
    found = 0
    with open(dest, "w", encoding="utf-8") as out:
        for part in parts:
            with open(part, encoding="utf-8", errors="replace") as fh:
                block = ""
                for block in iter_blocks(fh.read):
                    if scrub is not None:
                        block, n = _scrub_block(block, scrub)
                        found += n
                    out.write(block)
                if block and not block.endswith("\n"):
                    out.write("\n")
    return found


def _scrub_block(block: str, scrub: Scrubber) -> tuple[str, int]:
    # the fast path knows the built-in patterns' literals; a caller's own scrubber sees everything
    return scrub_block(block) if scrub is _scrub else scrub(block)


def _iter_events(path: Path, only: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Events of a JSONL file; with ``only``, just the lines holding one of those strings (cheap
    substring test first: parsing every line of a 200k-event log costs a second)."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if only and not any(o in line for o in only):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if isinstance(ev, dict):
                yield ev


def write_tool_calls_csv(events_path: Path, dest: Path) -> int:
    """tool_calls.csv from tool.started / tool.finished events joined by call_id."""
    started: dict[str, dict[str, Any]] = {}
    rows = 0
    with open(dest, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(model.TOOL_CALLS_HEADER + model.TOOL_CALLS_EXTRA)
        for ev in _iter_events(events_path, ('"tool.started"', '"tool.finished"')):
            data = ev.get("data") or {}
            if ev.get("type") == "tool.started":
                started[str(data.get("call_id"))] = {**data, "ts": ev.get("ts")}
            elif ev.get("type") == "tool.finished":
                st = started.pop(str(data.get("call_id")), {})
                w.writerow([
                    st.get("ts", ev.get("ts")), data.get("tool"),
                    data.get("input_hash") or st.get("input_hash"), data.get("latency_ms"),
                    data.get("status"), data.get("error") or "", data.get("call_id"),
                    ev.get("span_id", ""), data.get("operation_id") or "",
                    st.get("idempotency_key") or "", st.get("side_effect", False),
                    "" if data.get("exit_code") is None else data.get("exit_code"),
                    data.get("error_type") or "", ev.get("ts")])
                rows += 1
        for call_id, st in started.items():  # started, never finished: the worker died mid-call
            w.writerow([st.get("ts"), st.get("tool"), st.get("input_hash"), "", "unfinished", "",
                        call_id, "", "", st.get("idempotency_key") or "",
                        st.get("side_effect", False), "", "", ""])
            rows += 1
    return rows


def _env_lines(run_meta: Mapping[str, Any], opts: BundleOptions, workspace: Path | None) -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    lines = [f"python_version={platform.python_version()}",
             f"platform={platform.platform()}",
             f"python_executable={sys.executable}"]
    for pkg in ("agenttrail", "opentelemetry-sdk", "openai", "anthropic", "langgraph",
                "openai-agents"):
        try:
            lines.append(f"package.{pkg}={version(pkg)}")
        except PackageNotFoundError:
            continue
    if run_meta.get("initial_commit"):
        lines.append(f"harness_initial_commit={run_meta['initial_commit']}")
    if workspace is not None:
        head = _git(workspace, "rev-parse", "HEAD")
        if head:
            lines.append(f"workspace_head_commit={head.strip()}")
    for key in sorted(os.environ):
        if any(key.startswith(p) for p in opts.env_prefixes):
            lines.append(f"{key}={os.environ[key]}")
    if run_meta.get("worker_id"):
        lines.append(f"worker_id={run_meta['worker_id']}")
    return lines


def _git(workspace: Path, *args: str, env: Mapping[str, str] | None = None) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True,
                             timeout=60, check=False, errors="replace",
                             env={**os.environ, **env} if env else None)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def workspace_diff(workspace: Path, commit: str, opts: BundleOptions) -> str | None:
    """``git diff`` of the work tree against ``commit``, new untracked files included.

    Untracked files are marked intent-to-add in a *temporary copy* of the index (GIT_INDEX_FILE), so
    the user's index and object store are untouched. Files the bundle excludes (patterns, size cap)
    and files git ignores are left out of the diff as they are out of the tar.
    """
    index = _git(workspace, "rev-parse", "--path-format=absolute", "--git-path", "index")
    if index is None:
        return None
    untracked = [
        rel for rel in (_git(workspace, "ls-files", "-z", "--others", "--exclude-standard") or "").split("\0")
        if rel and not _excluded(rel, opts.workspace_exclude)
        and os.path.isfile(os.path.join(workspace, rel))
        and os.path.getsize(os.path.join(workspace, rel)) <= opts.workspace_max_file_bytes
    ]
    with tempfile.TemporaryDirectory(prefix="agenttrail-index-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        if os.path.exists(index.strip()):
            shutil.copyfile(index.strip(), env["GIT_INDEX_FILE"])
        if untracked:
            listing = os.path.join(tmp, "untracked")
            with open(listing, "w", encoding="utf-8") as fh:
                fh.write("\0".join(untracked))
            if _git(workspace, "add", "--intent-to-add", "--pathspec-from-file", listing,
                    "--pathspec-file-nul", env=env) is None:
                return _git(workspace, "diff", commit)
        excludes = [f":(exclude,glob)**/{pat}" for pat in opts.workspace_exclude]
        return _git(workspace, "diff", "--no-color", "--no-ext-diff", commit, "--", ".", *excludes,
                    env=env)


def _excluded(rel: str, patterns: list[str]) -> bool:
    parts = rel.split("/")
    return any(fnmatch.fnmatch(p, pat) for p in parts for pat in patterns)


_TEXT_SUFFIXES = re.compile(
    r"\.(txt|md|json|jsonl|ya?ml|toml|ini|cfg|conf|env|py|js|ts|tsx|jsx|sh|rb|go|rs|java|c|h|"
    r"cpp|html|css|csv|log|xml|sql|lock)$|^\.env", re.I)


def write_workspace_tar(workspace: Path, dest: Path, opts: BundleOptions,
                        scrub: Scrubber | None) -> dict[str, Any]:
    """workspace.tar.zst: the tree minus excluded paths and oversized files; text files scrubbed."""
    import zstandard

    skipped_large: list[str] = []
    total = 0
    files = 0
    secrets = 0
    cctx = zstandard.ZstdCompressor(level=6)
    with open(dest, "wb") as raw, cctx.stream_writer(raw) as zw, \
            tarfile.open(fileobj=zw, mode="w|") as tar:
        for root, dirs, names in os.walk(workspace):
            rel_root = os.path.relpath(root, workspace)
            rel_root = "" if rel_root == "." else rel_root
            dirs[:] = sorted(d for d in dirs
                             if not _excluded(os.path.join(rel_root, d), opts.workspace_exclude)
                             and not os.path.islink(os.path.join(root, d)))
            for name in sorted(names):
                rel = os.path.join(rel_root, name) if rel_root else name
                full = os.path.join(root, name)
                if _excluded(rel, opts.workspace_exclude) or os.path.islink(full) \
                        or not os.path.isfile(full):
                    continue
                size = os.path.getsize(full)
                if size > opts.workspace_max_file_bytes or total + size > opts.workspace_max_total_bytes:
                    skipped_large.append(rel)
                    continue
                with open(full, "rb") as fh:
                    data = fh.read()
                if scrub is not None and _TEXT_SUFFIXES.search(name):
                    try:
                        text, n = _scrub_block(data.decode("utf-8"), scrub)
                        if n:
                            secrets += n
                            data = text.encode("utf-8")
                    except UnicodeDecodeError:
                        pass
                info = tarfile.TarInfo(rel)
                info.size = len(data)
                info.mode = 0o644
                info.mtime = int(os.path.getmtime(full))
                tar.addfile(info, io.BytesIO(data))
                total += len(data)
                files += 1
    return {"files": files, "bytes": total, "skipped_large": skipped_large[:200],
            "skipped_large_count": len(skipped_large), "secrets_scrubbed": secrets}


def seal_spool(
    spool: Path,
    out_dir: Path,
    *,
    status: str,
    failure: Mapping[str, str] | None,
    capture_mode: str = "NO_CONTENT",
    options: BundleOptions | None = None,
    scrubber: Scrubber | None = None,
    recovered: bool = False,
) -> Path:
    """Write a bundle for the run spooled in ``spool`` to ``out_dir``. Returns ``out_dir``.

    The bundle appears at ``out_dir`` all at once (rename); an existing bundle there is kept, moved
    to ``out_dir.1`` (``.2`` ...), never overwritten.
    """
    opts = options or BundleOptions()
    scrub = (scrubber or _default_scrubber()) if opts.scrub else None
    run_meta: dict[str, Any] = {}
    if (spool / "run.json").exists():
        run_meta = json.loads((spool / "run.json").read_text(encoding="utf-8"))
    workspace = Path(run_meta["workspace"]) if run_meta.get("workspace") else None
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        secrets = 0
        events_parts = _spool_parts(spool, model.EVENTS)
        secrets += _copy_lines(events_parts, tmp / model.EVENTS, scrub)
        trace_parts = _spool_parts(spool, model.TRACE_JSONL)
        if trace_parts:
            secrets += _copy_lines(trace_parts, tmp / model.TRACE_JSONL, scrub)
        for name in (model.CHECKPOINTS, model.LOGS, model.METRICS):
            parts = _spool_parts(spool, name)  # logs/metrics may rotate like events and trace
            if parts:
                secrets += _copy_lines(parts, tmp / name, scrub)
        if (spool / model.LAST_STATE).exists():
            text = (spool / model.LAST_STATE).read_text(encoding="utf-8")
            if scrub is not None:
                text, n = scrub(text)
                secrets += n
            (tmp / model.LAST_STATE).write_text(text, encoding="utf-8")
        write_tool_calls_csv(tmp / model.EVENTS, tmp / model.TOOL_CALLS)
        workspace_info: dict[str, Any] | None = None
        if workspace is not None and workspace.is_dir():
            if opts.workspace:
                workspace_info = write_workspace_tar(workspace, tmp / model.WORKSPACE_TAR, opts, scrub)
                secrets += workspace_info.pop("secrets_scrubbed")
                if run_meta.get("initial_commit"):
                    diff = workspace_diff(workspace, run_meta["initial_commit"], opts)
                    if diff:
                        if scrub is not None:
                            diff, n = _scrub_block(diff, scrub)
                            secrets += n
                        (tmp / model.WORKSPACE_DIFF).write_text(diff, encoding="utf-8")
            secrets += _copy_globs(workspace, opts.progress_globs, tmp / model.PROGRESS, scrub)
            _copy_globs(workspace, opts.screenshot_globs, tmp / model.SCREENSHOTS, None)
        env_text = "\n".join(_env_lines(run_meta, opts, workspace)) + "\n"
        if scrub is not None:
            env_text, n = scrub(env_text)
            secrets += n
        (tmp / model.ENV).write_text(env_text, encoding="utf-8")
        manifest = _manifest(tmp, run_meta, status, failure, capture_mode, secrets, opts,
                             workspace_info, recovered)
        (tmp / model.MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        _make_room(out_dir)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def _copy_globs(workspace: Path, globs: list[str], dest: Path, scrub: Scrubber | None) -> int:
    found = 0
    seen: set[Path] = set()
    for pattern in globs:
        for src in sorted(workspace.glob(pattern)):
            if src in seen or not src.is_file() or src.is_symlink():
                continue
            seen.add(src)
            dest.mkdir(exist_ok=True)
            target = dest / src.name
            if scrub is not None and src.suffix.lower() not in (".png", ".jpg", ".jpeg", ".webp"):
                text, n = _scrub_block(src.read_text(encoding="utf-8", errors="replace"), scrub)
                found += n
                target.write_text(text, encoding="utf-8")
            else:
                shutil.copyfile(src, target)
    return found


def _make_room(out_dir: Path) -> None:
    if not out_dir.exists():
        return
    n = 1
    while out_dir.with_name(f"{out_dir.name}.{n}").exists():
        n += 1
    os.rename(out_dir, out_dir.with_name(f"{out_dir.name}.{n}"))


def _first_last_ts(events: Path) -> tuple[str | None, str | None]:
    """``ts`` of the first and the last readable event (reads the head and the tail only)."""
    first: str | None = None
    with open(events, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            first = _ts(line)
            if first:
                break
    last: str | None = None
    with open(events, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        step = 1 << 16
        while last is None:
            start = max(0, size - step)
            fh.seek(start)
            lines = fh.read().decode("utf-8", "replace").splitlines()
            for line in reversed(lines[1:] if start else lines):  # lines[0] may be cut
                last = _ts(line)
                if last:
                    break
            if start == 0:
                break
            step *= 4
    return first, last


def _ts(line: str) -> str | None:
    try:
        ev = json.loads(line)
    except ValueError:
        return None
    ts = ev.get("ts") if isinstance(ev, dict) else None
    return ts if isinstance(ts, str) else None


def _manifest(tmp: Path, run_meta: Mapping[str, Any], status: str,
              failure: Mapping[str, str] | None, capture_mode: str, secrets: int,
              opts: BundleOptions, workspace_info: Mapping[str, Any] | None,
              recovered: bool) -> dict[str, Any]:
    first, last = _first_last_ts(tmp / model.EVENTS)
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(tmp.rglob("*")):
        if path.is_file():
            rel = path.relative_to(tmp).as_posix()
            files[rel] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    manifest: dict[str, Any] = {
        "format": model.FORMAT,
        "version": model.VERSION,
        "run_id": run_meta.get("run_id"),
        "status": status,
        "started_at": run_meta.get("started_at") or first,
        "ended_at": last,
        "agent_name": run_meta.get("agent_name"),
        "workflow_name": run_meta.get("workflow_name"),
        "failure": dict(failure) if failure else None,
        "budget": run_meta.get("budget") or {},
        "producer": {"name": "agenttrail", "version": producer_version()},
        "redaction": {"content_capture": capture_mode, "secrets_scrubbed": secrets,
                      "scrubbed": opts.scrub},
        "sealed_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "options": {"workspace_exclude": opts.workspace_exclude,
                    "workspace_max_file_bytes": opts.workspace_max_file_bytes,
                    "workspace_max_total_bytes": opts.workspace_max_total_bytes},
        "files": files,
    }
    if workspace_info is not None:
        manifest["workspace"] = dict(workspace_info)
    if recovered:
        manifest["recovered"] = True
    return manifest
