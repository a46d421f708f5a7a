"""OpenTelemetry → Prometheus names for the metrics agenttrail emits.

The collector's ``prometheus_remote_write`` exporter translates names with suffixes (the Prometheus
default, ``UnderscoreEscapingWithSuffixes``): ``.`` → ``_``; unit ``s`` → ``_seconds``; ``{...}`` units
add nothing; unit ``1`` on a gauge → ``_ratio``; monotonic counters get ``_total``; histograms become
``_bucket`` / ``_sum`` / ``_count``. The units below are the ones ``agenttrail.instrument`` declares; the
stack tests prove the translated names against a real collector and Prometheus.
"""

from __future__ import annotations

from typing import Final, Literal

from agenttrail.instrument import names

Kind = Literal["histogram", "counter", "gauge"]

# metric -> (instrument kind, unit) as agenttrail.instrument creates them
METRIC_KINDS: Final[dict[str, tuple[Kind, str]]] = {
    names.M_CLIENT_OPERATION_DURATION: ("histogram", "s"),
    names.M_CLIENT_TOKEN_USAGE: ("histogram", "{token}"),
    names.M_CLIENT_TIME_TO_FIRST_CHUNK: ("histogram", "s"),
    names.M_EXECUTE_TOOL_DURATION: ("histogram", "s"),
    names.M_INVOKE_AGENT_DURATION: ("histogram", "s"),
    names.M_INVOKE_WORKFLOW_DURATION: ("histogram", "s"),
    names.M_INVOKE_AGENT_TOOL_CALLS: ("histogram", "{tool_call}"),
    names.M_INVOKE_AGENT_INFERENCE_CALLS: ("histogram", "{inference_call}"),
    names.M_RUNS: ("counter", "{run}"),
    names.M_TOOL_ERRORS: ("counter", "{error}"),
    names.M_RATE_LIMITS: ("counter", "{response}"),
    names.M_AGENT_TOKENS: ("counter", "{token}"),
    names.M_BUDGET_USED: ("gauge", "1"),
}

_UNIT_SUFFIX: Final = {"s": "seconds", "ms": "milliseconds", "By": "bytes"}


def label(attribute: str) -> str:
    """Prometheus label name of an attribute: ``gen_ai.request.model`` → ``gen_ai_request_model``."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in attribute)


def metric_base(metric: str) -> str:
    """Prometheus name of a metric without the histogram series suffix."""
    kind, unit = METRIC_KINDS[metric]
    name = label(metric)
    suffix = _UNIT_SUFFIX.get(unit)
    if suffix is None and unit == "1" and kind == "gauge":
        suffix = "ratio"
    if suffix and not name.endswith(f"_{suffix}"):
        name = f"{name}_{suffix}"
    if kind == "counter":
        name += "_total"
    return name


def series_names() -> dict[str, str]:
    """Every Prometheus series name agenttrail's metrics produce → the OTel metric name."""
    out: dict[str, str] = {}
    for metric, (kind, _unit) in METRIC_KINDS.items():
        base = metric_base(metric)
        if kind == "histogram":
            for s in ("_bucket", "_sum", "_count"):
                out[base + s] = metric
        else:
            out[base] = metric
    return out


def attribute_labels() -> dict[str, str]:
    """Prometheus label → attribute for every attribute constant in ``names``."""
    out: dict[str, str] = {}
    for key, value in vars(names).items():
        if (
            key.isupper()
            and isinstance(value, str)
            and "." in value
            and not key.startswith(("M_", "EV_", "OP_"))
        ):
            out[label(value)] = value
    return out
