"""Session fixtures for the stack tests: a collector built with OCB from collector/builder-config.yaml,
a real Prometheus (Debian package), a second collector that stands in for Tempo and Loki by writing
what it receives to files, and one run of tests/stack/agent_workload.py through the shipped
collector/otelcol.yaml (addresses overridden by environment variables only).

Missing components skip locally and FAIL under CI=true (see stackkit.require)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.stack.stackkit import (
    REPO,
    Collector,
    Proc,
    Prometheus,
    Sink,
    StackRun,
    free_port,
    have,
    port_open,
    read_otlp,
    require,
    run_script,
    wait_for,
)

COLLECTOR_CONFIG = REPO / "collector" / "otelcol.yaml"
SINK_CONFIG = Path(__file__).with_name("sink-otelcol.yaml")
WORKLOAD = Path(__file__).with_name("agent_workload.py")
BUILD_TIMEOUT = 1800  # the first OCB build; cached afterwards


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "stack: needs a real OpenTelemetry Collector and Prometheus")


@pytest.fixture(scope="session")
def collector_bin() -> Path:
    require(have("go"), "Go is not installed: the collector is built with OCB (needs Go >= 1.25)")
    code, out, err = run_script(["bash", str(REPO / "scripts" / "build-collector.sh")], BUILD_TIMEOUT)
    require(code == 0, f"scripts/build-collector.sh failed (exit {code}):\n{err[-3000:]}")
    return Path(out.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def prometheus_bin() -> str:
    require(have("prometheus"), "prometheus is not installed: run scripts/install-stack-deps.sh")
    return "prometheus"


@pytest.fixture(scope="session")
def stack_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stack")


@pytest.fixture(scope="session")
def prometheus(prometheus_bin: str, stack_tmp: Path) -> Iterator[Prometheus]:
    port = free_port()
    cfg = stack_tmp / "prometheus.yml"
    cfg.write_text("global:\n  evaluation_interval: 1m\n")  # no scrape jobs: data arrives by remote write
    proc = Proc(
        "prometheus",
        [
            prometheus_bin,
            f"--config.file={cfg}",
            f"--storage.tsdb.path={stack_tmp / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-remote-write-receiver",
            "--storage.tsdb.retention.time=1d",
        ],
        stack_tmp / "prometheus.log",
    ).start()
    try:
        prom = Prometheus(f"http://127.0.0.1:{port}")
        proc.wait_ready(lambda: bool(prom._get("/api/v1/status/buildinfo", {})))
        yield prom
    finally:
        proc.stop()


def _start_sink(collector_bin: Path, base: Path, name: str) -> tuple[Proc, Sink]:
    sink = Sink(base / name, free_port(), free_port())
    sink.dir.mkdir(parents=True)
    proc = Proc(
        name,
        [str(collector_bin), f"--config={SINK_CONFIG}"],
        base / f"{name}.log",
        env={
            "SINK_GRPC_LISTEN": f"127.0.0.1:{sink.grpc_port}",
            "SINK_HTTP_LISTEN": f"127.0.0.1:{sink.http_port}",
            "SINK_DIR": str(sink.dir),
        },
    ).start()
    proc.wait_ready(lambda: port_open(sink.grpc_port) and port_open(sink.http_port))
    return proc, sink


def _start_collector(
    collector_bin: Path,
    base: Path,
    name: str,
    sink: Sink,
    prw_url: str,
    extra_env: dict[str, str] | None = None,
) -> tuple[Proc, Collector]:
    c = Collector(free_port(), free_port(), free_port(), {})
    c.env = {
        "OTLP_GRPC_LISTEN": f"127.0.0.1:{c.grpc_port}",
        "OTLP_HTTP_LISTEN": f"127.0.0.1:{c.http_port}",
        "TEMPO_ENDPOINT": f"127.0.0.1:{sink.grpc_port}",
        "LOKI_ENDPOINT": f"http://127.0.0.1:{sink.http_port}/otlp",
        "PROMETHEUS_REMOTE_WRITE_ENDPOINT": prw_url,
        "COLLECTOR_METRICS_HOST": "127.0.0.1",
        "COLLECTOR_METRICS_PORT": str(c.metrics_port),
        **(extra_env or {}),
    }
    proc = Proc(name, [str(collector_bin), f"--config={COLLECTOR_CONFIG}"], base / f"{name}.log", env=c.env)
    proc.start()
    proc.wait_ready(lambda: port_open(c.http_port) and port_open(c.grpc_port) and port_open(c.metrics_port))
    return proc, c


def _run_workload(endpoint: str, workdir: Path) -> dict[str, Any]:
    out = workdir / "workload.json"
    ws = workdir / "workspace"
    ws.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    r = subprocess.run(
        [sys.executable, str(WORKLOAD), "--endpoint", endpoint, "--workspace", str(ws), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert r.returncode == 0, f"agent workload failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}"
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _wait_sink(sink: Sink, workload: dict[str, Any]) -> None:
    n_spans, n_logs = len(workload["spans"]), len(workload["logs"])
    wait_for(
        f"{n_spans} spans and {n_logs} log records at the sink",
        lambda: (
            sum(1 for _ in read_otlp(sink.traces, "traces")) >= n_spans
            and sum(1 for _ in read_otlp(sink.logs, "logs")) >= n_logs
        ),
        timeout=60,
    )


def _flush_timestamps(prom: Prometheus, workload: dict[str, Any]) -> tuple[int, int]:
    """Sample timestamps (ms) of the two flushes, read from the runs counter of the ``builder``/succeeded
    series (value 1 after phase A, 2 after phase B)."""

    def ts_of(value: str) -> list[int]:
        out = []
        for s in prom.samples(
            'agenttrail_runs_total{gen_ai_agent_name="builder",agenttrail_run_status="succeeded"}'
        ):
            out += [round(float(t) * 1000) for t, v in s["values"] if v == value]
        return sorted(out)

    wait_for("both flushes in Prometheus", lambda: bool(ts_of("1")) and bool(ts_of("2")), timeout=60)
    return ts_of("1")[-1], ts_of("2")[0]


@pytest.fixture(scope="session")
def stack_run(collector_bin: Path, prometheus: Prometheus, stack_tmp: Path) -> Iterator[StackRun]:
    sink_proc, sink = _start_sink(collector_bin, stack_tmp, "sink")
    col_proc, col = _start_collector(
        collector_bin, stack_tmp, "collector", sink, f"{prometheus.url}/api/v1/write"
    )
    try:
        workload = _run_workload(col.otlp_http, stack_tmp / "run")
        run = StackRun(workload, prometheus, sink, col, stack_tmp / "collector.log")
        run.t_a_ms, run.t_b_ms = _flush_timestamps(prometheus, workload)
        _wait_sink(sink, workload)
        yield run
    finally:
        col_proc.stop()
        sink_proc.stop()


@pytest.fixture(scope="session")
def redacted_run(collector_bin: Path, stack_tmp: Path) -> Iterator[StackRun]:
    """The same workload through the shipped config with AGENTTRAIL_REDACT_CONTENT=true. Its metrics go
    to a closed loopback port (dropped): only its traces and logs are inspected."""
    sink_proc, sink = _start_sink(collector_bin, stack_tmp, "sink-redacted")
    col_proc, col = _start_collector(
        collector_bin,
        stack_tmp,
        "collector-redacted",
        sink,
        f"http://127.0.0.1:{free_port()}/api/v1/write",
        {"AGENTTRAIL_REDACT_CONTENT": "true"},
    )
    try:
        workload = _run_workload(col.otlp_http, stack_tmp / "run-redacted")
        _wait_sink(sink, workload)
        yield StackRun(workload, Prometheus(""), sink, col, stack_tmp / "collector-redacted.log")
    finally:
        col_proc.stop(kill=True)  # its metrics exporter would retry the closed port until timeout
        sink_proc.stop()
