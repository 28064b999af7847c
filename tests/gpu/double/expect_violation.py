#!/usr/bin/env python3
"""Runs one case of the double's own test program and checks that the
double reported what the case does wrong.

    expect_violation.py [--abort] PROGRAM CASE PATTERN...

Passes when PROGRAM CASE printed "PROGRAM CASE: checks passed" (its own
checks of the error codes it was handed), ended with the double's
violation status 86 (--abort: was aborted, as the double does where real
hardware would hang), and every PATTERN (a regular expression) matches a
line the double printed on stderr ("VIOLATION in ..." or "FATAL in ...").
"""
import os
import re
import subprocess
import sys

VIOLATION_STATUS = 86


def main():
    args = sys.argv[1:]
    aborts = bool(args) and args[0] == "--abort"
    if aborts:
        args = args[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    program, case, patterns = args[0], args[1], args[2:]
    proc = subprocess.run([program, case], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    print(f"+ {program} {case}\nexit {proc.returncode}\nstdout:\n{proc.stdout}stderr:\n{proc.stderr}")
    problems = []
    name = os.path.basename(program)
    if f"{name} {case}: checks passed" not in proc.stdout:
        problems.append("the case's own checks did not pass")
    if aborts and proc.returncode >= 0:
        problems.append(f"exit {proc.returncode}, expected the double to abort the process")
    if not aborts and proc.returncode != VIOLATION_STATUS:
        problems.append(f"exit {proc.returncode}, expected {VIOLATION_STATUS} (the double's violation status)")
    reports = [line for line in proc.stderr.splitlines() if re.search(r"strata test double .*(VIOLATION|FATAL) in", line)]
    for pattern in patterns:
        if not any(re.search(pattern, line) for line in reports):
            problems.append(f"no report of the double matches '{pattern}'")
    if problems:
        sys.exit("expect_violation: FAIL: " + "; ".join(problems))
    print("expect_violation: OK")


if __name__ == "__main__":
    main()
