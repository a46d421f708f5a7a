"""The committed dashboards are the builder's output, use only queries from queries/ and only names
agenttrail emits, and conform to Grafana's schema as the grafana-foundation-sdk models describe it."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest

from agenttrail.grafana import promnames
from agenttrail.grafana._assets import load_queries, load_variable_queries
from agenttrail.grafana.dashboards import DASHBOARD_FILES, build_all, stale_files
from agenttrail.grafana.datasources import datasources
from agenttrail.instrument import names
from tests.stack.stackkit import REPO, require

pytestmark = pytest.mark.stack

DASHBOARDS = {uid: json.loads((REPO / "dashboards" / f).read_text()) for uid, f in DASHBOARD_FILES.items()}
QUERIES = load_queries()
# Emitted by agenttrail.instrument (proved by test_stack_traces_logs.py) but not yet constants in
# agenttrail.instrument.names; listed here until they are.
PENDING_NAMES = {"agenttrail.event.type", "agenttrail.budget.kind"}
PROMETHEUS_LABELS = {"le", "job", "instance"}
LOKI_FIELDS = {"service_name", "trace_id", "span_id"}


def _targets() -> list[tuple[str, dict[str, Any]]]:
    return [(p["title"], t) for d in DASHBOARDS.values() for p in d["panels"] for t in p["targets"]]


def _query_text(t: dict[str, Any]) -> str:
    return str(t.get("expr") or t.get("query"))


def test_committed_json_matches_the_builder() -> None:
    assert stale_files(REPO / "dashboards") == [], (
        "dashboards/ is out of date: run python -m agenttrail.grafana.dashboards --write dashboards/"
    )
    assert build_all() == DASHBOARDS


def test_every_panel_query_comes_from_queries_dir() -> None:
    texts = {q.text: q.id for q in QUERIES.values()}
    for title, t in _targets():
        assert _query_text(t) in texts, f"panel {title!r} has a query that is not a file in queries/"


def test_every_query_file_is_used() -> None:
    used = {_query_text(t) for _, t in _targets()}
    used |= {json.dumps(ds["jsonData"]) for ds in datasources()}
    for q in QUERIES.values():
        assert any(q.text in u or json.dumps(q.text)[1:-1] in u for u in used), f"{q.id} is used nowhere"


def test_panels_use_the_provisioned_datasource_uids() -> None:
    uids = {ds["uid"]: ds["type"] for ds in datasources()}
    for d in DASHBOARDS.values():
        for p in d["panels"]:
            assert uids[p["datasource"]["uid"]] == p["datasource"]["type"]
            for t in p["targets"]:
                assert t["datasource"] == p["datasource"]
        for v in d["templating"]["list"]:
            if v["type"] == "query":
                assert uids[v["datasource"]["uid"]] == v["datasource"]["type"]


def test_dashboards_have_agent_and_model_variables() -> None:
    for d in DASHBOARDS.values():
        assert {"agent", "model"} <= {v["name"] for v in d["templating"]["list"]}
    drill = DASHBOARDS["agenttrail-run-drilldown"]
    assert drill["templating"]["list"][0]["name"] == "conversation_id"
    langs = {p["datasource"]["type"] for p in drill["panels"]}
    assert langs == {"prometheus", "loki", "tempo"}  # its trace, its logs, its metrics


# --- names contract ------------------------------------------------------------------------------
def _promql_names(text: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) a PromQL query uses."""
    text = re.sub(r'"[^"]*"', '""', text)
    labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", text))
    for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", text):
        labels |= {g.strip() for g in group.split(",") if g.strip()}
    words = set(re.findall(r"\b([a-zA-Z_][a-zA-Z0-9_]*)\s*[{\[]", text))
    metrics = {w for w in words if w not in labels and not w.startswith("__")}
    return metrics, labels


def test_promql_uses_only_emitted_metric_and_attribute_names() -> None:
    series, attr_labels = promnames.series_names(), promnames.attribute_labels()
    texts = [q.text for q in QUERIES.values() if q.language == "promql"]
    texts += [v.removeprefix("label_values(").replace(",", "{") for v in load_variable_queries().values()]
    seen = set()
    for text in texts:
        metrics, labels = _promql_names(text)
        assert metrics, text
        seen |= metrics
        assert metrics <= set(series), f"unknown metric in {text}: {metrics - set(series)}"
        assert labels - {"__tags"} <= set(attr_labels) | PROMETHEUS_LABELS, text
    assert {promnames.metric_base(m) for m in (names.M_RUNS, names.M_AGENT_TOKENS)} <= seen


def test_traceql_uses_only_names_attributes() -> None:
    known = {v for k, v in vars(names).items() if k.isupper() and isinstance(v, str)}
    for q in QUERIES.values():
        if q.language == "traceql":
            for attr in re.findall(r"\bspan\.([a-z_][a-z0-9_.]*[a-z0-9_])", q.text):
                assert attr in known, f"{q.id}: span.{attr} is not in agenttrail.instrument.names"


def test_logql_uses_only_names_attributes() -> None:
    allowed = set(promnames.attribute_labels()) | LOKI_FIELDS | {promnames.label(n) for n in PENDING_NAMES}
    for q in QUERIES.values():
        if q.language == "logql":
            text = re.sub(r'"[^"]*"', '""', q.text)
            fields = set(re.findall(r"([a-z_][a-z0-9_]*)\s*(?:=~|!=|!~|=)", text))
            for group in re.findall(r"by\s*\(([^)]*)\)", text):
                fields |= {g.strip() for g in group.split(",")}
            assert fields <= allowed, f"{q.id}: {fields - allowed}"


# --- Grafana schema (grafana-foundation-sdk models) -------------------------------------------------
def _lost(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Paths of what we wrote that the schema round trip dropped or changed."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for k, v in ours.items():
            out += [f"{path}/{k} (not in schema)"] if k not in theirs else _lost(v, theirs[k], f"{path}/{k}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [
            x for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for x in _lost(a, b, f"{path}[{i}]")
        ]
    return [] if ours == theirs else [f"{path}: {ours!r} became {theirs!r}"]


@pytest.fixture(scope="module")
def sdk() -> Any:
    try:
        return importlib.import_module("grafana_foundation_sdk")
    except ImportError:
        require(False, "grafana-foundation-sdk is not installed (pip install the dev extra)")


def _roundtrip(model: Any, data: dict[str, Any]) -> dict[str, Any]:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    out: dict[str, Any] = json.loads(json.dumps(model.from_json(data), cls=JSONEncoder))
    return out


@pytest.mark.parametrize("uid", sorted(DASHBOARDS))
def test_dashboard_conforms_to_grafana_schema(uid: str, sdk: Any) -> None:
    from grafana_foundation_sdk.models.dashboard import Dashboard

    d = DASHBOARDS[uid]
    assert _lost(d, _roundtrip(Dashboard, d)) == []
    targets = {
        "prometheus": ("prometheus", "Dataquery"),
        "loki": ("loki", "Dataquery"),
        "tempo": ("tempo", "TempoQuery"),
    }
    for p in d["panels"]:
        options = importlib.import_module(f"grafana_foundation_sdk.models.{p['type']}").Options
        assert _lost(p["options"], _roundtrip(options, p["options"])) == [], p["title"]
        for t in p["targets"]:
            module, cls = targets[t["datasource"]["type"]]
            model = getattr(importlib.import_module(f"grafana_foundation_sdk.models.{module}"), cls)
            assert _lost(t, _roundtrip(model, t)) == [], p["title"]


def test_grafana_package_imports_only_errors_and_names_from_agenttrail() -> None:
    """ARCHITECTURE.md: agenttrail.grafana depends on nothing above it."""
    import ast

    allowed = {"agenttrail.errors", "agenttrail.instrument.names", "agenttrail.instrument"}
    pkg = REPO / "src" / "agenttrail" / "grafana"
    for path in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:  # relative: must stay inside agenttrail.grafana
                    assert node.level == 1, f"{path.name}: {ast.unparse(node)}"
                    continue
                mod = node.module or ""
                if mod == "agenttrail.instrument":
                    assert [a.name for a in node.names] == ["names"], f"{path.name}: {ast.unparse(node)}"
                elif mod.startswith("agenttrail"):
                    assert mod in allowed or mod.startswith("agenttrail.grafana"), (
                        f"{path.name}: {ast.unparse(node)}"
                    )
            elif isinstance(node, ast.Import):
                for a in node.names:
                    assert not a.name.startswith("agenttrail") or a.name in allowed, f"{path.name}: {a.name}"
