"""The agenttrail Grafana dashboards, built from code.

Every query comes from ``queries/`` (one file each); this module only lays panels out. The committed
JSON under ``dashboards/`` is this module's output, and ``tests/stack/test_dashboards.py`` fails when
they disagree. Regenerate with::

    python -m agenttrail.grafana.dashboards --write dashboards/
    python -m agenttrail.grafana.dashboards --check dashboards/    # exit 1 when out of date

Dashboards: ``agenttrail-agent-overview`` (runs, failures, tokens by agent and model, p95 LLM latency by
model, tool error share and slowest tools, long tool calls via TraceQL, rate limits, budget burn) and
``agenttrail-run-drilldown`` (one conversation id: its trace, its logs, its metrics). Both have the
``agent`` and ``model`` variables.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ._assets import Query, load_queries, load_variable_queries
from .datasources import LOKI_UID, PROMETHEUS_UID, TEMPO_UID, provisioning_yaml

SCHEMA_VERSION: Final = 41
OVERVIEW_UID: Final = "agenttrail-agent-overview"
DRILLDOWN_UID: Final = "agenttrail-run-drilldown"
FOLDER_UID: Final = "agenttrail"
FOLDER_TITLE: Final = "agenttrail"
DASHBOARD_FILES: Final = {OVERVIEW_UID: "agent-overview.json", DRILLDOWN_UID: "run-drilldown.json"}

_DS: Final = {
    "promql": {"type": "prometheus", "uid": PROMETHEUS_UID},
    "logql": {"type": "loki", "uid": LOKI_UID},
    "traceql": {"type": "tempo", "uid": TEMPO_UID},
}
_REDUCE_LAST: Final = {"calcs": ["lastNotNull"], "fields": "", "values": False}


def _target(q: Query, ref: str, *, instant: bool, legend: str = "") -> dict[str, Any]:
    ds = _DS[q.language]
    if q.language == "promql":
        return {
            "refId": ref,
            "datasource": ds,
            "editorMode": "code",
            "expr": q.text,
            "instant": instant,
            "range": not instant,
            "legendFormat": legend or "__auto",
        }
    if q.language == "logql":
        return {
            "refId": ref,
            "datasource": ds,
            "editorMode": "code",
            "expr": q.text,
            "queryType": "instant" if instant else "range",
        }
    # TraceQL search (table) and TraceQL metrics (time series) both use queryType "traceql".
    return {
        "refId": ref,
        "datasource": ds,
        "queryType": "traceql",
        "query": q.text,
        "limit": 50,
    }


@dataclass
class _Layout:
    """Places panels left to right on Grafana's 24-column grid, wrapping to new rows."""

    panels: list[dict[str, Any]] = field(default_factory=list)
    x: int = 0
    y: int = 0
    row_h: int = 0

    def add(self, panel: dict[str, Any], w: int, h: int) -> None:
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        panel["id"] = len(self.panels) + 1
        panel["gridPos"] = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.panels.append(panel)
        self.x += w
        self.row_h = max(self.row_h, h)


def _panel(
    kind: str,
    title: str,
    q: Query,
    *,
    unit: str = "",
    instant: bool = False,
    legend: str = "",
    options: dict[str, Any] | None = None,
    description: str = "",
) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit} if unit else {}
    return {
        "type": kind,
        "title": title,
        "description": description or q.description or f"queries/{q.id}.{q.language}",
        "datasource": _DS[q.language],
        "targets": [_target(q, "A", instant=instant, legend=legend)],
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": options or {},
    }


def _timeseries_options() -> dict[str, Any]:
    return {
        "legend": {
            "displayMode": "table",
            "placement": "bottom",
            "showLegend": True,
            "calcs": ["lastNotNull", "max"],
        },
        "tooltip": {"mode": "multi", "sort": "desc"},
    }


def _stat_options() -> dict[str, Any]:
    return {
        "reduceOptions": dict(_REDUCE_LAST),
        "colorMode": "value",
        "graphMode": "none",
        "justifyMode": "auto",
        "textMode": "auto",
        "orientation": "auto",
    }


def _bargauge_options() -> dict[str, Any]:
    return {
        "reduceOptions": dict(_REDUCE_LAST),
        "orientation": "horizontal",
        "displayMode": "gradient",
        "showUnfilled": True,
    }


def _logs_options() -> dict[str, Any]:
    return {
        "showTime": True,
        "wrapLogMessage": True,
        "sortOrder": "Descending",
        "enableLogDetails": True,
        "dedupStrategy": "none",
        "prettifyLogMessage": False,
    }


def _query_variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": _DS["promql"],
        "query": {"query": query, "refId": f"PrometheusVariableQueryEditor-{name}", "qryType": 1},
        "refresh": 2,
        "sort": 1,
        "multi": True,
        "includeAll": True,
        "allValue": ".*",
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "options": [],
        "hide": 0,
    }


def _variables(*, conversation: bool) -> list[dict[str, Any]]:
    v = load_variable_queries()
    out = [_query_variable("agent", "Agent", v["agent"]), _query_variable("model", "Model", v["model"])]
    if conversation:
        out.insert(
            0,
            {
                "name": "conversation_id",
                "label": "Conversation / run id",
                "type": "textbox",
                "query": "",
                "current": {"selected": False, "text": "", "value": ""},
                "options": [],
                "hide": 0,
                "description": 'agenttrail\'s conversation id is the run id (at.run("s_123", ...))',
            },
        )
    return out


def _dashboard(
    uid: str,
    title: str,
    description: str,
    *,
    panels: list[dict[str, Any]],
    variables: list[dict[str, Any]],
    links: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["agenttrail", "genai"],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "annotations": {"list": []},
        "links": links,
        "templating": {"list": variables},
        "panels": panels,
    }


def _link(title: str, uid: str) -> dict[str, Any]:
    return {
        "title": title,
        "type": "link",
        "url": f"/d/{uid}",
        "icon": "dashboard",
        "tooltip": title,
        "targetBlank": False,
        "keepTime": True,
        "includeVars": True,
        "asDropdown": False,
        "tags": [],
    }


# (panel type, title, query id, width, height, extra _panel arguments); laid out in this order.
PanelSpec = tuple[str, str, str, int, int, dict[str, Any]]

_TS: Final = {"options": _timeseries_options()}
_BAR: Final = {"instant": True, "options": _bargauge_options()}
_STAT: Final = {"instant": True, "options": _stat_options()}
_TABLE: Final = {"options": {"showHeader": True}}
_LOGS: Final = {"options": _logs_options()}
_BY_MODEL: Final = "{{gen_ai_request_model}}"
_BY_MODEL_TYPE: Final = "{{gen_ai_request_model}} {{gen_ai_token_type}}"
_P95_LLM: Final[PanelSpec] = (
    "timeseries", "p95 LLM latency by model", "promql/p95_llm_latency_by_model", 12, 8,
    {**_TS, "unit": "s", "legend": _BY_MODEL},
)  # fmt: skip

OVERVIEW_PANELS: Final[tuple[PanelSpec, ...]] = (
    ("bargauge", "Runs finished by agent and status", "promql/runs_by_status", 8, 6,
     {**_BAR, "legend": "{{gen_ai_agent_name}} {{agenttrail_run_status}}"}),
    ("stat", "Failed run share", "promql/run_failure_ratio", 8, 6,
     {**_STAT, "unit": "percentunit", "legend": "{{gen_ai_agent_name}}"}),
    ("gauge", "Token budget used", "promql/budget_used_ratio", 8, 6,
     {"instant": True, "unit": "percentunit", "legend": "{{gen_ai_agent_name}}",
      "options": {"reduceOptions": dict(_REDUCE_LAST), "showThresholdMarkers": True,
                  "showThresholdLabels": False}}),
    ("bargauge", "Tokens by agent and model", "promql/tokens_by_agent_model", 12, 8,
     {**_BAR, "legend": "{{gen_ai_agent_name}} {{gen_ai_request_model}} {{gen_ai_token_type}}"}),
    ("timeseries", "Tokens per second by model", "promql/token_rate_by_model", 12, 8,
     {**_TS, "legend": _BY_MODEL_TYPE}),
    _P95_LLM,
    ("timeseries", "p95 run duration by agent", "promql/p95_run_duration_by_agent", 12, 8,
     {**_TS, "unit": "s", "legend": "{{gen_ai_agent_name}}"}),
    ("bargauge", "Tool error share", "promql/tool_error_ratio", 8, 8,
     {**_BAR, "unit": "percentunit", "legend": "{{gen_ai_tool_name}}"}),
    ("bargauge", "Slowest tools (p95)", "promql/slowest_tools_p95", 8, 8,
     {**_BAR, "unit": "s", "legend": "{{gen_ai_tool_name}}"}),
    ("stat", "Rate-limited responses", "promql/rate_limits_by_provider", 8, 8,
     {**_STAT, "legend": "{{gen_ai_provider_name}}"}),
    ("table", "Long tool calls (> 30 s)", "traceql/long_tool_calls", 12, 8, _TABLE),
    ("timeseries", "Failed tool calls per second (from spans)", "traceql/failed_tool_calls_rate", 12, 8,
     _TS),
    ("logs", "Error and rate-limit events", "logql/failure_events", 24, 8, _LOGS),
)  # fmt: skip

DRILLDOWN_PANELS: Final[tuple[PanelSpec, ...]] = (
    ("table", "Spans of this conversation", "traceql/run_trace", 24, 10, _TABLE),
    ("logs", "Events of this run", "logql/run_events", 24, 10, _LOGS),
    ("timeseries", "Events by type", "logql/run_event_counts", 12, 8, _TS),
    ("timeseries", "LLM calls by model (this conversation)", "traceql/run_llm_calls_by_model", 12, 8,
     _TS),
    ("timeseries", "Tokens per second of the agent by model", "promql/agent_token_rate", 12, 8,
     {**_TS, "legend": _BY_MODEL_TYPE}),
    _P95_LLM,
)  # fmt: skip


def _layout(q: dict[str, Query], specs: tuple[PanelSpec, ...]) -> list[dict[str, Any]]:
    grid = _Layout()
    for kind, title, qid, w, h, extra in specs:
        grid.add(_panel(kind, title, q[qid], **extra), w, h)
    return grid.panels


def agent_overview(q: dict[str, Query]) -> dict[str, Any]:
    return _dashboard(
        OVERVIEW_UID,
        "agenttrail / Agent overview",
        "Runs, failures, tokens, LLM latency, tools, rate limits and budgets of instrumented agents.",
        panels=_layout(q, OVERVIEW_PANELS),
        variables=_variables(conversation=False),
        links=[_link("Run drill-down", DRILLDOWN_UID)],
    )


def run_drilldown(q: dict[str, Query]) -> dict[str, Any]:
    return _dashboard(
        DRILLDOWN_UID,
        "agenttrail / Run drill-down",
        "One conversation (run) id: its trace, its event logs, and the metrics of its agent and models.",
        panels=_layout(q, DRILLDOWN_PANELS),
        variables=_variables(conversation=True),
        links=[_link("Agent overview", OVERVIEW_UID)],
    )


def build_all() -> dict[str, dict[str, Any]]:
    """Every dashboard, keyed by uid."""
    q = load_queries()
    return {OVERVIEW_UID: agent_overview(q), DRILLDOWN_UID: run_drilldown(q)}


def provider_yaml() -> str:
    """``dashboards/provisioning/dashboards/agenttrail.yaml``: Grafana's file dashboard provider."""
    return (
        "# Generated by `python -m agenttrail.grafana.dashboards --write dashboards/` -- do not edit.\n"
        "# docker-compose.observability.yml mounts dashboards/*.json at the path below.\n"
        "apiVersion: 1\n"
        "providers:\n"
        "  - name: agenttrail\n"
        "    orgId: 1\n"
        f"    folder: {FOLDER_TITLE}\n"
        f"    folderUid: {FOLDER_UID}\n"
        "    type: file\n"
        "    disableDeletion: true\n"
        "    allowUiUpdates: false\n"
        "    updateIntervalSeconds: 30\n"
        "    options:\n"
        "      path: /var/lib/grafana/dashboards/agenttrail\n"
        "      foldersFromFilesStructure: false\n"
    )


def rendered_files() -> dict[str, str]:
    """Relative path under ``dashboards/`` → file content, for everything this module generates."""
    out = {
        DASHBOARD_FILES[uid]: json.dumps(d, indent=2, ensure_ascii=False) + "\n"
        for uid, d in build_all().items()
    }
    out["provisioning/datasources/agenttrail.yaml"] = provisioning_yaml()
    out["provisioning/dashboards/agenttrail.yaml"] = provider_yaml()
    return out


def stale_files(target: Path) -> list[str]:
    """Generated files under ``target`` that are missing or differ from what the code builds."""
    stale = []
    for rel, text in rendered_files().items():
        p = target / rel
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            stale.append(rel)
    return stale


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m agenttrail.grafana.dashboards", description="Build the agenttrail Grafana dashboards."
    )
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path, metavar="DIR", help="write the dashboards and provisioning files")
    g.add_argument("--check", type=Path, metavar="DIR", help="exit 1 when DIR differs from the code")
    args = ap.parse_args(argv)
    if args.check is not None:
        stale = stale_files(args.check)
        for rel in stale:
            print(f"out of date: {args.check / rel}", file=sys.stderr)
        if stale:
            print("run: python -m agenttrail.grafana.dashboards --write dashboards/", file=sys.stderr)
        return 1 if stale else 0
    for rel, text in rendered_files().items():
        p = args.write / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            p.write_text(text, encoding="utf-8")
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
