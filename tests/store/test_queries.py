"""Every named query in queries/sql runs on a real bundle; the cost query adds up."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttrail.store import open_store, queries


def test_every_named_query_runs_and_is_described(demo_bundle: Path) -> None:
    store = open_store([demo_bundle])
    names = queries.names()
    assert {"run_summary", "cost_by_model", "pending_operations", "checkpoints", "load_warnings"} <= set(names)
    for name in names:
        assert queries.description(name), name
        queries.run(store, name)
    (cost,) = queries.run(store, "cost_by_model")
    tokens = store.sql("SELECT sum(input_tokens), sum(output_tokens), sum(cache_read_tokens) FROM llm_calls")[0]
    i, o, c = (int(x) for x in tokens)
    assert (cost["model"], cost["price_model"], cost["calls"]) == ("gpt-4o-2024-08-06", "gpt-4o", 31)
    assert cost["usd"] == pytest.approx(round(((i - c) * 2.5 + c * 1.25 + o * 10.0) / 1e6, 6))
    (run,) = queries.run(store, "run_summary")
    assert run["cost_usd"] == cost["usd"] and run["unpriced_llm_calls"] == 0
    assert [r["step"] for r in queries.run(store, "checkpoints")] == [10, 20, 30]
    store.close()
