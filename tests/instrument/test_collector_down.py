"""A dead, then hung, OTLP collector never stops the agent and never grows its memory.

The agent (tests/instrument/collector_down_agent.py) runs in a subprocess against a real OTLP/HTTP
receiver that it stops mid-run, then replaces by one that accepts the export and never answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

AGENT = Path(__file__).with_name("collector_down_agent.py")


@pytest.mark.slow
def test_dead_then_hung_collector() -> None:
    steps = 1000
    # if a step waited on the exporter it would wait on the hung collector (10-minute export timeout)
    # and this timeout would fail the test: completion within it is the non-blocking proof
    proc = subprocess.run([sys.executable, str(AGENT), str(steps)], capture_output=True, text=True,
                          timeout=240, check=False, cwd=AGENT.parents[2])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # the receiver was real and working before it was stopped: 3 spans per step (node, chat, tool)
    assert out["flush_alive"] is True
    assert out["received_alive"]["spans"] == 600
    # every step ran, after the collector died and while an export hung
    assert (out["steps_dead"], out["steps_hung_1"], out["steps_hung_2"]) == (steps, steps, steps)
    assert out["tool_calls"] == out["inference_calls"] == 200 + 3 * steps
    assert out["run_status"] == "succeeded"
    assert out["export_in_flight"] is True and out["exporter_gave_up"] is False
    assert out["received_total"] == out["received_alive"]  # nothing arrived after the stop
    # bounded: both export queues are full (dropping), and a second batch of 1000 steps — 3000 spans
    # and as many log records, ~11 MB if they were kept — adds under 1 MB
    q = out["queues"]
    assert (q["spans"], q["spans_max"], q["logs"], q["logs_max"]) == (2048, 2048, 2048, 2048)
    assert out["mem_after_batch_2"] - out["mem_after_batch_1"] < 1_000_000
