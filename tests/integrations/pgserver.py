"""A throwaway PostgreSQL cluster for tests: initdb + pg_ctl in a temp dir on a free loopback port.

Debian's server binaries (scripts/install-postgres.sh) refuse to run as root, so as root the cluster
is created and run by the package's ``postgres`` user (``runuser``). Stopped and removed at teardown.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield a connection string ``postgresql://postgres@127.0.0.1:PORT/postgres``."""
    bindir = pg_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries are missing: run scripts/install-postgres.sh")
    root = Path(tempfile.mkdtemp(prefix="agenttrail-pg-"))
    data = root / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()

    def run(*cmd: str) -> None:
        subprocess.run([*as_user, *cmd], check=True, capture_output=True, timeout=120)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
            "--no-sync", "-E", "UTF8", "--locale=C")
        opts = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"),
            "-w", "-t", "60", "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
