#!/usr/bin/env bash
# Runs a command as one rank of a virtual node: NCCL_HOSTID names the
# node of this rank (launcher rank / STRATA_RANKS_PER_NODE), so that NCCL
# (and strata's GPU control plane, which keys GPUs the same way) treat the
# virtual nodes of one machine as different hosts. Without
# STRATA_RANKS_PER_NODE the command runs unchanged.
#   mpirun -np 4 -x STRATA_RANKS_PER_NODE=2 tests/gpu/as_node.sh PROGRAM [ARGS...]
set -euo pipefail
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}
per_node=${STRATA_RANKS_PER_NODE:-0}
if [ "$per_node" -gt 0 ]; then
  export NCCL_HOSTID="strata-virtual-node-$((rank / per_node))"
fi
exec "$@"
