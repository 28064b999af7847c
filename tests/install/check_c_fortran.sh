#!/usr/bin/env bash
# Install test for the C API and the Fortran module: `meson install` into a
# scratch DESTDIR, then, using only that copy (pkg-config from the DESTDIR):
# - strata.h compiles alone as strict C99 (gcc -std=c99 -pedantic -Werror)
#   and as C++;
# - the C test program (tests/capi/test_c_api.c and the capi_*.c files
#   beside it, with the MPI test harness's core: the build's
#   libmpi_harness_core.a and tests/mpi/harness_c.h) builds with mpicc and
#   passes under mpirun at 2 and 3 ranks;
# - the README's C example is shown verbatim in README.md, builds the way
#   the README says and prints the right mean at 4 ranks;
# - the Fortran test program builds with mpifort together with the installed
#   strata.f90 (as docs/C_API.md says; and the harness, tests/mpi/harness.f90)
#   and passes at 2 and 3 ranks.
# - docs/C_API.md shows the Fortran example verbatim, and it builds that way
#   and prints the right mean at 4 ranks.
#   check_c_fortran.sh BUILD_DIR HARNESS_CORE_A TEST_C_API_C TEST_FORTRAN_F90 \
#     [README_EXAMPLE_C README_MD [FORTRAN_EXAMPLE_F90 C_API_MD]]
# Exit 77 (skipped) when pkg-config, mpicc or mpirun is missing; when only
# a Fortran compiler is missing, the C half still runs and must pass, then
# the test exits 77 saying so. The build's MPI: its wrappers STRATA_MPICC
# and STRATA_MPIFORT and its launcher STRATA_LAUNCH (set by meson).
set -euo pipefail
mpicc=${STRATA_MPICC:-mpicc}
mpifort=${STRATA_MPIFORT:-mpifort}
launch=${STRATA_LAUNCH:?C/Fortran install test: STRATA_LAUNCH (the build\'s strata-launch) is not set: run it through meson test}

# Absolute paths: the programs are built inside a scratch directory.
build=$(realpath "$1")
harness_core=$(realpath "$2")
c_test=$(realpath "$3")
f_test=$(realpath "$4")
example=${5:+$(realpath "$5")}
readme=${6:+$(realpath "$6")}
f_example=${7:+$(realpath "$7")}
c_api_md=${8:+$(realpath "$8")}
harness_dir=$(realpath "$(dirname "$0")/../mpi")
# The harness's core is C++: its runtime, named for linkers that leave
# libraries out unless asked.
harness_libs="$harness_core -lstdc++ -lpthread"
for tool in pkg-config "$mpicc" "$launch" gcc g++ python3; do
  command -v "$tool" >/dev/null || { echo "C/Fortran install test: $tool not found, skipping"; exit 77; }
done
# Each run is bounded, so a hung collective fails the test with a message.
bounded_mpirun() {
  local status=0
  timeout 90 "$launch" "$@" || status=$?
  [ "$status" -ne 124 ] || echo "C/Fortran install test: $launch $* did not finish within 90 s" >&2
  return "$status"
}
fail() { echo "C/Fortran install test: $*" >&2; exit 1; }

# shellcheck source-path=SCRIPTDIR source=scratch_install.sh
source "$(dirname "$0")/scratch_install.sh"
scratch_install "$build"
# The .pc file names prefix-relative paths: a copy with prefix moved into the
# DESTDIR (--define-variable would move ompi-c's prefix too).
mkdir "$work/pkgconfig"
[ -f "$installed_lib/pkgconfig/strata.pc" ] || fail "no strata.pc in $installed_lib/pkgconfig"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$installed_lib/pkgconfig/strata.pc" >"$work/pkgconfig/strata.pc"
pc() { PKG_CONFIG_PATH=$work/pkgconfig pkg-config "$@" strata; }
flags=$(pc --cflags --libs)
includedir=$(pc --variable=includedir)
[ -f "$includedir/strata/strata.h" ] || fail "strata.h not installed in $includedir/strata"
[ -f "$includedir/strata/strata.f90" ] || fail "strata.f90 not installed in $includedir/strata"
export LD_LIBRARY_PATH=$installed_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd "$work"

# strata.h alone: strict C99, and usable from C++.
# shellcheck disable=SC2046,SC2086
echo '#include <strata/strata.h>' | gcc -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c - $(pc --cflags) \
  || fail "strata.h is not strict C99"
# shellcheck disable=SC2046,SC2086
echo '#include <strata/strata.h>' | g++ -DOMPI_SKIP_MPICXX -Wall -Wextra -Werror -fsyntax-only -x c++ - $(pc --cflags) \
  || fail "strata.h does not compile as C++"

# shellcheck disable=SC2086
"$mpicc" -std=c99 -pedantic -Wall -Wextra -Werror -I"$harness_dir" "$c_test" "$(dirname "$c_test")"/capi_*.c $flags \
  $harness_libs -o test_c_api
resolved=$(ldd test_c_api | awk '/libstrata/ {print $3}')
case $resolved in "$installed_lib"/*) ;; *) fail "libstrata resolves to '$resolved'" ;; esac
for np in 2 3; do
  out=$(bounded_mpirun -n "$np" ./test_c_api) || { echo "$out"; fail "test_c_api failed at $np ranks"; }
  echo "$out"
  grep -q "^strata-test SUCCESS: capi test: $np ranks, " <<<"$out" || fail "test_c_api at $np ranks: no summary line"
done

# The document must show the example's lines verbatim, less its first comment line.
shown_verbatim() {
  python3 - "$1" "$2" <<'PY'
import sys
example, doc = (open(p).read() for p in sys.argv[1:3])
lines = example.splitlines()
if "\n".join(lines[1:]).strip() not in doc:
    sys.exit(f"C/Fortran install test: {sys.argv[2]} does not show {sys.argv[1]} verbatim")
PY
}

if [ -n "$example" ]; then
  shown_verbatim "$example" "$readme"
  # As README.md says.
  # shellcheck disable=SC2046,SC2086
  "$mpicc" "$example" $flags -o hello_c
  out=$(bounded_mpirun -n 4 ./hello_c)
  echo "$out"
  [ "$out" = "mean of ranks = 1.5" ] || fail "README C example printed '$out'"
fi

printf 'program p\nend program\n' >probe.f90
if [ -z "$mpifort" ] || ! command -v "$mpifort" >/dev/null || ! "$mpifort" probe.f90 -o probe >/dev/null 2>&1; then
  echo "C/Fortran install test: the C half passed; no Fortran compiler behind '$mpifort', Fortran half skipped"
  exit 77
fi
# As docs/C_API.md says: compile the installed module source with the program.
# shellcheck disable=SC2046,SC2086
"$mpifort" "$includedir/strata/strata.f90" "$harness_dir/harness.f90" "$f_test" $(pc --libs) $harness_libs -o test_fortran
for np in 2 3; do
  out=$(bounded_mpirun -n "$np" ./test_fortran) || { echo "$out"; fail "test_fortran failed at $np ranks"; }
  echo "$out"
  grep -q "^strata-test SUCCESS: fortran test: $np ranks, " <<<"$out" || fail "test_fortran at $np ranks: no summary line"
done
if [ -n "$f_example" ]; then
  shown_verbatim "$f_example" "$c_api_md"
  # As docs/C_API.md says.
  # shellcheck disable=SC2046
  "$mpifort" $(pc --variable=includedir)/strata/strata.f90 "$f_example" $(pc --libs) -o hello_f
  out=$(bounded_mpirun -n 4 ./hello_f)
  echo "$out"
  [ "$out" = "mean of ranks = 1.5" ] || fail "docs/C_API.md Fortran example printed '$out'"
fi
echo "C/Fortran install test: passed"
