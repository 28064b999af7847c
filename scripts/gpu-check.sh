#!/usr/bin/env bash
# Check strata on a GPU machine from a bundle made by scripts/gpu-bundle.sh
# (this file is copied into the bundle; it also runs, skipping the GPU steps,
# on a machine without a GPU):
#   bash gpu-bundle/gpu-check.sh [--out DIR] [--budget SECONDS] [--only REGEX] [--skip REGEX] [--list]
# Runs, each step bounded by its own timeout and the whole within the budget
# (default 480 s): nvidia-smi; a check of the bundle's libraries; Open MPI
# from the bundle on host memory; the GPU tests (kernels first, then
# collectives at 1 rank and at 2 ranks on virtual nodes, batches,
# strata-bench -m cuda); then the three GPU figures of docs/PERFORMANCE.md.
# Multi-rank GPU steps run each rank through scripts/per_rank_host.sh (an
# NCCL_HOSTID per rank or virtual node, so that NCCL runs with several ranks
# on one GPU). Keeps going after a failure, also when env.sh found no NCCL
# (the libraries step fails then). Writes DIR/gpu-check.log and
# DIR/gpu-check.json (DIR: --out, else $OUT, else ./gpu-check-out), prints a
# summary, exits 1 if any step failed. Details: scripts/gpu/check.py,
# docs/GPU.md "Checking on a GPU machine".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -f "$here/manifest.json" ]; then
  bundle=$here
elif [ -f "$here/../gpu-bundle/manifest.json" ]; then
  bundle=$(cd "$here/../gpu-bundle" && pwd)  # called as scripts/gpu-check.sh next to a default bundle
else
  echo "gpu-check: no bundle here: make one with scripts/gpu-bundle.sh, then run bash gpu-bundle/gpu-check.sh" >&2
  exit 2
fi
command -v python3 >/dev/null || { echo "gpu-check: python3 not found" >&2; exit 2; }
# shellcheck source=scripts/gpu/env.sh
source "$bundle/env.sh"
exec python3 "$bundle/scripts/check.py" "$@"
