"""Helpers for the stack tests: processes on loopback ports, a tiny Prometheus client, OTLP JSON,
and Prometheus' histogram_quantile re-implemented so expected percentiles are computed, not guessed."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(ok: object, reason: str) -> None:
    """Skip locally, FAIL in CI (CI=true): a stack component that cannot be had is a failure there."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"stack component missing in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, hint: str) -> Any:
    """Import a test-only dependency; skip the module locally, fail collection in CI."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        if IN_CI:
            pytest.fail(f"test dependency missing in CI: {name} ({hint})", pytrace=False)
        pytest.skip(f"{name} is not installed ({hint})", allow_module_level=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, check: Callable[[], bool], timeout: float = 30.0, interval: float = 0.2) -> None:
    """Poll ``check`` until it is true; bounded in time, raises with ``what`` when it never is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Proc:
    """A server process started by a fixture; stopped (and reaped) at teardown."""

    name: str
    args: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.popen = subprocess.Popen(
                self.args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **self.env}
            )
        return self

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def wait_ready(self, check: Callable[[], bool], timeout: float = 30.0) -> None:
        def ok() -> bool:
            if not self.alive():
                raise AssertionError(f"{self.name} exited early:\n{self.tail()}")
            return check()

        try:
            wait_for(f"{self.name} to be ready", ok, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\n--- {self.name} log ---\n{self.tail()}") from None

    def stop(self, *, kill: bool = False) -> None:
        """Terminate (or, with ``kill``, SIGKILL at once: for a process whose shutdown would only retry
        exports nobody reads) and reap."""
        p = self.popen
        if p is None or p.poll() is not None:
            return
        if kill:
            p.kill()
            p.wait(timeout=10)
            return
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


def run_script(args: list[str], timeout: float) -> tuple[int, str, str]:
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    return r.returncode, r.stdout, r.stderr


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


# --- Prometheus HTTP API --------------------------------------------------------------------------
@dataclass
class Prometheus:
    url: str

    def _get(self, path: str, params: Mapping[str, str] | list[tuple[str, str]]) -> Any:
        q = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=10) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise AssertionError(f"Prometheus {path} failed: {body}")
        return body["data"]

    def query(self, expr: str, at_ms: int) -> list[dict[str, Any]]:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at_ms // 1000)) + f".{at_ms % 1000:03d}Z"
        data = self._get("/api/v1/query", {"query": expr, "time": ts})
        if data["resultType"] != "vector":
            raise AssertionError(f"expected an instant vector from {expr!r}, got {data['resultType']}")
        return list(data["result"])

    def samples(self, selector: str) -> list[dict[str, Any]]:
        """Raw samples of every series matching ``selector`` over the last hour."""
        data = self._get("/api/v1/query", {"query": f"{selector}[1h]"})
        return list(data["result"])

    def label_values(self, label: str, match: str) -> list[str]:
        return list(self._get(f"/api/v1/label/{label}/values", [("match[]", match)]))

    def names(self) -> list[str]:
        return list(self._get("/api/v1/label/__name__/values", {}))


# --- histogram_quantile as Prometheus (classic histograms) computes it ---------------------------
def histogram_quantile(q: float, bounds: list[float], counts: list[float]) -> float:
    """``counts`` are per-bucket (OTLP, not cumulative), len(bounds)+1 with the +Inf bucket last."""
    cumulative: list[float] = []
    total = 0.0
    for c in counts:
        total += c
        cumulative.append(total)
    uppers = [*bounds, math.inf]
    if total == 0:
        return math.nan
    rank = q * total
    b = next(i for i, c in enumerate(cumulative) if c >= rank)
    if b == len(uppers) - 1:
        return uppers[-2]
    if b == 0 and uppers[0] <= 0:
        return uppers[0]
    start, end, count = 0.0, uppers[b], cumulative[b]
    if b > 0:
        start = uppers[b - 1]
        count -= cumulative[b - 1]
        rank -= cumulative[b - 1]
    return start + (end - start) * (rank / count)


# --- OTLP JSON (file exporter output) --------------------------------------------------------------
def any_value(v: Mapping[str, Any]) -> Any:
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [any_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: any_value(kv["value"]) for kv in v["kvlistValue"].get("values", [])}
    return None


def attrs(items: list[Mapping[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: any_value(kv.get("value", {})) for kv in items or []}


def read_otlp(path: Path, kind: str) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(resource attributes, span-or-log-record) for every item in a file-exporter JSON-lines file."""
    top, scope_key, item_key = (
        ("resourceSpans", "scopeSpans", "spans")
        if kind == "traces"
        else ("resourceLogs", "scopeLogs", "logRecords")
    )
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line).get(top, []):
            res = attrs(rs.get("resource", {}).get("attributes"))
            for ss in rs.get(scope_key, []):
                for item in ss.get(item_key, []):
                    yield res, item


# --- what the session fixtures hand to the tests ---------------------------------------------------
@dataclass
class Sink:
    """The stand-in for Tempo (gRPC) and Loki (HTTP /otlp): a collector writing JSON lines."""

    dir: Path
    grpc_port: int
    http_port: int

    @property
    def traces(self) -> Path:
        return self.dir / "traces.jsonl"

    @property
    def logs(self) -> Path:
        return self.dir / "logs.jsonl"


@dataclass
class Collector:
    grpc_port: int
    http_port: int
    metrics_port: int
    env: dict[str, str]

    @property
    def otlp_http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"


@dataclass
class StackRun:
    """One workload sent through the shipped collector config."""

    workload: dict[str, Any]
    prom: Prometheus
    sink: Sink
    collector: Collector
    collector_log: Path
    t_a_ms: int = 0
    t_b_ms: int = 0
