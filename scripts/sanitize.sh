#!/usr/bin/env bash
# The sanitizer pass: strata's library and its unit and MPI tests built with
# AddressSanitizer and UndefinedBehaviorSanitizer and run with every report
# fatal. scripts/test.sh runs it before the main pass and counts both in its
# last line; run it alone with `STRATA_SANITIZE=only scripts/test.sh`.
#   scripts/sanitize.sh [`meson test` arguments: test names or --suite,
#                        instead of the selection below]
# Environment: STRATA_SANITIZE_BUILD_DIR (default: build-sanitize).
#
# What runs: every test of the unit and build suites (this build is
# host-only, so the build suite's host-only check runs here and nowhere
# else in CI: tests/host_only), and every MPI test at one rank
# count: 3 ranks where the test has them (odd and not a power of two:
# recursive halving's extra ranks, uneven slices, a root that is neither
# first nor last), else its smallest. Tests with their own environment
# (virtual nodes, -rpnK) count as tests of their own, all with leak
# detection on. Not covered here: the other rank counts (1, 2, 4, 5, 8 ranks run
# in the main pass only), the other suites (cluster, topo, packing, capi,
# bench, install, interpose, python, slurm, bundle) and the GPU backend
# (-Dcuda=disabled). The list comes from `meson introspect`, so tests added
# to the unit, build or mpi suite are picked up without touching this script.
#
# The build: -O1 -g1 (line tables) rather than debugoptimized's -O2 -g: less
# than half the compile time, and file:line still in every report; asserts
# and libstdc++'s own checks (_GLIBCXX_ASSERTIONS: bounds of operator[],
# front() of an empty vector, ...) on; host-only, no apps, no Python module.
# Only the selected tests' targets are built, as a unity build (a few
# sources per compiler run): every target of this configuration took 154 s
# from cold so, where the selected ones alone took 191 s file by file (the
# main build still compiles every file alone, so a missing include shows
# there).
#
# Reports: ASan and UBSan stop the process at the first error with a stack
# (halt_on_error=1, print_stacktrace=1), so the test fails. LeakSanitizer
# stays on for strata's own allocations; Open MPI's and PMIx's leaks are
# suppressed (scripts/sanitize/lsan.supp says which and why), and
# scripts/sanitize/keep_modules.c keeps their components mapped so that the
# suppressions can name them. fast_unwind_on_malloc=0 takes full allocation
# stacks through Open MPI's frame-pointer-less code (the suppressions match
# any frame). Tests get 3x their meson timeout: the sanitizers slow them
# about that much.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

build=${STRATA_SANITIZE_BUILD_DIR:-$STRATA_ROOT/build-sanitize}
start=$(date +%s)
# Logs left from an earlier run must not be counted if this one fails to build.
rm -f "$build/meson-logs/testlog.json"

# -fdebug-prefix-map: the objects' debug info names the build directory "."
# rather than its absolute path, so ccache (scripts/setup.sh) reuses them
# from a clone elsewhere; reports still give ../lib/... file:line.
options=('-Db_sanitize=address,undefined' -Db_lundef=false -Dbuildtype=plain
  "-Dcpp_args=-O1 -g1 -D_GLIBCXX_ASSERTIONS -fdebug-prefix-map=$build=."
  -Db_ndebug=false -Dcuda=disabled -Dpython=disabled -Dapps=false -Dunity=on)
# A directory configured by an earlier version of this script takes today's
# options (meson only rebuilds what they change).
[ -f "$build/build.ninja" ] && meson configure "$build" "${options[@]}" >/dev/null
# Configure only: build.ninja is a target of every configured directory, so
# ninja has nothing else to do; the tests' own targets are built below.
STRATA_TARGETS=build.ninja strata_setup "$build" "${options[@]}"

# Every selected test runs with leak detection on: buffers abandoned after a
# timeout are kept reachable by util::keep_forever, so they are not leaks.
# The selected tests' names (first line) and the ninja targets they run
# (second line).
selection=$(python3 - "$build" <<'PY'
import json, os, re, subprocess, sys

build = sys.argv[1]
def introspect(what):
    return json.loads(subprocess.check_output(["meson", "introspect", build, what]))

targets = {t["id"]: t for t in introspect("--targets")}
chosen, variants = [], {}
for test in introspect("--tests"):
    suites = {s.split(":")[-1] for s in test["suite"]}
    if "unit" in suites or "build" in suites:
        chosen.append(test)
    elif "mpi" in suites:
        m = re.fullmatch(r"(.*)-np(\d+)(.*)", test["name"])
        if not m:
            chosen.append(test)
            continue
        variants.setdefault((m.group(1), m.group(3)), {})[int(m.group(2))] = test
for ranks in variants.values():
    chosen.append(ranks[3] if 3 in ranks else ranks[min(ranks)])
files = {os.path.relpath(f, build) for test in chosen for d in test["depends"] for f in targets[d]["filename"]}
print(" ".join(test["name"] for test in chosen))
print(" ".join(sorted(files)))
PY
)
names=$(sed -n 1p <<<"$selection")
[ $# -gt 0 ] && names=""  # the caller's choice instead
targets=$(sed -n 2p <<<"$selection")
# shellcheck disable=SC2086 # space-separated target list
ninja -C "$build" $targets >/dev/null || ninja -C "$build" $targets
gcc -shared -fPIC -O2 -o "$build/keep_modules.so" "$STRATA_ROOT/scripts/sanitize/keep_modules.c"
built=$(date +%s)
echo "strata: sanitizer build took $(( built - start )) s" >&2

# meson writes meson-logs/testlog.json, which scripts/test.sh counts.
# verify_asan_link_order=0: keep_modules.so is preloaded ahead of libasan.
# The tests run here are left out of the main pass of a full run
# (scripts/test.sh): test_stopped_midway, for one, runs here only, with
# its own number of trials.
run_tests() {
  env ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:fast_unwind_on_malloc=0:verify_asan_link_order=0" \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    LSAN_OPTIONS="suppressions=$STRATA_ROOT/scripts/sanitize/lsan.supp" \
    LD_PRELOAD="$build/keep_modules.so" \
    meson test -C "$build" --no-rebuild --print-errorlogs --timeout-multiplier 3 "$@"
}
set +e
# shellcheck disable=SC2086 # space-separated test names
run_tests "$@" $names
status=$?
set -e
echo "strata: sanitizer tests took $(( $(date +%s) - built )) s" >&2
exit $status
