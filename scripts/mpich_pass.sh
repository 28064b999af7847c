#!/usr/bin/env bash
# The MPICH pass: strata built against Debian's MPICH (libmpich-dev and
# mpich, scripts/setup.sh installs them) by the documented switch,
# -Dmpi=mpich (docs/MPI.md), in a build folder of its own, and a subset of
# its MPI, interposer, C API and Python suites run there, every rank
# started by MPICH's own launcher (hydra's mpiexec.mpich, through
# scripts/launch.py). scripts/test.sh runs it after the main pass and
# counts it in its last line; run it alone with `STRATA_MPICH=only
# scripts/test.sh`.
#   scripts/mpich_pass.sh [`meson test` arguments: test names or --suite,
#                          instead of the selection below]
# Environment: STRATA_MPICH_BUILD_DIR (default: build-mpich).
#
# What runs, and why that and not all (the main pass runs every suite
# against Open MPI; this pass is about what differs under another MPI and
# its launcher):
#   - mpi: every test of the mpi suite at 2 ranks, in every environment it
#     has (virtual nodes, the shared-memory rounds, the direct path, ...),
#     and test_public_api at 3; not 3 to 8 ranks: MPICH's ranks spin while
#     they wait, so more ranks than this machine's 2 cores run 10-20x
#     slower than under Open MPI (test_all_reduce-np3 22 s, -np5 56 s); and
#     not the tests that meet Debian's MPICH 4.0.2's own wrong results
#     (below);
#   - interpose: the interposer under hydra's -genv LD_PRELOAD, in every C
#     and Fortran program mode at 2 ranks (hello, linked, quiet, fortran,
#     first-started), and the mpi4py modes, which skip saying why (Debian's
#     mpi4py is Open MPI's);
#   - capi: all of it (the C program, the Fortran module through
#     mpifort.mpich, the install test built with mpicc.mpich);
#   - python: one skipped test saying why (no mpi4py for MPICH here, so no
#     module: python/meson.build; PyPI's mpi4py would need a download and
#     a compile, which CI must not depend on).
# Left out, with the reason, where MPICH 4.0.2 (Debian 12) itself is wrong:
# it computes MPI_MIN and MPI_MAX of unsigned integer types as if they were
# signed (MPI_UINT8_T, MPI_UINT32_T, MPI_UNSIGNED, MPI_UINT64_T; MPICH 5.0.2
# is right), so every test comparing strata's `mpi` algorithm (which calls
# MPI_Allreduce / MPI_Reduce / MPI_Reduce_scatter_block) against the
# reference fails there: test_all_reduce, test_rooted (where MPI_Reduce
# also crashes inside MPICH at 100003 elements), test_blockwise, test_batch,
# test_check_carry; and its persistent/non-blocking collectives beside
# communicator duplication hang interpose-requests (the program alone,
# before anything is preloaded).
#
# The build: host-only (-Dcuda=disabled: the GPU tests run in the main
# pass), no apps (nothing selected needs them), -O1 without debug info
# (half the compile of -O2 -g; ccache keeps the objects across runs), with
# asserts. Only the selected tests' targets and what `meson install` needs
# (the C API's install test installs the build) are built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

build=${STRATA_MPICH_BUILD_DIR:-$STRATA_ROOT/build-mpich}
start=$(date +%s)
# Logs left from an earlier run must not be counted if this one fails to build.
rm -f "$build/meson-logs/testlog.json"

options=(-Dmpi=mpich -Dcuda=disabled -Dapps=false -Dbuildtype=plain -Db_ndebug=false
  "-Dcpp_args=-O1 -fdebug-prefix-map=$build=.")
[ -f "$build/build.ninja" ] && meson configure "$build" "${options[@]}" >/dev/null
STRATA_TARGETS=build.ninja strata_setup "$build" "${options[@]}"

# The selected tests' names (first line) and the ninja targets they and
# `meson install` need (second line).
selection=$(python3 - "$build" <<'PY'
import json, os, re, subprocess, sys

build = sys.argv[1]
def introspect(what):
    return json.loads(subprocess.check_output(["meson", "introspect", build, what]))

# MPICH 4.0.2's wrong unsigned MIN/MAX (see the script's header), and its hang.
MPICH_WRONG = {"test_all_reduce", "test_rooted", "test_blockwise", "test_batch", "test_check_carry",
               "interpose-requests"}
targets = {t["id"]: t for t in introspect("--targets")}
chosen = []
for test in introspect("--tests"):
    suites = {s.split(":")[-1] for s in test["suite"]}
    name = test["name"]
    m = re.fullmatch(r"(.*)-np(\d+)(.*)", name)
    program, ranks = (m.group(1), int(m.group(2))) if m else (name, 0)
    if program in MPICH_WRONG:
        continue
    if "capi" in suites or "python" in suites:
        chosen.append(test)
    elif "mpi" in suites or "interpose" in suites:
        if ranks == 2 or name == "test_public_api-np3":
            chosen.append(test)
files = {os.path.relpath(f, build) for test in chosen for d in test["depends"] for f in targets[d]["filename"]}
files |= {os.path.relpath(f, build) for t in targets.values() if t["installed"] for f in t["filename"]}
print(" ".join(sorted({test["name"] for test in chosen})))
print(" ".join(sorted(files)))
PY
)
names=$(sed -n 1p <<<"$selection")
[ $# -gt 0 ] && names=""  # the caller's choice instead
targets=$(sed -n 2p <<<"$selection")
# shellcheck disable=SC2086 # space-separated target list
ninja -C "$build" $targets >/dev/null || ninja -C "$build" $targets
built=$(date +%s)
echo "strata: MPICH build took $(( built - start )) s" >&2

set +e
# shellcheck disable=SC2086 # space-separated test names
meson test -C "$build" --no-rebuild --print-errorlogs "$@" $names
status=$?
set -e
echo "strata: MPICH tests took $(( $(date +%s) - built )) s" >&2
exit $status
