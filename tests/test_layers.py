"""The layers keep their promises (ARCHITECTURE.md): checked in fresh interpreters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("duckdb", "textual", "jinja2", "plotly", "pyarrow")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("module", ["agenttrail", "agenttrail.instrument"])
def test_telemetry_side_never_imports_the_analysis_stack(module: str) -> None:
    loaded = _modules_after(f"import {module}")
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def test_analysis_side_does_not_need_the_otel_sdk() -> None:
    loaded = _modules_after("import agenttrail.store, agenttrail.detect, agenttrail.bundle.reader")
    assert "opentelemetry.sdk.trace" not in loaded
    assert "agenttrail.instrument" not in loaded


def test_bundle_layer_imports_only_stdlib_and_zstandard() -> None:
    loaded = _modules_after("import agenttrail.bundle.reader, agenttrail.bundle.pack, agenttrail.bundle.verify")
    third_party = {m.split(".")[0] for m in loaded} & {"duckdb", "opentelemetry", "textual", "jinja2",
                                                       "plotly", "click"}
    assert third_party == set()


def test_importing_agenttrail_has_no_side_effects(tmp_path: Path) -> None:
    code = ("import os, threading; before = threading.active_count(); import agenttrail; "
            "from opentelemetry import trace; "
            "print(threading.active_count() - before, type(trace.get_tracer_provider()).__name__, "
            "sorted(os.listdir('.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.split() == ["0", "ProxyTracerProvider", "[]"]
