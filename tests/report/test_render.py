"""The HTML report without a browser: content, escaping, determinism, limits, golden output."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agenttrail.detect import run_detectors
from agenttrail.report import render_report
from agenttrail.report._content import render_markdown, screenshots
from agenttrail.report.render import Limits, json_for_script
from agenttrail.store import open_store
from tests.report.bundles import IMG, SCRIPT, write_bundle

GOLDEN = Path(__file__).parent / "golden" / "fixture.html"


def render(*paths: Path, **kw: Any) -> str:
    store = open_store(paths)
    try:
        return render_report(store, **kw)
    finally:
        store.close()


def script_json(html: str, element_id: str) -> Any:
    m = re.search(rf'<script type="application/json" id="{re.escape(element_id)}">(.*?)</script>', html, re.S)
    assert m, f"no JSON block {element_id}"
    return json.loads(m.group(1))


def undelta(values: list[int]) -> list[int]:
    out, acc = [], 0
    for v in values:
        acc += v
        out.append(acc)
    return out


@pytest.fixture(scope="module")
def fixture_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("report") / "bundle"
    return path, write_bundle(path)


@pytest.fixture(scope="module")
def fixture_html(fixture_bundle: tuple[Path, dict[str, Any]]) -> str:
    return render(fixture_bundle[0])


def test_header_findings_first_and_sections(fixture_html: str) -> None:
    html = fixture_html
    assert "<title>agenttrail postmortem · s_fixture</title>" in html
    assert '<span class="status status-failed">failed</span>' in html
    assert "<b>iteration_cap</b>: iteration cap reached" in html
    # tokens: 14 LLM calls of 1000 + 100 * step input tokens and 50 output tokens
    assert '<div class="v">23,100</div><div class="k">tokens in</div>' in html
    assert '<div class="v">700</div><div class="k">tokens out</div>' in html
    # gpt-4o list price 2.50 / 10.00 per million: 23,100 * 2.5e-6 + 700 * 1e-5 = 0.06475
    assert '<div class="v">$0.0648</div><div class="k">cost</div>' in html
    assert '<div class="v">5</div><div class="k">tool errors</div>' in html
    order = [html.index(f'id="b1-{s}"') for s in
             ("summary", "findings", "usage", "timeline", "tools", "events", "ops", "state", "bundle")]
    assert order == sorted(order)
    assert "spent 91% of its tokens (22k) in a 3-command retry loop (4 iterations)" in html
    # plotly.js is embedded exactly once, and nothing is loaded from the network
    assert html.count("plotly.js v") <= 2 and html.count("<script src") == 0
    assert "default-src 'none'" in html


def test_evidence_links_resolve_to_embedded_rows(fixture_bundle: tuple[Path, dict[str, Any]],
                                                 fixture_html: str) -> None:
    _, info = fixture_bundle
    html = fixture_html
    spans = script_json(html, "b1-spans-data")
    events = script_json(html, "b1-events-data")
    span_links = set(re.findall(r'href="#span-1-([0-9a-f]+)"', html))
    event_links = {int(s) for s in re.findall(r'href="#event-1-(\d+)"', html)}
    assert info["trigger_span"] in span_links and info["trigger_seq"] in event_links
    assert span_links <= set(spans["id"])
    assert event_links <= set(undelta(events["seq"]))
    assert spans["total"] == spans["shown"] == info["spans"] == 43
    assert events["total"] == events["shown"] == info["events"]


def test_evidence_is_kept_past_every_limit(tmp_path: Path) -> None:
    info = write_bundle(tmp_path / "b", extra_events=3000)
    html = render(tmp_path / "b", limits=Limits(events=40, spans=8, error_rows=2))
    events = script_json(html, "b1-events-data")
    spans = script_json(html, "b1-spans-data")
    seqs = set(undelta(events["seq"]))
    assert events["total"] == info["events"] and events["shown"] < 100
    # every evidence seq and span of the retry loop is embedded though the caps are far smaller
    evidence = json.loads(re.search(r'"event_seqs": \[([^\]]*)\]',
                                    html.replace("&#34;", '"')).group(0).split(":", 1)[1])
    assert len(evidence) == 13 and set(evidence) <= seqs
    assert info["trigger_span"] in spans["id"] and info["last_tool_span"] in spans["id"]
    assert f"{events['shown']:,} of {info['events']:,} events are embedded" in html


def test_hostile_content_is_text(tmp_path: Path) -> None:
    write_bundle(tmp_path / "h", hostile=True)
    html = render(tmp_path / "h")
    body = html.split("<script>", 1)[0] + html.rsplit("</script>", 2)[-1]
    # our own <script> elements only: two inline programs plus the JSON blocks
    assert html.count("<script>") == 2
    assert len(re.findall(r"<script(?![^>]*application/json)[^>]*>", html)) == 2
    assert SCRIPT not in html and IMG not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
    assert 'href="javascript:' not in html.lower()
    # no element carries an event-handler attribute; every <img> is ours (a data: screenshot or the lightbox)
    assert re.findall(r"<[a-z][^>]*\son[a-z]+\s*=", body) == []
    assert set(re.findall(r"<img [a-z]+=\"[^\":]*:?", html)) == {'<img src="data:', '<img alt="screenshot, full size'}
    # JSON blocks cannot be closed early: no raw '<' inside them
    for block in re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S):
        assert "<" not in block and "\u2028" not in block
    # control characters are shown as escapes, the markdown's raw HTML and javascript: link are text
    assert "\\x00\\x01" in html and "\x00" not in html
    assert "[link](javascript:window.__pwned=4)" in html
    assert "&lt;div onclick=&quot;window.__pwned=5&quot;&gt;raw html&lt;/div&gt;" in html


def test_markdown_is_rendered_safely() -> None:
    out = render_markdown("# T\n\n[ok](https://x.invalid/a) [bad](javascript:alert(1)) "
                          "[d](data:text/html;base64,PHNjcmlwdD4=) ![i](https://x.invalid/i.png)\n\n<b>raw</b>")
    assert out == (
        "<h1>T</h1>\n<p><a href=\"https://x.invalid/a\" rel=\"noopener noreferrer nofollow\" "
        "target=\"_blank\">ok</a> [bad](javascript:alert(1)) [d](data:text/html;base64,PHNjcmlwdD4=) "
        "!<a href=\"https://x.invalid/i.png\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">i</a></p>\n"
        "<p>&lt;b&gt;raw&lt;/b&gt;</p>\n")


def test_screenshots_are_bounded_data_uris(tmp_path: Path) -> None:
    from agenttrail.bundle.reader import open_bundle

    write_bundle(tmp_path / "s", hostile=True)
    (tmp_path / "s" / "screenshots" / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 1_600_000)
    shots = screenshots(open_bundle(tmp_path / "s"))
    by_path = {s["path"]: s for s in shots}
    assert sorted(by_path) == ["screenshots/fake.png", "screenshots/huge.png", "screenshots/step-01.png"]
    assert by_path["screenshots/step-01.png"]["uri"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert by_path["screenshots/fake.png"]["uri"] is None
    assert by_path["screenshots/fake.png"]["why"] == "not a PNG, JPEG, GIF or WebP image"
    assert by_path["screenshots/huge.png"]["why"] == "1.6 MB is over the 1.5 MB limit per image"


def test_same_bundle_same_bytes_and_no_wall_clock(tmp_path: Path,
                                                  fixture_bundle: tuple[Path, dict[str, Any]]) -> None:
    first = render(fixture_bundle[0])
    copy = tmp_path / "copy"
    shutil.copytree(fixture_bundle[0], copy)
    second = render(copy).replace(str(copy), str(fixture_bundle[0]))
    assert first == second
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert today == "2026-01-02" or today not in first


def test_comparison_only_for_several_bundles(tmp_path: Path,
                                             fixture_bundle: tuple[Path, dict[str, Any]],
                                             fixture_html: str) -> None:
    write_bundle(tmp_path / "other", run_id="s_other", loops=2)
    html = render(fixture_bundle[0], tmp_path / "other")
    assert 'id="compare"' in html and 'id="compare" ' not in fixture_html
    assert 'id="compare"' not in fixture_html
    cmp = script_json(html, "compare-spec")["figure"]
    assert cmp["data"][0]["x"] == ["s_fixture (#1)", "s_other (#2)"]
    assert cmp["data"][0]["y"] == [23_100, 1000 * 8 + 100 * 28]
    assert html.index('id="run-1"') < html.index('id="run-2"')
    assert 'href="#b2-finding-1"' in html


def test_cost_comes_from_the_store_price_table(tmp_path: Path,
                                              fixture_bundle: tuple[Path, dict[str, Any]]) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-4o"]\ninput = 10.0\noutput = 10.0\n')
    store = open_store([fixture_bundle[0]], prices=prices)
    html = render_report(store)
    store.close()
    assert '<div class="v">$0.2380</div><div class="k">cost</div>' in html  # 23,800 tokens * 1e-5
    assert "$10.00 / $10.00 <span class=\"muted\">(gpt-4o)</span>" in html
    prices.write_text('[models."claude"]\ninput = 1.0\noutput = 1.0\n')
    store = open_store([fixture_bundle[0]], prices=prices)
    store.con.execute("DELETE FROM prices WHERE prefix LIKE 'gpt%'")
    store.con.execute("UPDATE llm_calls SET cost_usd = NULL, price_model = NULL")
    html = render_report(store)
    store.close()
    assert '<div class="v">no price</div>' in html and "No price for gpt-4o-2024-08-06" in html


def test_json_for_script_is_inert() -> None:
    assert json_for_script({"a": "</script><!--&\u2028"}) == \
        '{"a":"\\u003c/script\\u003e\\u003c!--\\u0026\\u2028"}'


def test_golden(fixture_bundle: tuple[Path, dict[str, Any]]) -> None:
    """The page for the fixture bundle, byte for byte (plotly.js, CSS and the page script left out).

    Regenerate after an intended change: AGENTTRAIL_UPDATE_GOLDEN=1 pytest tests/report/test_render.py
    """
    store = open_store([fixture_bundle[0]])
    html = render_report(store, analysis=run_detectors(store, ["retry_loop"]))
    store.close()
    html = html.replace(str(fixture_bundle[0]), "BUNDLE")
    start = html.index("<script>", html.index("</main>"))
    html = html[:start] + "<script>PLOTLY</script>" + html[html.index("</script>", start) + 9:]
    html = re.sub(r"agenttrail \d+\.\d+\.\d+\S*", "agenttrail VERSION", html)
    # the page's own CSS and script are assets, not output: keep them out of the golden file
    html = re.sub(r"<style>.*?</style>", "<style>CSS</style>", html, count=1, flags=re.S)
    html = html[:html.rindex("<script>")] + "<script>SCRIPT</script>\n</body>\n</html>\n"
    if os.environ.get("AGENTTRAIL_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(html, encoding="utf-8")
    assert html == GOLDEN.read_text(encoding="utf-8")


def test_docs_python_example_runs(tmp_path: Path, fixture_bundle: tuple[Path, dict[str, Any]]) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "report.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    exec(code, {"bundle_dir": fixture_bundle[0], "out_dir": tmp_path})
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and "s_fixture" in html
