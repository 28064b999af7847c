#!/usr/bin/env bash
# strata builds against another MPI: configure the library alone against
# Debian's MPICH (-Dmpi_pkgconfig=mpich) in a scratch build, install it into
# a scratch DESTDIR, check that strata.pc requires `mpich` (not Open MPI's
# ompi-c), build the README's example with MPICH's mpicxx and the installed
# strata.pc, and run it with MPICH's launcher at 4 ranks.
#   check_mpich.sh SOURCE_ROOT README_EXAMPLE_CPP
# Exit 77 (skipped) when MPICH's pkg-config module or tools are missing.
set -euo pipefail

source_root=$1
example=$2
for tool in pkg-config mpicxx.mpich mpirun.mpich meson ninja; do
  command -v "$tool" >/dev/null || { echo "mpich test: $tool not found, skipping"; exit 77; }
done
pkg-config --exists mpich || { echo "mpich test: no mpich.pc (libmpich-dev), skipping"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The library only: apps, tests, Python and the GPU backend have nothing to
# say about which MPI the library builds against. A unity build (a few
# sources per compiler run) halves the compile (37 s against 77 s here);
# the main build compiles every file alone.
meson setup "$work/build" "$source_root" -Dmpi_pkgconfig=mpich -Dcuda=disabled -Dapps=false -Dtests=false \
  -Dpython=disabled -Dbuildtype=plain -Dunity=on --prefix=/usr/local >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
grep -q "MPICH (strata.pc requires mpich)" "$work/setup.log" ||
  { echo "mpich test: the build did not pick MPICH:"; grep -i mpi "$work/setup.log"; exit 1; }
ninja -C "$work/build" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
meson install -C "$work/build" --destdir "$work/dest" --quiet

pc=$(find "$work/dest" -name strata.pc)
grep -qx "Requires: mpich" "$pc" || { echo "mpich test: strata.pc does not require mpich:"; cat "$pc"; exit 1; }
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$work/dest/usr/local" --cflags --libs strata)
# shellcheck disable=SC2086 # flags are a list
mpicxx.mpich -std=c++20 "$example" $flags -o "$work/hello"
libdir=$(dirname "$(dirname "$pc")")
linked=$(LD_LIBRARY_PATH=$libdir ldd "$work/hello")  # (not piped into grep -q: pipefail and SIGPIPE)
grep -q "libmpich" <<<"$linked" || { echo "mpich test: hello does not link MPICH:"; echo "$linked"; exit 1; }
out=$(LD_LIBRARY_PATH=$libdir timeout 120 mpirun.mpich -np 4 "$work/hello" 2>/dev/null)
echo "$out"
[ "$out" = "mean of ranks = 1.5" ] || { echo "mpich test: the README example printed '$out'"; exit 1; }
echo "mpich test: strata built, installed and ran against MPICH $(pkg-config --modversion mpich)"
