#!/usr/bin/env bash
# Install Debian's Chromium for the HTML report's browser tests (tests/report, bench/bench_report.py).
# Playwright drives /usr/bin/chromium through executable_path; no browser is ever downloaded.
# Also makes sure the venv has the pinned `playwright` package (the dev extra), when a venv exists.
# Idempotent and quiet when everything is already there. Installing needs root (CI runs as root).
set -euo pipefail

if [[ ! -x /usr/bin/chromium ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-browser: /usr/bin/chromium is missing and installing it needs root (apt-get)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # fonts-liberation/fonts-dejavu-core: readable text in screenshots; no recommends (no X server bits)
  apt-get install -y -qq --no-install-recommends chromium fonts-liberation fonts-dejavu-core >/dev/null
fi
echo "install-browser: $(/usr/bin/chromium --version 2>/dev/null | head -n1)" >&2

VENV_PY="${VENV:-.venv}/bin/python"
if [[ -x "$VENV_PY" ]] && ! "$VENV_PY" -c "import playwright.sync_api" >/dev/null 2>&1; then
  want=$(sed -n 's/.*"playwright==\([^"]*\)".*/\1/p' pyproject.toml | head -n1)
  "$VENV_PY" -m pip install --quiet "playwright==${want:?playwright pin missing from pyproject.toml}"
fi
