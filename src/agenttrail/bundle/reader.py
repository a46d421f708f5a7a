"""Open a bundle (directory or packed file) and read its parts, tolerating damage.

Missing optional files are fine; a corrupt line is reported as a ``LoadWarning`` with file and line and
the rest is still read. What cannot be read at all raises ``BundleError`` with what to do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BundleError, BundleFormatError
from . import model
from .model import WarningSink


@dataclass
class Bundle:
    """An opened bundle: its directory (unpacked if it was packed), manifest and warnings."""

    path: Path
    source: Path
    manifest: dict[str, Any]
    warnings: WarningSink = field(default_factory=WarningSink)

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.source.name)

    def file(self, name: str) -> Path | None:
        p = self.path / name
        return p if p.is_file() else None

    @property
    def events_file(self) -> Path | None:
        return self.file(model.EVENTS) or self.file(model.EVENTS_ALIAS)

    @property
    def trace_files(self) -> list[Path]:
        return [p for p in (self.file(model.TRACE_JSONL), self.file(model.TRACE_JSON)) if p]

    def iter_jsonl(self, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, object) for each good line; bad lines become warnings."""
        rel = path.relative_to(self.path).as_posix()
        with open(path, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    self.warnings.add(rel, lineno, f"not valid JSON ({e.msg}); line skipped")
                    continue
                if not isinstance(obj, dict):
                    self.warnings.add(rel, lineno, "not a JSON object; line skipped")
                    continue
                yield lineno, obj


def looks_like_bundle(path: Path) -> bool:
    return path.is_dir() and any(
        (path / n).is_file()
        for n in (model.MANIFEST, model.EVENTS, model.EVENTS_ALIAS, model.TRACE_JSON, model.TRACE_JSONL)
    )


def open_bundle(path: str | Path, *, unpack_dir: Path | None = None) -> Bundle:
    """Open a bundle directory or a packed bundle (.tar.zst, .tar.gz, .tgz, .zip)."""
    source = Path(path)
    if not source.exists():
        raise BundleError(f"{source}: no such file or directory",
                          "pass the bundle directory (e.g. <workspace>/_debug) or a packed .tar.zst")
    directory = source
    if source.is_file():
        from .pack import is_archive, unpack_to_cache

        if not is_archive(source):
            raise BundleError(f"{source}: not a bundle (a directory, .tar.zst, .tar.gz or .zip)",
                              "point at the _debug directory the run left, or at a packed bundle")
        directory = unpack_to_cache(source, unpack_dir)
    if not looks_like_bundle(directory):
        raise BundleError(
            f"{source}: not a bundle — no manifest.json, events.jsonl or trace.json(l) inside",
            "a bundle is the _debug directory a failed run leaves; to build one from OTLP trace files "
            "use `agenttrail bundle import`")
    warnings = WarningSink()
    manifest_path = directory / model.MANIFEST
    manifest: dict[str, Any]
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise BundleFormatError(
                f"{manifest_path}:{e.lineno}: manifest.json is not valid JSON ({e.msg})",
                "restore the manifest from the packed copy, or delete it: the analyzer then "
                "rebuilds identity from events.jsonl") from e
        if not isinstance(manifest, dict):
            raise BundleFormatError(f"{manifest_path}:1: manifest.json is not a JSON object",
                                    "see docs/bundle-format.md for the manifest fields")
        version = manifest.get("version", model.VERSION)
        if isinstance(version, int) and version > model.VERSION:
            raise BundleFormatError(
                f"{manifest_path}: bundle format version {version} is newer than this agenttrail "
                f"reads ({model.VERSION})", "upgrade agenttrail")
    else:
        manifest = {"format": model.FORMAT, "version": model.VERSION}
        warnings.add(model.MANIFEST, None, "missing; run identity taken from the events and trace")
    return Bundle(path=directory, source=source, manifest=manifest, warnings=warnings)
