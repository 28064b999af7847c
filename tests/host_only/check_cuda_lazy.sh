#!/usr/bin/env bash
# strata-bench and the Python module start without the CUDA runtime (CI, GPU
# builds): they load CUDA only when CUDA memory needs it.
#   check_cuda_lazy.sh BUILD GPU_DOUBLE_DIR PYTHON|-
# PYTHON is the interpreter the module was built for ('-': no module built).
# Checks:
#   1. readelf: strata-bench and the Python extension need neither libcudart
#      nor libnccl; strata-bench-cuda.so (the bench's CUDA code) needs both.
#   2. A host run does not load the CUDA code: strata-bench at 2 ranks
#      passes and never opens strata-bench-cuda.so, and a host all-reduce
#      from Python passes without the module dlopening libcudart (LD_DEBUG),
#      while `-m cuda` on the test double does open the module (so the
#      check can see a load).
#   3. A module that does not load (an empty file bound over it in a private
#      mount namespace; without root, a copy of strata-bench where no module
#      is): `-m cuda` exits 77 on every rank, rank 0 quoting the loader's
#      error; host runs still pass.
#   4. Nothing of CUDA loadable (every libcudart.so* and libnccl.so* the
#      loader could find hidden, root only): strata-bench and Python run a
#      host all-reduce at 2 ranks, `-m cuda` skips naming the missing
#      library, and a CUDA array in Python raises strata.Unavailable naming
#      libcudart. Not run while libstrata.so itself still needs libcudart or
#      libnccl (the GPU backend is linked in, not yet a plugin): the check
#      says so and passes on 1-3.
# Exit status: 0 passed, 1 a check failed, 77 no GPU backend in BUILD.
set -euo pipefail
build=$(cd "$1" && pwd)
double=$2
python=$3
bench=$build/apps/bench/strata-bench
module=$build/apps/bench/strata-bench-cuda.so
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
launch=${STRATA_LAUNCH:?check_cuda_lazy: STRATA_LAUNCH (strata-launch of the build) is not set: run it through meson test}
MPIRUN=("$launch" -n 2)
CUDA_LIBS='lib(cudart|nccl)\.so'
# meson puts the build's library folders, the test double's among them, on
# LD_LIBRARY_PATH for this test; each run below says what it needs.
unset LD_LIBRARY_PATH

if [ "${4:-}" != --inside ]; then
  [ -f "$module" ] || { echo "check_cuda_lazy: SKIP: $build has no strata-bench-cuda.so (no GPU backend)"; exit 77; }
  # 3 and 4 bind files over others: in a private mount namespace as root.
  if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
    exec unshare -m --propagation private bash "$0" "$@" --inside hide
  fi
  exec bash "$0" "$@" --inside copy
fi
how=$5

failures=0
ok() { echo "check_cuda_lazy: ok: $*"; }
bad() { echo "check_cuda_lazy: FAIL: $*"; failures=$((failures + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
python_ext=
[ "$python" != - ] && python_ext=$(ls "$build"/python/strata/_strata*.so)

# --- 1. what the files need -------------------------------------------------
for f in "$bench" $python_ext; do
  if needed "$f" | grep -Eq "$CUDA_LIBS"; then
    bad "$(basename "$f") needs $(needed "$f" | grep -Eo "$CUDA_LIBS[^ ]*" | tr '\n' ' ')at load time"
  else
    ok "$(basename "$f") needs no libcudart or libnccl (NEEDED: $(needed "$f"))"
  fi
done
if [ "$(needed "$module" | grep -Eo "$CUDA_LIBS" | sort -u | wc -l)" -eq 2 ]; then
  ok "strata-bench-cuda.so needs libcudart and libnccl: the bench's CUDA code is there"
else
  bad "strata-bench-cuda.so needs $(needed "$module"): expected libcudart and libnccl"
fi

run_bench=$bench  # the strata-bench the helpers below run
# Rank 0's line from `mpirun ... strata-bench -m cuda` that says why it skipped.
skip_line() { grep '^strata-bench: --memory cuda: skipped (exit 77): ' "$1" || true; }
host_bench() {  # label, then extra environment
  local label=$1; shift
  if env "$@" "${MPIRUN[@]}" "$run_bench" -b 8 -e 64k -f 8 -c 1 --no-progress -J "$tmp/host.json" >"$tmp/host.txt" 2>&1 &&
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["ranks"] == 2 and d["summary"]["wrong_total"] == 0))' "$tmp/host.json"; then
    ok "$label: strata-bench at 2 ranks on host memory: every value right"
  else
    bad "$label: strata-bench at 2 ranks on host memory:"; cat "$tmp/host.txt"
  fi
}
cuda_skips() {  # label, text the skip line must hold, then extra environment
  local label=$1 text=$2; shift 2
  local rc=0
  env "$@" "${MPIRUN[@]}" "$run_bench" -m cuda -b 8 -e 1k --no-progress >"$tmp/cuda.txt" 2>&1 || rc=$?
  local line
  line=$(skip_line "$tmp/cuda.txt")
  if [ $rc -eq 77 ] && [ "$(grep -c . <<<"$line")" -eq 1 ] && grep -q -- "$text" <<<"$line"; then
    ok "$label: -m cuda skips (77) saying: ${line#strata-bench: --memory cuda: skipped (exit 77): }"
  else
    bad "$label: -m cuda exited $rc, expected 77 with one line saying '$text':"; cat "$tmp/cuda.txt"
  fi
}
# Checked through the MPI test harness's Python face (tests/interpose/mpi_checks.py).
PY_HOST='
import sys
import numpy as np, strata
from mpi4py import MPI
from strata import _strata
from mpi_checks import ProgramChecks
w = MPI.COMM_WORLD
checks = ProgramChecks("host all_reduce", w.rank, bound_s=60)
with strata.Communicator(w) as comm:
    x = np.full(1000, w.rank + 1, np.float32)
    comm.all_reduce(x)
    checks.check("sum of rank + 1", x, np.full(1000, w.size * (w.size + 1) / 2, np.float32))
sys.exit(checks.finish())
'
checks_py=$(cd "$(dirname "$0")/../interpose" && pwd)
python_host() {  # label, then extra environment
  local label=$1; shift
  if env "$@" PYTHONPATH="$build/python:$checks_py" "${MPIRUN[@]}" "$python" -c "$PY_HOST" >"$tmp/py.txt" 2>&1 &&
    [ "$(grep -c "^host all_reduce: rank [01]: 1 of 1 checks passed$" "$tmp/py.txt")" -eq 2 ]; then
    ok "$label: python3 at 2 ranks (import strata, a host all_reduce) passes"
  else
    bad "$label: Python host all_reduce:"; cat "$tmp/py.txt"
  fi
}

# --- 2. host runs load no CUDA code of their own ----------------------------
host_bench "LD_DEBUG" LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld-host"
if grep -qs 'strata-bench-cuda' "$tmp"/ld-host.*; then
  bad "a host run of strata-bench loaded strata-bench-cuda.so"
else
  ok "a host run of strata-bench never opened strata-bench-cuda.so"
fi
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld-cuda" LD_LIBRARY_PATH="$double" STRATA_FAKE_GPUS=2 \
  "${MPIRUN[@]}" "$bench" -m cuda -b 8 -e 1k --no-progress >"$tmp/cuda.txt" 2>&1 || true
if grep -qs 'file=.*strata-bench-cuda.so.*dynamically loaded by' "$tmp"/ld-cuda.*; then
  ok "-m cuda (on the test double) did load strata-bench-cuda.so, as LD_DEBUG shows"
else
  bad "-m cuda on the test double: LD_DEBUG shows no load of strata-bench-cuda.so"; cat "$tmp/cuda.txt"
fi
if [ -n "$python_ext" ]; then
  # libstrata may still pull libcudart in as NEEDED; the module itself must
  # not dlopen it (LD_DEBUG: "dynamically loaded by", or "opening file=" when
  # it was loaded already) for host arrays, and does for CUDA ones.
  dlopened_cudart() { grep -Eqs 'opening file=[^ ]*libcudart|file=libcudart[^ ]* \[0\];  dynamically loaded by' "$@"; }
  python_host "LD_DEBUG" LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld-py"
  LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld-py-cuda" PYTHONPATH="$build/python" \
    "$python" -c 'from strata import _strata; _strata._cuda_device_count()' >/dev/null 2>&1 || true
  if dlopened_cudart "$tmp"/ld-py.*; then
    bad "the Python module dlopened libcudart for host arrays"
  elif ! dlopened_cudart "$tmp"/ld-py-cuda.*; then
    bad "LD_DEBUG shows no dlopen of libcudart even where the module needs it (_cuda_device_count): the check sees nothing"
  else
    ok "the Python module did not dlopen libcudart for host arrays (and does on first CUDA need, as LD_DEBUG shows)"
  fi
fi

# --- 3. a module that does not load ----------------------------------------
if [ "$how" = hide ]; then
  mount --bind /dev/null "$module"
  cuda_skips "module unloadable" "cannot load $module: .*file too short" LD_LIBRARY_PATH="$double" STRATA_FAKE_GPUS=2
  host_bench "module unloadable"
  umount "$module"
else
  mkdir "$tmp/bin" && cp "$bench" "$tmp/bin/"
  run_bench=$tmp/bin/strata-bench  # its RUNPATH is relative: LD_LIBRARY_PATH finds libstrata
  cuda_skips "no module next to a copy of strata-bench" "cannot load strata-bench-cuda.so: .*cannot open shared object file" \
    LD_LIBRARY_PATH="$build/lib:$double" STRATA_FAKE_GPUS=2
  host_bench "no module next to a copy of strata-bench" LD_LIBRARY_PATH="$build/lib"
  run_bench=$bench
fi

# --- 4. nothing of CUDA loadable ----------------------------------------------
library=$(ls "$build"/lib/libstrata.so.*.*.* | head -1)
strata_needs=$(needed "$library" | grep -Eo "$CUDA_LIBS[^ ]*" | tr '\n' ' ' || true)
if [ -n "$strata_needs" ]; then
  echo "check_cuda_lazy: NOTE: part 4 (no CUDA library loadable at all) not run: $(basename "$library") itself" \
    "still needs ${strata_needs% } at load time (the GPU backend is not yet a plugin), so nothing that links it can" \
    "start without them; 1-3 checked the bench's and the Python module's own lazy loading"
elif [ "$how" != hide ]; then
  echo "check_cuda_lazy: NOTE: part 4 not run: hiding the CUDA libraries needs root and a private mount namespace"
else
  # Every libcudart.so* / libnccl.so* in the folders the loader searches
  # for these programs: ldconfig's, the RUNPATHs, the CUDA install, the double.
  dirs=$( {
    ldconfig -p | sed -n -E 's/.*lib(cudart|nccl)\.so.* => (.*)/\2/p' | xargs -r -n1 dirname
    for f in "$bench" "$module" "$library" $python_ext; do
      readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p' | tr ':' '\n' | sed "s|\$ORIGIN|$(dirname "$f")|"
    done
    echo "$double"; ls -d /usr/local/cuda*/lib* 2>/dev/null
  } | sort -u)
  hidden=0
  for d in $dirs; do
    [ -d "$d" ] || continue
    for f in "$d"/libcudart.so* "$d"/libnccl.so*; do
      [ -f "$f" ] || continue
      mount --bind /dev/null "$f" && hidden=$((hidden + 1))
    done
  done
  ok "hid $hidden libcudart/libnccl files"
  host_bench "no CUDA libraries" LD_LIBRARY_PATH=
  cuda_skips "no CUDA libraries" "cannot load $module: .*lib\(cudart\|nccl\)\.so" LD_LIBRARY_PATH=
  if [ -n "$python_ext" ]; then
    python_host "no CUDA libraries" LD_LIBRARY_PATH=
    PY_CUDA='
import strata
from strata import _strata
from mpi4py import MPI
class FakeCuda:
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (4096, False), "version": 3}
assert _strata._cuda_device_count() == 0
assert "libcudart" in _strata._cuda_runtime_problem(), _strata._cuda_runtime_problem()
with strata.Communicator(MPI.COMM_WORLD) as comm:
    try:
        comm.all_reduce(FakeCuda())
    except strata.Unavailable as e:
        assert "libcudart" in str(e), str(e)
        print("CUDA array: strata.Unavailable:", e, flush=True)
    else:
        raise SystemExit("a CUDA array reduced without the CUDA runtime")
'
    if env LD_LIBRARY_PATH= PYTHONPATH="$build/python" "${MPIRUN[@]}" "$python" -c "$PY_CUDA" >"$tmp/pyc.txt" 2>&1 &&
      [ "$(grep -o "strata.Unavailable" "$tmp/pyc.txt" | wc -l)" -eq 2 ]; then
      ok "no CUDA libraries: a CUDA array raises strata.Unavailable naming libcudart on every rank"
    else
      bad "no CUDA libraries: a CUDA array from Python:"; cat "$tmp/pyc.txt"
    fi
  fi
fi

if [ $failures -eq 0 ]; then echo "check_cuda_lazy: OK"; else echo "check_cuda_lazy: $failures checks failed"; exit 1; fi
