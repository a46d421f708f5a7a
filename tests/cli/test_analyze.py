"""analyze over several bundles (fleet summary), options, crashing detectors, progress."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner

from agenttrail import cli as cli_mod
from agenttrail.cli import cli
from tests.detect.builder import BundleBuilder


def _stuck(tmp_path: Path, run_id: str, repeats: int) -> Path:
    b = BundleBuilder(tmp_path, run_id)
    b.started()
    for i in range(repeats):
        b.tool(1 + i * 2, "read_file", {"path": "PROGRESS.md"}, result="same")
    b.event(30, "rate_limited", {"endpoint": "api.openai.com", "retry_after_s": 2})
    b.finished(40, "failed")
    return b.write()


def test_fleet_summary_over_several_bundles(demo_bundle: Path, tmp_path: Path) -> None:
    a, b = _stuck(tmp_path, "run-a", 5), _stuck(tmp_path, "run-b", 4)
    r = CliRunner().invoke(cli, ["analyze", str(demo_bundle), str(a), str(b), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    fleet = doc["fleet"]
    assert (fleet["runs"], fleet["statuses"]) == (3, {"failed": 3})
    modes = {m["code"]: (m["runs"], m["findings"], m["worst"]) for m in fleet["failure_modes"]}
    assert modes["stuck_loop"] == (2, 2, "warning")
    assert modes["rate_limit"] == (2, 2, "warning")  # 2 s of a 40 s run: 5%, the warning share
    assert modes["retry_loop"] == (1, 1, "error")
    loop = next(m for m in fleet["failure_modes"] if m["code"] == "retry_loop")
    finding = next(f for f in doc["findings"] if f["code"] == "retry_loop")
    assert loop["tokens_wasted"] == finding["tokens"] and loop["cost_wasted_usd"] == finding["cost_usd"] > 0
    assert fleet["by_waste"] == ["retry_loop"]
    text = CliRunner().invoke(cli, ["analyze", str(demo_bundle), str(a), str(b)]).stdout
    assert "Fleet: 3 runs (3 failed)" in text
    assert "  stuck_loop                   2         2              -            -" in text


def test_single_bundle_has_no_fleet_and_detector_filter(demo_bundle: Path) -> None:
    r = CliRunner().invoke(cli, ["analyze", str(demo_bundle), "--format", "json", "--detector", "budget"])
    doc = json.loads(r.stdout)
    assert "fleet" not in doc and doc["findings"] == []


def test_crashing_detector_is_reported_and_others_run(demo_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agenttrail.detect import registry

    class Broken:
        code = "broken"
        title = "always raises"
        defaults: ClassVar[dict[str, object]] = {}

        def detect(self, store: object, config: object) -> list[object]:
            raise ZeroDivisionError("division by zero")

    real = registry.available

    def with_broken() -> dict[str, type]:
        return {**real(), "broken": Broken}

    monkeypatch.setattr(registry, "available", with_broken)
    r = CliRunner().invoke(cli, ["analyze", str(demo_bundle), "--format", "json"])
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert [e["detector"] for e in doc["detector_errors"]] == ["broken"]
    assert doc["detector_errors"][0]["error"].startswith("ZeroDivisionError: division by zero (")
    assert [f["code"] for f in doc["findings"]] == ["retry_loop"]
    text = CliRunner().invoke(cli, ["analyze", str(demo_bundle)]).stdout
    assert "Detectors that failed (their findings are missing):\n  broken: ZeroDivisionError" in text


def test_prices_option_and_bad_prices_exit_2(demo_bundle: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-4o"]\ninput = 0\noutput = 0\ncache_read = 0\n')
    r = CliRunner().invoke(cli, ["sql", str(demo_bundle), "SELECT sum(cost_usd) AS usd FROM llm_calls",
                                 "--format", "json", "--prices", str(prices)])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == [{"usd": 0.0}]
    prices.write_text("not toml [")
    r = CliRunner().invoke(cli, ["analyze", str(demo_bundle), "--prices", str(prices)])
    assert r.exit_code == 2 and "prices.toml: not valid TOML" in r.stderr


def test_cache_is_written_and_reused(demo_bundle: Path, tmp_path: Path) -> None:
    from agenttrail.store import open_store

    first = open_store([demo_bundle], use_cache=True, cache_min_seconds=0)
    first.close()
    assert first.cache_path is not None and first.cache_path.parent == tmp_path / "cache" / "store"
    r = CliRunner().invoke(cli, ["sql", str(demo_bundle), "SELECT count(*) AS n FROM spans", "--format", "json"])
    assert json.loads(r.stdout) == [{"n": 93}]


def test_progress_line_appears_only_after_the_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(cli_mod.sys, "stderr", err)
    quick = cli_mod._Progress(delay=60)
    quick("bundle 1/1: spans", 2, 5)
    quick.close()
    assert err.getvalue() == ""
    import threading

    slow = cli_mod._Progress(delay=0)
    slow("bundle 1/1: spans from trace.jsonl (921.6 MB)", 3, 5)
    threading.Event().wait(0.3)
    slow.close()
    out = err.getvalue()
    assert "\r[#########---------------]" in out and "bundle 1/1: spans from trace.jsonl (921.6 MB)" in out
    assert out.rstrip().split("\r")[-1].startswith("loaded in ")


def test_the_same_run_id_in_two_bundles_counts_as_two_runs(demo_bundle: Path) -> None:
    r = CliRunner().invoke(cli, ["analyze", str(demo_bundle), str(demo_bundle), "--format", "json"])
    modes = json.loads(r.stdout)["fleet"]["failure_modes"]
    assert [(m["code"], m["runs"], m["findings"]) for m in modes] == [("retry_loop", 2, 2)]
