#!/usr/bin/env python3
"""The tests a full run's main pass runs: every test of the main build but
the MPI tests that the sanitizer pass already ran (scripts/test.sh).

    main_pass_tests.py MAIN_BUILD SANITIZER_TESTLOG_JSON

Prints one test name per line. An MPI test at one rank count and
environment (test_all_reduce-np3, test_stopped-np4-rpn2, ...) is the same
program with the same inputs in both builds; the sanitizer pass runs it
with ASan and UBSan on, so the main pass leaves it to that pass and runs
the other rank counts. Only tests of the mpi suite are left out: the unit
and build suites depend on how each build was configured (the sanitizer
build is host-only), so they run in both. A test whose result is missing
from the log (the sanitizer build failed, or it was not selected) stays in
the main pass.
"""
import json
import os
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: main_pass_tests.py MAIN_BUILD SANITIZER_TESTLOG_JSON")
    build, log = sys.argv[1:]
    ran = set()
    if os.path.exists(log):
        for line in open(log):
            # "strata:mpi / test_all_reduce-np3" or "strata:trace+mpi / trace-calls-np2"
            suites, _, name = json.loads(line)["name"].partition(" / ")
            suites = set(suites.split(":")[-1].split("+"))
            if "mpi" in suites and not suites & {"unit", "build"}:
                ran.add(name)
    tests = json.loads(subprocess.check_output(["meson", "introspect", build, "--tests"]))
    # Once each: `meson test NAME` runs every test of that name (test_facades-np2
    # is in the packing and the python suite), so a repeated name runs them twice.
    printed = set()
    for test in tests:
        if test["name"] not in ran and test["name"] not in printed:
            printed.add(test["name"])
            print(test["name"])


if __name__ == "__main__":
    main()
