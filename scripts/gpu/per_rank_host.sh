#!/bin/sh
# Runs one MPI rank as if its (virtual) node were a host of its own, so that
# several ranks can share one GPU as NCCL ranks: sets
#   NCCL_HOSTID=strata-node-$((rank / group))
# and execs the rest of the command line. This file is the GPU bundle's
# scripts/per_rank_host.sh; gpu-check (scripts/gpu/check.py) puts it between
# mpirun and the program in its multi-rank GPU steps:
#   mpirun -np 4 .../scripts/per_rank_host.sh .../tests/test_gpu_collectives
# rank: OMPI_COMM_WORLD_RANK, else PMIX_RANK, else PMI_RANK (hydra: MPICH,
# Intel MPI), else SLURM_PROCID (mpirun cannot give each rank its own
# variable, the launcher's rank can).
# group: STRATA_RANKS_PER_NODE (strata's virtual nodes: their ranks keep one
# host), 1 when unset or empty.
# Why: NCCL refuses two NCCL ranks on one GPU of one host ("Duplicate GPU
# detected"), keyed on (host hash, PCI bus id), and strata's control plane
# keys the same way on (host identity, bus id); both take NCCL_HOSTID as the
# host when it is set. With a host id per rank, ranks on one GPU pass both
# checks and NCCL connects them through its network transport (sockets over
# loopback): slow, but every NCCL path runs on a one-GPU machine.
# Exit status: 2 (with a message) when no rank is found or the group is not
# a positive integer; otherwise the program's own.
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
group=${STRATA_RANKS_PER_NODE:-1}
case $rank in
  '' | *[!0-9]*)
    echo "per_rank_host.sh: no rank in OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID ('$rank'):" \
      "run it under mpirun or srun" >&2
    exit 2 ;;
esac
# Leading zeros go (strata reads "02" as 2; the shell would read it as octal).
while case $group in 0?*) true ;; *) false ;; esac; do group=${group#0}; done
case $group in
  '' | *[!0-9]* | 0)
    echo "per_rank_host.sh: STRATA_RANKS_PER_NODE = '${STRATA_RANKS_PER_NODE:-}' is not a positive integer" >&2
    exit 2 ;;
esac
[ $# -gt 0 ] || { echo "usage: per_rank_host.sh PROGRAM [ARGS...] (under mpirun)" >&2; exit 2; }
NCCL_HOSTID="strata-node-$((rank / group))"
export NCCL_HOSTID
exec "$@"
