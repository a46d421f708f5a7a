"""Pack a bundle directory into one file and unpack it safely.

Unpacking refuses entries that would land outside the target (``..``, absolute paths, links pointing
out, device files) and caps the decompressed size and ratio, so a hostile archive writes nothing
outside its target and cannot fill the disk.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from ..errors import UnsafeArchiveError
from .model import sha256_file

MAX_UNPACKED_BYTES = 8 << 30  # 8 GiB in all
MAX_RATIO = 200  # decompressed / compressed
_SUFFIXES = (".tar.zst", ".tzst", ".tar.gz", ".tgz", ".tar", ".zip")


def is_archive(path: Path) -> bool:
    return path.name.lower().endswith(_SUFFIXES)


def pack(directory: Path, out: Path, *, level: int = 10) -> Path:
    """Write ``directory`` as ``out`` (.tar.zst; .tar.gz by suffix). Deterministic order."""
    import zstandard

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "wb") as raw:
        if out.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                _add_tree(tar, directory)
        else:
            with zstandard.ZstdCompressor(level=level).stream_writer(raw) as zw, \
                    tarfile.open(fileobj=zw, mode="w|") as tar:
                _add_tree(tar, directory)
    os.replace(tmp, out)
    return out


def _add_tree(tar: tarfile.TarFile, directory: Path) -> None:
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        tar.add(path, arcname=path.relative_to(directory).as_posix(), recursive=False)


def _safe_name(name: str) -> str:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(f"archive entry {name!r} points outside the target directory",
                                 "the archive is not a bundle agenttrail wrote; do not trust it")
    return p.as_posix()


class _Budget:
    def __init__(self, compressed: int, max_bytes: int, max_ratio: int) -> None:
        self.limit = min(max_bytes, max(compressed, 1 << 20) * max_ratio)
        self.used = 0

    def take(self, n: int, name: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise UnsafeArchiveError(
                f"archive expands past {self.limit:,} bytes at {name!r} (decompression bomb?)",
                "unpack it by hand if you trust it, or raise the limit with --max-bytes")


def _open_tar(src: Path) -> tuple[tarfile.TarFile, IO[bytes]]:
    raw = open(src, "rb")  # noqa: SIM115 - closed by the caller
    if src.name.lower().endswith((".tar.zst", ".tzst")):
        import zstandard

        stream: IO[bytes] = zstandard.ZstdDecompressor().stream_reader(raw)  # type: ignore[assignment]
        return tarfile.open(fileobj=stream, mode="r|"), raw
    return tarfile.open(fileobj=raw, mode="r|*"), raw


def unpack(src: Path, target: Path, *, max_bytes: int = MAX_UNPACKED_BYTES,
           max_ratio: int = MAX_RATIO) -> Path:
    """Unpack ``src`` into ``target`` (created; must not exist or be empty)."""
    if target.exists() and any(target.iterdir()):
        raise UnsafeArchiveError(f"{target}: target directory is not empty",
                                 "choose a new directory with -o")
    budget = _Budget(src.stat().st_size, max_bytes, max_ratio)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent if target.parent.exists() else None))
    try:
        if src.name.lower().endswith(".zip"):
            _unpack_zip(src, staging, budget)
        else:
            tar, raw = _open_tar(src)
            try:
                with tar:
                    for member in tar:
                        _extract_member(tar, member, staging, budget)
            except (tarfile.TarError, EOFError, OSError) as e:
                if isinstance(e, UnsafeArchiveError):
                    raise
                raise UnsafeArchiveError(f"{src}: damaged archive ({e})",
                                         "re-pack the bundle from its directory") from e
            finally:
                raw.close()
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.rmdir()
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _extract_member(tar: tarfile.TarFile, member: tarfile.TarInfo, root: Path, budget: _Budget) -> None:
    name = _safe_name(member.name)
    if member.isdir():
        (root / name).mkdir(parents=True, exist_ok=True)
        return
    if not member.isfile():
        kind = "link" if (member.issym() or member.islnk()) else "special file"
        raise UnsafeArchiveError(f"archive entry {member.name!r} is a {kind}; bundles hold plain files only",
                                 "the archive is not a bundle agenttrail wrote")
    budget.take(member.size, name)
    dest = root / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    fh = tar.extractfile(member)
    if fh is None:
        return
    with open(dest, "wb") as out:
        written = 0
        for block in iter(lambda: fh.read(1 << 20), b""):
            written += len(block)
            if written > member.size:
                raise UnsafeArchiveError(f"archive entry {name!r} is larger than it claims", "")
            out.write(block)


def _unpack_zip(src: Path, root: Path, budget: _Budget) -> None:
    try:
        zf = zipfile.ZipFile(src)
    except zipfile.BadZipFile as e:
        raise UnsafeArchiveError(f"{src}: damaged zip ({e})", "re-pack the bundle") from e
    with zf:
        for info in zf.infolist():
            name = _safe_name(info.filename)
            mode = (info.external_attr >> 16) & 0o170000
            if mode and mode not in (0o100000, 0o040000):
                raise UnsafeArchiveError(f"zip entry {info.filename!r} is not a plain file", "")
            if info.is_dir():
                (root / name).mkdir(parents=True, exist_ok=True)
                continue
            budget.take(info.file_size, name)
            dest = root / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as fh, open(dest, "wb") as out:
                written = 0
                for block in iter(lambda: fh.read(1 << 20), b""):
                    written += len(block)
                    budget.take(0, name)
                    if written > info.file_size:
                        raise UnsafeArchiveError(f"zip entry {name!r} is larger than it claims", "")
                    out.write(block)


def cache_dir() -> Path:
    base = os.environ.get("AGENTTRAIL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "agenttrail")
    return Path(base)


def unpack_to_cache(src: Path, base: Path | None = None) -> Path:
    """Unpack a packed bundle once into the cache (keyed by the file's content hash)."""
    target = (base or cache_dir() / "unpacked") / sha256_file(src)[:24]
    if target.is_dir() and any(target.iterdir()):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    return unpack(src, target)


__all__ = ["is_archive", "pack", "unpack", "unpack_to_cache"]
