"""Run every benchmark under bench/ (``make bench``).

Each ``bench/bench_*.py`` is a standalone script that measures its subject *and* a baseline in the
same process run (the machine is shared and noisy, so only ratios are comparable), prints a table,
and writes ``build/bench/<name>.json``. ``--quick`` shrinks the workloads (used by the smoke test).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("only", nargs="*", help="names like bench_instrument")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem in args.only]
    failed = []
    for script in scripts:
        print(f"\n=== {script.stem} ===", flush=True)
        t0 = time.perf_counter()
        cmd = [sys.executable, str(script)] + (["--quick"] if args.quick else [])
        rc = subprocess.call(cmd, cwd=HERE.parent)
        print(f"--- {script.stem}: exit {rc} in {time.perf_counter() - t0:.1f} s", flush=True)
        if rc:
            failed.append(script.stem)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
