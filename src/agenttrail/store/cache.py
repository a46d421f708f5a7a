"""Loaded stores cached as ``.duckdb`` files, so re-opening a big bundle is near-instant.

The cache lives in ``<cache dir>/store/<key>.duckdb`` (cache dir: ``$AGENTTRAIL_CACHE_DIR``, else
``$XDG_CACHE_HOME/agenttrail``, else ``~/.cache/agenttrail``). The key is a hash of: this schema's
version, each bundle's resolved path, its manifest bytes (which hold every file's sha256), the size and
mtime of every file in it, and the price table. Editing, replacing or re-sealing any file therefore
misses the cache; nothing is ever served stale. Only ``stat`` calls are needed to compute the key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import duckdb

from ..bundle.pack import cache_dir as _base_cache_dir
from ..bundle.reader import Bundle

SCHEMA_VERSION = 4  # 4: span attributes as key/value lists in span_rows; MAPs in the spans view


def directory(base: Path | None = None) -> Path:
    return (base or _base_cache_dir()) / "store"


def key(bundles: Sequence[Bundle], prices: Sequence[object]) -> str:
    h = hashlib.sha256(f"agenttrail-store-v{SCHEMA_VERSION}".encode())
    h.update(json.dumps(list(prices)).encode())
    for b in bundles:
        h.update(str(b.path.resolve()).encode() + b"\0" + str(b.source).encode() + b"\0")
        manifest = b.path / "manifest.json"
        if manifest.is_file():
            h.update(hashlib.sha256(manifest.read_bytes()).digest())
        for path in sorted(b.path.rglob("*")):
            if path.is_file():
                st = path.stat()
                h.update(f"{path.relative_to(b.path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def open_cached(cache_key: str, base: Path | None = None) -> tuple[duckdb.DuckDBPyConnection, Path] | None:
    """A read-only connection to the cached store, or None (missing or unreadable: reload)."""
    path = directory(base) / f"{cache_key}.duckdb"
    if not path.is_file():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
        con.execute("SET TimeZone = 'UTC'; SET enable_progress_bar = false")
        return con, path
    except duckdb.Error:
        with contextlib.suppress(OSError):
            path.unlink()
        return None


def write(con: duckdb.DuckDBPyConnection, cache_key: str, base: Path | None = None) -> Path | None:
    """Copy the in-memory store into the cache atomically; a failure only costs the next re-open."""
    target = directory(base) / f"{cache_key}.duckdb"
    tmp = target.with_name(f".{cache_key}.{os.getpid()}.tmp.duckdb")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            tmp.unlink()
        con.execute(f"ATTACH '{tmp}' AS agenttrail_cache")
        try:
            con.execute("COPY FROM DATABASE memory TO agenttrail_cache")
        finally:
            con.execute("DETACH agenttrail_cache")
        tmp.replace(target)
        return target
    except (duckdb.Error, OSError):
        with contextlib.suppress(OSError):
            tmp.unlink()
        return None


def building(cache_key: str, base: Path | None = None) -> Path | None:
    """A fresh temporary path to load a big store straight into, or None when the cache directory
    cannot be written (then the store is loaded in memory and not cached)."""
    target = directory(base) / f"{cache_key}.duckdb"
    tmp = target.with_name(f".{cache_key}.{os.getpid()}.tmp.duckdb")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        discard(tmp)
        with open(tmp, "xb"):  # writable? (DuckDB creates it again below)
            pass
        tmp.unlink()
    except OSError:
        return None
    return tmp


def publish(tmp: Path, cache_key: str, base: Path | None = None) -> Path | None:
    """Move a closed, fully loaded store from ``building`` into place; None (and the file removed)
    when that fails."""
    target = directory(base) / f"{cache_key}.duckdb"
    try:
        tmp.replace(target)
        return target
    except OSError:
        discard(tmp)
        return None


def discard(tmp: Path) -> None:
    for path in (tmp, tmp.with_name(tmp.name + ".wal")):
        with contextlib.suppress(OSError):
            path.unlink()
