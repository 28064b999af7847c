#!/usr/bin/env bash
# The lent-GPU session (stream-ordered calls, overlap, node sizes), from a
# bundle made by scripts/gpu-bundle.sh (this file is the bundle's
# session.sh): one command,
# about 6 minutes of its own (8 with the machine's start-up), that measures
# in priority order, each step bounded and the whole within a budget:
#   (a) 2 ranks, 8 B - 64 KiB: stream-ordered and blocking strata calls
#       against ncclAllReduce, call check on and off, NCCL's transport logged;
#   (b) 1 rank, 64 KiB - 1 GiB against NCCL (what completion polling costs);
#   (c) the first real abort: a SIGSTOPped rank, DeadlineExceeded naming it;
#   (d) overlap of stream-ordered calls with a GPU kernel, 1 MiB and up;
#   (e) host collectives at 2, 4, 8 and 16 ranks against MPI_Allreduce;
#   (f) gpu-check.sh with whatever budget is left.
#   bash gpu-bundle/session.sh [--out DIR] [--budget S] [--only RE] [--skip RE] [--quick] [--list]
# On a machine without a GPU every GPU step is skipped with its reason and
# the host steps run at small sizes. Writes DIR/session.log, session.json,
# session.txt and DIR/bench/*.json (DIR: --out, else $OUT, else
# ./gpu-session-out); exits 1 if any step failed. Details:
# scripts/gpu/session.py, docs/BENCHMARKING.md "The lent-GPU session".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -f "$here/manifest.json" ]; then
  bundle=$here
elif [ -f "$here/../../gpu-bundle/manifest.json" ]; then
  bundle=$(cd "$here/../../gpu-bundle" && pwd)  # called as scripts/gpu/session.sh next to a default bundle
else
  echo "session: no bundle here: make one with scripts/gpu-bundle.sh, then run bash gpu-bundle/session.sh" >&2
  exit 2
fi
[ -f "$bundle/scripts/session.py" ] || {
  echo "session: $bundle has no scripts/session.py: remake it with scripts/gpu-bundle.sh" >&2
  exit 2
}
command -v python3 >/dev/null || { echo "session: python3 not found" >&2; exit 2; }
# shellcheck source=scripts/gpu/env.sh
source "$bundle/env.sh"
exec python3 "$bundle/scripts/session.py" "$@"
