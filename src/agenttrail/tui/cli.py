"""``agenttrail tui BUNDLE...``: registered by ``agenttrail.cli._register_optional``."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import AgenttrailError


@click.command("tui")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--no-cache", is_flag=True, help="Load the bundles afresh; do not read or write the store cache.")
def tui(bundles: tuple[Path, ...], no_cache: bool) -> None:
    """Explore bundles in the terminal: findings, timeline, events, tool calls, SQL."""
    from ..bundle.reader import open_bundle

    # Open every bundle before the screen takes over: a bad path is a plain message and exit 2.
    for path in bundles:
        open_bundle(path)
    from .app import default_loader, fresh_loader, make_app

    app = make_app(bundles, loader=fresh_loader if no_cache else default_loader)
    app.run()
    if app.startup_error is not None:
        raise app.startup_error
    if app.return_code not in (None, 0):
        raise AgenttrailError(f"the TUI stopped with code {app.return_code}", "")
