#!/usr/bin/env python3
"""scripts/bench.sh and strata-bench, as a user runs and stops them.

  check_bench_sh.py SOURCE_ROOT BUILD_DIR CASE

bench.sh runs in a scratch folder that looks like the repository (its
top-level entries linked), so that its results/ is the scratch folder's,
with BENCH_BUILD=BUILD_DIR. Cases:
  help           `bench.sh --help` names BENCH_NP and BENCH_ALGORITHMS and
                 shows strata-bench's flags; exit 0; no results folder.
  np             `bench.sh -np 3` says to use BENCH_NP, in one line; exit 2;
                 no results folder.
  usage          `bench.sh --no-such-flag` (a failing run): exit 2, no
                 results folder.
  run            a tiny run: exit 0, results/bench-*/ holds the JSON, CSV and
                 table, and the verdict states the range over every size.
  ctrl-c         SIGINT to bench.sh's process group (a terminal's Ctrl-C)
                 during the sweep: exit 130, one line saying so, no
                 traceback, no results folder (finished or not).
  sigint-mpirun  SIGINT to bench.sh's mpirun alone: the same.
  bench-mpirun   SIGINT to `mpirun strata-bench -J ... --csv ...`: one
                 line from strata-bench, no -J/--csv file, no temporary
                 file left (mpirun's own exit status, not 0).
  bench-alone    SIGINT to strata-bench run without mpirun: exit 130, one
                 line, no -J/--csv file.
Exit 1 with a line saying what differed.
"""
import os
import re
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(sys.argv[1]).resolve()
BUILD = pathlib.Path(sys.argv[2]).resolve()
CASE = sys.argv[3]
BENCH = BUILD / "apps" / "bench" / "strata-bench"
LAUNCH = BUILD / "strata-launch"  # the build's launcher (scripts/launch.py)


def launcher_name():
    """The name the launcher process runs under (mpirun, mpiexec.mpich, ...)."""
    run = subprocess.run([str(LAUNCH), "--dry-run", "-n", "1", "true"], capture_output=True, text=True)
    return os.path.basename(run.stdout.split()[0]) if run.returncode == 0 and run.stdout.split() else "mpirun"


# Long enough to be interrupted mid-sweep on any machine (minutes).
LONG = ["-b", "8", "-e", "64M", "-n", "1000", "-w", "0"]


def fail(why):
    print(f"FAIL bench.sh {CASE}: {why}")
    sys.exit(1)


def scratch(work):
    for entry in ROOT.iterdir():
        if entry.name not in ("build", "results", ".git"):
            (work / entry.name).symlink_to(entry)


def env():
    return dict(os.environ, BENCH_BUILD=str(BUILD), OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def bench_sh(work, *args):
    return subprocess.run(["bash", str(work / "scripts" / "bench.sh"), *args], cwd=work, env=env(),
                          capture_output=True, text=True, timeout=300)


# A row of strata-bench's table: size, count, ...
ROW = re.compile(r"^\s+\d+\s+\d+\s", re.M)


def started(process, path):
    """Waits until `path` holds the table's first row (strata-bench has
    measured a size, so every rank is inside the sweep and its output files
    are open), at most 120 s."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            fail(f"finished (exit {process.returncode}) before it could be interrupted")
        if path.exists() and ROW.search(path.read_text(errors="replace")):
            return
        time.sleep(0.2)
    fail(f"no row of the table in {path.name} within 120 s")


def interrupted(process, out_path, err_path, line):
    """The exit status, stdout and stderr of an interrupted run, checked."""
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        fail("still running 120 s after the interrupt")
    out, err = out_path.read_text(), err_path.read_text()
    print(f"exit {process.returncode}; stderr:\n{err}")
    if "Traceback" in out + err:
        fail("a Python traceback")
    said = [text for text in err.splitlines() if "interrupted" in text]
    if len(said) != 1 or not said[0].startswith(line):
        fail(f"said {said!r}, not one line '{line}...'")
    return process.returncode


def results(work):
    folder = work / "results"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def interrupt_bench_sh(work, target):
    out_path, err_path = work / "bench.out", work / "bench.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(["bash", str(work / "scripts" / "bench.sh"), *LONG], cwd=work, env=env(),
                                   stdout=out, stderr=err, start_new_session=True)
    started(process, out_path)
    if target == "group":
        os.killpg(process.pid, signal.SIGINT)
    else:
        mpirun = subprocess.run(["pgrep", "-P", str(process.pid), "-x", launcher_name()], capture_output=True,
                                text=True)
        if not mpirun.stdout.split():
            fail(f"no {launcher_name()} under bench.sh")
        os.kill(int(mpirun.stdout.split()[0]), signal.SIGINT)
    status = interrupted(process, out_path, err_path, "bench.sh: interrupted: nothing kept under results/")
    if status != 130:
        fail(f"exit {status}, not 130")
    if results(work):
        fail(f"left {results(work)} in results/")


def interrupt_strata_bench(work, with_mpirun):
    out_path, err_path = work / "bench.out", work / "bench.err"
    files = [work / "out.json", work / "out.csv"]
    command = [str(BENCH), *LONG, "-J", str(files[0]), "--csv", str(files[1])]
    if with_mpirun:
        command = [str(LAUNCH), "-n", "2"] + command
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(command, cwd=work, env=env(), stdout=out, stderr=err, start_new_session=True)
    started(process, out_path)
    os.kill(process.pid, signal.SIGINT)
    status = interrupted(process, out_path, err_path, "strata-bench: interrupted (SIG")
    left = sorted(p.name for p in work.iterdir() if p.name.startswith("out."))
    if left:
        fail(f"left {left}")
    if with_mpirun and status == 0:
        fail("mpirun exited 0")
    if not with_mpirun and status != 130:
        fail(f"exit {status}, not 130")


def main():
    with tempfile.TemporaryDirectory() as scratch_dir:
        work = pathlib.Path(scratch_dir)
        scratch(work)
        if CASE == "help":
            run = bench_sh(work, "--help")
            for want in ("BENCH_NP", "BENCH_ALGORITHMS", "--minbytes", "strata-bench's own flags"):
                if want not in run.stdout:
                    fail(f"--help does not say {want}:\n{run.stdout}")
            if run.returncode != 0:
                fail(f"--help exited {run.returncode}")
        elif CASE == "np":
            run = bench_sh(work, "-np", "3")
            lines = run.stderr.splitlines()
            if run.returncode != 2 or len(lines) != 1 or "BENCH_NP=3" not in lines[0]:
                fail(f"exit {run.returncode}, stderr {lines!r}")
        elif CASE == "usage":
            run = bench_sh(work, "--no-such-flag")
            if run.returncode != 2 or "--no-such-flag" not in run.stderr:
                fail(f"exit {run.returncode}, stderr {run.stderr!r}")
        elif CASE == "run":
            run = bench_sh(work, "-e", "4K", "-n", "1", "-w", "0")
            print(run.stdout[-2000:], run.stderr[-2000:])
            folders = results(work)
            if run.returncode != 0 or len(folders) != 1 or not folders[0].startswith("bench-"):
                fail(f"exit {run.returncode}, results/ holds {folders}")
            kept = sorted(p.name for p in (work / "results" / folders[0]).iterdir())
            for want in ("strata-bench-auto.json", "strata-bench-auto.csv", "strata-bench-auto.txt"):
                if want not in kept:
                    fail(f"no {want} in results/{folders[0]}: {kept}")
            if "verdict: strata (auto) on 2 ranks vs MPI_Allreduce, 10 sizes from 8 B to 4 KiB: from " not in run.stdout:
                fail("the verdict does not state the range over every size")
        elif CASE == "ctrl-c":
            interrupt_bench_sh(work, "group")
        elif CASE == "sigint-mpirun":
            interrupt_bench_sh(work, "mpirun")
        elif CASE in ("bench-mpirun", "bench-alone"):
            interrupt_strata_bench(work, CASE == "bench-mpirun")
        else:
            fail("unknown case")
        if CASE in ("help", "np", "usage") and results(work):
            fail(f"left {results(work)} in results/")
    print(f"ok   bench.sh {CASE}")


main()
