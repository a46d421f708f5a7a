"""Every query in queries/ parses with an upstream parser.

- PromQL: github.com/prometheus/prometheus/promql/parser (Apache-2.0), built from tools/queryparse/promql
  with the Go module proxy.
- LogQL and TraceQL: the upstream Go parsers (github.com/grafana/loki/v3/pkg/logql/syntax,
  github.com/grafana/tempo/pkg/traceql) are AGPL-3.0 and this project does not use AGPL code, so
  they are NOT built here. Instead the lezer grammars Grafana's own query editors use
  (@grafana/lezer-logql, @grafana/lezer-traceql, Apache-2.0, tools/queryparse/lezer) check the syntax:
  weaker than the servers' parsers (they do not type-check, e.g. a metrics function's arguments).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agenttrail.grafana._assets import Query, load_queries
from tests.stack.stackkit import REPO, have, require, run_script

pytestmark = pytest.mark.stack

QUERIES = load_queries()
BUILD = REPO / "tools" / "queryparse" / "build.sh"

# Grafana variables -> sample values, so the text the server would see is what gets parsed.
GRAFANA_VARS = {
    "$__rate_interval": "1m",
    "$__range": "6h",
    "$__interval": "1m",
    "${__tags}": 'service_name="agent-runner"',
    "${__span.traceId}": "4bf92f3577b34da6a3ce929d0e0e4736",
    "$agent": "builder|reviewer",
    "$model": "gpt-4o",
    "$conversation_id": "s_a_build",
}


def render(q: Query) -> str:
    text = q.text
    for var, value in GRAFANA_VARS.items():
        text = text.replace(var, value)
    assert "$" not in text, f"{q.id}: a Grafana variable without a sample value: {text}"
    return text


def _check(cmd: list[str], items: list[dict[str, str]]) -> dict[str, str]:
    r = subprocess.run(
        cmd,
        input="\n".join(json.dumps(i) for i in items),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    return {d["name"]: d["error"] for d in map(json.loads, r.stdout.splitlines())}


@pytest.fixture(scope="module")
def promql_parser() -> Path:
    require(have("go"), "Go is not installed: the PromQL check builds prometheus/promql/parser")
    code, out, err = run_script(["bash", str(BUILD), "promql"], 900)
    require(code == 0, f"building tools/queryparse/promql failed:\n{err[-2000:]}")
    return Path(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def lezer_checker() -> Path:
    require(
        have("node") and have("npm"), "node/npm are not installed: LogQL/TraceQL use Grafana's lezer grammars"
    )
    code, out, err = run_script(["bash", str(BUILD), "lezer"], 600)
    require(code == 0, f"installing tools/queryparse/lezer failed:\n{err[-2000:]}")
    return Path(out.strip().splitlines()[-1])


def test_promql_queries_parse(promql_parser: Path) -> None:
    items = [{"name": q.id, "query": render(q)} for q in QUERIES.values() if q.language == "promql"]
    assert len(items) >= 10
    errors = _check([str(promql_parser)], items)
    assert errors == {i["name"]: "" for i in items}


def test_promql_parser_rejects_bad_queries(promql_parser: Path) -> None:
    """The checker is not a no-op."""
    errors = _check([str(promql_parser)], [{"name": "bad", "query": "sum by (le (rate(x[5m]))"}])
    assert errors["bad"] != ""


@pytest.mark.parametrize("language", ["logql", "traceql"])
def test_logql_and_traceql_queries_parse(language: str, lezer_checker: Path) -> None:
    items = [
        {"name": q.id, "language": language, "query": render(q)}
        for q in QUERIES.values()
        if q.language == language
    ]
    assert len(items) >= 4
    errors = _check(["node", str(lezer_checker)], items)
    assert errors == {i["name"]: "" for i in items}


@pytest.mark.parametrize(
    ("language", "query"),
    [("logql", '{service_name="x" | json'), ("traceql", "{ span.a = = }")],
)
def test_lezer_rejects_bad_queries(language: str, query: str, lezer_checker: Path) -> None:
    errors = _check(["node", str(lezer_checker)], [{"name": "bad", "language": language, "query": query}])
    assert errors["bad"] != ""
