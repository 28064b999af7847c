#!/usr/bin/env bash
# The same node-count sweep as bench-nodes.sbatch, without Slurm: the
# build's launcher (BUILD/strata-launch, whichever MPI it was built with)
# over the nodes a hostfile names (one line per node: "node01 slots=4").
#   scripts/slurm/bench-nodes-mpirun.sh HOSTFILE [strata-bench args...]
# Environment: NODE_COUNTS ("1 2 4", default powers of two up to the
# hostfile's nodes), PER_NODE (ranks per node, default 1), ALGORITHMS
# ("auto"), STRATA_BUILD (build), RESULTS (results/mpirun-<date>), MINBYTES
# and MAXBYTES (the sweep's -b/-e, default 8 and 256M). The build
# directory must be at the same path on every node (shared file system).
set -euo pipefail

HOSTFILE=${1:?usage: $0 HOSTFILE [strata-bench args...]}
shift
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
BENCH=$ROOT/${STRATA_BUILD:-build}/apps/bench/strata-bench
LAUNCH=$ROOT/${STRATA_BUILD:-build}/strata-launch
RESULTS=${RESULTS:-results/mpirun-$(date +%Y%m%d-%H%M%S)}
PER_NODE=${PER_NODE:-1}
mkdir -p "$RESULTS"
[ -x "$BENCH" ] || { echo "no $BENCH: build first (source scripts/setup.sh; strata_setup build)" >&2; exit 2; }

mapfile -t HOSTS < <(grep -v '^\s*#' "$HOSTFILE" | awk 'NF { print $1 }')
if [ -z "${NODE_COUNTS:-}" ]; then
  NODE_COUNTS=""
  for ((n = 1; n <= ${#HOSTS[@]}; n *= 2)); do NODE_COUNTS+="$n "; done
fi
read -r -a ALGS <<<"${ALGORITHMS:-auto}"

status=0
for n in $NODE_COUNTS; do
  hosts=$(printf '%s,' "${HOSTS[@]:0:n}")
  hosts=${hosts%,}
  for a in "${ALGS[@]}"; do
    tag="N${n}-${a//[^A-Za-z0-9_.-]/_}"
    echo "== $n nodes ($hosts) x $PER_NODE ranks, algorithm $a" >&2
    # --env forwards strata's variables (STRATA_SPEC, STRATA_DEBUG, ...) to remote ranks.
    "$LAUNCH" -n $((n * PER_NODE)) --hosts "$hosts" --per-node "$PER_NODE" \
      $(env | awk -F= '/^STRATA_/ { printf "--env %s ", $1 }') \
      "$BENCH" -b "${MINBYTES:-8}" -e "${MAXBYTES:-256M}" -f 2 --baseline mpi -a "$a" --no-progress \
      -J "$RESULTS/strata-bench-$tag.json" "$@" | tee "$RESULTS/strata-bench-$tag.txt" || status=$?
  done
done

PY=python3
python3 -c 'import matplotlib' 2>/dev/null || PY=/usr/bin/python3
"$PY" scripts/plot_bench.py -o "$RESULTS/busbw.png" "$RESULTS"/strata-bench-*.json || true
echo "results in $RESULTS" >&2
exit "$status"
