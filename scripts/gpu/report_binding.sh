#!/bin/sh
# Prints the CPUs one MPI rank may run on, then runs the rest of the command
# line in its place. The lent-GPU session (scripts/gpu/session.py, part e)
# puts it between the launcher layer and strata-bench, so that its report
# (session_report.py) can say whether the ranks had a core each, whatever
# MPI launched them (no launcher's own binding report is read). This file
# is the GPU bundle's scripts/report_binding.sh:
#   strata-launch --bind core -n 4 .../scripts/report_binding.sh .../bin/strata-bench ...
# prints per rank: strata-binding: rank R cpus LIST (LIST as the kernel's
# Cpus_allowed_list, e.g. 0-1 or 3).
# rank: OMPI_COMM_WORLD_RANK, else PMIX_RANK, else PMI_RANK (hydra: MPICH,
# Intel MPI), else SLURM_PROCID, else "?".
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-?}}}}
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
echo "strata-binding: rank $rank cpus $cpus"
exec "$@"
