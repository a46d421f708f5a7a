"""Pack / unpack round trip and hostile archives."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import zstandard

from agenttrail.bundle.pack import pack, unpack
from agenttrail.bundle.verify import verify
from agenttrail.errors import UnsafeArchiveError


def test_round_trip_write_pack_unpack_verify_analyze(demo_bundle: Path, tmp_path: Path) -> None:
    packed = pack(demo_bundle, tmp_path / "b.tar.zst")
    out = unpack(packed, tmp_path / "out")
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        p.relative_to(demo_bundle).as_posix() for p in demo_bundle.rglob("*") if p.is_file())
    assert verify(out).ok
    assert verify(packed).ok  # readers accept the packed form too
    from agenttrail.detect import run_detectors
    from agenttrail.store import open_store

    assert [f.code for f in run_detectors(open_store([packed])).findings] == ["retry_loop"]


def _tar_zst(path: Path, members: list[tarfile.TarInfo], data: bytes = b"x") -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
    path.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    return path


@pytest.mark.parametrize("name", ["../escape.txt", "/abs/escape.txt", "a/../../escape.txt"])
def test_path_traversal_refused(tmp_path: Path, name: str) -> None:
    m = tarfile.TarInfo(name)
    m.size = 1
    src = _tar_zst(tmp_path / "evil.tar.zst", [m])
    target = tmp_path / "sub" / "out"
    target.parent.mkdir()
    with pytest.raises(UnsafeArchiveError, match="points outside the target"):
        unpack(src, target)
    assert not (tmp_path / "escape.txt").exists()
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("kind", [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE])
def test_links_and_devices_refused(tmp_path: Path, kind: bytes) -> None:
    m = tarfile.TarInfo("events.jsonl")
    m.type = kind
    m.linkname = "/etc/passwd"
    src = _tar_zst(tmp_path / "evil.tar.zst", [m])
    with pytest.raises(UnsafeArchiveError, match="bundles hold plain files only"):
        unpack(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_zstd_bomb_capped(tmp_path: Path) -> None:
    m = tarfile.TarInfo("events.jsonl")
    m.size = 300 << 20  # 300 MiB of zeros compress to a few KiB
    src = _tar_zst(tmp_path / "bomb.tar.zst", [m], data=b"\0" * m.size)
    assert src.stat().st_size < 1 << 20
    with pytest.raises(UnsafeArchiveError, match="decompression bomb"):
        unpack(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()
