"""Every PromQL query in queries/ (and so every PromQL panel and link; see test_stack_dashboards.py)
answers from a real Prometheus with the series and values the agent recorded.

The workload runs the same three runs twice with a flush after each phase (samples at t_a and t_b),
plus one run in phase B only whose series begin there (a short-lived process). Queries are evaluated
at t_b with every range variable set to exactly t_b - t_a, so range totals equal the phase-B
increments the SDK recorded (read from an in-memory reader in the same process), including the new
series, and rate() (no extrapolation when the samples sit on the window's edges) equals them per
second for the series that have two samples. Percentiles are compared with Prometheus' own
histogram_quantile algorithm applied to the recorded phase-B bucket counts."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from agenttrail.grafana import promnames
from agenttrail.grafana._assets import load_queries, load_variable_queries
from agenttrail.instrument import names
from tests.stack.stackkit import StackRun, histogram_quantile

pytestmark = pytest.mark.stack

PROMQL = {q.name: q for q in load_queries().values() if q.language == "promql"}
Key = tuple[str, ...]
Expected = dict[Key, float]


def substitute(text: str, run: StackRun) -> str:
    window = f"{run.t_b_ms - run.t_a_ms}ms"
    for var, value in (
        ("$__rate_interval", window),
        ("$__range", window),
        ("$__interval", window),
        ("${__tags}", 'gen_ai_request_model="gpt-4o"'),
        ("$agent", ".*"),
        ("$model", ".*"),
    ):
        text = text.replace(var, value)
    assert "$" not in text, f"unsubstituted Grafana variable in {text!r}"
    return text


class Recorded:
    """What the SDK recorded in phase B (= snapshot B - snapshot A), per metric stream."""

    def __init__(self, workload: dict[str, Any]) -> None:
        def key(e: dict[str, Any]) -> tuple[str, frozenset[tuple[str, Any]]]:
            return e["name"], frozenset(e["attributes"].items())

        a = {key(e): e for e in workload["A"]}
        self.b = workload["B"]
        self.delta: list[dict[str, Any]] = []
        for e in self.b:
            prev = a.get(key(e))
            d = dict(e, new=prev is None)
            if prev is None:  # began between the flushes: everything it recorded is phase B's
                self.delta.append(d)
                continue
            if e["kind"] == "histogram":
                d["count"] = e["count"] - prev["count"]
                d["sum"] = e["sum"] - prev["sum"]
                d["buckets"] = [x - y for x, y in zip(e["buckets"], prev["buckets"], strict=True)]
            elif e["kind"] == "counter":
                d["value"] = e["value"] - prev["value"]
            self.delta.append(d)

    def points(
        self, metric: str, *, where: dict[str, str] | None = None, with_new: bool = True
    ) -> list[dict[str, Any]]:
        """Phase-B points of ``metric``; ``with_new=False`` leaves out series that began in phase B
        (rate() needs two samples of a series, so rate-based queries cannot see them)."""
        out = [e for e in self.delta if e["name"] == metric and (with_new or not e["new"])]
        for k, v in (where or {}).items():
            out = [e for e in out if e["attributes"].get(k) == v]
        assert out, f"the workload recorded no {metric} {where or ''}"
        return out

    def sum_by(
        self, metric: str, by: tuple[str, ...], field: str = "value", *, with_new: bool = True, **where: str
    ) -> Expected:
        acc: dict[Key, float] = defaultdict(float)
        for e in self.points(metric, where=where or None, with_new=with_new):
            acc[tuple(str(e["attributes"].get(a, "")) for a in by)] += e[field]
        return dict(acc)

    def quantile_by(
        self, metric: str, by: tuple[str, ...], q: float = 0.95, *, with_new: bool = True, **where: str
    ) -> Expected:
        buckets: dict[Key, list[float]] = {}
        bounds: list[float] = []
        for e in self.points(metric, where=where or None, with_new=with_new):
            k = tuple(str(e["attributes"].get(a, "")) for a in by)
            bounds = e["bounds"]
            cur = buckets.setdefault(k, [0.0] * len(e["buckets"]))
            buckets[k] = [x + y for x, y in zip(cur, e["buckets"], strict=True)]
        return {k: histogram_quantile(q, bounds, c) for k, c in buckets.items()}

    def gauge_max_by(self, metric: str, by: tuple[str, ...]) -> Expected:
        acc: dict[Key, float] = {}
        for e in self.b:
            if e["name"] == metric:
                k = tuple(str(e["attributes"].get(a, "")) for a in by)
                acc[k] = max(acc.get(k, -math.inf), e["value"])
        return acc


N = names
AGENT, MODEL, TTYPE, TOOL, STATUS, PROVIDER = (
    N.AGENT_NAME,
    N.REQUEST_MODEL,
    N.TOKEN_TYPE,
    N.TOOL_NAME,
    N.RUN_STATUS,
    N.PROVIDER_NAME,
)


def _ratio(num: Expected, den: Expected) -> Expected:
    return {k: num.get(k, 0.0) / v for k, v in den.items()}


def _per_second(values: Expected, run: StackRun) -> Expected:
    seconds = (run.t_b_ms - run.t_a_ms) / 1000
    return {k: v / seconds for k, v in values.items()}


# query name -> (attributes that key the result, expected values)
EXPECTATIONS: dict[str, tuple[tuple[str, ...], Callable[[Recorded, StackRun], Expected]]] = {
    "runs_by_status": ((AGENT, STATUS), lambda r, _: r.sum_by(N.M_RUNS, (AGENT, STATUS))),
    "run_failure_ratio": (
        (AGENT,),
        lambda r, _: _ratio(r.sum_by(N.M_RUNS, (AGENT,), **{STATUS: "failed"}), r.sum_by(N.M_RUNS, (AGENT,))),
    ),
    "p95_run_duration_by_agent": (
        (AGENT,),
        lambda r, _: r.quantile_by(N.M_INVOKE_AGENT_DURATION, (AGENT,), with_new=False),
    ),
    "tokens_by_agent_model": (
        (AGENT, MODEL, TTYPE),
        lambda r, _: r.sum_by(N.M_AGENT_TOKENS, (AGENT, MODEL, TTYPE)),
    ),
    "token_rate_by_model": (
        (MODEL, TTYPE),
        lambda r, run: _per_second(
            r.sum_by(N.M_CLIENT_TOKEN_USAGE, (MODEL, TTYPE), "sum", with_new=False), run
        ),
    ),
    "agent_token_rate": (
        (MODEL, TTYPE),
        lambda r, run: _per_second(r.sum_by(N.M_AGENT_TOKENS, (MODEL, TTYPE), with_new=False), run),
    ),
    "p95_llm_latency_by_model": (
        (MODEL,),
        lambda r, _: r.quantile_by(
            N.M_CLIENT_OPERATION_DURATION, (MODEL,), with_new=False, **{N.OPERATION_NAME: "chat"}
        ),
    ),
    "tool_error_ratio": (
        (TOOL,),
        lambda r, _: _ratio(
            r.sum_by(N.M_TOOL_ERRORS, (TOOL,)), r.sum_by(N.M_EXECUTE_TOOL_DURATION, (TOOL,), "count")
        ),
    ),
    "slowest_tools_p95": ((TOOL,), lambda r, _: r.quantile_by(N.M_EXECUTE_TOOL_DURATION, (TOOL,))),
    "rate_limits_by_provider": ((PROVIDER,), lambda r, _: r.sum_by(N.M_RATE_LIMITS, (PROVIDER,))),
    "budget_used_ratio": ((AGENT,), lambda r, _: r.gauge_max_by(N.M_BUDGET_USED, (AGENT,))),
}
# Fixed-window link queries: the window is Grafana's, not ours, so only the series are asserted.
SERIES_ONLY = {"link_traces_to_metrics_llm_p95": ((MODEL,), {("gpt-4o",)})}


def test_every_promql_query_has_an_expectation() -> None:
    assert set(PROMQL) == set(EXPECTATIONS) | set(SERIES_ONLY)


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_promql_answers_what_the_agent_recorded(name: str, stack_run: StackRun) -> None:
    by, expect_fn = EXPECTATIONS[name]
    expected = expect_fn(Recorded(stack_run.workload), stack_run)
    expr = substitute(PROMQL[name].text, stack_run)
    result = stack_run.prom.query(expr, stack_run.t_b_ms)
    labels = tuple(promnames.label(a) for a in by)
    got = {tuple(s["metric"].get(lb, "") for lb in labels): float(s["value"][1]) for s in result}
    assert set(got) == set(expected), (
        f"{name}: series differ\n query: {expr}\n got: {got}\n expected: {expected}"
    )
    for k, v in expected.items():
        assert math.isclose(got[k], v, rel_tol=1e-9, abs_tol=1e-12), f"{name} {k}: got {got[k]}, recorded {v}"


@pytest.mark.parametrize("name", sorted(SERIES_ONLY))
def test_link_query_returns_the_span_model(name: str, stack_run: StackRun) -> None:
    by, keys = SERIES_ONLY[name]
    result = stack_run.prom.query(substitute(PROMQL[name].text, stack_run), stack_run.t_b_ms)
    labels = tuple(promnames.label(a) for a in by)
    got = {tuple(s["metric"].get(lb, "") for lb in labels): float(s["value"][1]) for s in result}
    assert set(got) == keys
    assert all(math.isfinite(v) and v > 0 for v in got.values()), got


def test_token_sums_equal_what_the_agent_recorded(stack_run: StackRun) -> None:
    """The headline number, spelled out: phase B recorded these tokens per agent and model."""
    result = stack_run.prom.query(
        substitute(PROMQL["tokens_by_agent_model"].text, stack_run), stack_run.t_b_ms
    )
    got = {
        (
            s["metric"]["gen_ai_agent_name"],
            s["metric"]["gen_ai_request_model"],
            s["metric"]["gen_ai_token_type"],
        ): float(s["value"][1])
        for s in result
    }
    assert got == {
        ("builder", "gpt-4o", "input"): 1200 + 2500 + 400,
        ("builder", "gpt-4o", "output"): 300 + 800 + 50,
        ("builder", "claude-sonnet-4", "input"): 900,
        ("builder", "claude-sonnet-4", "output"): 150,
        ("reviewer", "claude-sonnet-4", "input"): 700,
        ("reviewer", "claude-sonnet-4", "output"): 90,
        ("auditor", "gpt-4o", "input"): 600,  # a series that began inside the range counts in full
        ("auditor", "gpt-4o", "output"): 40,
    }


def test_variable_queries_list_the_agents_and_models(stack_run: StackRun) -> None:
    expected = {"agent": {"builder", "reviewer", "auditor"}, "model": {"gpt-4o", "claude-sonnet-4"}}
    for var, query in load_variable_queries().items():
        inner = query.removeprefix("label_values(").removesuffix(")")
        metric, label = (p.strip() for p in inner.split(","))
        assert set(stack_run.prom.label_values(label, metric)) == expected[var], query


def test_prometheus_has_exactly_the_translated_metric_names(stack_run: StackRun) -> None:
    """Everything the agent emitted arrived under the names promnames predicts (nothing else)."""
    emitted = {e["name"] for e in stack_run.workload["B"]}
    predicted = {p for p, m in promnames.series_names().items() if m in emitted}
    got = set(stack_run.prom.names()) - {"target_info"}
    assert got == predicted


def test_service_name_becomes_job_and_resource_goes_to_target_info(stack_run: StackRun) -> None:
    result = stack_run.prom.query('target_info{job="agent-runner"}', stack_run.t_b_ms)
    assert len(result) == 1
    assert result[0]["metric"]["telemetry_sdk_language"] == "python"


def test_collector_serves_its_own_metrics_on_the_configured_port(stack_run: StackRun) -> None:
    import urllib.request

    with urllib.request.urlopen(
        f"http://127.0.0.1:{stack_run.collector.metrics_port}/metrics", timeout=10
    ) as r:
        text = r.read().decode()
    assert "otelcol_receiver_accepted_spans" in text
    assert 'exporter="prometheus_remote_write"' in text


def test_collector_logged_no_errors_or_deprecations(stack_run: StackRun) -> None:
    log = stack_run.collector_log.read_text()
    bad = [
        ln for ln in log.splitlines() if "\terror\t" in ln or "\twarn\t" in ln or "deprecated" in ln.lower()
    ]
    assert bad == [], "\n".join(bad)
