"""The ``agenttrail`` command. The only module that prints and chooses exit codes.

Exit codes: 0 ok, 1 a finding at or above ``--fail-on``, 2 bad input or usage, 70 internal error.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from .errors import AgenttrailError

EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 70


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="microseconds") + "Z"
    return str(value)


def _fail(e: AgenttrailError) -> None:
    click.echo(f"agenttrail: error: {e.message}", err=True)
    if e.hint:
        click.echo(f"  what to do: {e.hint}", err=True)
    sys.exit(e.exit_code)


class _Group(click.Group):
    """Turns AgenttrailError into one readable message + exit 2, and anything else into exit 70.

    Command groups owned by other layers (tui, grafana, bundle import) are added the first time a
    command is looked up, so importing the CLI stays cheap and every entry point sees them.
    """

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        _register_optional()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        _register_optional()
        return super().list_commands(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AgenttrailError as e:
            _fail(e)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as e:  # noqa: BLE001 - the CLI is the edge: report, never a raw traceback
            frame = traceback.extract_tb(e.__traceback__)[-1]
            click.echo(f"agenttrail: internal error: {type(e).__name__}: {e} "
                       f"({frame.filename}:{frame.lineno})", err=True)
            click.echo("  what to do: this is a bug in agenttrail; rerun with AGENTTRAIL_DEBUG=1 for "
                       "the traceback and report it with the bundle's manifest.json", err=True)
            import os

            if os.environ.get("AGENTTRAIL_DEBUG"):
                traceback.print_exc()
            sys.exit(EXIT_INTERNAL)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agenttrail")
def cli() -> None:
    """Observe and post-mortem long-running AI agent runs."""


bundles_arg = click.argument("bundles", nargs=-1, required=True,
                             type=click.Path(path_type=Path))


# ---------------------------------------------------------------------------------------------
# analyze


def _load_options(fn: Any) -> Any:
    """Options every command that loads bundles shares."""
    fn = click.option("--prices", type=click.Path(path_type=Path, dir_okay=False), default=None,
                      help="A prices.toml overriding the built-in USD prices per model "
                           "(docs/store-schema.md#prices).")(fn)
    fn = click.option("--no-cache", is_flag=True,
                      help="Load the bundles afresh; do not read or write the store cache.")(fn)
    fn = click.option("--progress/--no-progress", "progress", default=None,
                      help="Show progress on stderr for loads over a second (default: when stderr is a "
                           "terminal).")(fn)
    return fn


def _open(bundles: Sequence[Path], prices: Path | None, no_cache: bool, progress: bool | None) -> Any:
    from .store import open_store

    show = sys.stderr.isatty() if progress is None else progress
    bar = _Progress() if show else None
    try:
        return open_store(bundles, use_cache=not no_cache, prices=prices, progress=bar)
    finally:
        if bar is not None:
            bar.close()


class _Progress:
    """A one-line progress display on stderr that appears only once a load has taken a second."""

    def __init__(self, delay: float = 1.0) -> None:
        import threading
        import time

        self._time = time.monotonic
        self._t0 = self._time()
        self._delay = delay
        self._what, self._i, self._n = "opening bundles", 0, 1
        self._shown = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def __call__(self, what: str, i: int, n: int) -> None:
        self._what, self._i, self._n = what, i, n

    def _draw(self) -> None:
        width = 24
        done = int(width * max(self._i - 1, 0) / max(self._n, 1))
        bar = "#" * done + "-" * (width - done)
        sys.stderr.write(f"\r[{bar}] {self._time() - self._t0:5.1f} s  {self._what[:70]:<70}")
        sys.stderr.flush()
        self._shown = True

    def _run(self) -> None:
        if self._stop.wait(self._delay):
            return
        while not self._stop.is_set():
            self._draw()
            self._stop.wait(0.25)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        if self._shown:
            sys.stderr.write(f"\rloaded in {self._time() - self._t0:.1f} s".ljust(110) + "\n")
            sys.stderr.flush()


@cli.command()
@bundles_arg
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True)
@click.option("--fail-on", type=click.Choice(["info", "warning", "error"]), default=None,
              help="Exit 1 when a finding has this severity or a higher one.")
@click.option("--detector", "detectors", multiple=True, metavar="CODE",
              help="Run only this detector (repeatable). Default: all.")
@click.option("--set", "settings", multiple=True, metavar="CODE.KEY=VALUE",
              help="Override a detector threshold, e.g. --set retry_loop.min_iterations=4.")
@_load_options
def analyze(bundles: tuple[Path, ...], fmt: str, fail_on: str | None,
            detectors: tuple[str, ...], settings: tuple[str, ...], prices: Path | None, no_cache: bool,
            progress: bool | None) -> None:
    """Explain what went wrong in one or more bundles.

    With several bundles, a fleet summary ranks the failure modes by how many runs they hit and by the
    tokens and cost they wasted.
    """
    from .detect import run_detectors, severity_rank
    from .detect.fleet import fleet_summary
    from .store import queries

    config = _parse_settings(settings)
    store = _open(bundles, prices, no_cache, progress)
    runs = queries.run(store, "run_summary")
    warnings = queries.run(store, "load_warnings")
    analysis = run_detectors(store, detectors or None, config)
    findings = [f.as_dict() for f in analysis.findings]
    doc: dict[str, Any] = {
        "runs": runs,
        "findings": findings,
        "warnings": warnings,
        "detector_errors": [d.as_dict() for d in analysis.failures],
    }
    if len(runs) > 1:
        doc["fleet"] = fleet_summary(runs, analysis.findings)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, default=_json_default))
    else:
        from .textreport import render_markdown, render_text

        click.echo((render_markdown if fmt == "markdown" else render_text)(doc), nl=False)
    if fail_on and any(severity_rank(f.severity) >= severity_rank(fail_on) for f in analysis.findings):
        sys.exit(EXIT_FINDINGS)


def _parse_settings(settings: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in settings:
        key, sep, raw = item.partition("=")
        code, dot, name = key.partition(".")
        if not sep or not dot:
            raise AgenttrailError(f"--set {item!r}: expected CODE.KEY=VALUE",
                                  "e.g. --set retry_loop.min_iterations=4")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        out.setdefault(code, {})[name] = value
    return out


# ---------------------------------------------------------------------------------------------
# report


@cli.command()
@bundles_arg
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("report.html"),
              show_default=True)
@click.option("--open", "open_", is_flag=True, help="Open the report in a browser.")
@_load_options
def report(bundles: tuple[Path, ...], output: Path, open_: bool, prices: Path | None, no_cache: bool,
           progress: bool | None) -> None:
    """Write a self-contained HTML postmortem."""
    from .report import render_report

    store = _open(bundles, prices, no_cache, progress)
    html = render_report(store)
    if output.is_dir():
        raise AgenttrailError(f"{output}: is a directory", "pass a file name, e.g. -o report.html")
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(output)
    click.echo(f"report: {output.resolve()} ({len(html.encode()) / 1e6:.2f} MB)")
    if open_:
        import webbrowser

        webbrowser.open(output.resolve().as_uri())


# ---------------------------------------------------------------------------------------------
# sql


@cli.command("sql")
@click.argument("args", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True)
@click.option("--query", "named", metavar="NAME", help="Run a named query from queries/sql/.")
@_load_options
def sql_cmd(args: tuple[str, ...], fmt: str, named: str | None, prices: Path | None, no_cache: bool,
            progress: bool | None) -> None:
    """Run SQL against bundles: agenttrail sql BUNDLE... "SELECT ..." (or --query NAME)."""
    import duckdb

    from .errors import StoreError
    from .store import queries

    if named:
        paths, query = list(args), queries.text(named)
    else:
        if len(args) < 2:
            raise AgenttrailError("sql needs at least one bundle and a query",
                                  'agenttrail sql _debug/ "SELECT tool, count(*) FROM tool_calls GROUP BY 1"'
                                  f" (tables: runs, spans, events, tool_calls, llm_calls, operations, "
                                  f"checkpoints, files, load_warnings, prices; named queries: {', '.join(queries.names())})")
        paths, query = list(args[:-1]), args[-1]
    store = _open([Path(p) for p in paths], prices, no_cache, progress)
    try:
        cur = store.con.execute(query)
    except duckdb.Error as e:
        first = str(e).splitlines()[0]
        hint = ("the cached store is read-only: add --no-cache to create tables" if "read-only" in first
                else "see docs/store-schema.md for tables and columns")
        raise StoreError(f"query failed: {first}", hint) from e
    cols = [d[0] for d in cur.description or []]
    rows = cur.fetchall()
    if fmt == "json":
        click.echo(json.dumps([dict(zip(cols, r, strict=True)) for r in rows], indent=2,
                              default=_json_default))
    elif fmt == "csv":
        import csv

        w = csv.writer(sys.stdout)
        w.writerow(cols)
        w.writerows(rows)
    else:
        from .textreport import table

        click.echo(table(cols, rows), nl=False)


# ---------------------------------------------------------------------------------------------
# detectors


@cli.command("detectors")
def detectors_cmd() -> None:
    """List the installed detectors and their thresholds."""
    from .detect import available

    for code, cls in available().items():
        defaults = ", ".join(f"{k}={v}" for k, v in cls.defaults.items())
        click.echo(f"{code:<24} {cls.title}" + (f"  [{defaults}]" if defaults else ""))


# ---------------------------------------------------------------------------------------------
# bundle


@cli.group()
def bundle() -> None:
    """Verify, pack, unpack and recover bundles."""


@bundle.command("pack")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True)
def bundle_pack(directory: Path, output: Path) -> None:
    """Pack a bundle directory into one .tar.zst file."""
    from .bundle.pack import pack
    from .bundle.reader import open_bundle

    b = open_bundle(directory)
    pack(b.path, output)
    click.echo(f"packed: {output.resolve()} ({output.stat().st_size:,} bytes)")


@bundle.command("unpack")
@click.argument("archive", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True)
def bundle_unpack(archive: Path, output: Path) -> None:
    """Unpack a packed bundle safely (nothing is written outside OUTPUT)."""
    from .bundle.pack import unpack
    from .errors import BundleError

    if not archive.is_file():
        raise BundleError(f"{archive}: no such file", "pass a .tar.zst, .tar.gz or .zip bundle")
    unpack(archive, output)
    click.echo(f"unpacked: {output.resolve()}")


@bundle.command("recover")
@click.argument("workspace", type=click.Path(path_type=Path))
@click.option("--run-id", default=None, help="Which spooled run (default: every unsealed one).")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Bundle directory (default: WORKSPACE/_debug).")
@click.option("--no-scrub", is_flag=True, help="Keep secrets (private use only).")
def bundle_recover(workspace: Path, run_id: str | None, output: Path | None, no_scrub: bool) -> None:
    """Seal a bundle from the spool of a worker that died."""
    from .bundle.recover import recover

    for path in recover(workspace, run_id=run_id, out_dir=output, scrub=not no_scrub):
        click.echo(f"recovered: {path}")


@bundle.command("verify")
@click.argument("path", type=click.Path(path_type=Path))
def bundle_verify(path: Path) -> None:
    """Check a bundle: schema, hashes, seq order, referenced files, links to spans."""
    from .bundle.verify import verify

    result = verify(path)
    for line in result.lines():
        click.echo(line)
    if not result.ok:
        sys.exit(EXIT_INPUT)


def main(argv: Sequence[str] | None = None) -> None:
    _register_optional()
    cli.main(args=list(argv) if argv is not None else None, prog_name="agenttrail")


_registered = False


def _register_optional() -> None:
    """Command groups owned by other layers, added when their modules exist (once)."""
    import importlib

    global _registered
    if _registered:
        return
    _registered = True

    for module, attr in (("agenttrail.grafana.cli", "grafana"), ("agenttrail.tui.cli", "tui"),
                         ("agenttrail.bundle.cli", "import_cmd")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith("agenttrail"):
                continue
            raise
        cmd = getattr(mod, attr, None)
        if isinstance(cmd, click.Command):
            (bundle if attr == "import_cmd" else cli).add_command(cmd)
