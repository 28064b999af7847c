#!/usr/bin/env bash
# The GPU plugin's boundary, in a build with the GPU backend:
#   - libstrata.so and libstrata_mpi.so need neither cudart nor NCCL (readelf
#     NEEDED); libstrata_gpu.so needs both;
#   - plugin absent (libstrata copied to a folder without it, found first
#     through LD_LIBRARY_PATH): strata-topo runs, and `without_plugin`
#     at 2 ranks does host all-reduces and gets Unavailable naming the
#     missing plugin for a CUDA tensor;
#   - CUDA runtime absent (the plugin in place, the folders of the cudart and
#     NCCL it needs hidden under empty tmpfs in a private mount namespace;
#     needs root, otherwise reported as not checked): the same, with
#     Unavailable naming libcudart, and a plain MPI program linked with the
#     interposer (interpose-linked) runs and passes its check.
#   check_plugin.sh BUILD WITHOUT_PLUGIN STRATA_TOPO INTERPOSE_LINKED
set -euo pipefail
build=$1
without_plugin=$2
topo=$3
linked=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
failures=0
ok() { echo "check_plugin: ok: $*"; }
bad() { echo "check_plugin: FAIL: $*"; failures=$((failures + 1)); }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
launch=${STRATA_LAUNCH:?check_plugin: STRATA_LAUNCH (strata-launch of the build) is not set: run it through meson test}
mpirun_np2() { "$launch" -n 2 --env LD_LIBRARY_PATH "$@"; }

# Both programs must pass: without_plugin with the harness's SUCCESS line, interpose-linked with each rank printing "linked: rank R: ok".
run_both() {
  local what=$1 name=$2; shift 2
  local out
  # without_plugin ends with the harness's verdict; interpose-linked prints a line per rank.
  if out=$(mpirun_np2 "$@" 2>&1) && { grep -q "^strata-test SUCCESS: $name: 2 ranks" <<<"$out" ||
                                      [ "$(grep -c "^$name: rank [01]: ok$" <<<"$out")" -eq 2 ]; }; then
    ok "$what: $(grep -m1 'Unavailable' <<<"$out" || echo "2 ranks ok")"
  else
    bad "$what:"; echo "$out"
  fi
}

if [ "${1:-}" = --hidden-cuda ]; then
  # Inside the private mount namespace (see the end of this script).
  shift
  build=$1 without_plugin=$2 topo=$3 linked=$4
  for lib in libcudart.so.13 libnccl.so.2; do
    where=$(ldd "$build/lib/libstrata_gpu.so.0" | awk -v l="$lib" '$1 == l {print $3}' || true)
    [ -n "$where" ] && [ -e "$where" ] && mount -t tmpfs -o size=1m none "$(dirname "$(readlink -f "$where")")"
  done
  deps=$(ldd "$build/lib/libstrata_gpu.so.0" 2>&1 || true)
  if grep -q 'libcudart.so.13 => not found' <<<"$deps"; then
    ok "CUDA runtime hidden: ldd libstrata_gpu.so.0 says libcudart.so.13 => not found"
  else
    bad "could not hide the CUDA runtime"; echo "$deps"
  fi
  if out=$("$topo" 2>&1); then ok "strata-topo runs without the CUDA runtime"; else bad "strata-topo: $out"; fi
  run_both "no CUDA runtime: without_plugin" without_plugin "$without_plugin" "libcudart.so.13"
  run_both "no CUDA runtime: interpose-linked (a plain MPI program with the interposer)" linked "$linked"
  exit $failures
fi

for lib in "$build/lib/libstrata.so.0" "$build/lib/interpose/libstrata_mpi.so.0"; do
  deps=$(needed "$lib")
  if grep -Eq 'cudart|nccl' <<<"$deps"; then bad "$(basename "$lib") needs CUDA or NCCL: $deps"
  else ok "$(basename "$lib") needs neither cudart nor NCCL"; fi
done
deps=$(needed "$build/lib/libstrata_gpu.so.0")
if grep -q cudart <<<"$deps" && grep -q nccl <<<"$deps"; then ok "libstrata_gpu.so.0 needs cudart and NCCL"
else bad "libstrata_gpu.so.0 does not need cudart and NCCL: $deps"; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -P "$build"/lib/libstrata.so* "$tmp"/ 2>/dev/null || true
rm -rf "$tmp"/*.p
if [ -e "$tmp/libstrata_gpu.so.0" ] || ! grep -q "libstrata.so.0 => $tmp/" <<<"$(LD_LIBRARY_PATH=$tmp ldd "$without_plugin")"; then
  bad "the copy of libstrata in $tmp is not the one loaded"
fi
if out=$(LD_LIBRARY_PATH=$tmp "$topo" 2>&1); then ok "strata-topo runs without the plugin"; else bad "strata-topo: $out"; fi
LD_LIBRARY_PATH=$tmp run_both "no plugin: without_plugin" without_plugin "$without_plugin" \
  "libstrata_gpu.so.0 is not next to libstrata (in $tmp)"

if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
  unshare -m --propagation private bash "$0" --hidden-cuda "$build" "$without_plugin" "$topo" "$linked" ||
    failures=$((failures + $?))
else
  echo "check_plugin: NOTE: not root or no mount namespace here: the run without the CUDA runtime is not checked"
fi

if [ $failures -eq 0 ]; then echo "check_plugin: OK"; else echo "check_plugin: $failures checks failed"; exit 1; fi
