"""The 429 hook on a real (sync) OpenAI client against the local FakeOpenAI stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai import OpenAI

import agenttrail as at
from agenttrail.integrations.openai_agents import instrument_openai_client
from tests.conftest import Telemetry


def test_sync_client_hook_records_each_429_once(telemetry: Telemetry, tmp_path: Path) -> None:
    from openai_agents_triage import FakeOpenAI

    with FakeOpenAI({1: 2}) as fake:
        client = OpenAI(base_url=fake.base_url, api_key="sk-local-fake-key", max_retries=2)
        assert instrument_openai_client(instrument_openai_client(client)) is client
        hooks = client._client.event_hooks["response"]
        assert len(hooks) == 1
        with at.run("hook-1", "hooked", workspace=tmp_path, seal_on_success=True) as r:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                tools=[{"type": "function", "function": {"name": "transfer_to_billing_agent",
                                                          "parameters": {"type": "object"}}}])
        client.close()
    assert reply.choices[0].message.tool_calls[0].function.name == "transfer_to_billing_agent"
    assert fake.rejected == 2 and fake.calls == 1
    assert r.bundle_path is not None
    events = [json.loads(x) for x in (r.bundle_path / "events.jsonl").read_text().splitlines()]
    assert [e["data"] for e in events if e["type"] == "rate_limited"] == [
        {"endpoint": "/v1/chat/completions", "retry_after_s": 0.02, "provider": "openai",
         "status": 429}] * 2
    points = telemetry.metric_points("agenttrail.rate_limits")
    assert sum(p.value for p in points) == 2


def test_instrument_rejects_objects_without_http_client() -> None:
    with pytest.raises(TypeError, match="has no httpx client"):
        instrument_openai_client(object())
