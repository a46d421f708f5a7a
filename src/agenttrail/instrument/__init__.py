"""The telemetry side of agenttrail: configure(), run(), @node, @tool, @llm.

Imports only OpenTelemetry, its semantic conventions and util-genai (plus the bundle writer when a run
seals its bundle) — never duckdb, textual, jinja2 or plotly.
"""

from ._content import CaptureMode, scrub
from ._decorators import LlmCall, llm, llm_call, node, tool
from ._run import Operation, Run, RunFailed, current_run, run
from ._runtime import RecorderOptions, TelemetryHandle, configure

__all__ = [
    "CaptureMode",
    "LlmCall",
    "Operation",
    "RecorderOptions",
    "Run",
    "RunFailed",
    "TelemetryHandle",
    "configure",
    "current_run",
    "llm",
    "llm_call",
    "node",
    "run",
    "scrub",
    "tool",
]
