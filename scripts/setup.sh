#!/usr/bin/env bash
# Shared by scripts/test.sh and scripts/bench.sh: install what is missing
# (and only that) on a Debian 12 machine, then configure and build strata.
#   source scripts/setup.sh; strata_setup BUILD_DIR [meson options...]
# STRATA_TARGETS (optional): build only these ninja targets (default: all).
set -euo pipefail

STRATA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages strata needs to build, test and benchmark.
STRATA_PACKAGES=(g++ meson ninja-build pkg-config libopenmpi-dev openmpi-bin libhwloc-dev doctest-dev
  libboost-program-options-dev libfmt-dev nlohmann-json3-dev python3 python3-matplotlib iproute2
  python3-mpi4py python3-numpy
  python3-dev pybind11-dev libdlpack-dev python3-pytest
  gfortran patchelf
  libmpich-dev mpich  # MPICH beside Open MPI (which stays the default: higher alternatives priority) for the MPICH build test
  ccache)  # meson compiles C and C++ through it when it is on PATH: a rebuild of unchanged files (another
           # clone, CI's clean checkout) comes from ~/.cache/ccache instead of the compiler

strata_install_missing() {
  local missing=()
  for p in "${STRATA_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "strata: missing Debian packages: ${missing[*]}; run as root or install them first" >&2
    return 1
  fi
  echo "strata: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Open MPI refuses to run as root unless told, and 2-core machines need
# oversubscription for more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

strata_setup() {
  local build=$1; shift
  strata_install_missing
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$STRATA_ROOT" "$@" >"$build.setup.log" 2>&1 || { cat "$build.setup.log" >&2; return 1; }
    rm -f "$build.setup.log"
  fi
  # shellcheck disable=SC2086 # targets are a space-separated list
  ninja -C "$build" ${STRATA_TARGETS:-} >/dev/null || ninja -C "$build" ${STRATA_TARGETS:-}
}
