"""SQL that maps OTLP/JSON spans from any instrumentation onto one typed ``spans`` table.

Conventions understood (shared/reference/telemetry-and-stack.md §7): OpenTelemetry GenAI (current and
legacy ``gen_ai.system`` / ``prompt_tokens``), OpenLLMetry ``traceloop.*``, OpenInference ``llm.*`` /
``openinference.span.kind``, Logfire (GenAI names; its error type only in an ``exception`` event).
Every attribute is also kept: ``attr_keys``/``attr_values`` (parallel lists) in the ``span_rows`` table,
and the ``attributes`` MAP built from them by the ``spans`` view.

Two ways in, one typed result: the fast path reads a file with ``read_json`` and an explicit nested
schema (no sampling, no JSON re-parsing); the careful path, used only when the fast one meets a damaged
line, reads the file line by line so each bad line can be reported as ``file:line`` and skipped.
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

# read_json's buffers are at least ``maximum_object_size`` big, and a file is split between threads by
# buffer: at 1 GiB a 1 GB trace.jsonl is one buffer, read by one thread, held whole in memory (measured at
# 1M spans: 1.6 GB peak for the spans read, 0.9 GB with DuckDB's 16 MiB default). So the fast reads use
# the default and only a file with a longer line (or a bigger single document) is read again at 1 GiB.
OBJECT_SIZE = 16 * 1024 * 1024
LARGE_OBJECT_SIZE = 1024 * 1024 * 1024
MAX_OBJECT = "{max_object}"  # placeholder in the fast reads, see loader._fast_or_careful

# -- the OTLP/JSON schema, for read_json(columns=...) -------------------------------------------------
# Scalars are read as VARCHAR whatever their JSON type: the MAP holds text anyway, a number keeps the
# spelling the exporter wrote (as the careful path's ->> does), and no CAST runs per attribute.
_VALUE = ("STRUCT(stringValue VARCHAR, intValue VARCHAR, doubleValue VARCHAR, boolValue VARCHAR, "
          "arrayValue JSON, kvlistValue JSON, bytesValue VARCHAR)")
_ATTRS = f"STRUCT(key VARCHAR, value {_VALUE})[]"
_STATUS = "STRUCT(code VARCHAR, message VARCHAR)"
_SPAN = (f"STRUCT(traceId VARCHAR, spanId VARCHAR, parentSpanId VARCHAR, name VARCHAR, kind VARCHAR, "
         f"startTimeUnixNano VARCHAR, endTimeUnixNano VARCHAR, attributes {_ATTRS}, status {_STATUS}, "
         f"events JSON)")
_SCOPE_SPANS = f"STRUCT(scope STRUCT(name VARCHAR), spans {_SPAN}[])[]"
_RESOURCE_SPANS = (f"STRUCT(resource STRUCT(attributes {_ATTRS}), scopeSpans {_SCOPE_SPANS}, "
                   f"scope_spans {_SCOPE_SPANS}, instrumentationLibrarySpans {_SCOPE_SPANS})[]")
TRACE_COLUMNS = ("{'resourceSpans': '" + _RESOURCE_SPANS + "', 'resource_spans': '" + _RESOURCE_SPANS
                 + "'}")

EVENT_COLUMNS = ("{'seq': 'BIGINT', 'ts': 'VARCHAR', 'run_id': 'VARCHAR', 'type': 'VARCHAR', "
                 "'actor': 'VARCHAR', 'trace_id': 'VARCHAR', 'span_id': 'VARCHAR', 'data': 'JSON', "
                 "'payload_ref': 'VARCHAR', 'redaction': 'VARCHAR', 'worker_id': 'VARCHAR'}")

CHECKPOINT_COLUMNS = ("{'checkpoint_id': 'VARCHAR', 'parent_checkpoint_id': 'VARCHAR', 'ts': 'VARCHAR', "
                      "'thread_id': 'VARCHAR', 'step': 'VARCHAR', 'values': 'JSON', "
                      "'channel_values': 'JSON', 'metadata': 'JSON', 'pending_writes': 'JSON'}")

_TYPED_VALUE = ("coalesce(a.value.stringValue, a.value.intValue, a.value.doubleValue, a.value.boolValue, "
                "CAST(a.value.arrayValue->'values' AS VARCHAR), "
                "CAST(a.value.kvlistValue AS VARCHAR), a.value.bytesValue)")


def typed_attr_lists(expr: str) -> tuple[str, str]:
    """A typed OTLP attribute list → (keys VARCHAR[], values VARCHAR[]), never NULL."""
    items = f"coalesce({expr}, [])"
    return (f"list_transform({items}, lambda a: a.key)",
            f"list_transform({items}, lambda a: {_TYPED_VALUE})")


# The fast path: one row per span, straight from read_json with the explicit schema.
#
# Attributes are kept as two parallel lists (keys, values) rather than a MAP: DuckDB checks every
# MAP's keys as it builds it, which cost more than parsing the JSON they came from (measured at 1M
# spans: 1.2 s of a 3.8 s read); a lookup is the same linear scan either way. The ``attributes`` and
# ``resource`` MAPs are columns of the ``spans`` view (SPANS_VIEW), built only for the rows a query reads.
_SPAN_KEYS, _SPAN_VALUES = typed_attr_lists("x.attributes")
_RESOURCE_KEYS, _RESOURCE_VALUES = typed_attr_lists("res")
_RAW_SPANS_FAST = f"""
WITH rs AS (SELECT unnest({{resource_spans}}) AS r
            FROM read_json($file, columns={TRACE_COLUMNS}, format='{{fmt}}', records=true,
                           maximum_object_size={{max_object}})),
ss AS (SELECT r.resource.attributes AS res, unnest({{scope_spans}}) AS s FROM rs),
sp AS (SELECT res, s.scope.name AS scope_name, unnest(s.spans) AS x FROM ss)
SELECT NULL::BIGINT AS lineno, x.traceId AS trace_id, x.spanId AS span_id, x.parentSpanId AS parent_span_id,
       x.name AS name, x.kind AS kind_raw, x.startTimeUnixNano AS start_raw, x.endTimeUnixNano AS end_raw,
       x.status.code AS status_raw, x.status.message AS status_message, scope_name,
       {_SPAN_KEYS} AS attr_keys, {_SPAN_VALUES} AS attr_values,
       {_RESOURCE_KEYS} AS resource_keys, {_RESOURCE_VALUES} AS resource_values,
       x.events AS span_events
FROM sp
"""

_RESOURCE_SPELLINGS = ("resourceSpans", "resource_spans")
_SCOPE_SPELLINGS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")


def raw_spans_fast(fmt: str, head: str = "") -> str:
    """The fast read for a trace file whose first bytes are ``head``. Parameter $file.

    Exporters spell the OTLP keys one way (camelCase, or snake_case from protobuf-to-JSON tools).
    Unnesting a ``coalesce`` of all spellings copies every nested list (about a quarter of the read),
    so when the head shows exactly one spelling only that one is unnested; otherwise all are tried.
    """
    def pick(spellings: tuple[str, ...], prefix: str) -> str:
        seen = [sp for sp in spellings if f'"{sp}"' in head]
        if len(seen) == 1:
            return f"{prefix}{seen[0]}"
        return "coalesce(" + ", ".join(f"{prefix}{sp}" for sp in spellings) + ")"

    return (_RAW_SPANS_FAST.replace("{fmt}", fmt)
            .replace("{resource_spans}", pick(_RESOURCE_SPELLINGS, ""))
            .replace("{scope_spans}", pick(_SCOPE_SPELLINGS, "r.")))


_ATTR_VALUE = (
    "coalesce(a.value->>'stringValue', a.value->>'intValue', a.value->>'doubleValue', "
    "a.value->>'boolValue', CAST(a.value->'arrayValue'->'values' AS VARCHAR), "
    "CAST(a.value->'kvlistValue' AS VARCHAR), a.value->>'bytesValue')"
)


def attr_lists(expr: str) -> tuple[str, str]:
    """An OTLP attribute list (JSON) → (keys VARCHAR[], values VARCHAR[]), never NULL."""
    items = f"coalesce(from_json({expr}, '[{{\"key\":\"VARCHAR\",\"value\":\"JSON\"}}]'), [])"
    return (f"list_transform({items}, lambda a: a.key)",
            f"list_transform({items}, lambda a: {_ATTR_VALUE})")


def _arr(expr: str) -> str:
    """A JSON value as a list of JSON, or NULL when it is not an array (never an error)."""
    return f"CASE WHEN json_type({expr}) = 'ARRAY' THEN from_json({expr}, '[\"JSON\"]') END"


# The careful path over a ``_tr_lines(lineno, line)`` table: bad lines are skipped (and reported).
_LINE_KEYS, _LINE_VALUES = attr_lists("x->'attributes'")
_LINE_RESOURCE_KEYS, _LINE_RESOURCE_VALUES = attr_lists("res")
RAW_SPANS_LINES = f"""
WITH docs AS (
    SELECT lineno, CAST(line AS JSON) AS j FROM _tr_lines
    WHERE coalesce(json_valid(line), false) AND trim(line) <> ''),
rs AS (SELECT lineno, unnest({_arr("coalesce(j->'resourceSpans', j->'resource_spans')")}) AS r FROM docs),
ss AS (SELECT lineno, r->'resource'->'attributes' AS res,
              unnest({_arr("coalesce(r->'scopeSpans', r->'scope_spans', r->'instrumentationLibrarySpans')")}) AS s
       FROM rs),
sp AS (SELECT lineno, res, s->'scope'->>'name' AS scope_name, unnest({_arr("s->'spans'")}) AS x FROM ss)
SELECT lineno, x->>'traceId' AS trace_id, x->>'spanId' AS span_id, x->>'parentSpanId' AS parent_span_id,
       x->>'name' AS name, x->>'kind' AS kind_raw, x->>'startTimeUnixNano' AS start_raw,
       x->>'endTimeUnixNano' AS end_raw, x->'status'->>'code' AS status_raw,
       x->'status'->>'message' AS status_message, scope_name,
       {_LINE_KEYS} AS attr_keys, {_LINE_VALUES} AS attr_values,
       {_LINE_RESOURCE_KEYS} AS resource_keys, {_LINE_RESOURCE_VALUES} AS resource_values,
       x->'events' AS span_events
FROM sp WHERE json_type(x) = 'OBJECT'
"""

# Lines of a trace file that are JSON but not OTLP traces, with what is wrong (careful path only).
TRACE_SHAPE_WARNINGS = f"""
SELECT lineno, CASE
    WHEN json_type(j) <> 'OBJECT' THEN 'not a JSON object; line skipped'
    WHEN {_arr("coalesce(j->'resourceSpans', j->'resource_spans')")} IS NULL
        THEN 'no resourceSpans list: not an OTLP/JSON ExportTraceServiceRequest; line skipped'
    WHEN len(list_filter(coalesce(j->'$.resourceSpans[*].scopeSpans[*].spans', []),
                         lambda v: json_type(v) <> 'ARRAY')) > 0
        THEN 'scopeSpans[].spans is not a list; those spans skipped'
    END AS message
FROM (SELECT lineno, CAST(line AS JSON) AS j FROM _tr_lines
      WHERE coalesce(json_valid(line), false) AND trim(line) <> '')
"""


def a(key: str, keys: str = "attr_keys", values: str = "attr_values") -> str:
    """The value of attribute ``key`` (the first, if an exporter repeated it), else NULL."""
    return f"{values}[list_position({keys}, '{key}')]"


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

# What the span is, for the timeline and the detectors: run | llm | tool | node | agent | other.
KIND = f"""CASE
    WHEN {a(n.SPAN_KIND)} IS NOT NULL THEN {a(n.SPAN_KIND)}
    WHEN operation IN ('chat', 'text_completion', 'generate_content', 'embeddings') THEN 'llm'
    WHEN operation = 'execute_tool' THEN 'tool'
    WHEN operation IN ('invoke_agent', 'invoke_workflow') AND parent_span_id IS NULL THEN 'run'
    WHEN operation IN ('invoke_agent', 'invoke_workflow') THEN 'agent'
    WHEN {a(TRACELOOP_KIND)} = 'task' OR upper({a(OPENINFERENCE_KIND)}) = 'CHAIN' THEN 'node'
    ELSE 'other' END"""

TOOL_ARGS = f"coalesce({a(n.TOOL_CALL_ARGUMENTS)}, {a('traceloop.entity.input')}, {a('input.value')})"

# The run a span belongs to: our own attribute, else the bundle's run.
RUN_ID = f"coalesce({a(n.RUN_ID)}, $run_id)"

# A trace-only bundle without a manifest takes its run id from the conventions' session ids.
SESSION_ID = (f"coalesce({a(n.CONVERSATION_ID)}, {a('session.id')}, "
              f"{a('traceloop.association.properties.run_id')}, "
              f"{a('traceloop.association.properties.session_id')})")

# The type of the last exception an errored span recorded (OpenInference and Logfire put it only in the
# ``exception`` event, as OpenTelemetry's record_exception does; GenAI's ``error.type`` is the same name).
EXCEPTION_TYPE = ("list_filter(CAST(span_events->'$[*].attributes[*]' AS JSON[]), "
                  "lambda e: e->>'key' = 'exception.type')[-1]->'value'->>'stringValue'")

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
    coalesce({a(n.ERROR_TYPE)}, CASE WHEN status_code = 2 THEN coalesce({EXCEPTION_TYPE}, '_OTHER') END)
        AS error_type,
    coalesce({a(n.TOOL_INPUT_HASH)},
             CASE WHEN operation = 'execute_tool' AND {TOOL_ARGS} IS NOT NULL
                  THEN substr(sha256({TOOL_ARGS}), 1, 16) END) AS input_hash,
    {TOOL_ARGS} AS tool_arguments,
    {a(n.DELEGATED_TO)} AS delegated_to,
    TRY_CAST({a(n.TOOL_SIDE_EFFECT)} AS BOOLEAN) AS side_effect,
    {a(n.TOOL_IDEMPOTENCY_KEY)} AS idempotency_key,
    {a(n.WORKER_ID)} AS worker_id
"""

_STATUS_CODE = """coalesce(TRY_CAST(status_raw AS INTEGER),
             CASE status_raw WHEN 'STATUS_CODE_ERROR' THEN 2 WHEN 'STATUS_CODE_OK' THEN 1 ELSE 0 END)"""
_SPAN_KIND = """coalesce(TRY_CAST(kind_raw AS INTEGER),
             CASE kind_raw WHEN 'SPAN_KIND_INTERNAL' THEN 1 WHEN 'SPAN_KIND_SERVER' THEN 2
                  WHEN 'SPAN_KIND_CLIENT' THEN 3 WHEN 'SPAN_KIND_PRODUCER' THEN 4
                  WHEN 'SPAN_KIND_CONSUMER' THEN 5 END)"""


def first_value_map(keys: str = "attr_keys", values: str = "attr_values") -> str:
    """Parallel key/value lists as a MAP. A list with a repeated or NULL key (OTLP forbids both; a
    hand-rolled exporter may write them) makes no valid MAP: there, NULL keys are dropped and the first
    value of a repeated key is kept. Only such a row pays for the filter."""
    return (f"coalesce(TRY(MAP({keys}, {values})), map_from_entries(list_filter(list_zip({keys}, {values}), "
            f"lambda e, i: e[1] IS NOT NULL AND list_position({keys}, e[1]) = i)))")


# ``spans`` is a view over the ``span_rows`` table: its ``attributes`` and ``resource`` MAPs are built
# only for the rows and columns a query reads. (Not generated columns: DuckDB evaluates those on every
# INSERT to check them, which is the cost the lists avoid.)
SPANS_VIEW = f"""
CREATE OR REPLACE VIEW spans AS
SELECT *, {first_value_map("attr_keys", "attr_values")} AS attributes,
       {first_value_map("resource_keys", "resource_values")} AS resource
FROM span_rows
"""


def typed_spans(raw: str) -> str:
    """The ``spans`` columns over a raw relation (either path). Parameters $bundle_id, $run_id (+ $file)."""
    return f"""
SELECT * EXCLUDE (attr_keys, attr_values, resource_keys, resource_values, span_events), {KIND} AS kind,
       attr_keys, attr_values, resource_keys, resource_values, span_events
FROM (
    SELECT $bundle_id::INTEGER AS bundle_id, lineno, trace_id, span_id, parent_span_id, name, span_kind,
           start_ns, end_ns, (end_ns - start_ns) / 1e6 AS duration_ms,
           make_timestamp(CAST(start_ns // 1000 AS BIGINT)) AS start_ts,
           make_timestamp(CAST(end_ns // 1000 AS BIGINT)) AS end_ts,
           status_code, status_message, scope_name, operation, {RUN_ID} AS run_id,
           {SPAN_COLUMNS}, attr_keys, attr_values, resource_keys, resource_values, span_events
    FROM (
        SELECT lower(trace_id) AS trace_id, lower(span_id) AS span_id,
               nullif(lower(parent_span_id), '') AS parent_span_id, name,
               {_SPAN_KIND} AS span_kind, TRY_CAST(start_raw AS BIGINT) AS start_ns,
               TRY_CAST(end_raw AS BIGINT) AS end_ns, {_STATUS_CODE} AS status_code,
               nullif(status_message, '') AS status_message, scope_name, lineno,
               attr_keys, attr_values, resource_keys, resource_values, span_events, {OPERATION} AS operation
        FROM ({raw}) raw
    ) base
) typed
"""
