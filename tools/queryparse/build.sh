#!/usr/bin/env bash
# Build the query syntax checkers used by tests/stack/test_query_syntax.py, cached by content hash:
#   promql  -> ~/.cache/agenttrail/promqlparse-<hash>/promqlparse   (upstream prometheus/promql/parser)
#   lezer   -> ~/.cache/agenttrail/lezer-<hash>/                    (npm ci of @grafana/lezer-{logql,traceql})
# Usage: tools/queryparse/build.sh promql|lezer   -- prints the binary / script path as the last line.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${AGENTTRAIL_CACHE_DIR:-$HOME/.cache/agenttrail}"

case "${1:-}" in
  promql)
    src="$here/promql"
    hash="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
    out="$cache_root/promqlparse-$hash/promqlparse"
    if [[ ! -x "$out" ]]; then
      command -v go >/dev/null || { echo "queryparse: go is not on PATH" >&2; exit 1; }
      mkdir -p "$(dirname "$out")"
      (cd "$src" && go build -trimpath -o "$out.tmp" .) && mv "$out.tmp" "$out"
    fi
    echo "$out"
    ;;
  lezer)
    src="$here/lezer"
    hash="$(cat "$src/package.json" "$src/package-lock.json" "$src/check.mjs" | sha256sum | cut -c1-16)"
    out="$cache_root/lezer-$hash"
    if [[ ! -f "$out/check.mjs" ]]; then
      command -v npm >/dev/null || { echo "queryparse: npm is not on PATH" >&2; exit 1; }
      rm -rf "$out.tmp" && mkdir -p "$out.tmp"
      cp "$src/package.json" "$src/package-lock.json" "$src/check.mjs" "$out.tmp/"
      (cd "$out.tmp" && npm ci --no-audit --no-fund --loglevel=error >&2)
      rm -rf "$out" && mv "$out.tmp" "$out"
    fi
    echo "$out/check.mjs"
    ;;
  *)
    echo "usage: $0 promql|lezer" >&2
    exit 2
    ;;
esac
