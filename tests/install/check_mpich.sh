#!/usr/bin/env bash
# strata picks the MPI it is told to, beside Debian's Open MPI (the default),
# with its tests configured against that MPI:
# - configure, tests included: -Dmpi=mpich (pkg-config), -Dmpi=mpicxx.mpich
#   (the wrapper, asked for its flags), the deprecated -Dmpi_pkgconfig=mpich
#   and CXX=mpicxx.mpich with -Dmpi=auto each pick Debian's MPICH, say so in
#   the summary, find its launcher (hydra's mpiexec.mpich), and have
#   strata.pc require mpich (the wrapper is that MPI);
# - install BUILD (a build made against MPICH: scripts/mpich_pass.sh's,
#   which also runs its MPI tests): the installed strata-config names MPICH
#   and hydra; the README's example builds with plain g++ and `pkg-config
#   --cflags --libs strata` alone, links libmpich and no libmpi, and runs
#   under MPICH's launcher at 4 ranks (scripts/launch.py);
# - with mpich.pc hidden from pkg-config (an MPI no .pc describes), the
#   wrapper route's strata.pc carries MPICH's flags, and the example builds,
#   links and runs with it the same way.
#   check_mpich.sh SOURCE_ROOT README_EXAMPLE_CPP BUILD
# Exit 77 (skipped) when MPICH's pkg-config module or tools are missing.
set -euo pipefail

source_root=$1
example=$2
build=$3
for tool in pkg-config mpicxx.mpich mpicc.mpich mpiexec.mpich meson ninja g++; do
  command -v "$tool" >/dev/null || { echo "mpich test: $tool not found, skipping"; exit 77; }
done
pkg-config --exists mpich || { echo "mpich test: no mpich.pc (libmpich-dev), skipping"; exit 77; }
version=$(pkg-config --modversion mpich)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Apps, Python and the GPU backend have nothing to say about which MPI the
# library builds against; the tests do (they are configured with it).
options=(-Dcuda=disabled -Dapps=false -Dpython=disabled -Dbuildtype=plain --prefix=/usr/local)
summary_says() {  # LOG TEXT: the summary has the line
  grep -q -- "$2" "$1" || { echo "mpich test: expected '$2' in the summary:"; grep -i -e mpi -e launcher "$1"; exit 1; }
}
for route in "-Dmpi=mpich" "-Dmpi=mpicxx.mpich" "-Dmpi_pkgconfig=mpich" "CXX=mpicxx.mpich"; do
  log=$work/setup$route.log
  case $route in
    CXX=*) CC=mpicc.mpich CXX=mpicxx.mpich meson setup "$work/configure" "$source_root" "${options[@]}" ;;
    *) meson setup "$work/configure" "$source_root" "$route" "${options[@]}" ;;
  esac >"$log" 2>&1 || { cat "$log"; exit 1; }
  summary_says "$log" "MPI *: MPICH $version"
  summary_says "$log" "MPI launcher *: hydra /usr/bin/mpiexec.mpich"
  summary_says "$log" "strata.pc *: requires mpich"
  case $route in
    -Dmpi=mpicxx.mpich) summary_says "$log" "MPI found by *: pkg-config mpich (/usr/bin/mpicxx.mpich is that MPI)" ;;
    CXX=*) summary_says "$log" "the C++ compiler is an MPI wrapper" ;;
  esac
  echo "mpich test: $route picks MPICH $version"
  rm -rf "$work/configure"
done

# (strata-config below says whether BUILD is against MPICH.)
meson install -C "$build" --no-rebuild --destdir "$work/dest" --quiet

config=$work/dest/usr/local/bin/strata-config
[ "$("$config" --mpi)" = "MPICH $version" ] || { echo "mpich test: strata-config --mpi says '$("$config" --mpi)'"; exit 1; }
[ "$("$config" --launcher)" = "hydra /usr/bin/mpiexec.mpich" ] ||
  { echo "mpich test: strata-config --launcher says '$("$config" --launcher)'"; exit 1; }
echo "mpich test: strata-config --mpi: MPICH $version; --launcher: hydra /usr/bin/mpiexec.mpich"

pc=$(find "$work/dest" -name strata.pc)
libdir=$(dirname "$(dirname "$pc")")
readme_example() {  # PC_DIR WHAT: builds the example with that strata.pc, checks what it links, runs it
  local flags linked out
  flags=$(PKG_CONFIG_PATH=$1 pkg-config --define-variable=prefix="$work/dest/usr/local" --cflags --libs strata)
  # shellcheck disable=SC2086 # flags are a list
  g++ -std=c++20 "$example" $flags -o "$work/hello"
  linked=$(LD_LIBRARY_PATH=$libdir ldd "$work/hello")  # (not piped into grep -q: pipefail and SIGPIPE)
  if ! grep -q "libmpich" <<<"$linked" || grep -q "libmpi\.so" <<<"$linked"; then
    echo "mpich test: hello ($2) does not link MPICH alone:"; echo "$linked"; exit 1
  fi
  out=$(LD_LIBRARY_PATH=$libdir timeout 120 python3 "$source_root/scripts/launch.py" --mpiexec mpiexec.mpich \
    -n 4 "$work/hello" 2>/dev/null)
  [ "$out" = "mean of ranks = 1.5" ] || { echo "mpich test: the README example ($2) printed '$out'"; exit 1; }
  echo "mpich test: the README example ($2) built, linked MPICH alone and ran at 4 ranks"
}
if ! grep -q "^Requires:.*mpich" "$pc" || grep -q "ompi" "$pc"; then
  echo "mpich test: the installed strata.pc does not require mpich:"; cat "$pc"; exit 1
fi
named=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=mpi strata)
[ "$named" = "MPICH $version" ] || { echo "mpich test: pkg-config --variable=mpi strata says '$named'"; exit 1; }
readme_example "$(dirname "$pc")" "strata.pc requiring mpich"

# An MPICH no .pc describes: pkg-config without the MPIs' modules.
mkdir "$work/pc"
for module in $(pkg-config --list-all | cut -d' ' -f1); do
  case $module in mpi* | ompi* | orte*) ;; *) [ -f "$(pkg-config --variable=pcfiledir "$module")/$module.pc" ] &&
    ln -sf "$(pkg-config --variable=pcfiledir "$module")/$module.pc" "$work/pc/" ;; esac
done
PKG_CONFIG_LIBDIR=$work/pc meson setup "$work/wrapper" "$source_root" -Dmpi=mpicxx.mpich "${options[@]}" \
  >"$work/setup-wrapper.log" 2>&1 || { cat "$work/setup-wrapper.log"; exit 1; }
summary_says "$work/setup-wrapper.log" "MPI found by *: wrapper /usr/bin/mpicxx.mpich"
summary_says "$work/setup-wrapper.log" "strata.pc *: carries the MPI flags"
wrapper_pc=$work/wrapper/meson-private/strata.pc
if grep -q "^Requires:.*\(mpich\|ompi\)" "$wrapper_pc" || ! grep -q "^Cflags:.*-I/usr/include/x86_64-linux-gnu/mpich" "$wrapper_pc"; then
  echo "mpich test: the wrapper route's strata.pc does not carry MPICH's flags:"; cat "$wrapper_pc"; exit 1
fi
PKG_CONFIG_LIBDIR=$work/pc readme_example "$(dirname "$wrapper_pc")" "strata.pc carrying mpicxx.mpich's flags"
echo "mpich test: strata built, installed and ran against MPICH $version"
