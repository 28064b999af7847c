#!/usr/bin/env bash
# Build strata with the GPU backend and assemble one self-contained folder
# (< 60 MiB) to carry to a lent GPU machine, which has CUDA's driver and
# NCCL (in Python's nvidia-nccl package) but no MPI, hwloc, fmt or Boost.
#   scripts/gpu-bundle.sh [--from-build DIR] [OUTDIR]
# OUTDIR defaults to gpu-bundle/ at the repository root (git-ignored).
# Without --from-build it installs missing Debian packages (scripts/setup.sh),
# configures build-gpu-bundle/ with -Dcuda=enabled and builds only what the
# bundle holds; --from-build DIR takes an existing build made with the GPU
# backend as it is (the bundle test does that with CI's build/).
# Then, on the GPU machine: bash gpu-bundle/gpu-check.sh [--out DIR]
# (docs/GPU.md, "Checking on a GPU machine"), or the lent-GPU session,
# bash gpu-bundle/session.sh (docs/BENCHMARKING.md, "The lent-GPU
# session"). What goes in and why: scripts/gpu/assemble.py, and for the
# session scripts/gpu/bundle_session.py.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

from_build=
out=$ROOT/gpu-bundle
while [ $# -gt 0 ]; do
  case $1 in
    --from-build) from_build=${2:?--from-build needs a build directory}; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "gpu-bundle: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done

if [ -n "$from_build" ]; then
  build=$(cd "$from_build" && pwd)
  for tool in patchelf readelf objdump ldd ompi_info; do
    command -v "$tool" >/dev/null || { echo "gpu-bundle: $tool not found (scripts/setup.sh installs it)" >&2; exit 1; }
  done
else
  # shellcheck source=scripts/setup.sh
  source "$ROOT/scripts/setup.sh"
  strata_install_missing
  build=$ROOT/build-gpu-bundle
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$ROOT" -Dcuda=enabled >"$build.setup.log" 2>&1 || { cat "$build.setup.log" >&2; exit 1; }
    rm -f "$build.setup.log"
  fi
  mapfile -t targets < <(python3 "$ROOT/scripts/gpu/assemble.py" --targets "$build"
    python3 "$ROOT/scripts/gpu/bundle_session.py" --targets "$build")
  ninja -C "$build" "${targets[@]}"
fi

python3 "$ROOT/scripts/gpu/assemble.py" "$build" "$out"
python3 "$ROOT/scripts/gpu/bundle_session.py" "$build" "$out"
