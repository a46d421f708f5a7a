#!/usr/bin/env bash
# Install Debian's PostgreSQL server binaries for the LangGraph PostgresSaver tests
# (tests/integrations/). The tests start their own throwaway cluster (initdb + pg_ctl in a temp dir,
# on a free 127.0.0.1 port) and stop it at teardown; no system cluster is created or started here.
# Idempotent and quiet when the binaries are already there. Installing needs root (CI runs as root).
set -euo pipefail

have_pg() { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; }

if ! have_pg; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-postgres: PostgreSQL is missing and installing it needs root (apt-get)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Do not let the package create (and try to start) the default "main" cluster.
  mkdir -p /etc/postgresql-common
  if [[ ! -f /etc/postgresql-common/createcluster.conf ]] || \
     ! grep -q '^create_main_cluster *= *false' /etc/postgresql-common/createcluster.conf; then
    echo "create_main_cluster = false" >> /etc/postgresql-common/createcluster.conf
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
# The tests refuse to run initdb as root; they run it as the package's `postgres` user.
if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
  echo "install-postgres: the postgres system user is missing (reinstall postgresql-common)" >&2
  exit 1
fi
initdb=$(compgen -G "/usr/lib/postgresql/*/bin/initdb" | sort -V | tail -n1)
echo "install-postgres: $("$initdb" --version)" >&2
