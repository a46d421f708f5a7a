"""``agenttrail bundle import``: a bundle from other tools' traces (registered by agenttrail.cli)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("import")
@click.argument("sources", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="Bundle directory to create (must not exist, or be empty).")
@click.option("--run-id", default=None,
              help="Run id for the manifest (default: the traces' conversation / session id).")
@click.option("--langgraph-sqlite", type=click.Path(path_type=Path), default=None,
              help="A LangGraph SqliteSaver database: its thread's checkpoints become "
                   "checkpoints.jsonl and last_state.json.")
@click.option("--thread-id", default=None, help="The LangGraph thread to import.")
@click.option("--no-scrub", is_flag=True, help="Keep secrets (private use only).")
def import_cmd(sources: tuple[Path, ...], output: Path, run_id: str | None,
               langgraph_sqlite: Path | None, thread_id: str | None, no_scrub: bool) -> None:
    """Build a bundle from OTLP/JSON, Jaeger or Tempo trace files and/or a LangGraph checkpointer.

    OTLP/JSON from any instrumentation is accepted (official GenAI, OpenLLMetry, OpenInference,
    Logfire); their attributes are mapped onto the GenAI conventions the analyzer reads.
    """
    from .importers import import_bundle

    r = import_bundle(list(sources), output, run_id=run_id, langgraph_sqlite=langgraph_sqlite,
                      thread_id=thread_id, scrub=not no_scrub)
    conv = ", ".join(f"{k} {v}" for k, v in sorted(r.conventions.items())) or "none"
    click.echo(f"imported: {r.path} (run {r.run_id}; {r.spans} spans from {len(r.formats)} file(s); "
               f"conventions: {conv})")
    if r.checkpoints is not None:
        click.echo(f"  langgraph thread {r.checkpoints['thread_id']}: {r.checkpoints['checkpoints']} "
                   f"checkpoints, last step {r.checkpoints['last_step']}")
    for w in r.warnings:
        click.echo(f"  warning  {w.where()}: {w.message}")
