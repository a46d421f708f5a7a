"""An offline example agent that fails the way real ones do.

A plain plan → act loop (no framework), instrumented with agenttrail's decorators. The "model" is
scripted (no network): it plans, scaffolds a small Node.js app, runs ``npm install`` — which fails with
ERESOLVE — and then cycles through ``npm cache clean --force`` → ``rm -rf node_modules
package-lock.json`` → ``npm install`` until the harness's iteration cap stops it. The failed run seals
a debug bundle into ``<workspace>/_debug/``.

    python examples/custom_harness.py --workspace build/demo-workspace

Shell commands are simulated too (nothing is installed or deleted); file writes are real, inside
the workspace.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import agenttrail as at

MODEL = "gpt-4o"
RESPONSE_MODEL = "gpt-4o-2024-08-06"
MAX_STEPS = 30

PACKAGE_JSON = {
    "name": "market-dashboard",
    "version": "0.1.0",
    "private": True,
    "scripts": {"start": "react-scripts start", "build": "react-scripts build"},
    "dependencies": {"react": "^19.0.0", "react-dom": "^19.0.0", "react-scripts": "5.0.1"},
}

NPM_ERESOLVE = """npm ERR! code ERESOLVE
npm ERR! ERESOLVE unable to resolve dependency tree
npm ERR!
npm ERR! While resolving: market-dashboard@0.1.0
npm ERR! Found: react@19.0.0
npm ERR! Could not resolve dependency:
npm ERR! peer react@"^18.0.0" from react-scripts@5.0.1
npm ERR! Fix the upstream dependency conflict, or retry
npm ERR! this command with --force or --legacy-peer-deps"""

# What the scripted model decides at each step: a tool and its arguments.
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "package.json"}),
    ("write_file", {"path": "src/App.jsx", "content": (
        "export default function App() {\n  return <h1>Market dashboard</h1>;\n}\n")}),
    ("write_file", {"path": "PROGRESS.md", "content": (
        "# Progress\n\n- [x] scaffold src/App.jsx\n- [ ] install dependencies\n- [ ] build\n")}),
    ("run_command", {"cmd": "npm install"}),
]
RETRY_CYCLE: list[tuple[str, dict[str, Any]]] = [
    ("run_command", {"cmd": "npm cache clean --force"}),
    ("run_command", {"cmd": "rm -rf node_modules package-lock.json"}),
    ("run_command", {"cmd": "npm install"}),
]


class ScriptedModel:
    """Answers like an OpenAI chat completion, from a script, with a context that grows."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls += 1
        step = self.calls - 2  # call 1 plans; call 2.. decide a tool each
        if step < 0:
            tool_name, args = "plan", {}
        elif step < len(SCRIPT):
            tool_name, args = SCRIPT[step]
        else:
            tool_name, args = RETRY_CYCLE[(step - len(SCRIPT)) % len(RETRY_CYCLE)]
        prompt_tokens = 1800 + sum(len(json.dumps(m)) // 4 for m in messages)
        completion_tokens = 90 + 7 * (self.calls % 5)
        time.sleep(0.004)  # a model is never instant; keeps the timeline readable
        return {
            "id": f"chatcmpl-demo-{self.calls:04d}",
            "object": "chat.completion",
            "model": RESPONSE_MODEL,
            "choices": [{
                "index": 0,
                "finish_reason": "stop" if tool_name == "plan" else "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [] if tool_name == "plan" else [
                    {"id": f"tc_{self.calls}", "type": "function",
                     "function": {"name": tool_name, "arguments": json.dumps(args)}}]},
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": 1024 if self.calls > 1 else 0}},
        }


class Harness:
    def __init__(self, workspace: Path, model: ScriptedModel) -> None:
        self.workspace = workspace
        self.model = model
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are a coding agent. Build the app in the workspace."},
            {"role": "user", "content": "Scaffold the market dashboard and get `npm run build` green."},
        ]

    # -- the model ----------------------------------------------------------------------------
    @at.llm(provider="openai", model=MODEL, messages_arg="messages")
    def think(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return self.model.complete(messages)

    # -- tools ----------------------------------------------------------------------------------
    @at.tool(description="Read a file from the workspace")
    def read_file(self, path: str) -> str:
        return (self.workspace / path).read_text(encoding="utf-8")

    @at.tool(side_effect=True, description="Write a file in the workspace",
             idempotency_key=lambda self, path, content: f"write:{path}")
    def write_file(self, path: str, content: str) -> str:
        target = self.workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} bytes to {path}"

    @at.tool(description="Run a shell command in the workspace (simulated)")
    def run_command(self, cmd: str) -> dict[str, Any]:
        time.sleep(0.02 if cmd.startswith("npm install") else 0.005)
        if cmd == "npm install":
            return {"exit_code": 1, "stdout": "", "stderr": NPM_ERESOLVE}
        return {"exit_code": 0, "stdout": "", "stderr": ""}

    # -- nodes ------------------------------------------------------------------------------------
    @at.node("plan")
    def plan(self) -> None:
        reply = self.think(self.messages)
        self.messages.append({"role": "assistant", "content": "Plan: read package.json, scaffold, "
                              "install, build. " + reply["id"]})

    @at.node("act")
    def act(self) -> dict[str, Any]:
        reply = self.think(self.messages)
        call = reply["choices"][0]["message"]["tool_calls"][0]
        name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
        result = getattr(self, name)(**args)
        self.messages.append({"role": "assistant", "tool_calls": [call]})
        self.messages.append({"role": "tool", "tool_call_id": call["id"],
                              "content": json.dumps(result)[:2000]})
        return {"tool": name, "args": args, "result": result}


def prepare_workspace(workspace: Path) -> None:
    if workspace.exists():
        shutil.rmtree(workspace)
    workspace.mkdir(parents=True)
    (workspace / "package.json").write_text(json.dumps(PACKAGE_JSON, indent=2) + "\n")
    (workspace / "README.md").write_text("# market-dashboard\n\nA small React dashboard.\n")
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-proj-demoDemoDemoDemoDemoDemo1234\n")
    git = ["git", "-C", str(workspace), "-c", "user.name=demo", "-c", "user.email=demo@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], check=True)


def run_demo(workspace: Path, run_id: str = "s_123") -> Path | None:
    """Run the failing agent; returns the bundle path."""
    prepare_workspace(workspace)
    harness = Harness(workspace, ScriptedModel())
    with at.run(run_id, agent_name="web-builder", budget={"tokens": 2_000_000, "tool_calls": 100},
                workspace=workspace) as r:
        harness.plan()
        for step in range(1, MAX_STEPS + 1):
            harness.act()
            if step % 10 == 0:
                r.checkpoint(f"ckpt-{step:03d}", {"step": step, "messages": len(harness.messages)},
                             step=step)
        r.fail(f"iteration cap of {MAX_STEPS} steps reached without `npm run build` passing",
               type="iteration_cap")
    return r.bundle_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="build/demo-workspace", type=Path)
    parser.add_argument("--run-id", default="s_123")
    args = parser.parse_args(argv)
    handle = at.configure(service_name="agent-runner", capture_content="SPAN_AND_EVENT")
    bundle = run_demo(args.workspace.resolve(), args.run_id)
    handle.flush()
    handle.shutdown()
    if bundle is None:
        print("the run did not leave a bundle", file=sys.stderr)
        return 1
    print(f"bundle: {bundle}")
    print(f"  analyze: agenttrail analyze {bundle}")
    print(f"  report:  agenttrail report {bundle} -o report.html")
    print(f"  explore: agenttrail tui {bundle}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
