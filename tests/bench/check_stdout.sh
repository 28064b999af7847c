#!/bin/sh
# strata-bench with its table going nowhere: stdout on /dev/full, then
# closed. Each run must exit 3 and say on stderr, in one line, that stdout
# could not be written; --help likewise. Run without mpirun (an MPI
# singleton): under mpirun the ranks write into mpirun's pipe, and a full
# stdout is mpirun's own to report.
#   check_stdout.sh STRATA_BENCH
set -u
bench=$1
tiny="-b 8 -e 64 -n 1 -w 0 --no-progress"
failures=0

expect_stdout_error() {  # what, strerror text, exit status, stderr file
  what=$1 why=$2 status=$3 err=$4
  line=$(grep '^strata-bench:' "$err")
  if [ "$status" -ne 3 ]; then
    echo "FAIL: $what: exit $status, expected 3"; failures=$((failures + 1))
  elif [ "$line" != "strata-bench: cannot write stdout: $why" ]; then
    echo "FAIL: $what: expected one line 'strata-bench: cannot write stdout: $why', got: $line"
    failures=$((failures + 1))
  else
    echo "ok: $what: exit 3, $line"
  fi
}

err=$(mktemp)
trap 'rm -f "$err"' EXIT

# shellcheck disable=SC2086 # $tiny is a list of flags
"$bench" $tiny >/dev/full 2>"$err"
expect_stdout_error "table to /dev/full" "No space left on device" $? "$err"
# shellcheck disable=SC2086
"$bench" $tiny >&- 2>"$err"
expect_stdout_error "table to a closed stdout" "Bad file descriptor" $? "$err"
"$bench" --help >/dev/full 2>"$err"
expect_stdout_error "--help to /dev/full" "No space left on device" $? "$err"

[ "$failures" -eq 0 ] || exit 1
