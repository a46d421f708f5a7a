"""Importing agenttrail (and decorating functions) does nothing: no providers, threads, files, logs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import json, logging, os, sys, threading
before_threads = {t.name for t in threading.enumerate()}
before_files = sorted(os.listdir("."))
import agenttrail as at
import agenttrail.instrument
from opentelemetry import _logs, metrics, trace

@at.tool
def t(x): return x

@at.llm(provider="openai", model="m")
def m(): return {}

@at.node("n")
def n(): yield 1

print(json.dumps({
    "threads": sorted({t.name for t in threading.enumerate()} - before_threads),
    "files": sorted(set(os.listdir(".")) - set(before_files)),
    "tracer_provider": type(trace.get_tracer_provider()).__name__,
    "meter_provider": type(metrics.get_meter_provider()).__name__,
    "logger_provider": type(_logs.get_logger_provider()).__name__,
    "root_handlers": len(logging.getLogger().handlers),
    "agenttrail_handlers": len(logging.getLogger("agenttrail").handlers),
    "heavy": sorted(k for k in ("duckdb", "textual", "jinja2", "plotly", "pyarrow") if k in sys.modules),
}))
"""


def test_import_and_decorate_have_no_side_effects(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    assert json.loads(proc.stdout) == {
        "threads": [], "files": [],
        "tracer_provider": "ProxyTracerProvider", "meter_provider": "_ProxyMeterProvider",
        "logger_provider": "ProxyLoggerProvider", "root_handlers": 0, "agenttrail_handlers": 0,
        "heavy": [],
    }
    assert proc.stderr == ""
