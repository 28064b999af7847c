#!/usr/bin/env bash
# Runs one command with a strata GPU bundle's environment (env.sh beside
# this file: its bin/ first on PATH, Open MPI and PMIx pointed at the
# bundle, NCCL linked in). This file is the bundle's run.sh.
#   bash gpu-bundle/run.sh strata-launch -n 2 strata-bench -b 8 -e 64k -c 1
#   env -i bash gpu-bundle/run.sh strata-topo     (works from an empty environment)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
[ $# -gt 0 ] || { echo "usage: run.sh COMMAND [ARGS...]" >&2; exit 2; }
exec "$@"
