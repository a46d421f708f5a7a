"""agenttrail: observe and post-mortem long-running AI agent runs.

    import agenttrail as at
    at.configure(service_name="agent-runner")
    with at.run("s_123", agent_name="builder", workspace=ws) as r:
        ...

Importing the package does nothing: no providers, no threads, no files until ``configure()``/``run()``.
The public names below load lazily, so the analysis side (``agenttrail.store``, ``agenttrail.detect``)
never pulls in the OpenTelemetry SDK and the telemetry side never pulls in DuckDB.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import AgenttrailError
    from .instrument import (
        CaptureMode,
        LlmCall,
        Operation,
        Run,
        RunFailed,
        TelemetryHandle,
        configure,
        current_run,
        llm,
        llm_call,
        node,
        run,
        tool,
    )

_LAZY = {
    "AgenttrailError": "agenttrail.errors",
    **{name: "agenttrail.instrument" for name in (
        "CaptureMode", "LlmCall", "Operation", "Run", "RunFailed", "TelemetryHandle", "configure",
        "current_run", "llm", "llm_call", "node", "run", "tool")},
}

__all__ = [
    "AgenttrailError", "CaptureMode", "LlmCall", "Operation", "Run", "RunFailed", "TelemetryHandle",
    "configure", "current_run", "llm", "llm_call", "node", "run", "tool",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agenttrail' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
