#!/usr/bin/env bash
# strata picks the MPI it is told to, beside Debian's Open MPI (the default):
# - configure only: -Dmpi=mpich (pkg-config), -Dmpi=mpicxx.mpich (the
#   wrapper, asked for its flags) and the deprecated -Dmpi_pkgconfig=mpich
#   each pick Debian's MPICH, say so in the summary, and find its launcher
#   (hydra's mpiexec.mpich);
# - CXX=mpicxx.mpich with -Dmpi=auto builds the library against MPICH, not
#   Open MPI; installed, its strata.pc carries MPICH's flags (a wrapper has
#   no .pc to require), so the README's example builds with plain g++ and
#   `pkg-config --cflags --libs strata` alone, links libmpich and no
#   libmpi, and runs under MPICH's launcher at 4 ranks (scripts/launch.py).
# (scripts/test.sh's MPICH pass builds and tests everything against MPICH
# through -Dmpi=mpich; this covers the other routes.)
#   check_mpich.sh SOURCE_ROOT README_EXAMPLE_CPP
# Exit 77 (skipped) when MPICH's pkg-config module or tools are missing.
set -euo pipefail

source_root=$1
example=$2
for tool in pkg-config mpicxx.mpich mpicc.mpich mpiexec.mpich meson ninja g++; do
  command -v "$tool" >/dev/null || { echo "mpich test: $tool not found, skipping"; exit 77; }
done
pkg-config --exists mpich || { echo "mpich test: no mpich.pc (libmpich-dev), skipping"; exit 77; }
version=$(pkg-config --modversion mpich)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The library only: apps, tests, Python and the GPU backend have nothing to
# say about which MPI the library builds against.
lib_only=(-Dcuda=disabled -Dapps=false -Dtests=false -Dpython=disabled -Dbuildtype=plain --prefix=/usr/local)
summary_says() {  # LOG TEXT: the summary has the line
  grep -q -- "$2" "$1" || { echo "mpich test: expected '$2' in the summary:"; grep -i -e mpi -e launcher "$1"; exit 1; }
}
for route in "-Dmpi=mpich" "-Dmpi=mpicxx.mpich" "-Dmpi_pkgconfig=mpich"; do
  log=$work/setup$route.log
  meson setup "$work/configure" "$source_root" "$route" "${lib_only[@]}" >"$log" 2>&1 || { cat "$log"; exit 1; }
  summary_says "$log" "MPI *: MPICH $version"
  summary_says "$log" "MPI launcher *: hydra /usr/bin/mpiexec.mpich"
  case $route in
    -Dmpi=mpicxx.mpich) summary_says "$log" "MPI found by *: wrapper /usr/bin/mpicxx.mpich" ;;
    *) summary_says "$log" "strata.pc *: requires mpich" ;;
  esac
  echo "mpich test: $route picks MPICH $version"
  rm -rf "$work/configure"
done

# A unity build (a few sources per compiler run) halves the compile (37 s
# against 77 s here); the main build compiles every file alone.
CC=mpicc.mpich CXX=mpicxx.mpich meson setup "$work/build" "$source_root" "${lib_only[@]}" -Dunity=on \
  >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
summary_says "$work/setup.log" "MPI *: MPICH $version"
summary_says "$work/setup.log" "the C++ compiler is an MPI wrapper"
ninja -C "$work/build" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
meson install -C "$work/build" --destdir "$work/dest" --quiet

pc=$(find "$work/dest" -name strata.pc)
if grep -q "^Requires:.*ompi" "$pc" || ! grep -q "^Cflags:.*-I/usr/include/x86_64-linux-gnu/mpich" "$pc"; then
  echo "mpich test: strata.pc does not carry MPICH's flags:"; cat "$pc"; exit 1
fi
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$work/dest/usr/local" --cflags --libs strata)
# shellcheck disable=SC2086 # flags are a list
g++ -std=c++20 "$example" $flags -o "$work/hello"
libdir=$(dirname "$(dirname "$pc")")
linked=$(LD_LIBRARY_PATH=$libdir ldd "$work/hello")  # (not piped into grep -q: pipefail and SIGPIPE)
if ! grep -q "libmpich" <<<"$linked" || grep -q "libmpi\.so" <<<"$linked"; then
  echo "mpich test: hello does not link MPICH alone:"; echo "$linked"; exit 1
fi
out=$(LD_LIBRARY_PATH=$libdir timeout 120 python3 "$source_root/scripts/launch.py" --mpiexec mpiexec.mpich \
  -n 4 "$work/hello" 2>/dev/null)
echo "$out"
[ "$out" = "mean of ranks = 1.5" ] || { echo "mpich test: the README example printed '$out'"; exit 1; }
echo "mpich test: strata built, installed and ran against MPICH $version"
