#!/usr/bin/env bash
# Benchmark strata against MPI_Allreduce on this machine, in one command:
#   scripts/bench.sh [strata-bench arguments...]
# Installs what is missing and builds (scripts/setup.sh), runs strata-bench
# with 2 ranks from 8 B to 64 MiB (10 timed iterations per size after 2
# warm-ups, enough for a stable median here) with checking on and the MPI baseline in
# the same run, prints the table and a one-line verdict, and writes JSON, CSV
# and a PNG plot under results/bench-<date>/ (git-ignored). Arguments are
# appended to strata-bench's, so later flags win: e.g. `-e 1M`, `-a xring`,
# `-d bf16`. Environment:
#   BENCH_NP=4                 ranks (default 2)
#   BENCH_ALGORITHMS="tree xring"  one run per algorithm (-a), all in one plot
#   BENCH_BUILD=build          build directory (default build)
# Exit status: strata-bench's (1 when any value was wrong).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=scripts/setup.sh
source scripts/setup.sh
BUILD=${BENCH_BUILD:-build}
# Only the benchmark (and the library it links) needs building here.
STRATA_TARGETS=apps/bench/strata-bench strata_setup "$BUILD"

NP=${BENCH_NP:-2}
OUT=results/bench-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
BENCH="$BUILD/apps/bench/strata-bench"

# The plot needs matplotlib; Debian's python3 has it even when a python3
# earlier in PATH (pyenv, venv) does not.
PLOT_PYTHON=python3
python3 -c 'import matplotlib' 2>/dev/null || PLOT_PYTHON=/usr/bin/python3

read -r -a ALGORITHMS <<<"${BENCH_ALGORITHMS:-auto}"
status=0
jsons=()
start=$(date +%s)
for algorithm in "${ALGORITHMS[@]}"; do
  tag=${algorithm//[^A-Za-z0-9_.-]/_}
  json="$OUT/strata-bench-$tag.json"
  echo "== strata-bench, $NP ranks, algorithm $algorithm -> $json" >&2
  set +e
  mpirun -np "$NP" "$BENCH" -b 8 -e 64M -f 2 -n 10 -w 2 -c 1 --baseline mpi --memcpy-reference \
    -a "$algorithm" -J "$json" --csv "$OUT/strata-bench-$tag.csv" "$@" | tee "$OUT/strata-bench-$tag.txt"
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -ne 0 ] && status=$rc
  [ -f "$json" ] && jsons+=("$json")
done

echo "bench.sh: measured in $(( $(date +%s) - start )) s" >&2
[ ${#jsons[@]} -eq 0 ] && { echo "bench.sh: strata-bench wrote no results (exit $status)" >&2; exit "$status"; }

# The verdict: strata against the baseline at the largest size, per run. A
# run on a simulated device (the test double) gets none: its times are the
# simulator's, so it says so and compares no speeds.
"$PLOT_PYTHON" - "${jsons[@]}" <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    last = d["rows"][-1]
    wrong = d["summary"]["wrong_total"]
    check = "all results correct" if wrong == 0 else f"{wrong} WRONG values"
    if d.get("simulated"):
        print(f"verdict: simulated device ({d['simulated_device']}): no bandwidth and no speed comparison; {check}")
    elif "ratio" in last:
        r = last["ratio"]
        how = f"{r:.2f}x faster than" if r >= 1 else f"{1 / r:.2f}x slower than"
        print(f"verdict: at {last['bytes'] / 2**20:g} MiB on {d['ranks']} ranks, strata ({last['algorithm']}) "
              f"{last['busbw']:.2f} GB/s busbw is {how} {d['baseline']} ({last['baseline']['busbw']:.2f} GB/s); {check}")
    else:
        print(f"verdict: at {last['bytes']} B strata ({last['algorithm']}) {last['busbw']:.2f} GB/s busbw; {check}")
PY

if ! "$PLOT_PYTHON" scripts/plot_bench.py -o "$OUT/busbw.png" "${jsons[@]}" >/dev/null; then
  echo "results: $OUT/ (JSON, CSV, table; plotting failed, see above)" >&2
elif [ -f "$OUT/busbw.png" ]; then
  echo "results: $OUT/ (JSON, CSV, table, busbw.png)"
else
  echo "results: $OUT/ (JSON, CSV, table; no plot: every run was on a simulated device)"
fi
exit "$status"
