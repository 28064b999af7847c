#!/usr/bin/env python3
"""MPICH's tests beyond the collectives against this MPI, plain and with
the interposer: programs that make communicators, attributes, error
handlers, topologies, point-to-point traffic, datatypes and windows, and
reach the interposer through the harness's own MPI_Reduce and waits, or
their own collectives.

  scripts/mpich_suite.py build MPICH_TEST_MPI WORK [DIR ...]
  scripts/mpich_suite.py run WORK --preload LIB [DIR ...] [--np-extra 2,3] [--timeout 60] [--only a,b]

DIR: directories of MPICH's test/mpi; by default comm attr errhan init
group topo info pt2pt datatype rma. MPICH_TEST_MPI as for mpich_coll.py
(which builds the same harness and runs test/mpi/coll).

build compiles the harness (mpich_coll.py's) and every test each DIR's
testlist names, into WORK/DIR/bin, with the sources and -D flags its
Makefile.am gives; a test that does not compile against this MPI (MPI-4
functions, large counts, MPI-1 names gone) is listed with the reason and
left out. run runs each test at the rank counts its testlist gives and at
--np-extra, plain and then with LD_PRELOAD=LIB, started as mpich_coll.py's, each
bounded by --timeout seconds, and prints every run whose result (exit
status; a line "No Errors") differs, then a summary line; exit status 0
when none differs, 1 otherwise. Left out as this VM cannot run them:
lines that set MPICH's own environment variables, more than 8 ranks,
more than 5 GB of memory or a time limit above 300 s, and `timeout` (it
tests MPICH's launcher) and `sessioncall` (MPI-4 sessions).
"""
import pathlib
import re
import shutil
import subprocess
import sys

from mpich_coll import build_harness, c_flags, command_line, compare, run_choices

DIRS = "comm attr errhan init group topo info pt2pt datatype rma".split()
NOT_HERE = {"timeout", "sessioncall"}


def cases_of(work, part):
    """(name, ranks, args) of each test DIR's testlist lets this VM run."""
    listed = pathlib.Path(work) / part / "testlist.in"
    if not listed.exists():
        listed = listed.with_name("testlist")
    cases = []
    for line in listed.read_text().splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        keys = dict(f.split("=", 1) for f in fields[2:] if "=" in f)
        if ("env" in keys or int(fields[1]) > 8 or float(keys.get("mem", 0)) > 5
                or int(keys.get("timeLimit", 0)) > 300 or fields[0] in NOT_HERE):
            continue
        cases.append((fields[0], int(fields[1]), [f[4:] for f in fields[2:] if f.startswith("arg=")]))
    return cases


def sources(work, part):
    """Makefile.am's sources and -D flags per test of DIR."""
    text = (pathlib.Path(work) / part / "Makefile.am").read_text().replace("\\\n", " ")
    files = {m[1]: [f for f in m[2].split() if f.endswith(".c")]
             for m in re.finditer(r"^(\w+)_SOURCES\s*=\s*(.*)$", text, re.M)}
    defines = {m[1]: [f for f in m[2].split() if f.startswith("-D")]
               for m in re.finditer(r"^(\w+)_CPPFLAGS\s*=\s*(.*)$", text, re.M)}
    return files, defines


def build(src, work, parts):
    src, work = pathlib.Path(src), pathlib.Path(work)
    harness = build_harness(src, work) / "libharness.a"
    built, left = 0, []
    for part in parts:
        shutil.rmtree(work / part, ignore_errors=True)
        shutil.copytree(src / part, work / part)
        out = work / part / "bin"
        out.mkdir()
        files, defines = sources(work, part)
        for name in dict.fromkeys(c[0] for c in cases_of(work, part)):
            cmd = ["mpicc", *c_flags(work), *defines.get(name, []),
                   *[str(work / part / f) for f in files.get(name, [name + ".c"])],
                   "-o", str(out / name), str(harness), "-lm"]
            # MPI-1's MPI_Errhandler_set, which some tests still call.
            if any(subprocess.run(c, capture_output=True).returncode == 0
                   for c in (cmd, cmd[:1] + ["-include", "mpi1_errhandler.h"] + cmd[1:])):
                built += 1
            else:
                left.append(f"{part}/{name}")
    print(f"mpich_suite: built {built} tests; not compiled against this MPI ({len(left)}): {' '.join(left)}")


def run(work, preload, parts, extra_np, timeout, only):
    placed = []
    for part in parts:
        cases = [c for c in cases_of(work, part) if (pathlib.Path(work) / part / "bin" / c[0]).exists()]
        for name in dict.fromkeys(c[0] for c in cases):
            given = {c[1] for c in cases if c[0] == name}
            cases += [(name, np, []) for np in extra_np if np not in given]
        placed += [(pathlib.Path(work) / part, c) for c in cases if not only or c[0] in only]
    return compare(placed, preload, timeout, "mpich_suite")


def main():
    parser, b, r = command_line(__doc__.splitlines()[0], 60)
    b.add_argument("dirs", nargs="*", default=DIRS)
    r.add_argument("dirs", nargs="*", default=DIRS)
    a = parser.parse_args()
    if a.what == "build":
        build(a.src, a.work, a.dirs)
        return 0
    extra, only = run_choices(a)
    return run(a.work, a.preload, a.dirs, extra, a.timeout, only)


if __name__ == "__main__":
    sys.exit(main())
