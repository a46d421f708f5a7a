"""Where the query files and dashboard JSON live, and how a query file is read.

``queries/`` is the single source of every PromQL / LogQL / TraceQL the dashboards, datasource links
and docs use: one query per file, named ``queries/<language>/<name>.<language>``. Leading lines that
start with ``#`` describe the query and are not part of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agenttrail.errors import GrafanaError

LANGUAGES = ("promql", "logql", "traceql")
ASSETS_ENV = "AGENTTRAIL_ASSETS_DIR"


@dataclass(frozen=True)
class Query:
    """One query file: ``language/name`` is its id."""

    language: str
    name: str
    description: str
    text: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.language}/{self.name}"


def queries_dir() -> Path:
    """The ``queries/`` folder.

    ``$AGENTTRAIL_ASSETS_DIR/queries`` wins; then the source checkout this module lives in; then the
    copy a wheel ships as ``agenttrail/_queries``; then ``./queries``.
    """
    env = os.environ.get(ASSETS_ENV)
    here = Path(__file__).resolve()
    candidates = [Path(env) / "queries"] if env else []
    candidates += [here.parents[3] / "queries", here.parents[1] / "_queries", Path.cwd() / "queries"]
    for c in candidates:
        if (c / "promql").is_dir():
            return c
    raise GrafanaError(
        "cannot find the queries/ folder",
        hint=f"run from the agenttrail checkout or set {ASSETS_ENV} to the folder holding queries/",
    )


def parse_query_file(path: Path) -> tuple[str, str]:
    """Return ``(description, query)`` of a query file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    desc: list[str] = []
    while lines and lines[0].startswith("#"):
        desc.append(lines.pop(0).lstrip("#").strip())
    text = "\n".join(lines).strip()
    if not text:
        raise GrafanaError(f"{path}: the query file holds no query", hint="write the query below the # lines")
    return " ".join(desc), text


def load_queries(root: Path | None = None) -> dict[str, Query]:
    """Every query under ``queries/`` (or ``root``), keyed by ``language/name``."""
    base = root or queries_dir()
    out: dict[str, Query] = {}
    for lang in LANGUAGES:
        for path in sorted((base / lang).glob(f"*.{lang}")):
            desc, text = parse_query_file(path)
            q = Query(lang, path.stem, desc, text, path)
            out[q.id] = q
    return out


def load_variable_queries(root: Path | None = None) -> dict[str, str]:
    """Grafana ``label_values(...)`` variable queries, keyed by variable name."""
    base = (root or queries_dir()) / "variables"
    return {p.stem: parse_query_file(p)[1] for p in sorted(base.glob("*.labelvalues"))}
