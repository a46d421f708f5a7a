#!/usr/bin/env bash
# Install the system packages the stack tests (tests/stack/) need: a real Prometheus server from
# Debian (2.42 on Debian 12/13; started by the tests with --web.enable-remote-write-receiver).
# Idempotent: does nothing when `prometheus` is already on PATH. Needs root (CI runs as root).
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
  echo "install-stack-deps: $(prometheus --version 2>&1 | head -n1)" >&2
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install-stack-deps: prometheus is missing and installing it needs root (apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends keeps out the node exporter and friends; the Debian package starts a
# system service only under systemd, which this machine (and CI) does not run.
apt-get install -y -qq --no-install-recommends prometheus >/dev/null
echo "install-stack-deps: $(prometheus --version 2>&1 | head -n1)" >&2
