"""The three datasources the dashboards use, with fixed uids, and their provisioning file.

The Grafana links are keyed on fields that exist in the data the collector ships (proved by
tests/stack/test_traces_logs.py against the data a collector actually forwards):

- Tempo → Loki (``tracesToLogsV2``): ``{service_name="..."} | trace_id = "<trace id>"``. Loki's native
  OTLP ingestion indexes ``service.name`` as the ``service_name`` label and keeps each record's trace id
  as structured metadata ``trace_id``.
- Tempo → Prometheus (``tracesToMetrics``): the span's ``gen_ai.request.model`` becomes the
  ``gen_ai_request_model`` label of the LLM latency histogram.
- Loki → Tempo (``derivedFields``): the ``trace_id`` structured-metadata field opens the trace.
- Prometheus → Tempo: exemplars carry ``trace_id`` (the remote-write exporter's label for it).
"""

from __future__ import annotations

import json
from typing import Any, Final

from agenttrail.instrument import names

from ._assets import load_queries
from .promnames import label

PROMETHEUS_UID: Final = "prometheus"
TEMPO_UID: Final = "tempo"
LOKI_UID: Final = "loki"

DEFAULT_URLS: Final = {
    PROMETHEUS_UID: "http://prometheus:9090",
    TEMPO_UID: "http://tempo:3200",
    LOKI_UID: "http://loki:3100",
}

SERVICE_NAME_ATTR: Final = "service.name"  # resource attribute (OTel SDK), not a GenAI name
TRACE_ID_FIELD: Final = "trace_id"  # Loki structured metadata and PRW exemplar label


def datasources(urls: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Datasource definitions as Grafana's HTTP API and provisioning files take them."""
    u = {**DEFAULT_URLS, **(urls or {})}
    q = load_queries()
    return [
        {
            "uid": PROMETHEUS_UID,
            "name": "Prometheus",
            "type": "prometheus",
            "access": "proxy",
            "url": u[PROMETHEUS_UID],
            "isDefault": True,
            "jsonData": {
                "httpMethod": "POST",
                "exemplarTraceIdDestinations": [{"name": TRACE_ID_FIELD, "datasourceUid": TEMPO_UID}],
            },
        },
        {
            "uid": TEMPO_UID,
            "name": "Tempo",
            "type": "tempo",
            "access": "proxy",
            "url": u[TEMPO_UID],
            "isDefault": False,
            "jsonData": {
                "tracesToLogsV2": {
                    "datasourceUid": LOKI_UID,
                    "spanStartTimeShift": "-5m",
                    "spanEndTimeShift": "5m",
                    "filterByTraceID": False,
                    "filterBySpanID": False,
                    "customQuery": True,
                    "query": q["logql/link_traces_to_logs"].text,
                    "tags": [{"key": SERVICE_NAME_ATTR, "value": label(SERVICE_NAME_ATTR)}],
                },
                "tracesToMetrics": {
                    "datasourceUid": PROMETHEUS_UID,
                    "spanStartTimeShift": "-5m",
                    "spanEndTimeShift": "5m",
                    "tags": [{"key": names.REQUEST_MODEL, "value": label(names.REQUEST_MODEL)}],
                    "queries": [
                        {
                            "name": "LLM p95 latency (this model)",
                            "query": q["promql/link_traces_to_metrics_llm_p95"].text,
                        },
                    ],
                },
                "serviceMap": {"datasourceUid": PROMETHEUS_UID},
                "nodeGraph": {"enabled": True},
                "lokiSearch": {"datasourceUid": LOKI_UID},
                "search": {"hide": False},
                "traceQuery": {
                    "timeShiftEnabled": True,
                    "spanStartTimeShift": "-5m",
                    "spanEndTimeShift": "5m",
                },
            },
        },
        {
            "uid": LOKI_UID,
            "name": "Loki",
            "type": "loki",
            "access": "proxy",
            "url": u[LOKI_UID],
            "isDefault": False,
            "jsonData": {
                "derivedFields": [
                    {
                        "name": "TraceID",
                        "matcherType": "label",
                        "matcherRegex": TRACE_ID_FIELD,
                        "datasourceUid": TEMPO_UID,
                        "url": "${__value.raw}",
                        "urlDisplayLabel": "Open trace in Tempo",
                    }
                ],
                "maxLines": 1000,
            },
        },
    ]


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, str):
        # Grafana expands $VAR / ${VAR} in provisioning files; $$ is a literal $.
        return json.dumps(v.replace("$", "$$"))
    return json.dumps(v)


def _yaml(value: Any, indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{k}:")
                lines += _yaml(v, indent + 1)
            else:
                lines.append(
                    f"{pad}{k}: {_yaml_scalar(v) if not isinstance(v, (dict, list)) else json.dumps(v)}"
                )
    elif isinstance(value, list):
        for item in value:
            sub = _yaml(item, indent + 1)
            lines.append(f"{pad}- {sub[0].strip()}")
            lines += sub[1:]
    else:
        lines.append(pad + _yaml_scalar(value))
    return lines


def provisioning_yaml(urls: dict[str, str] | None = None) -> str:
    """``dashboards/provisioning/datasources/agenttrail.yaml`` (generated; `$` escaped as `$$`)."""
    doc = {"apiVersion": 1, "datasources": [{**d, "editable": False} for d in datasources(urls)]}
    head = (
        "# Generated by `python -m agenttrail.grafana.dashboards --write dashboards/` from\n"
        "# src/agenttrail/grafana/datasources.py -- do not edit by hand.\n"
    )
    return head + "\n".join(_yaml(doc, 0)) + "\n"
