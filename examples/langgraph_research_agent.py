"""A research agent on LangGraph, observed with agenttrail — offline, with a real checkpointer.

planner → researcher → writer → verifier, checkpointed after every super-step (SQLite by default,
PostgreSQL with ``--checkpointer postgres --pg-url ...``). The verifier publishes the report to a
small "CMS" (a JSON file in the workspace: a real side effect). The model and the search tool are
scripted; nothing leaves the machine.

    python examples/langgraph_research_agent.py                          # duplicate-publish (fails)
    python examples/langgraph_research_agent.py --scenario ok

``duplicate-publish`` is the classic resume bug: worker A runs the graph and is killed (SIGKILL) right
after the verifier published, before LangGraph saved the verifier's checkpoint. Worker B resumes the
thread from the last checkpoint (the writer's) — ``agenttrail.run(..., resume=True)`` records
``run.resumed`` — re-runs the verifier and publishes the same report a second time. The run's bundle
(``<workspace>/_debug``) holds both workers' events, the checkpoint history and the CMS with two posts.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

import agenttrail as at
from agenttrail.integrations.langgraph import instrument

MODEL = "gpt-4o"
TOPIC = "Battery storage prices in 2026"
THREAD = "research-thread-1"
RUN_ID = "research-1"


class Research(TypedDict, total=False):
    topic: str
    plan: list[str]
    notes: Annotated[list[str], operator.add]
    draft: str
    verdict: str
    published: Annotated[list[str], operator.add]


# -- tools --------------------------------------------------------------------------------------------
SOURCES = {
    "lithium iron phosphate cell prices": "LFP cell prices fell to $48/kWh (index, Q1 2026).",
    "grid-scale storage installations": "Grid-scale installs grew 41% year on year.",
    "storage system turnkey costs": "Turnkey 4-hour systems averaged $165/kWh.",
}


@at.tool(description="Search the offline research index")
def search(query: str) -> str:
    return SOURCES.get(query, "no results")


def cms_path() -> Path:
    return Path(os.environ["RESEARCH_WORKSPACE"]) / "cms" / "posts.json"


@at.tool(side_effect=True, description="Publish a report to the CMS",
         idempotency_key=lambda slug, body: f"publish:{slug}")
def publish_report(slug: str, body: str) -> dict[str, Any]:
    path = cms_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    posts = json.loads(path.read_text()) if path.exists() else []
    post_id = f"post-{len(posts) + 1}"
    posts.append({"id": post_id, "slug": slug, "chars": len(body)})
    path.write_text(json.dumps(posts, indent=2) + "\n")
    return {"post_id": post_id, "url": f"https://cms.example.invalid/{slug}"}


@at.llm(provider="openai", model=MODEL)
def write_with_model(notes: list[str]) -> dict[str, Any]:
    """The scripted "model": a Chat Completions-shaped answer."""
    text = "## " + TOPIC + "\n\n" + "\n".join(f"- {n}" for n in notes)
    return {"id": "chatcmpl-research-1", "model": f"{MODEL}-2024-08-06",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 900 + 30 * len(notes), "completion_tokens": 160,
                      "total_tokens": 1060 + 30 * len(notes)}}


# -- nodes ---------------------------------------------------------------------------------------------
def planner(state: Research) -> Research:
    return {"plan": list(SOURCES)}


def researcher(state: Research) -> Research:
    return {"notes": [search(q) for q in state["plan"]]}


def writer(state: Research) -> Research:
    reply = write_with_model(state["notes"])
    return {"draft": reply["choices"][0]["message"]["content"]}


def verifier(state: Research) -> Research:
    checks = {"sources_found": all(n != "no results" for n in state["notes"]),
              "has_title": state["draft"].startswith("## ")}
    ok = all(checks.values())
    run = at.current_run()
    if run is not None:
        run.event("evaluation", actor="harness",
                  data={"verdict": "pass" if ok else "fail", "checks": checks})
    if not ok:
        return {"verdict": "rejected"}
    post = publish_report("battery-storage-2026", state["draft"])
    if os.environ.get("RESEARCH_CRASH_AFTER_PUBLISH") == "1":
        # the worker dies here: the post is out, the verifier's checkpoint is not saved
        os.kill(os.getpid(), signal.SIGKILL)
    return {"verdict": "approved", "published": [post["post_id"]]}


def build_graph(checkpointer: Any) -> Any:
    g = StateGraph(Research)
    for name, fn in (("planner", planner), ("researcher", researcher), ("writer", writer),
                     ("verifier", verifier)):
        g.add_node(name, fn)
    g.add_edge(START, "planner")
    g.add_edge("planner", "researcher")
    g.add_edge("researcher", "writer")
    g.add_edge("writer", "verifier")
    g.add_edge("verifier", END)
    return instrument(g.compile(checkpointer=checkpointer, name="research_graph"))


@contextmanager
def open_checkpointer(kind: str, workspace: Path, pg_url: str | None) -> Iterator[Any]:
    if kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        if not pg_url:
            raise SystemExit("--checkpointer postgres needs --pg-url postgresql://...")
        with PostgresSaver.from_conn_string(pg_url) as saver:
            saver.setup()
            yield saver
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(workspace / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def work(workspace: Path, *, resume: bool, checkpointer: str, pg_url: str | None,
         seal: bool) -> at.Run:
    """One worker: open (or resume) the run and drive the graph's thread to the end."""
    os.environ["RESEARCH_WORKSPACE"] = str(workspace)
    cfg = {"configurable": {"thread_id": THREAD}}
    with open_checkpointer(checkpointer, workspace, pg_url) as saver:
        graph = build_graph(saver)
        with at.run(RUN_ID, agent_name="research-agent", workflow_name="research", workspace=workspace,
                    resume=resume, seal_on_success=seal, budget={"tokens": 20_000}) as r:
            has_state = bool(graph.get_state(cfg).next)
            graph.invoke(None if has_state else {"topic": TOPIC}, cfg, durability="sync")
    return r


def prepare_workspace(workspace: Path, checkpointer: str, pg_url: str | None) -> None:
    if workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True)
    if checkpointer == "postgres" and pg_url:  # a fresh thread in a reused database
        import psycopg

        with psycopg.connect(pg_url, autocommit=True) as conn:
            for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints"):
                if _table_exists(conn, table):
                    conn.execute(f"DELETE FROM {table} WHERE thread_id = %s", (THREAD,))


def _table_exists(conn: Any, table: str) -> bool:
    return bool(conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0])


def run_scenario(workspace: Path, scenario: str = "duplicate-publish", checkpointer: str = "sqlite",
                 pg_url: str | None = None) -> at.Run:
    """Run a scenario; returns the last worker's run (its ``bundle_path`` when a bundle was sealed)."""
    prepare_workspace(workspace, checkpointer, pg_url)
    if scenario == "ok":
        return work(workspace, resume=False, checkpointer=checkpointer, pg_url=pg_url, seal=False)
    # worker A: a separate process, killed after publishing
    env = {**os.environ, "RESEARCH_CRASH_AFTER_PUBLISH": "1", "AGENTTRAIL_WORKER_ID": "worker-a"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--workspace", str(workspace),
           "--checkpointer", checkpointer] + (["--pg-url", pg_url] if pg_url else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != -signal.SIGKILL:
        raise RuntimeError(f"worker A should have been killed, exited {proc.returncode}: {proc.stderr}")
    # worker B: resumes the thread in this process and seals the bundle
    os.environ["AGENTTRAIL_WORKER_ID"] = "worker-b"
    try:
        return work(workspace, resume=True, checkpointer=checkpointer, pg_url=pg_url, seal=True)
    finally:
        del os.environ["AGENTTRAIL_WORKER_ID"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="build/research-workspace", type=Path)
    parser.add_argument("--scenario", choices=["duplicate-publish", "ok"], default="duplicate-publish")
    parser.add_argument("--checkpointer", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("RESEARCH_PG_URL"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    handle = at.configure(service_name="research-agent", capture_content="SPAN_AND_EVENT")
    workspace = args.workspace.resolve()
    if args.worker:
        work(workspace, resume=False, checkpointer=args.checkpointer, pg_url=args.pg_url, seal=False)
        return 0
    r = run_scenario(workspace, args.scenario, args.checkpointer, args.pg_url)
    handle.flush()
    handle.shutdown()
    posts = json.loads((workspace / "cms" / "posts.json").read_text())
    print(f"run {r.run_id}: {r.status}; CMS posts: {[p['id'] for p in posts]}")
    if r.bundle_path is None:
        print("no bundle (the ok scenario succeeds; run --scenario duplicate-publish to see one)")
        return 0
    print(f"bundle: {r.bundle_path}")
    print(f"  analyze: agenttrail analyze {r.bundle_path}")
    print(f"  report:  agenttrail report {r.bundle_path} -o report.html")
    print(f"  explore: agenttrail tui {r.bundle_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
