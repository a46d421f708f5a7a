"""``agenttrail grafana ...``: a click group the main CLI adds with ``cli.add_command(grafana)``."""

from __future__ import annotations

import json

import click

from agenttrail.errors import AgenttrailError

from .dashboards import FOLDER_TITLE
from .datasources import DEFAULT_URLS, LOKI_UID, PROMETHEUS_UID, TEMPO_UID


@click.group(name="grafana")
def grafana() -> None:
    """Grafana dashboards and provisioning."""


@grafana.command(name="provision")
@click.option(
    "--url",
    envvar="GRAFANA_URL",
    required=True,
    help="Grafana base URL, e.g. http://localhost:3000 ($GRAFANA_URL).",
)
@click.option(
    "--token",
    envvar="GRAFANA_TOKEN",
    default=None,
    help="Service-account token ($GRAFANA_TOKEN). Never printed.",
)
@click.option("--user", default=None, help="Basic-auth user (with --password).")
@click.option(
    "--password", envvar="GRAFANA_PASSWORD", default=None, help="Basic-auth password ($GRAFANA_PASSWORD)."
)
@click.option("--folder", default=FOLDER_TITLE, show_default=True, help="Folder the dashboards go in.")
@click.option(
    "--prometheus-url",
    default=DEFAULT_URLS[PROMETHEUS_UID],
    show_default=True,
    help="Prometheus URL as Grafana reaches it.",
)
@click.option(
    "--tempo-url", default=DEFAULT_URLS[TEMPO_UID], show_default=True, help="Tempo URL as Grafana reaches it."
)
@click.option(
    "--loki-url", default=DEFAULT_URLS[LOKI_UID], show_default=True, help="Loki URL as Grafana reaches it."
)
@click.option("--dry-run", is_flag=True, help="Read only: print what would change.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--timeout", default=10.0, show_default=True, help="Seconds per HTTP request.")
@click.pass_context
def provision_cmd(
    ctx: click.Context,
    url: str,
    token: str | None,
    user: str | None,
    password: str | None,
    folder: str,
    prometheus_url: str,
    tempo_url: str,
    loki_url: str,
    dry_run: bool,
    as_json: bool,
    timeout: float,
) -> None:
    """Create or update the agenttrail folder, datasources and dashboards (idempotent)."""
    from .provision import provision

    try:
        result = provision(
            url,
            token=token,
            user=user,
            password=password,
            folder=folder,
            datasource_urls={PROMETHEUS_UID: prometheus_url, TEMPO_UID: tempo_url, LOKI_UID: loki_url},
            dry_run=dry_run,
            timeout=timeout,
        )
    except AgenttrailError as e:
        click.echo(f"error: {e}", err=True)
        ctx.exit(e.exit_code)
        return
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    verb = "would" if dry_run else "did"
    click.echo(f"Grafana {result.grafana_version} at {result.url}")
    for a in result.actions:
        extra = f" ({', '.join(a.changed)})" if a.changed else ""
        click.echo(f"  {a.action:<9} {a.kind:<10} {a.uid:<28} {a.title}{extra}")
    n = sum(a.action != "unchanged" for a in result.actions)
    click.echo(f"{verb} change {n} object(s)" if n else "nothing to change")
