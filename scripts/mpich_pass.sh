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
# Environment: STRATA_MPICH_BUILD_DIR (default: build-test-mpich; build-mpich is left to the user, README.md).
#
# What runs, and why that and not all (the main pass runs every suite
# against Open MPI; this pass is about what differs under another MPI and
# its launcher):
#   - mpi: every test of the mpi suite at 2 ranks, in every environment it
#     has (virtual nodes, the shared-memory rounds, the direct path, ...),
#     and test_public_api at 3, test_late_rank and test_stopped at 4 (what a
#     timeout leaves behind, where MPICH once matched a given-up call's
#     messages on a later communicator); not 3 to 8 ranks otherwise: MPICH's ranks spin while
#     they wait, so more ranks than this machine's 2 cores run 10-20x
#     slower than under Open MPI (test_all_reduce-np3 22 s, -np5 56 s); and
#     not the tests that meet Debian's MPICH 4.0.2's own faults (below);
#   - interpose: the interposer under hydra's -genv LD_PRELOAD, in every
#     program mode at 2 ranks (hello, linked, quiet, first-started, the
#     Fortran program, whose run without the interposer check_interpose.py
#     leaves out on MPICH 4.0.x, saying why), the mpi4py modes, which skip
#     saying why (Debian's mpi4py is Open MPI's), and interpose-abi: the
#     standard-ABI interposer, built with -Dmpi_abi against the mpich
#     wheel's prefix, run on MPICH 5 and Intel MPI from their wheels
#     (tests/interpose/check_abi.py installs them into venvs under
#     /tmp/strata-abi-venvs, reused by later runs; where PyPI cannot be
#     reached the option stays empty and the test reports itself skipped,
#     saying why);
#   - capi: all of it (the C program, the Fortran module through
#     mpifort.mpich, the install test built with mpicc.mpich);
#   - install: mpich-build-and-run (tests/install/check_mpich.sh: the
#     configure routes that pick MPICH, and this build installed and
#     used through its strata.pc);
#   - python: one skipped test saying why (no mpi4py for MPICH here, so no
#     module: python/meson.build; PyPI's mpi4py would need a download and
#     a compile, which CI must not depend on).
# Left out, with the reason, where MPICH 4.0.2 (Debian 12) itself fails,
# in the test program alone, before anything is preloaded:
# interpose-requests, whose persistent/non-blocking collectives beside
# communicator duplication hang inside MPICH's own MPI_Wait. strata's own `mpi` algorithm works
# around both faults of that MPICH it meets (lib/host/mpi.cpp: the in-place
# reduce at a root other than 0, and MPI_MIN/MPI_MAX of unsigned integers,
# which it compares as signed, pmodels/mpich#6083), so test_all_reduce,
# test_rooted, test_blockwise, test_batch and test_check_carry run.
#
# The build: host-only (-Dcuda=disabled: the GPU tests run in the main
# pass), no apps (nothing selected needs them), -O1 without debug info
# (half the compile of -O2 -g; ccache keeps the objects across runs), with
# asserts, as a unity build (a few sources per compiler run; the main build
# compiles every file alone). Only the selected tests' targets and what
# `meson install` needs (the C API's install test installs the build) are
# built.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

build=${STRATA_MPICH_BUILD_DIR:-$STRATA_ROOT/build-test-mpich}
start=$(date +%s)
# Logs left from an earlier run must not be counted if this one fails to build.
rm -f "$build/meson-logs/testlog.json"

# The standard-ABI interposer's MPI (its mpi_abi.h): the mpich wheel's
# prefix, or none where it cannot be had (the reason goes to stderr).
abi_prefix=$(timeout 700 python3 "$STRATA_ROOT/tests/interpose/check_abi.py" --prefix mpich) || abi_prefix=""
options=(-Dmpi=mpich -Dcuda=disabled -Dapps=false -Dbuildtype=plain -Db_ndebug=false -Dunity=on
  "-Dcpp_args=-O1 -fdebug-prefix-map=$build=." "-Dmpi_abi=$abi_prefix")
[ -f "$build/build.ninja" ] && meson configure "$build" "${options[@]}" >/dev/null
STRATA_TARGETS=build.ninja strata_setup "$build" "${options[@]}"

# The selected tests' names (first line) and the ninja targets they and
# `meson install` need (second line).
selection=$(python3 - "$build" <<'PY'
import json, os, re, subprocess, sys

build = sys.argv[1]
def introspect(what):
    return json.loads(subprocess.check_output(["meson", "introspect", build, what]))

# MPICH 4.0.2's hang (see the script's header).
MPICH_WRONG = {"interpose-requests"}
# A timeout's aftermath at 4 ranks: the context of a communicator given up
# on must never reach a later one (MPICH reuses contexts promptly).
AFTER_TIMEOUTS = {"test_late_rank-np4-rpn2", "test_stopped-np4"}
targets = {t["id"]: t for t in introspect("--targets")}
chosen = []
for test in introspect("--tests"):
    suites = {s.split(":")[-1] for s in test["suite"]}
    name = test["name"]
    m = re.fullmatch(r"(.*)-np(\d+)(.*)", name)
    program, ranks = (m.group(1), int(m.group(2))) if m else (name, 0)
    if program in MPICH_WRONG:
        continue
    if "capi" in suites or "python" in suites or name == "mpich-build-and-run":
        chosen.append(test)
    elif "mpi" in suites or "interpose" in suites:
        if ranks == 2 or name in ("test_public_api-np3", "interpose-abi") or name in AFTER_TIMEOUTS:
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
