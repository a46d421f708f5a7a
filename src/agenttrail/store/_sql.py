"""SQL that maps OTLP/JSON spans from any instrumentation onto one typed ``spans`` table.

Conventions understood (shared/reference/telemetry-and-stack.md §7): OpenTelemetry GenAI (current and
legacy ``gen_ai.system`` / ``prompt_tokens``), OpenLLMetry ``traceloop.*``, OpenInference ``llm.*`` /
``openinference.span.kind``. Every attribute is also kept in ``attributes`` (MAP VARCHAR→VARCHAR).
"""

from __future__ import annotations

from .. import names as n

# Plain lines of a text file, with their line numbers. chr(1) as the delimiter: JSON never contains
# a raw control character, so each line arrives whole in one column.
LINES = """
SELECT row_number() OVER () AS lineno, line
FROM read_csv(?, columns={'line': 'VARCHAR'}, delim=chr(1), quote='', escape='', header=false,
              max_line_size=1073741824, auto_detect=false)
"""

_ATTR_VALUE = (
    "coalesce(a.value->>'stringValue', a.value->>'intValue', a.value->>'doubleValue', "
    "a.value->>'boolValue', CAST(a.value->'arrayValue'->'values' AS VARCHAR), "
    "CAST(a.value->'kvlistValue' AS VARCHAR), a.value->>'bytesValue')"
)


def attrs_map(expr: str) -> str:
    """An OTLP attribute list (JSON) → MAP(VARCHAR, VARCHAR); the last value of a repeated key wins."""
    return (
        "map_from_entries(list_transform("
        f"coalesce(from_json({expr}, '[{{\"key\":\"VARCHAR\",\"value\":\"JSON\"}}]'), []), "
        f"lambda a: {{'k': a.key, 'v': {_ATTR_VALUE}}}))"
    )


def a(key: str) -> str:
    return f"attributes['{key}']"


def _int(*keys: str) -> str:
    return "coalesce(" + ", ".join(f"TRY_CAST({a(k)} AS BIGINT)" for k in keys) + ")"


OPENINFERENCE_KIND = "openinference.span.kind"
TRACELOOP_KIND = "traceloop.span.kind"

OPERATION = f"""coalesce(
    {a(n.OPERATION_NAME)},
    CASE upper({a(OPENINFERENCE_KIND)})
        WHEN 'LLM' THEN 'chat' WHEN 'TOOL' THEN 'execute_tool' WHEN 'AGENT' THEN 'invoke_agent'
        WHEN 'EMBEDDING' THEN 'embeddings' WHEN 'RETRIEVER' THEN 'retrieval' END,
    CASE lower({a(TRACELOOP_KIND)})
        WHEN 'tool' THEN 'execute_tool' WHEN 'agent' THEN 'invoke_agent'
        WHEN 'workflow' THEN 'invoke_workflow' END,
    CASE WHEN {a('llm.request.type')} = 'chat' THEN 'chat'
         WHEN {a('llm.request.type')} = 'completion' THEN 'text_completion' END)"""

# What the span is, for the timeline and the detectors: run | llm | tool | node | other.
KIND = f"""CASE
    WHEN {a(n.SPAN_KIND)} IS NOT NULL THEN {a(n.SPAN_KIND)}
    WHEN operation IN ('chat', 'text_completion', 'generate_content', 'embeddings') THEN 'llm'
    WHEN operation = 'execute_tool' THEN 'tool'
    WHEN operation IN ('invoke_agent', 'invoke_workflow') AND parent_span_id IS NULL THEN 'run'
    WHEN operation IN ('invoke_agent', 'invoke_workflow') THEN 'agent'
    WHEN {a(TRACELOOP_KIND)} = 'task' OR upper({a(OPENINFERENCE_KIND)}) = 'CHAIN' THEN 'node'
    ELSE 'other' END"""

TOOL_ARGS = f"coalesce({a(n.TOOL_CALL_ARGUMENTS)}, {a('traceloop.entity.input')}, {a('input.value')})"

SPAN_COLUMNS = f"""
    coalesce({a(n.PROVIDER_NAME)}, {a(n.LEGACY_SYSTEM)}, {a('llm.provider')}, {a('llm.system')}) AS provider,
    coalesce({a(n.REQUEST_MODEL)}, {a('llm.model_name')}, {a(n.RESPONSE_MODEL)}) AS request_model,
    coalesce({a(n.RESPONSE_MODEL)}, {a('llm.model_name')}) AS response_model,
    {a(n.AGENT_NAME)} AS agent_name,
    CASE WHEN operation = 'execute_tool' THEN coalesce({a(n.TOOL_NAME)}, {a('tool.name')},
         {a('traceloop.entity.name')}, regexp_extract(name, '^execute_tool (.*)$', 1)) END AS tool_name,
    {a(n.TOOL_CALL_ID)} AS tool_call_id,
    coalesce({a(n.CONVERSATION_ID)}, {a('session.id')}) AS conversation_id,
    {_int(n.USAGE_INPUT_TOKENS, n.LEGACY_PROMPT_TOKENS, 'llm.token_count.prompt')} AS input_tokens,
    {_int(n.USAGE_OUTPUT_TOKENS, n.LEGACY_COMPLETION_TOKENS, 'llm.token_count.completion')} AS output_tokens,
    {_int(n.USAGE_CACHE_READ_INPUT_TOKENS, 'llm.token_count.prompt_details.cache_read')} AS cache_read_tokens,
    {_int(n.USAGE_CACHE_WRITE_INPUT_TOKENS, n.USAGE_CACHE_CREATION_INPUT_TOKENS,
          'llm.token_count.prompt_details.cache_write')} AS cache_write_tokens,
    coalesce({a(n.ERROR_TYPE)}, CASE WHEN status_code = 2 THEN '_OTHER' END) AS error_type,
    coalesce({a(n.TOOL_INPUT_HASH)},
             CASE WHEN operation = 'execute_tool' AND {TOOL_ARGS} IS NOT NULL
                  THEN substr(sha256({TOOL_ARGS}), 1, 16) END) AS input_hash,
    {TOOL_ARGS} AS tool_arguments,
    {a(n.DELEGATED_TO)} AS delegated_to
"""
