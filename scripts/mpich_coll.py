#!/usr/bin/env python3
"""MPICH's collective tests against this MPI, plain and with the interposer.

  scripts/mpich_coll.py build MPICH_TEST_MPI WORK
  scripts/mpich_coll.py run WORK --preload LIB [--np-extra 2,3] [--timeout 120] [--only a,b]

MPICH_TEST_MPI is the test/mpi directory of an MPICH source tree (public:
pmodels/mpich; from a bare mirror, `git -C MIRROR archive HEAD test/mpi |
tar -x -C DIR` gives DIR/test/mpi). Nothing of MPICH is kept in this
repository.

build copies coll/, util/, include/, dtpools/, f77/coll/ and f08/coll/
into WORK, writes the configuration headers MPICH's configure would (for
Open MPI 4.1 on Linux: MPI-4 persistent collectives as Open MPI's
MPIX_*_init; the MPI-1 MPI_Errhandler_set two tests still call), and
compiles with mpicc the harness and every test below that calls a
collective the interposer replaces or one beside them, and with mpif77
and mpif90 (where found) MPICH's Fortran collective tests, all of
f77/coll (mpif.h) and f08/coll (use mpi_f08). Tests that need MPI-4 large
counts (coll_large, uoplong_large) or GPUs are left out.

run runs each test at the rank counts testlist.in gives (lines that set
MPICH's own environment variables, or more than 16 ranks, left out) and at
--np-extra, plain and then with LD_PRELOAD=LIB given to the ranks, each
started through scripts/launch.py (mpirun on PATH, or STRATA_MPIEXEC's;
ranks may outnumber cores) and bounded by --timeout seconds, and prints a table of every run whose
preloaded result (exit status; a line "No Errors") differs from the
plain one, then a summary line. Exit status 0 when none differs, 1
otherwise.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

LAUNCH = pathlib.Path(__file__).resolve().parent / "launch.py"  # starts ranks under any launcher

# The tests whose calls the interposer replaces (all-reduce, reduce,
# broadcast, reduce_scatter_block, allgather, their non-blocking and
# persistent forms, the completion calls) or that mix them with others.
TESTS = """allred allred2 allred3 allred4 allred5 allred6 allred_derived allred_float allredmany reduce reduce_local
red3 red4 op_coll op_commutative red_scat_block red_scat_block2 redscat redscat2 redscat3 redscatblk3
redscatbkinter redscatinter bcasttest bcastzerotype opband opbor opbxor opland oplor oplxor opmax opmaxloc opmin
opminloc opprod opsum uoplong uop_equal longuser coll2 coll4 coll5 coll6 coll7 coll8 coll9 coll10 coll12 coll13
allgather2 allgather3 allgather_struct allgatherv2 allgatherv3 allgatherv4 iallred nonblocking nonblocking2
nonblocking3 p_allred p_red p_bcast p_bcast2 p_red_scat_block p_allgather icallreduce icreduce icbcast
icallgather""".split()
# bcast (dtpools) runs with testlist.gpu's host-memory arguments.
BCAST = ("bcast", 4, ["-typelist=MPI_INT,MPI_INT:4+MPI_DOUBLE:8", "-counts=1,17,50,100,512,65530", "-seed=100",
                      "-testsizes=2,50", "-evenmemtype=host", "-oddmemtype=host"])

HEADERS = {
    "include/mpitestconf.h": """/* What MPICH's configure would write, for Open MPI 4.1 on x86-64 Linux. */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED
#define USE_STRICT_MPI 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE_FLOAT16 1
#define HAVE_ATOMIC 1
#define HAVE__BOOL 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_STDARG_H 1
#define HAVE_STRING_H 1
#define HAVE_STDLIB_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_IO 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define POINTERINT_t long
#endif
""",
    # MPICH generates this; Open MPI 4.1 has the MPI-4 persistent
    # collectives as its pcollreq extension.
    "include/mtest_mpix.h": "#ifndef MTEST_MPIX_H_INCLUDED\n#define MTEST_MPIX_H_INCLUDED\n#include <mpi-ext.h>\n"
    "#if MPI_VERSION < 4 && defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)\n" + "".join(
        f"#define MPI_{name}_init MPIX_{name}_init\n" for name in (
            "Allreduce", "Reduce", "Bcast", "Allgather", "Allgatherv", "Reduce_scatter_block", "Reduce_scatter",
            "Alltoall", "Alltoallv", "Alltoallw", "Barrier", "Gather", "Gatherv", "Scatter", "Scatterv", "Scan",
            "Exscan")) + "#endif\n#endif\n",
    # Open MPI 4.1 dropped MPI-1's name; opprod and opsum still use it.
    "include/mpi1_errhandler.h": "#include <mpi.h>\n#undef MPI_Errhandler_set\n"
    "#define MPI_Errhandler_set MPI_Comm_set_errhandler\n",
    "dtpools/dtpoolsconf.h": "".join(f"#define HAVE_{name} 1\n" for name in (
        "STDLIB_H", "STRING_H", "LIMITS_H", "STDINT_H", "SYS_TYPES_H", "STRDUP", "MEMSET")),
}
MPI1_NAMES = {"opprod", "opsum"}


# MPICH's Fortran collective tests: (directory, harness, compiler, flags).
# mpif.h's routines have no interfaces; gfortran 10 and later need
# -fallow-argument-mismatch to pass them arrays of several types.
FORTRAN = [("f77/coll", "mtest_f77.f", "mpif77", ["-fallow-argument-mismatch"]),
           ("f08/coll", "mtest_f08.f90", "mpif90", [])]


def sh(cmd, cwd):
    subprocess.run(cmd, cwd=cwd, check=True)


def fortran_tests(work, part):
    """The tests testlist names in WORK/part, in their order."""
    names = []
    for line in (pathlib.Path(work) / part / "testlist").read_text().splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#") and fields[0] not in names:
            names.append(fields[0])
    return names


def build_fortran(src, work, out):
    """Builds MPICH's Fortran collective tests into OUT; the number built."""
    built = 0
    for part, harness, compiler, extra in FORTRAN:
        if shutil.which(compiler) is None:
            print(f"mpich_coll: no {compiler}: {part} not built")
            continue
        shutil.rmtree(work / part, ignore_errors=True)
        shutil.copytree(src / part, work / part)
        flags = ["-O2", "-g", "-w", *extra, f"-J{out}"]
        harness_object = out / (pathlib.Path(harness).stem + ".o")
        sh([compiler, *flags, "-c", str(src / "util" / harness), "-o", str(harness_object)], out)
        for name in fortran_tests(work, part):
            source = next((work / part).glob(f"{name}.f*"))
            sh([compiler, *flags, str(source), str(harness_object), "-o", name], out)
            built += 1
    return built


def c_flags(work):
    """mpicc's flags for a test against WORK's harness."""
    return ["-O2", "-g", "-w", f"-I{work}/include", f"-I{work}/dtpools/include"]


def build_harness(src, work):
    """Copies MPICH's harness (util/, include/, dtpools/) into WORK, writes
    the configuration headers and builds WORK/bin/libharness.a; WORK/bin."""
    src, work = pathlib.Path(src), pathlib.Path(work)
    if not (src / "coll" / "testlist.in").exists():
        sys.exit(f"mpich: {src} is not MPICH's test/mpi (no coll/testlist.in)")
    for part in ("util", "include", "dtpools"):
        shutil.rmtree(work / part, ignore_errors=True)
        shutil.copytree(src / part, work / part)
    for name, text in HEADERS.items():
        (work / name).write_text(text)
    out = work / "bin"
    out.mkdir(parents=True, exist_ok=True)
    harness = [work / "util" / f"{n}.c" for n in ("mtest", "mtest_common", "mtest_single", "dtypes",
                                                   "run_mpitests")] + sorted((work / "dtpools" / "src").glob("*.c"))
    objects = []
    for c in harness:
        o = out / (c.stem + ".o")
        sh(["mpicc", *c_flags(work), "-c", str(c), "-o", str(o)], work)
        objects.append(str(o))
    sh(["ar", "rcs", "libharness.a", *objects], out)
    return out


def build(src, work):
    src, work = pathlib.Path(src), pathlib.Path(work)
    out = build_harness(src, work)
    shutil.rmtree(work / "coll", ignore_errors=True)
    shutil.copytree(src / "coll", work / "coll")
    flags = c_flags(work)
    built = 0
    for name in TESTS + [BCAST[0]]:
        extra = ["-include", "mpi1_errhandler.h"] if name in MPI1_NAMES else []
        sh(["mpicc", *flags, *extra, str(work / "coll" / f"{name}.c"), "-o", name, "libharness.a", "-lm"], out)
        built += 1
    built += build_fortran(src, work, out)
    print(f"mpich_coll: built {built} tests in {out}")


def runs(work, extra_np, only):
    cases = []
    for line in (pathlib.Path(work) / "coll" / "testlist.in").read_text().splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#") or fields[0] not in TESTS:
            continue
        if any(f.startswith("env=") for f in fields) or int(fields[1]) > 16:
            continue
        args = [f[4:] for f in fields[2:] if f.startswith("arg=")]
        cases.append((fields[0], int(fields[1]), args))
    cases.append(BCAST)
    for part, *_ in FORTRAN:
        testlist = pathlib.Path(work) / part / "testlist"
        for line in testlist.read_text().splitlines() if testlist.exists() else []:
            fields = line.split()
            if fields and not fields[0].startswith("#") and (pathlib.Path(work) / "bin" / fields[0]).exists():
                cases.append((fields[0], int(fields[1]), []))
    for name in sorted({c[0] for c in cases}):
        given = {c[1] for c in cases if c[0] == name and not c[2]}
        cases += [(name, np, []) for np in extra_np if np not in given]
    return [c for c in cases if not only or c[0] in only]


def run_one(work, case, preload, timeout):
    name, np, args = case
    # Through the launcher layer: mpirun on PATH, or STRATA_MPIEXEC's.
    cmd = [sys.executable, str(LAUNCH), "--mpiexec", "mpirun", "-n", str(np)]
    if preload:
        cmd += ["--env", f"LD_PRELOAD={preload}"]
    cmd += [f"./{name}", *args]
    start = time.time()
    try:
        p = subprocess.run(cmd, cwd=pathlib.Path(work) / "bin", stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "hung", e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
        # mpirun is gone (SIGKILL); its ranks are not.
        subprocess.run(["pkill", "-KILL", "-f", f"^./{name}( |$)"], check=False)
    return rc, re.search(r"^\s*No Errors\s*$", out, re.M) is not None, time.time() - start, out


def compare(placed, preload, timeout, who):
    """Runs each (work, case) of PLACED plain and preloaded; prints the runs
    whose results differ and a summary line; 1 if any differs, else 0."""
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    preload = str(pathlib.Path(preload).resolve())
    differ, totals = [], [0.0, 0.0]
    for work, case in placed:
        plain = run_one(work, case, None, timeout)
        pre = run_one(work, case, preload, timeout)
        totals[0] += plain[2]
        totals[1] += pre[2]
        if plain[:2] != pre[:2]:
            tail = " / ".join(l.strip() for l in pre[3].splitlines()[-3:])
            differ.append((case, plain, pre, tail))
    print("| test | ranks | arguments | plain (exit, No Errors) | preloaded | preloaded output, last lines |")
    print("|---|---|---|---|---|---|")
    for (name, np, args), plain, pre, tail in differ:
        print(f"| {name} | {np} | {' '.join(args)} | {plain[0]}, {plain[1]} | {pre[0]}, {pre[1]} | {tail[:200]} |")
    print(f"{who}: {len(placed)} runs, {len(differ)} differ; plain {totals[0]:.0f} s, preloaded {totals[1]:.0f} s")
    return 1 if differ else 0


def run(work, preload, extra_np, timeout, only):
    return compare([(work, case) for case in runs(work, extra_np, only)], preload, timeout, "mpich_coll")


def command_line(description, timeout):
    """The build and run sub-commands of this script and mpich_suite.py, with
    the arguments they share: (parser, build's parser, run's parser)."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build")
    b.add_argument("src")
    b.add_argument("work")
    r = sub.add_parser("run")
    r.add_argument("work")
    r.add_argument("--preload", required=True)
    r.add_argument("--np-extra", default="2,3")
    r.add_argument("--timeout", type=float, default=timeout)
    r.add_argument("--only", default="")
    return parser, b, r


def run_choices(a):
    """run's --np-extra and --only, parsed: (extra rank counts, test names)."""
    return [int(x) for x in a.np_extra.split(",") if x], set(filter(None, a.only.split(",")))


def main():
    parser, _, _ = command_line(__doc__.splitlines()[0], 120)
    a = parser.parse_args()
    if a.what == "build":
        build(a.src, a.work)
        return 0
    extra, only = run_choices(a)
    return run(a.work, a.preload, extra, a.timeout, only)


if __name__ == "__main__":
    sys.exit(main())
