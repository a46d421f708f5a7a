"""End-to-end ``agenttrail analyze`` on large bundles, against DuckDB's plain ``read_ndjson``.

For each size (spans; events are 2× spans) the script generates a bundle once (bench/gen_bundle.py,
kept in build/bench/), then measures, each in a fresh process so peak RSS is per measurement:

- baseline: DuckDB alone reading trace.jsonl with ``read_ndjson`` (auto-detected schema) and unnesting
  resourceSpans → scopeSpans → spans into a table of one row per span;
- floor: DuckDB reading both files analyze needs (trace.jsonl and events.jsonl) with agenttrail's explicit
  schemas into plain tables, nothing else — the least any DuckDB-based load can cost;
- analyze: ``agenttrail analyze BUNDLE --format json --no-cache`` (load spans + events, derive, all
  detectors, JSON out);
- first: ``agenttrail analyze BUNDLE --format json``, as a user runs it the first time: the same load,
  then the store is written to the cache (timed: what the cache costs the first run);
- cached: the second ``analyze`` re-opens the store from that cache (timed).

Each process's CPU seconds (user + sys, from its rusage) are recorded beside its wall time. The machine
is shared, so wall times move with the other processes on it; the CPU ratio (analyze CPU / baseline
CPU) is the steadier measure of how much work the store does compared to the plain read.

Targets (issue 5): analyze ≤ 1.0× baseline, peak RSS < 3 GB, re-open from cache < 2 s at 1M spans.
Results: a table on stdout and build/bench/bench_analyze.json. ``--quick`` uses 10k and 50k spans.
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "bench"
sys.path.insert(0, str(ROOT / "bench"))

NAIVE = """
import duckdb, sys
con = duckdb.connect()
con.execute('SET enable_progress_bar = false')  # as the store does; it would print to stdout
con.execute('''CREATE TABLE spans AS SELECT unnest(ss.spans, recursive := true) FROM (
    SELECT unnest(rs.scopeSpans) AS ss FROM (
        SELECT unnest(resourceSpans) AS rs FROM read_ndjson(?)))''', [sys.argv[1]])
print(con.execute('SELECT count(*) FROM spans').fetchone()[0])
"""


# What no DuckDB-based loader can go under: the two files the analyzer needs (trace + events), read
# with agenttrail's explicit schemas (no sampling) into plain tables — no typed columns, no derived
# tables, no detectors. Printed beside the target so a run shows how much of analyze is this floor.
FLOOR = """
import duckdb, sys
sys.path.insert(0, sys.argv[3])
from agenttrail.store import _sql
con = duckdb.connect()
con.execute('SET enable_progress_bar = false; SET preserve_insertion_order = false')
con.execute(f'''CREATE TABLE spans AS SELECT unnest(ss.spans, recursive := true) FROM (
    SELECT unnest(rs.scopeSpans) AS ss FROM (
        SELECT unnest(resourceSpans) AS rs FROM read_json(?, columns={_sql.TRACE_COLUMNS},
                                                          format='newline_delimited')))''', [sys.argv[1]])
con.execute(f'''CREATE TABLE events AS SELECT * FROM read_json(?, columns={_sql.EVENT_COLUMNS},
                                                               format='newline_delimited')''', [sys.argv[2]])
print(con.execute('SELECT count(*) FROM spans').fetchone()[0])
"""

BREAKDOWN = """
import json, sys, time
t0 = time.perf_counter()
from agenttrail.detect import run_detectors
from agenttrail.store import open_store
t1 = time.perf_counter()
store = open_store([sys.argv[1]])
t2 = time.perf_counter()
analysis = run_detectors(store)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, **store.timings, "detectors": t3 - t2}))
"""


def _measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str, float]:
    """(wall seconds, peak RSS bytes, stdout, CPU seconds) of one child process, from its own rusage."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({code}):\n{err.decode()}")
    return wall, usage.ru_maxrss * 1024, out.decode(), usage.ru_utime + usage.ru_stime


def bundle(spans: int) -> Path:
    from gen_bundle import generate

    path = OUT / f"bundle-{spans}"
    if not (path / "manifest.json").is_file():
        t0 = time.perf_counter()
        info = generate(path, spans)
        print(f"  generated {path.name}: {info} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default=None, help="comma-separated span counts")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (
        [10_000, 50_000] if args.quick else [10_000, 100_000, 1_000_000])
    OUT.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    cli = [str(Path(py).parent / "agenttrail")]
    results = []
    print(f"{'spans':>9} {'events':>9} {'trace MB':>9} {'read_ndjson s':>14} {'analyze s':>10} "
          f"{'ratio':>6} {'cpu ratio':>9} {'floor s':>8} {'/floor':>7} {'RSS MB':>8} {'baseline RSS':>13} "
          f"{'first s':>8} {'cache s':>8}"
          f"   breakdown (s)", flush=True)
    for n in sizes:
        b = bundle(n)
        trace = b / "trace.jsonl"
        base_s, base_rss, base_out, base_cpu = _measure([py, "-c", NAIVE, str(trace)])
        floor_s, _, floor_out, _ = _measure([py, "-c", FLOOR, str(trace), str(b / "events.jsonl"),
                                             str(ROOT / "src")])
        assert floor_out.strip() == base_out.strip(), (floor_out, base_out)
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "AGENTTRAIL_CACHE_DIR": cache}
            an_s, an_rss, an_out, an_cpu = _measure([*cli, "analyze", str(b), "--format", "json", "--no-cache"],
                                                    env)
            first_s, _, _, _ = _measure([*cli, "analyze", str(b), "--format", "json"], env)  # writes the cache
            cached_s, cached_rss, cached_out, _ = _measure([*cli, "analyze", str(b), "--format", "json"], env)
            _, _, parts_out, _ = _measure([py, "-c", BREAKDOWN, str(b)], env)
        parts = {k: round(v, 3) for k, v in json.loads(parts_out).items()}
        doc = json.loads(an_out)
        cached_findings = json.loads(cached_out)["findings"]
        if cached_findings != doc["findings"]:
            diff = [(k, str(a.get(k))[:120], str(b.get(k))[:120]) for a, b in zip(doc["findings"], cached_findings, strict=False)
                    for k in a if a.get(k) != b.get(k)]
            raise SystemExit(f"the cached store changed the findings: {diff or (len(doc['findings']), len(cached_findings))}")
        run = doc["runs"][0]
        loop = next(f for f in doc["findings"] if f["code"] == "retry_loop")
        row = {"spans": int(base_out.strip()), "events": run["events"], "trace_mb": round(trace.stat().st_size / 1e6, 1),
               "baseline_read_ndjson_s": round(base_s, 3), "baseline_rss_mb": round(base_rss / 1e6, 1),
               "baseline_cpu_s": round(base_cpu, 3),
               "analyze_s": round(an_s, 3), "analyze_rss_mb": round(an_rss / 1e6, 1), "analyze_cpu_s": round(an_cpu, 3),
               "ratio_to_baseline": round(an_s / base_s, 3), "cpu_ratio_to_baseline": round(an_cpu / base_cpu, 3),
               "floor_read_both_files_s": round(floor_s, 3), "ratio_to_floor": round(an_s / floor_s, 3),
               "first_analyze_with_cache_write_s": round(first_s, 3), "cached_analyze_s": round(cached_s, 3),
               "cached_rss_mb": round(cached_rss / 1e6, 1), "retry_loop_iterations": loop["iterations"],
               "findings": len(doc["findings"]), "breakdown_s": parts}
        assert row["spans"] == run["spans"], (row["spans"], run["spans"])
        results.append(row)
        print(f"{row['spans']:>9} {row['events']:>9} {row['trace_mb']:>9} {base_s:>14.2f} {an_s:>10.2f} "
              f"{an_s / base_s:>6.2f} {an_cpu / base_cpu:>9.2f} {floor_s:>8.2f} {an_s / floor_s:>7.2f} "
              f"{an_rss / 1e6:>8.0f} {base_rss / 1e6:>13.0f} "
              f"{first_s:>8.2f} {cached_s:>8.2f}   "
              + " ".join(f"{k}={v:.2f}" for k, v in parts.items()), flush=True)
    (OUT / "bench_analyze.json").write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "load_avg": os.getloadavg()}, "results": results}, indent=2))
    print(f"wrote {OUT / 'bench_analyze.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
