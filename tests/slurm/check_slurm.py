#!/usr/bin/env python3
"""strata under Slurm: a one-machine cluster (scripts/slurm-local.sh) runs
strata-bench and the README's example with `srun --mpi=pmix`, and every
scripts/slurm/*.sbatch with `sbatch --wait`.

    check_slurm.py SOURCE_ROOT BUILD_DIR

Outer part (as meson runs it): builds the README's example against the
build tree, then runs `slurm-local.sh run` with this file's inner part
(`--inside`), and afterwards checks that the cluster left no process and no
directory behind. Exit 77 (skipped) only where slurm-local.sh says so: not
root, or Slurm cannot be installed. Every step has its own time limit,
well inside meson's, so that a hang fails with a message and the cluster is
still stopped. Results are checked, never timings.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

STEP_TIMEOUT = 60  # seconds for any one srun or sbatch
RANKS_LINE = re.compile(r"^# strata-bench \S+: all_reduce, (\d+) ranks on (\d+) nodes?:", re.M)


def fail(message):
    print(f"check_slurm: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(command, what, **kwargs):
    """Runs command (bounded), echoes its output, fails unless it exits 0;
    returns its stdout (stderr carries strata's warnings, e.g. binding)."""
    print("check_slurm: $", " ".join(command), flush=True)
    try:
        p = subprocess.run(command, capture_output=True, text=True, timeout=STEP_TIMEOUT, **kwargs)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "", e.stderr or "")
        fail(f"{what}: no result after {STEP_TIMEOUT} s")
    print(p.stdout, p.stderr, sep="", flush=True)
    if p.returncode != 0:
        fail(f"{what}: exit status {p.returncode}")
    return p.stdout


def check_bench_json(path, ranks, nodes, what):
    if not os.path.exists(path):
        fail(f"{what}: no JSON at {path}")
    doc = json.load(open(path))
    if doc["ranks"] != ranks or doc["nodes"] != nodes:
        fail(f"{what}: JSON says {doc['ranks']} ranks on {doc['nodes']} nodes, expected {ranks} on {nodes}")
    if not doc["rows"] or not doc["check"]:
        fail(f"{what}: no checked rows in the JSON")
    if doc["summary"]["wrong_total"] != 0:
        fail(f"{what}: {doc['summary']['wrong_total']} wrong values")


def inside(source, build, work):
    """Runs under the local cluster (SLURM_CONF is set)."""
    bench = os.path.join(build, "apps", "bench", "strata-bench")

    # 1. strata-bench, 2 ranks. Two singletons (PMIx not wired up) would each
    # report 1 rank, so "2 ranks" proves the ranks found each other.
    out = run(["srun", "--mpi=pmix", "-n", "2", bench, "-b", "8", "-e", "64k", "-f", "4", "-n", "2", "-w", "1",
               "--baseline", "mpi", "--no-progress", "-J", os.path.join(work, "bench.json")], "srun strata-bench")
    m = RANKS_LINE.search(out)
    if not m or m.groups() != ("2", "1"):
        fail("srun strata-bench: the header does not say '2 ranks on 1 node'")
    check_bench_json(os.path.join(work, "bench.json"), 2, 1, "srun strata-bench")

    # 2. The README's example, 4 ranks. --overcommit: more tasks than this
    # machine may have cores (Slurm gives each task a core unless told; with
    # it, the step gets one CPU and task/affinity binds all 4 ranks there).
    out = run(["srun", "--mpi=pmix", "--overcommit", "-n", "4", os.path.join(work, "hello")], "srun hello")
    if out.strip().splitlines() != ["mean of ranks = 1.5"]:
        fail(f"srun hello: expected exactly 'mean of ranks = 1.5', got {out!r}")

    # 3. Every batch script, with a small sweep: one node, 2 tasks.
    scripts = sorted(glob.glob(os.path.join(source, "scripts", "slurm", "*.sbatch")))
    if not scripts:
        fail("no scripts/slurm/*.sbatch found")
    for script in scripts:
        name = os.path.splitext(os.path.basename(script))[0]
        results = os.path.join(work, name)
        out_file = os.path.join(work, f"{name}.out")
        env = dict(os.environ, STRATA_BUILD=build, RESULTS=results, MINBYTES="8", MAXBYTES="64k")
        out = run(["sbatch", "--wait", "--parsable", "-N", "1", "--ntasks-per-node=2", "-o", out_file, script,
                   "-n", "2", "-w", "1"], f"sbatch {name}", cwd=source, env=env)
        job = out.strip().splitlines()[-1].split(";")[0]
        state = run(["scontrol", "show", "job", job], f"scontrol show job {job}")
        if "JobState=COMPLETED" not in state or "ExitCode=0:0" not in state:
            fail(f"sbatch {name}: job {job} did not complete with exit code 0")
        log = open(out_file).read() if os.path.exists(out_file) else ""
        print(f"check_slurm: {out_file}:\n{log}")
        if f"results in {results}" not in log:
            fail(f"sbatch {name}: its output {out_file} does not end with 'results in {results}'")
        jsons = glob.glob(os.path.join(results, "strata-bench-*.json"))
        if not jsons:
            fail(f"sbatch {name}: no strata-bench-*.json in {results}")
        for path in jsons:
            check_bench_json(path, 2, 1, f"sbatch {name}: {os.path.basename(path)}")
        if not os.path.exists(os.path.join(results, "busbw.png")):
            fail(f"sbatch {name}: no busbw.png in {results} (plot_bench.py)")
    print("check_slurm: OK inside the cluster")


def leftovers(conf):
    """Processes whose environment or command line names our slurm.conf."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if conf.encode() in environ or conf.encode() in cmdline:
            found.append(pid + ": " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def outside(source, build):
    if os.geteuid() != 0:
        print("check_slurm: skipped: the local Slurm cluster needs root")
        return 77
    for tool in ("mpicxx",):
        if not shutil.which(tool):
            fail(f"{tool} not found")
    work = tempfile.mkdtemp(prefix="strata-slurm-test.")
    try:
        # The README's example, built against the build tree (not installed).
        example = os.path.join(source, "docs", "examples", "hello_allreduce.cpp")
        run(["mpicxx", "-std=c++20", example, "-I" + os.path.join(source, "include"),
             "-I" + os.path.join(build, "include"), "-L" + os.path.join(build, "lib"), "-lstrata",
             "-Wl,-rpath," + os.path.join(build, "lib"), "-o", os.path.join(work, "hello")], "mpicxx hello")
        cluster = os.path.join(work, "cluster")
        env = dict(os.environ, STRATA_SLURM_DIR=cluster)
        command = [os.path.join(source, "scripts", "slurm-local.sh"), "run",
                   sys.executable, os.path.abspath(__file__), "--inside", source, build, work]
        print("check_slurm: $", " ".join(command), flush=True)
        # Its own process group, so that on a timeout SIGTERM reaches the
        # step in progress too, and slurm-local.sh's trap then stops the cluster
        # (bash runs a trap only once its foreground command has ended).
        p = subprocess.Popen(command, env=env, start_new_session=True)
        try:
            status = p.wait(timeout=330)  # with the install on a fresh machine
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=60)
            fail("slurm-local.sh run did not finish in time")
        if status == 77:
            print("check_slurm: skipped (slurm-local.sh could not provide a cluster, see above)")
            return 77
        left = leftovers(os.path.join(cluster, "slurm.conf"))
        if left:
            fail("processes of the local cluster still running after slurm-local.sh run:\n" + "\n".join(left))
        if os.path.exists(cluster):
            fail(f"slurm-local.sh run left its directory {cluster}")
        if status != 0:
            fail(f"slurm-local.sh run exited {status}")
        print("check_slurm: OK")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--inside":
        inside(*sys.argv[2:5])
    elif len(sys.argv) == 3:
        sys.exit(outside(*sys.argv[1:3]))
    else:
        fail(__doc__)
