#!/usr/bin/env bash
# Build the agenttrail OpenTelemetry Collector from collector/builder-config.yaml with the
# Collector Builder (OCB), caching the result by the manifest's hash:
#
#   ~/.cache/agenttrail/otelcol-<sha256[:16] of builder-config.yaml>/otelcol-agenttrail/otelcol-agenttrail
#
# Idempotent: when that binary exists and answers `components`, nothing is rebuilt. Prints the binary's
# path as the last line of stdout (the stack tests read it). Needs Go >= 1.25 and the Go module proxy.
# Environment: AGENTTRAIL_CACHE_DIR (default ~/.cache/agenttrail), OCB_VERSION (default v0.159.0).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
manifest="$repo_root/collector/builder-config.yaml"
ocb_version="${OCB_VERSION:-v0.159.0}"
cache_root="${AGENTTRAIL_CACHE_DIR:-$HOME/.cache/agenttrail}"

command -v go >/dev/null || { echo "build-collector: go is not on PATH (need Go >= 1.25)" >&2; exit 1; }

hash="$(sha256sum "$manifest" | cut -c1-16)"
work="$cache_root/otelcol-$hash"
binary="$work/otelcol-agenttrail/otelcol-agenttrail"

if [[ -x "$binary" ]] && "$binary" components >/dev/null 2>&1; then
  echo "build-collector: cached $binary" >&2
  echo "$binary"
  exit 0
fi

# The builder itself, cached per version next to the collectors it builds.
ocb="$cache_root/ocb-$ocb_version/builder"
if [[ ! -x "$ocb" ]]; then
  echo "build-collector: installing OCB $ocb_version" >&2
  GOBIN="$cache_root/ocb-$ocb_version" go install "go.opentelemetry.io/collector/cmd/builder@$ocb_version"
fi

mkdir -p "$work"
cp "$manifest" "$work/builder-config.yaml"
start=$(date +%s)
echo "build-collector: building into $work (first build takes several minutes)" >&2
# output_path in the manifest is relative, so build from inside the cache directory.
(cd "$work" && "$ocb" --config=builder-config.yaml >"$work/build.log" 2>&1) || {
  echo "build-collector: OCB failed; last lines of $work/build.log:" >&2
  tail -n 40 "$work/build.log" >&2
  exit 1
}
echo "build-collector: built in $(( $(date +%s) - start ))s" >&2
"$binary" components | sed -n "1,4p" >&2
echo "$binary"
