"""agenttrail: observe and post-mortem long-running AI agent runs.

    import agenttrail as at
    at.configure(service_name="agent-runner")
    with at.run("s_123", agent_name="builder", workspace=ws) as r:
        ...

Importing the package does nothing: no providers, no threads, no files until ``configure()``/``run()``.
"""

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

__all__ = [
    "AgenttrailError",
    "CaptureMode",
    "LlmCall",
    "Operation",
    "Run",
    "RunFailed",
    "TelemetryHandle",
    "configure",
    "current_run",
    "llm",
    "llm_call",
    "node",
    "run",
    "tool",
]
