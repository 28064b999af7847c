#!/usr/bin/env python3
"""Measures what the interposer buys an unchanged MPI program: strata-bench's
MPI_Allreduce baseline column (a plain MPI_Allreduce on the bench's own
communicator) timed with libstrata_mpi.so preloaded, where that call runs
through strata, and without it, where it is Open MPI's. One strata-bench
run per size and kind; the two kinds alternate size by size (plain,
preloaded, next size, ...) and the whole sweep repeats --runs times, so that
both kinds see the same machine moments apart; each row is the median over
the runs.

    bench_interposer.py MPIRUN BENCH PRELOAD [--np 2] [--runs 3] [--sizes 8,64k,1M,64M] [--iters 20]
                        [--env VAR=VALUE]...

Not a test (it asserts no timings): a tool for docs/PERFORMANCE.md. It does
fail if any run reports wrong values or lacks its baseline column. strata's
own column (strata::Communicator::all_reduce, unaffected by the preload) is
printed beside it as a reference.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "launch.py")

UNITS = {"": 1, "k": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text):
    suffix = text[-1] if text[-1] in "kMG" else ""
    return int(text[: len(text) - len(suffix)]) * UNITS[suffix]


def one_run(args, preload, size, path):
    # MPIRUN through the launcher layer (scripts/launch.py spells its flags);
    # bound to cores, as Open MPI's mpirun binds 2 ranks unasked.
    command = [sys.executable, str(LAUNCH), "--mpiexec", args.mpirun, "-n", str(args.np), "--bind", "core"]
    for assignment in args.env:
        command += ["--env", assignment]
    if preload:
        command += ["--env", f"LD_PRELOAD={args.preload}"]
    command += [args.bench, "--no-progress", "-b", str(size), "-e", str(size), "-n", str(args.iters), "-w", "2",
                "-c", "1", "--baseline", "mpi", "-J", path]
    print("+", " ".join(command), file=sys.stderr, flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        doc = json.load(f)
    if doc["summary"]["wrong_total"] != 0:
        sys.exit(f"bench_interposer: {doc['summary']['wrong_total']} wrong values in {' '.join(command)}")
    return {row["bytes"]: row for row in doc["rows"]}


def us(value):
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mpirun")
    p.add_argument("bench")
    p.add_argument("preload")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sizes", default="8,64k,1M,64M")
    p.add_argument("--iters", type=int, default=20, help="timed iterations per strata-bench run (-n)")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="set for both kinds of run (mpirun -x), e.g. STRATA_CHECK=off")
    args = p.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    runs = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            rows = {False: {}, True: {}}
            for size in sizes:
                for preload in (False, True):
                    rows[preload].update(one_run(args, preload, size, os.path.join(tmp, f"{i}-{size}-{preload}.json")))
            for preload in (False, True):
                runs[preload].append(rows[preload])

    def median(preload, size, column):
        values = []
        for rows in runs[preload]:
            row = rows.get(size)
            if row is None or "baseline" not in row:
                sys.exit(f"bench_interposer: no row with a baseline at {size} B")
            values.append(row["baseline"]["time_us"] if column == "mpi" else row["time_us"])
        return statistics.median(values)

    print(f"| size | MPI_Allreduce, plain (µs) | MPI_Allreduce, preloaded: through strata (µs) | speedup "
          f"| strata::all_reduce in the same runs, plain / preloaded (µs) |")
    print("|---|---|---|---|---|")
    for size in sizes:
        plain, routed = median(False, size, "mpi"), median(True, size, "mpi")
        own = f"{us(median(False, size, 'strata'))} / {us(median(True, size, 'strata'))}"
        label = next((f"{size // u} {n}" for n, u in (("MiB", 1024**2), ("KiB", 1024)) if size >= u and size % u == 0),
                     f"{size} B")
        print(f"| {label} | {us(plain)} | {us(routed)} | {plain / routed:.2f}x | {own} |")


if __name__ == "__main__":
    main()
