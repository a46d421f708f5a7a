"""The report in real headless Chromium: loads clean, charts render, evidence links land, hostile
content stays text, the event table stays small in the DOM with 100k rows. Screenshots are kept in
test-artifacts/ for a person to look at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agenttrail.report import Limits, render_report
from agenttrail.store import open_store
from tests.report.browser import Page, chromium
from tests.report.bundles import SCRIPT, TINY_PNG_SIZE, write_bundle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def ctx() -> Iterator[Any]:
    with chromium() as c:
        yield c


def write_report(out: Path, *bundles: Path, **kw: Any) -> Path:
    store = open_store(bundles)
    try:
        out.write_text(render_report(store, **kw), encoding="utf-8")
    finally:
        store.close()
    return out


def assert_charts_rendered(page: Any) -> int:
    charts = page.eval_on_selector_all(
        "div.chart[data-src]", "els => els.map(e => [e.id, e.querySelectorAll('svg.main-svg').length])")
    assert charts and all(n >= 1 for _, n in charts), charts
    return len(charts)


def in_viewport(page: Any, selector: str) -> bool:
    return page.eval_on_selector(selector, """e => { const r = e.getBoundingClientRect();
        return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0; }""")


def test_demo_report_loads_clean_and_every_chart_renders(ctx: Any, demo_bundle: Path, tmp_path: Path) -> None:
    html = write_report(tmp_path / "demo.html", demo_bundle)
    p = Page(ctx)
    page = p.open(html)
    assert p.errors() == []
    assert assert_charts_rendered(page) == 4  # tokens, attribution, timeline, tool latency
    assert page.evaluate("window.__agenttrail.charts") == 4
    # nothing was fetched: the page itself only (plotly, css, data are inline)
    assert [u for u in p.requests if not u.startswith(("file://", "data:"))] == []
    assert page.inner_text("#b1-findings .finding .sev") == "ERROR"
    assert page.locator("#b1-findings .finding code").first.inner_text() == "retry_loop"
    p.screenshot("report-demo-top")
    p.screenshot("report-demo-full", full_page=True)


def test_finding_links_scroll_to_their_evidence(ctx: Any, tmp_path: Path) -> None:
    info = write_bundle(tmp_path / "b", extra_events=5_000)
    html = write_report(tmp_path / "r.html", tmp_path / "b")
    p = Page(ctx)
    page = p.open(html)
    finding = page.locator("#b1-finding-1")
    # the trigger's event is ~5,000 rows down a virtual table: only its neighbourhood is in the DOM
    link = finding.locator(f'a[href="#event-1-{info["trigger_seq"]}"]')
    link.first.click()
    row = f'.vt-row[data-anchor="event-1-{info["trigger_seq"]}"]'
    page.wait_for_selector(row + ".sel")
    assert in_viewport(page, row)
    assert page.eval_on_selector_all("#b1-eventlog .vt-row", "e => e.length") < 60
    assert page.inner_text("#b1-eventlog .vt-detail").startswith(f"event\n#{info['trigger_seq']} tool.started")
    p.screenshot("report-evidence-event")
    # a span link: the trigger span, opened in the span table
    finding.locator(f'a[href="#span-1-{info["trigger_span"]}"]').first.click()
    srow = f'.vt-row[data-anchor="span-1-{info["trigger_span"]}"]'
    page.wait_for_selector(srow + ".sel")
    assert in_viewport(page, srow)
    assert "error: npm ERR! code ERESOLVE" in page.inner_text(srow)
    # the same link twice still lands (no hashchange the second time)
    page.evaluate("window.scrollTo(0, 0)")
    link.first.click()
    page.wait_for_timeout(100)
    assert in_viewport(page, row)
    p.screenshot("report-evidence-span")
    assert p.errors() == []


def test_evidence_left_out_by_the_caps_still_resolves(ctx: Any, tmp_path: Path) -> None:
    info = write_bundle(tmp_path / "b", extra_events=3_000)
    html = write_report(tmp_path / "r.html", tmp_path / "b", limits=Limits(events=50, spans=5))
    p = Page(ctx)
    page = p.open(html)
    last = info["last_tool_seq"]
    page.locator(f'#b1-finding-1 details a[href="#event-1-{last}"]').evaluate("a => a.click()")
    page.wait_for_selector(f'.vt-row[data-anchor="event-1-{last}"].sel')
    assert f"41 shown · 41 of {info['events']:,} events embedded" == page.inner_text("#b1-eventlog .vt-count")
    # an id that is not embedded gives a notice instead of a silent no-op
    page.evaluate("location.hash = '#event-1-2000'")
    page.wait_for_function("document.querySelector('#b1-eventlog .vt-notice').textContent.length > 0")
    assert page.inner_text("#b1-eventlog .vt-notice").startswith("event #2000 is not in this report's embedded rows")
    assert p.errors() == []


def test_hostile_content_never_executes(ctx: Any, tmp_path: Path) -> None:
    write_bundle(tmp_path / "h", hostile=True)
    html = write_report(tmp_path / "h.html", tmp_path / "h")
    p = Page(ctx)
    page = p.open(html)
    # open everything a reader might open: every <details>, every event row's detail, every span's
    page.eval_on_selector_all("details", "els => els.forEach(d => d.open = true)")
    page.fill("#b1-eventlog input[type=search]", "pwned")
    page.wait_for_function("document.querySelector('#b1-eventlog .vt-count').textContent.startsWith('7 shown')")
    for i in range(7):
        page.locator("#b1-eventlog .vt-row").nth(i).click()
        assert "window.__pwned" in page.inner_text("#b1-eventlog .vt-detail pre")
    page.locator("#b1-spans .vt-row").nth(1).click()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.eval_on_selector_all("img[src='x'], a[href^='javascript:'], [onerror], [onclick]",
                                     "e => e.length") == 0
    # shown as text, exactly
    assert SCRIPT in page.inner_text("#b1-summary .failure")
    assert SCRIPT in page.inner_text("#b1-findings")
    assert "[link](javascript:window.__pwned=4)" in page.inner_text("#b1-state .md")
    assert "\\x00\\x01" in page.inner_text("#b1-state")
    assert page.eval_on_selector("#b1-state .md a", "a => a.href") == "https://example.invalid/docs"
    assert p.errors() == []
    p.screenshot("report-hostile", full_page=True)


def test_event_table_with_100k_rows_stays_small_in_the_dom(ctx: Any, tmp_path: Path) -> None:
    write_bundle(tmp_path / "big", extra_events=100_000, screenshots=False)
    html = write_report(tmp_path / "big.html", tmp_path / "big",
                        limits=Limits(events=200_000, event_bytes=50_000_000))
    p = Page(ctx)
    page = p.open(html)
    count = "#b1-eventlog .vt-count"
    assert page.inner_text(count) == "100,074 shown"
    assert page.eval_on_selector_all("#b1-eventlog .vt-row", "e => e.length") < 60
    page.select_option("#b1-eventlog .f-type", label="heartbeat")
    assert page.inner_text(count) == "100,000 shown"
    page.fill("#b1-eventlog input[type=search]", "padding event 99999\"")
    page.wait_for_function(f"document.querySelector('{count}').textContent === '1 shown'")
    page.select_option("#b1-eventlog .f-type", label="all types")
    page.fill("#b1-eventlog input[type=search]", "")
    page.check("#b1-eventlog .f-err")
    assert page.inner_text(count) == "6 shown"  # five failed tool calls and run.finished (failed)
    # scrolling to the bottom renders the last rows
    page.eval_on_selector("#b1-eventlog .vt-body", "b => { b.scrollTop = b.scrollHeight; }")
    page.uncheck("#b1-eventlog .f-err")
    page.eval_on_selector("#b1-eventlog .vt-body", "b => { b.scrollTop = b.scrollHeight; }")
    page.wait_for_selector('.vt-row[data-anchor="event-1-100074"]')
    assert p.errors() == []


def test_screenshot_thumbnail_opens_full_size(ctx: Any, tmp_path: Path) -> None:
    write_bundle(tmp_path / "b")
    html = write_report(tmp_path / "r.html", tmp_path / "b")
    p = Page(ctx)
    page = p.open(html)
    assert page.inner_text("#b1-state .shots").count("left out (not a PNG, JPEG, GIF or WebP image)") == 1
    page.click("button.shot")
    assert page.evaluate("document.getElementById('lightbox').open") is True
    assert page.evaluate("document.querySelector('#lightbox img').naturalWidth") == TINY_PNG_SIZE[0]
    assert page.inner_text("#lightbox p") == "screenshots/step-01.png"
    page.mouse.click(5, 5)
    assert page.evaluate("document.getElementById('lightbox').open") is False


def test_comparison_page(ctx: Any, tmp_path: Path) -> None:
    write_bundle(tmp_path / "a")
    write_bundle(tmp_path / "b", run_id="s_other", loops=2)
    html = write_report(tmp_path / "c.html", tmp_path / "a", tmp_path / "b")
    p = Page(ctx)
    page = p.open(html)
    assert assert_charts_rendered(page) == 9  # 4 per run + the comparison
    header = page.eval_on_selector_all("#compare thead th a", "e => e.map(x => x.textContent)")
    assert header == ["s_fixture", "s_other"]
    page.click('#compare a[href="#b2-finding-1"]')
    page.wait_for_timeout(200)
    assert in_viewport(page, "#b2-finding-1 .summary")
    page.evaluate("window.scrollTo(0, 0)")
    p.screenshot("report-compare")
    assert p.errors() == []
