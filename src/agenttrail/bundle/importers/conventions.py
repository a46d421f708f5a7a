"""Other instrumentations' attribute conventions, mapped onto the GenAI semantic conventions.

An imported span keeps every attribute it came with; the GenAI attributes the analyzer reads are
*added* when the span lacks them, derived from OpenLLMetry (``traceloop.*``, ``llm.request.type``),
OpenInference (``openinference.span.kind``, ``llm.*``, ``session.id``), Logfire and the older GenAI
names (``gen_ai.system``, ``gen_ai.usage.prompt_tokens``). Logfire's *pending* spans (placeholders
it exports before the real span ends) are dropped, so nothing is counted twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from ... import names

# third-party attribute names (theirs, not ours: kept here, next to the mapping that reads them)
OI_KIND: Final = "openinference.span.kind"
OI_MODEL: Final = "llm.model_name"
OI_PROVIDER: Final = "llm.provider"
OI_SYSTEM: Final = "llm.system"
OI_PROMPT_TOKENS: Final = "llm.token_count.prompt"
OI_COMPLETION_TOKENS: Final = "llm.token_count.completion"
OI_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
OI_INVOCATION: Final = "llm.invocation_parameters"
OI_TOOL_NAME: Final = "tool.name"
OI_AGENT_NAME: Final = "agent.name"
OI_SESSION: Final = "session.id"
TL_KIND: Final = "traceloop.span.kind"
TL_ENTITY: Final = "traceloop.entity.name"
TL_WORKFLOW: Final = "traceloop.workflow.name"
TL_ASSOCIATION: Final = "traceloop.association.properties."
TL_REQUEST_TYPE: Final = "llm.request.type"
LF_SPAN_TYPE: Final = "logfire.span_type"
LF_PENDING: Final = "pending_span"
SERVICE_NAME: Final = "service.name"
# OpenLLMetry's instrumentations name their scope "opentelemetry.instrumentation.<library>[.v1]", like
# the contrib ones but outside the official GenAI packages ("...genai.<library>", "...openai_v2").
TL_SCOPE_PREFIXES: Final = ("traceloop.", "opentelemetry.instrumentation.openai.",
                            "opentelemetry.instrumentation.anthropic", "opentelemetry.instrumentation.bedrock",
                            "opentelemetry.instrumentation.langchain", "opentelemetry.instrumentation.llamaindex",
                            "opentelemetry.instrumentation.mcp", "opentelemetry.instrumentation.crewai")

_OI_OPERATIONS: Final = {"LLM": names.OP_CHAT, "TOOL": names.OP_EXECUTE_TOOL,
                         "AGENT": names.OP_INVOKE_AGENT, "EMBEDDING": "embeddings"}
_TL_OPERATIONS: Final = {"tool": names.OP_EXECUTE_TOOL, "agent": names.OP_INVOKE_AGENT,
                         "workflow": names.OP_INVOKE_WORKFLOW}
_TL_REQUEST_TYPES: Final = {"chat": names.OP_CHAT, "completion": "text_completion",
                            "embedding": "embeddings"}
_SESSION_KEYS: Final = ("session_id", "thread_id", "conversation_id", "session.id")


def convention_of(attrs: Mapping[str, Any], scope_name: str) -> str:
    """Which instrumentation's convention a span follows (for the manifest's tally)."""
    if OI_KIND in attrs:
        return "openinference"
    if (any(k.startswith("traceloop.") for k in attrs) or TL_REQUEST_TYPE in attrs
            or scope_name.startswith(TL_SCOPE_PREFIXES)):
        return "openllmetry"
    if any(k.startswith("logfire.") for k in attrs) or scope_name.startswith("logfire"):
        return "logfire"
    if any(k.startswith("gen_ai.") for k in attrs):
        return "genai"
    return "other"


def is_pending_placeholder(attrs: Mapping[str, Any]) -> bool:
    return attrs.get(LF_SPAN_TYPE) == LF_PENDING


def conversation_id(attrs: Mapping[str, Any]) -> str | None:
    """The run a span belongs to, by whichever convention names it."""
    for key in (names.RUN_ID, names.CONVERSATION_ID, OI_SESSION):
        v = attrs.get(key)
        if isinstance(v, str) and v:
            return v
    for key in _SESSION_KEYS:
        v = attrs.get(TL_ASSOCIATION + key)
        if isinstance(v, str) and v:
            return v
    return None


def _json_field(text: Any, key: str) -> Any:
    if not isinstance(text, str) or key not in text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj.get(key) if isinstance(obj, dict) else None


def genai_additions(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """GenAI attributes derivable from ``attrs`` that ``attrs`` does not have yet."""
    add: dict[str, Any] = {}

    def put(key: str, value: Any) -> None:
        if value is not None and value != "" and key not in attrs and key not in add:
            add[key] = value

    oi = attrs.get(OI_KIND)
    if isinstance(oi, str):
        put(names.OPERATION_NAME, _OI_OPERATIONS.get(oi.upper()))
        put(names.REQUEST_MODEL, attrs.get(OI_MODEL) or _json_field(attrs.get(OI_INVOCATION), "model"))
        put(names.PROVIDER_NAME, attrs.get(OI_PROVIDER) or attrs.get(OI_SYSTEM))
        put(names.USAGE_INPUT_TOKENS, attrs.get(OI_PROMPT_TOKENS))
        put(names.USAGE_OUTPUT_TOKENS, attrs.get(OI_COMPLETION_TOKENS))
        put(names.USAGE_CACHE_READ_INPUT_TOKENS, attrs.get(OI_CACHE_READ))
        if oi.upper() == "TOOL":
            put(names.TOOL_NAME, attrs.get(OI_TOOL_NAME))
        if oi.upper() == "AGENT":
            put(names.AGENT_NAME, attrs.get(OI_AGENT_NAME))
    tl = attrs.get(TL_KIND)
    if isinstance(tl, str):
        put(names.OPERATION_NAME, _TL_OPERATIONS.get(tl))
        entity = attrs.get(TL_ENTITY)
        if tl == "tool":
            put(names.TOOL_NAME, entity)
        elif tl == "agent":
            put(names.AGENT_NAME, entity)
        elif tl == "workflow":
            put(names.WORKFLOW_NAME, attrs.get(TL_WORKFLOW) or entity)
    rt = attrs.get(TL_REQUEST_TYPE)
    if isinstance(rt, str):
        put(names.OPERATION_NAME, _TL_REQUEST_TYPES.get(rt))
    put(names.PROVIDER_NAME, attrs.get(names.LEGACY_SYSTEM))
    put(names.USAGE_INPUT_TOKENS, attrs.get(names.LEGACY_PROMPT_TOKENS))
    put(names.USAGE_OUTPUT_TOKENS, attrs.get(names.LEGACY_COMPLETION_TOKENS))
    put(names.CONVERSATION_ID, conversation_id(attrs))
    return add


class Tally:
    """What an import saw: spans per convention, run ids, agent names."""

    def __init__(self) -> None:
        self.conventions: Counter[str] = Counter()
        self.run_ids: Counter[str] = Counter()
        self.agents: Counter[str] = Counter()
        self.services: Counter[str] = Counter()
        self.workflows: Counter[str] = Counter()
        self.pending_dropped = 0
