#!/usr/bin/env bash
# Run strata's tests: install missing Debian packages, configure, build, run
# every suite (unit, mpi, install, bench) and end with the line
# "N passed, N failed, N skipped".
#   scripts/test.sh [extra `meson test` arguments, e.g. --suite unit]
# Environment: STRATA_BUILD_DIR (default: build).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

build=${STRATA_BUILD_DIR:-$STRATA_ROOT/build}
strata_setup "$build"

start=$(date +%s)
set +e
meson test -C "$build" --print-errorlogs "$@"
status=$?
set -e
echo "strata: tests took $(( $(date +%s) - start )) s"

# Count from meson's own log so the line matches what ran.
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open(sys.argv[1]):
    result = json.loads(line)["result"]
    if result in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif result == "SKIP":
        counts["skipped"] += 1
    else:
        counts["failed"] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
exit $status
