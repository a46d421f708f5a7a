"""``agenttrail report`` on the demo bundle and on a large one, against ``agenttrail analyze``.

For each bundle, in fresh processes (the machine is shared: only ratios measured in the same run
compare): ``agenttrail analyze B --format json --no-cache`` (the baseline: load + every detector) and
``agenttrail report B -o F --no-cache`` (load + detectors + the page). Then the page is opened in
Debian's headless Chromium and the time until it is interactive is read from the page itself
(``window.__agenttrail.readyMs``: navigation start → charts drawn, tables and anchors live).

Targets (issue 6): demo report < 6 MB; 1M-span report < 15 MB, generated in < 1.5× the analyzer's
time, interactive in < 3 s. ``--quick`` uses a 50k-span bundle instead of 1M. Results: a table on
stdout and build/bench/bench_report.json. Large bundles are generated once by bench/gen_bundle.py
into build/bench/ (shared with bench_analyze.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "bench"
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

TARGETS = {"demo_mb": 6.0, "large_mb": 15.0, "large_ratio": 1.5, "interactive_s": 3.0}


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return wall


def demo_bundle() -> Path:
    ws = OUT / "demo-workspace"
    if not (ws / "_debug" / "manifest.json").is_file():
        subprocess.run([sys.executable, str(ROOT / "examples" / "custom_harness.py"), "--workspace", str(ws)],
                       check=True, capture_output=True)
    return ws / "_debug"


def interactive_seconds(html: Path, runs: int = 2) -> tuple[float, int]:
    """Best of ``runs`` loads: seconds until the page says it is ready, and its chart count."""
    from tests.report.browser import Page, chromium

    best, charts = float("inf"), 0
    with chromium() as ctx:
        for _ in range(runs):
            p = Page(ctx)
            page = p.open(html)
            best = min(best, page.evaluate("window.__agenttrail.readyMs") / 1000)
            charts = page.evaluate("window.__agenttrail.charts")
            errors = p.errors()
            if errors:
                raise SystemExit(f"{html}: console errors {errors}")
            page.close()
    return best, charts


def measure(name: str, bundle: Path, cli: str, tmp: Path) -> dict[str, Any]:
    html = tmp / f"{name}.html"
    analyze_s = _run([cli, "analyze", str(bundle), "--format", "json", "--no-cache"])
    report_s = _run([cli, "report", str(bundle), "-o", str(html), "--no-cache"])
    ready_s, charts = interactive_seconds(html)
    return {"bundle": name, "analyze_s": round(analyze_s, 3),
            "report_s": round(report_s, 3), "ratio_to_analyze": round(report_s / analyze_s, 3),
            "report_mb": round(html.stat().st_size / 1e6, 2), "interactive_s": round(ready_s, 3),
            "charts": charts}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--spans", type=int, default=None)
    args = parser.parse_args()
    from bench_analyze import bundle as large_bundle  # generated once into build/bench/, shared

    spans = args.spans or (50_000 if args.quick else 1_000_000)
    OUT.mkdir(parents=True, exist_ok=True)
    cli = str(Path(sys.executable).parent / "agenttrail")
    rows = []
    print(f"{'bundle':>14} {'analyze s':>10} {'report s':>9} {'ratio':>6} {'MB':>7} {'interactive s':>14}",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in (("demo", demo_bundle()), (f"spans-{spans}", large_bundle(spans))):
            row = measure(name, path, cli, Path(tmp))
            rows.append(row)
            print(f"{name:>14} {row['analyze_s']:>10.2f} {row['report_s']:>9.2f} {row['ratio_to_analyze']:>6.2f} "
                  f"{row['report_mb']:>7.2f} {row['interactive_s']:>14.2f}", flush=True)
    demo, large = rows
    checks = {
        "demo report < 6 MB": demo["report_mb"] < TARGETS["demo_mb"],
        f"{large['bundle']} report < 15 MB": large["report_mb"] < TARGETS["large_mb"],
        f"{large['bundle']} report < 1.5x analyze": large["ratio_to_analyze"] < TARGETS["large_ratio"],
        f"{large['bundle']} interactive < 3 s": large["interactive_s"] < TARGETS["interactive_s"],
        "demo interactive < 3 s": demo["interactive_s"] < TARGETS["interactive_s"],
    }
    for what, ok in checks.items():
        print(f"  {'ok  ' if ok else 'MISS'} {what}")
    (OUT / "bench_report.json").write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}, "targets": TARGETS,
        "results": rows, "checks": checks}, indent=2))
    print(f"wrote {OUT / 'bench_report.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
