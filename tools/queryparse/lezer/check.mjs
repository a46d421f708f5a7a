// LogQL and TraceQL syntax check with the lezer grammars Grafana's own query editors use
// (@grafana/lezer-logql, @grafana/lezer-traceql). The upstream Go parsers (grafana/loki/v3
// pkg/logql/syntax, grafana/tempo pkg/traceql) are AGPL-licensed and not used by this project, so
// these Apache-2.0 grammars are the closest upstream check available here.
//
// Input on stdin: JSON lines {"name", "language": "logql"|"traceql", "query"}, Grafana variables
// already substituted. Output: one JSON line each, {"name", "error": ""} when the query parses with
// no error node. Exit 0 even when a query fails: the caller decides.
import { createInterface } from "node:readline";
import { parser as logql } from "@grafana/lezer-logql";
import { parser as traceql } from "@grafana/lezer-traceql";

const parsers = { logql, traceql };

function check(language, query) {
  const p = parsers[language];
  if (!p) return `unknown language ${language}`;
  const tree = p.parse(query);
  const errors = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) {
        errors.push(`syntax error at ${node.from}: near ${JSON.stringify(query.slice(Math.max(0, node.from - 10), node.to + 10))}`);
      }
    },
  });
  return errors.join("; ");
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const { name, language, query } = JSON.parse(line);
  process.stdout.write(JSON.stringify({ name, error: check(language, query) }) + "\n");
}
