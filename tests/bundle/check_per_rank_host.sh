#!/usr/bin/env bash
# Checks scripts/gpu/per_rank_host.sh, the wrapper gpu-check puts between
# mpirun and the program of its multi-rank GPU steps (docs/GPU.md,
# "Checking on a GPU machine"):
#   tests/bundle/check_per_rank_host.sh LAUNCH
# (LAUNCH: the build's strata-launch, scripts/launch.py.)
# Under `LAUNCH -n 4`, each rank prints its NCCL_HOSTID through the wrapper:
#   - STRATA_RANKS_PER_NODE=2: ranks 0,1 share one id, ranks 2,3 another;
#   - unset: four distinct ids (a host per rank);
#   - STRATA_RANKS_PER_NODE=0: every rank exits 2 naming the variable;
# and outside mpirun (no rank variable) it exits 2 instead of guessing.
# Exit status: 0 all passed, 1 a check failed. Registered with meson as
# 'per-rank-host' (suite bundle).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WRAPPER=$ROOT/scripts/gpu/per_rank_host.sh
launch=${1:?usage: check_per_rank_host.sh LAUNCH}
failures=0
ok() { echo "check_per_rank_host: ok: $*"; }
bad() { echo "check_per_rank_host: FAIL: $*"; failures=$((failures + 1)); }

# "rank=id" lines, sorted by rank, from 4 ranks run with the given environment.
ids() {
  env "$@" "$launch" -n 4 "$WRAPPER" \
    sh -c 'echo "rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-?}} id=${NCCL_HOSTID:-none}"' 2>&1 | sort
}

[ -x "$WRAPPER" ] || { bad "$WRAPPER is missing or not executable"; exit 1; }

got=$(ids STRATA_RANKS_PER_NODE=2)
want=$'rank=0 id=strata-node-0\nrank=1 id=strata-node-0\nrank=2 id=strata-node-1\nrank=3 id=strata-node-1'
if [ "$got" = "$want" ]; then ok "STRATA_RANKS_PER_NODE=2: ranks 0,1 -> strata-node-0, ranks 2,3 -> strata-node-1"
else bad "STRATA_RANKS_PER_NODE=2, expected"$'\n'"$want"$'\n'"got"$'\n'"$got"; fi

got=$(ids -u STRATA_RANKS_PER_NODE)
want=$'rank=0 id=strata-node-0\nrank=1 id=strata-node-1\nrank=2 id=strata-node-2\nrank=3 id=strata-node-3'
if [ "$got" = "$want" ]; then ok "STRATA_RANKS_PER_NODE unset: one id per rank"
else bad "STRATA_RANKS_PER_NODE unset, expected"$'\n'"$want"$'\n'"got"$'\n'"$got"; fi

rc=0
out=$(env STRATA_RANKS_PER_NODE=0 "$launch" -n 2 "$WRAPPER" true 2>&1) || rc=$?
if [ $rc -ne 0 ] && grep -q "STRATA_RANKS_PER_NODE = '0' is not a positive integer" <<<"$out"; then
  ok "STRATA_RANKS_PER_NODE=0: refused (mpirun exit $rc)"
else
  bad "STRATA_RANKS_PER_NODE=0: mpirun exit $rc: $out"
fi

rc=0
out=$(env -u OMPI_COMM_WORLD_RANK -u PMIX_RANK -u PMI_RANK -u SLURM_PROCID "$WRAPPER" true 2>&1) || rc=$?
if [ $rc -eq 2 ] && grep -q "no rank in OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID" <<<"$out"; then
  ok "outside mpirun: exit 2, saying why"
else
  bad "outside mpirun: exit $rc: $out"
fi

if [ $failures -eq 0 ]; then echo "check_per_rank_host: OK"; else echo "check_per_rank_host: $failures checks failed"; exit 1; fi
