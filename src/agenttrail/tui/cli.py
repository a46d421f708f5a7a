"""``agenttrail tui BUNDLE...``: registered by ``agenttrail.cli._register_optional``."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import AgenttrailError


@click.command("tui")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path))
def tui(bundles: tuple[Path, ...]) -> None:
    """Explore bundles in the terminal: findings, timeline, events, tool calls, SQL."""
    from ..bundle.reader import open_bundle

    # Open every bundle before the screen takes over: a bad path is a plain message and exit 2.
    for path in bundles:
        open_bundle(path)
    from .app import make_app

    app = make_app(bundles)
    app.run()
    if app.startup_error is not None:
        raise app.startup_error
    if app.return_code not in (None, 0):
        raise AgenttrailError(f"the TUI stopped with code {app.return_code}", "")
