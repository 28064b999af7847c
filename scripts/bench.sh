#!/usr/bin/env bash
# Benchmark strata against MPI_Allreduce on this machine, in one command:
#   scripts/bench.sh [strata-bench arguments...]
# Installs what is missing and builds (scripts/setup.sh), runs strata-bench
# with 2 ranks from 8 B to 64 MiB (10 timed iterations per size after 2
# warm-ups, enough for a stable median here) with checking on and the MPI
# baseline in the same run, prints the table and a one-line verdict (the
# range of strata's speed against the baseline over every size, and where
# it is slower), and writes JSON, CSV, the table and a PNG plot under
# results/bench-<date>/ (git-ignored). Arguments are appended to
# strata-bench's, so later flags win: e.g. `-e 1M`, `-a xring`, `-d bf16`.
# Environment:
#   BENCH_NP=4                     ranks (default 2; mpirun's -np is not a bench.sh flag)
#   BENCH_ALGORITHMS="tree xring"  one run per algorithm (-a), all in one plot
#   BENCH_BUILD=build              build directory (default build)
# results/bench-<date>/ appears only when every run finished: a run that
# fails, is interrupted or only prints --help leaves none.
# Exit status: strata-bench's (0 every result right, 1 some value wrong,
# 2 bad command line, 3 an error, 77 skipped; docs/BENCHMARKING.md), or 130
# when interrupted (Ctrl-C, or mpirun stopped with SIGINT or SIGTERM).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# Before anything is built or written: mpirun's rank count is BENCH_NP, and
# --help answers without running a benchmark.
help=0
for arg in "$@"; do
  case $arg in
    -np | --np | -np=* | --np=*)
      echo "bench.sh: $arg is mpirun's flag, not strata-bench's: set the rank count with BENCH_NP (BENCH_NP=3 scripts/bench.sh)" >&2
      exit 2 ;;
    -h | --help) help=1 ;;
  esac
done

# shellcheck source=scripts/setup.sh
source scripts/setup.sh
BUILD=${BENCH_BUILD:-build}
# Only the benchmark (and the library it links) needs building here.
STRATA_TARGETS=apps/bench/strata-bench strata_setup "$BUILD"
BENCH="$BUILD/apps/bench/strata-bench"

if [ "$help" = 1 ]; then
  sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  echo
  echo "strata-bench's own flags (bench.sh passes them on):"
  exec "$BENCH" --help
fi

NP=${BENCH_NP:-2}
stamp=$(date +%Y%m%d-%H%M%S)
OUT=results/bench-$stamp
# Everything is written here first and becomes $OUT at the end, complete.
WORK=results/.bench-$stamp.partial
mkdir -p "$WORK"

# Children run in the background and bench.sh waits for them: a background
# command ignores SIGINT, so Ctrl-C reaches only bench.sh's trap, which
# stops the child (SIGTERM: mpirun then stops the ranks, which remove
# their unfinished files), removes $WORK and says so in one line.
child=
stop_child() {
  trap - INT TERM
  if [ -n "$child" ]; then
    kill -TERM "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
}
on_interrupt() {
  stop_child
  rm -rf "$WORK"
  echo "bench.sh: interrupted: nothing kept under results/" >&2
  exit 130
}
trap on_interrupt INT TERM
run_child() {
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=
  return "$rc"
}

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
  echo "== strata-bench, $NP ranks, algorithm $algorithm -> $OUT/strata-bench-$tag.json" >&2
  # The table goes to the terminal and to a file; stderr to the terminal
  # and to a capture, all but strata-bench's "interrupted" line, which
  # bench.sh replaces with its own.
  exec {table_fd}> >(tee "$WORK/strata-bench-$tag.txt")
  table_pid=$!
  exec {err_fd}> >(tee "$WORK/.stderr" | grep -v --line-buffered '^strata-bench: interrupted' >&2)
  err_pid=$!
  # (run_child's steps, with the redirections on mpirun alone: the trap
  # must write to bench.sh's own stderr.)
  # The build's launcher (scripts/launch.py), whichever MPI it was built with.
  "$BUILD/strata-launch" -n "$NP" "$BENCH" -b 8 -e 64M -f 2 -n 100 -w 10 -c 1 --baseline mpi --memcpy-reference \
    -a "$algorithm" -J "$WORK/strata-bench-$tag.json" --csv "$WORK/strata-bench-$tag.csv" "$@" \
    1>&"$table_fd" 2>&"$err_fd" &
  child=$!
  rc=0
  wait "$child" || rc=$?
  child=
  exec {table_fd}>&- {err_fd}>&-
  wait "$table_pid" "$err_pid" || true
  # mpirun stopped from outside (SIGINT or SIGTERM to mpirun): the ranks
  # said so, and mpirun's own status does not. Status 2 is a rank that
  # refused the command line: mpirun then stops the others, which may say
  # "interrupted" too (a rank still starting when the first one refused),
  # but the run ended on the command line's error.
  [ "$rc" -ne 2 ] && grep -q '^strata-bench: interrupted' "$WORK/.stderr" && on_interrupt
  [ "$rc" -ne 0 ] && status=$rc
  [ -f "$WORK/strata-bench-$tag.json" ] && jsons+=("$OUT/strata-bench-$tag.json")
done
rm -f "$WORK/.stderr"

echo "bench.sh: measured in $(( $(date +%s) - start )) s" >&2
if [ ${#jsons[@]} -ne ${#ALGORITHMS[@]} ]; then
  rm -rf "$WORK"
  echo "bench.sh: strata-bench exited $status before writing every result: nothing kept under results/" >&2
  exit "$status"
fi
mv "$WORK" "$OUT"
# Complete: an interrupt from here on keeps the results, less the plot.
# shellcheck disable=SC2317 # called by the trap
on_late_interrupt() {
  stop_child
  rm -f "$OUT/busbw.png"
  echo "bench.sh: interrupted: results in $OUT/ (JSON, CSV, table; no plot)" >&2
  exit 130
}
trap on_late_interrupt INT TERM

run_child "$PLOT_PYTHON" scripts/bench_verdict.py "${jsons[@]}"
if ! run_child "$PLOT_PYTHON" scripts/plot_bench.py -o "$OUT/busbw.png" "${jsons[@]}" >/dev/null; then
  echo "results: $OUT/ (JSON, CSV, table; plotting failed, see above)" >&2
elif [ -f "$OUT/busbw.png" ]; then
  echo "results: $OUT/ (JSON, CSV, table, busbw.png)"
else
  echo "results: $OUT/ (JSON, CSV, table; no plot: every run was on a simulated device)"
fi
exit "$status"
