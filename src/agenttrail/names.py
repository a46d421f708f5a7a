"""Every attribute, metric and event name agenttrail emits, in one place.

GenAI names come from ``opentelemetry-semantic-conventions`` where that package has them; the few it
does not have yet (newer semconv) are spelled here once, with a note. Dashboards, queries and the
analyzer use only names defined in this module — ``tests/instrument/test_names_contract.py`` enforces it.
"""

from __future__ import annotations

from typing import Final

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _ga
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as _gm
from opentelemetry.semconv.attributes import error_attributes as _err
from opentelemetry.semconv.attributes import exception_attributes as _exc
from opentelemetry.semconv.attributes import server_attributes as _srv

# --- span attributes (GenAI semantic conventions) -------------------------------------------
OPERATION_NAME: Final = _ga.GEN_AI_OPERATION_NAME
PROVIDER_NAME: Final = _ga.GEN_AI_PROVIDER_NAME
CONVERSATION_ID: Final = _ga.GEN_AI_CONVERSATION_ID
AGENT_NAME: Final = _ga.GEN_AI_AGENT_NAME
AGENT_DESCRIPTION: Final = _ga.GEN_AI_AGENT_DESCRIPTION
WORKFLOW_NAME: Final = _ga.GEN_AI_WORKFLOW_NAME
REQUEST_MODEL: Final = _ga.GEN_AI_REQUEST_MODEL
REQUEST_STREAM: Final = _ga.GEN_AI_REQUEST_STREAM
REQUEST_MAX_TOKENS: Final = _ga.GEN_AI_REQUEST_MAX_TOKENS
REQUEST_TEMPERATURE: Final = _ga.GEN_AI_REQUEST_TEMPERATURE
RESPONSE_MODEL: Final = _ga.GEN_AI_RESPONSE_MODEL
RESPONSE_ID: Final = _ga.GEN_AI_RESPONSE_ID
RESPONSE_FINISH_REASONS: Final = _ga.GEN_AI_RESPONSE_FINISH_REASONS
RESPONSE_TIME_TO_FIRST_CHUNK: Final = _ga.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK
USAGE_INPUT_TOKENS: Final = _ga.GEN_AI_USAGE_INPUT_TOKENS
USAGE_OUTPUT_TOKENS: Final = _ga.GEN_AI_USAGE_OUTPUT_TOKENS
USAGE_CACHE_READ_INPUT_TOKENS: Final = _ga.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
# Current semconv name; the Python package (0.66b2) still calls it cache_creation (kept as an alias
# for readers).
USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = _ga.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
USAGE_REASONING_OUTPUT_TOKENS: Final = _ga.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
TOOL_NAME: Final = _ga.GEN_AI_TOOL_NAME
TOOL_TYPE: Final = _ga.GEN_AI_TOOL_TYPE
TOOL_CALL_ID: Final = _ga.GEN_AI_TOOL_CALL_ID
TOOL_DESCRIPTION: Final = _ga.GEN_AI_TOOL_DESCRIPTION
TOOL_CALL_ARGUMENTS: Final = _ga.GEN_AI_TOOL_CALL_ARGUMENTS
TOOL_CALL_RESULT: Final = _ga.GEN_AI_TOOL_CALL_RESULT
INPUT_MESSAGES: Final = _ga.GEN_AI_INPUT_MESSAGES
OUTPUT_MESSAGES: Final = _ga.GEN_AI_OUTPUT_MESSAGES
TOKEN_TYPE: Final = _ga.GEN_AI_TOKEN_TYPE
ERROR_TYPE: Final = _err.ERROR_TYPE
EXCEPTION_TYPE: Final = _exc.EXCEPTION_TYPE
EXCEPTION_MESSAGE: Final = _exc.EXCEPTION_MESSAGE
EXCEPTION_STACKTRACE: Final = _exc.EXCEPTION_STACKTRACE
SERVER_ADDRESS: Final = _srv.SERVER_ADDRESS
SERVER_PORT: Final = _srv.SERVER_PORT

# Legacy / other-instrumentation names the analyzer maps (never emitted by agenttrail).
LEGACY_SYSTEM: Final = _ga.GEN_AI_SYSTEM
LEGACY_PROMPT_TOKENS: Final = _ga.GEN_AI_USAGE_PROMPT_TOKENS
LEGACY_COMPLETION_TOKENS: Final = _ga.GEN_AI_USAGE_COMPLETION_TOKENS

# Operation names (values of gen_ai.operation.name). Spelled here: the semconv package marks its
# enum deprecated since GenAI moved to its own repository (the values did not change).
OP_CHAT: Final = "chat"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"
OP_EXECUTE_TOOL: Final = "execute_tool"

# --- agenttrail's own attributes (namespaced, documented in docs/instrumenting.md) ----------
RUN_ID: Final = "agenttrail.run.id"
NODE_NAME: Final = "agenttrail.node.name"
SPAN_KIND: Final = "agenttrail.span.kind"  # node | llm | tool | run
TOOL_INPUT_HASH: Final = "agenttrail.tool.input_hash"
TOOL_SIDE_EFFECT: Final = "agenttrail.tool.side_effect"
TOOL_IDEMPOTENCY_KEY: Final = "agenttrail.tool.idempotency_key"
RUN_STATUS: Final = "agenttrail.run.status"
WORKER_ID: Final = "agenttrail.worker.id"
CONTENT_TRUNCATED: Final = "agenttrail.content.truncated"
DELEGATED_TO: Final = "agenttrail.llm.delegated_to"  # set when an official instrumentation owns the span
# Framework integrations (agenttrail.integrations.*).
LANGGRAPH_STEP: Final = "agenttrail.langgraph.step"
LANGGRAPH_CHECKPOINT_NS: Final = "agenttrail.langgraph.checkpoint_ns"
HANDOFF_FROM: Final = "agenttrail.handoff.from_agent"
HANDOFF_TO: Final = "agenttrail.handoff.to_agent"
# Values of agenttrail.span.kind besides run | node | llm | tool.
KIND_GRAPH: Final = "graph"
KIND_SUPERSTEP: Final = "superstep"
KIND_HANDOFF: Final = "handoff"
# Set on an @llm span when an opentelemetry-util-genai instrumentation (the official OpenAI /
# Anthropic ones) ran inside it: it suppressed its own span and metrics and published its data to ours.
ENRICHED_BY: Final = "agenttrail.llm.enriched_by"
BUDGET_KIND: Final = "agenttrail.budget.kind"  # tokens | tool_calls (on the budget gauge)
EVENT_TYPE: Final = "agenttrail.event.type"  # on every log event that mirrors a run event
EVENT_SEQ: Final = "agenttrail.event.seq"

# --- metrics --------------------------------------------------------------------------------
M_CLIENT_OPERATION_DURATION: Final = _gm.GEN_AI_CLIENT_OPERATION_DURATION
M_CLIENT_TOKEN_USAGE: Final = _gm.GEN_AI_CLIENT_TOKEN_USAGE
M_CLIENT_TIME_TO_FIRST_CHUNK: Final = _gm.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK
M_EXECUTE_TOOL_DURATION: Final = "gen_ai.execute_tool.duration"
M_INVOKE_AGENT_DURATION: Final = "gen_ai.invoke_agent.duration"
M_INVOKE_WORKFLOW_DURATION: Final = "gen_ai.invoke_workflow.duration"
M_INVOKE_AGENT_TOOL_CALLS: Final = "gen_ai.invoke_agent.tool_calls"
M_INVOKE_AGENT_INFERENCE_CALLS: Final = "gen_ai.invoke_agent.inference_calls"
# Project metrics (documented extension: per-agent breakdowns the semconv client metrics lack).
M_RUNS: Final = "agenttrail.runs"  # counter, attributes: gen_ai.agent.name, agenttrail.run.status
M_TOOL_ERRORS: Final = "agenttrail.tool.errors"  # counter: gen_ai.tool.name, error.type
M_RATE_LIMITS: Final = "agenttrail.rate_limits"  # counter: gen_ai.provider.name
# counter: a tool call repeating the run's previous tool call (same name and input hash), or an
# inference right after a failed one. Attributes: gen_ai.agent.name, gen_ai.operation.name,
# gen_ai.tool.name (tools) or gen_ai.provider.name (inference).
M_RETRIES: Final = "agenttrail.retries"
M_AGENT_TOKENS: Final = "agenttrail.agent.tokens"  # counter: agent, model, token type
M_BUDGET_USED: Final = "agenttrail.budget.used_ratio"  # gauge 0..1: agent, budget kind

DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
INVOKE_AGENT_BUCKETS: Final = (
    0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6,
)  # fmt: skip
INVOKE_WORKFLOW_BUCKETS: Final = (1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200)
COUNT_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128)

# Every metric name emitted, for the dashboards/queries contract test.
METRICS: Final = (
    M_CLIENT_OPERATION_DURATION,
    M_CLIENT_TOKEN_USAGE,
    M_CLIENT_TIME_TO_FIRST_CHUNK,
    M_EXECUTE_TOOL_DURATION,
    M_INVOKE_AGENT_DURATION,
    M_INVOKE_WORKFLOW_DURATION,
    M_INVOKE_AGENT_TOOL_CALLS,
    M_INVOKE_AGENT_INFERENCE_CALLS,
    M_RUNS,
    M_TOOL_ERRORS,
    M_RATE_LIMITS,
    M_RETRIES,
    M_AGENT_TOKENS,
    M_BUDGET_USED,
)

# --- bundle event types (shared/spec/bundle-v1.md) -----------------------------------------
EV_RUN_STARTED: Final = "run.started"
EV_RUN_RESUMED: Final = "run.resumed"
EV_RUN_FINISHED: Final = "run.finished"
EV_MODEL_CALL: Final = "model.call"
EV_TOOL_STARTED: Final = "tool.started"
EV_TOOL_FINISHED: Final = "tool.finished"
EV_OPERATION_INTENT: Final = "operation.intent"
EV_OPERATION_OUTCOME: Final = "operation.outcome"
EV_SIGNAL: Final = "signal"
EV_CHECKPOINT_SAVED: Final = "checkpoint.saved"
EV_ERROR: Final = "error"
EV_NODE_STARTED: Final = "node.started"
EV_NODE_FINISHED: Final = "node.finished"
EV_RATE_LIMITED: Final = "rate_limited"
EV_BUDGET_EXCEEDED: Final = "budget.exceeded"
EV_APPROVAL_REQUESTED: Final = "approval.requested"
EV_APPROVAL_DECIDED: Final = "approval.decided"
EV_CONTEXT_HANDOFF: Final = "context.handoff"
EV_AGENT_HANDOFF: Final = "agent.handoff"  # from_agent, to_agent (OpenAI Agents SDK handoffs)

# --- GenAI log events (semconv §1.5) -------------------------------------------------------------
EV_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"  # opt-in (content capture)
EV_OPERATION_EXCEPTION: Final = "gen_ai.client.operation.exception"  # WARN, on a failed inference
