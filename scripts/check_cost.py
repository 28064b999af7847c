#!/usr/bin/env python3
"""The cost of the call check, measured: strata with the check on, with it
off (STRATA_CHECK=off) and MPI_Allreduce, side by side.

  scripts/check_cost.py [--bench PATH] [--ranks N] [--runs R] [--size BYTES ...]
  scripts/check_cost.py --paired BUILD_DIR [--ranks N] [--size BYTES ...]

--paired compiles scripts/check_cost/paired.cpp against BUILD_DIR's library
and times, inside one process, a communicator with the check on, one with
it off and MPI_Allreduce in alternating blocks: this VM's speed drifts by
up to 2x between runs, and pairing within a process cancels that drift.

For each size, R rounds of three runs of strata-bench alternate: check on
(strata and its MPI_Allreduce baseline in the same run), check off, and so
on; every figure is strata-bench's own median time per call, and the table
gives the median over the R rounds of each and the cost of the check
(on / off - 1). The ranks are bound to cores (scripts/launch.py --bind core) so the
runs compare like with like. Prints a Markdown table for
docs/PERFORMANCE.md; asserts nothing.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")


def launch(ranks):
    """Starts ranks bound to cores through the launcher layer (mpirun on
    PATH, or STRATA_MPIEXEC's: scripts/launch.py)."""
    return [sys.executable, LAUNCH, "--mpiexec", "mpirun", "-n", str(ranks), "--bind", "core"]


SIZES = {8: (20000, 2000), 65536: (2000, 200), 1 << 20: (300, 30), 64 << 20: (10, 3)}


def run(bench, ranks, size, check, iters, warmup):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        env = dict(os.environ, STRATA_CHECK="on" if check else "off", OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        subprocess.run([*launch(ranks), "--env", "STRATA_CHECK", bench, "-b",
                        str(size), "-e", str(size), "-n", str(iters), "-w", str(warmup), "--baseline", "mpi", "-J",
                        out.name, "--no-progress"],
                       env=env, check=True, capture_output=True, timeout=600)
        row = json.load(open(out.name))["rows"][0]
        assert row["wrong"] == 0, "strata-bench found wrong values"
        return row["time_us"], row["baseline"]["time_us"]


def text(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


PAIRED = {8: (20000, 21), 65536: (1000, 21), 1 << 20: (300, 15), 64 << 20: (20, 7)}


def paired(build, ranks, sizes):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.path.join(tempfile.mkdtemp(), "paired")
    subprocess.run(["mpicxx", "-std=c++20", "-O2", os.path.join(root, "scripts/check_cost/paired.cpp"),
                    "-I" + os.path.join(root, "include"), "-I" + os.path.join(build, "include"),
                    "-L" + os.path.join(build, "lib"), "-lstrata", "-Wl,-rpath," + os.path.join(build, "lib"),
                    "-o", exe], check=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for size in sizes:
        iters, rounds = PAIRED.get(size, (100, 11))
        run = subprocess.run([*launch(ranks), exe, str(iters), str(size // 4),
                              str(rounds)], env=env, check=True, capture_output=True, text=True, timeout=900)
        print(run.stdout.strip(), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paired", metavar="BUILD_DIR")
    parser.add_argument("--bench", default="build/apps/bench/strata-bench")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, action="append")
    args = parser.parse_args()
    sizes = args.size or list(SIZES)
    if args.paired:
        paired(args.paired, args.ranks, sizes)
        return
    print(f"| size | strata, check on (us) | strata, check off (us) | MPI_Allreduce (us) | check costs | "
          f"strata (check on) vs MPI |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        iters, warmup = SIZES.get(size, (100, 10))
        on, off, mpi = [], [], []
        for _ in range(args.runs):
            strata_on, mpi_on = run(args.bench, args.ranks, size, True, iters, warmup)
            strata_off, mpi_off = run(args.bench, args.ranks, size, False, iters, warmup)
            on.append(strata_on)
            off.append(strata_off)
            mpi += [mpi_on, mpi_off]
        m_on, m_off, m_mpi = statistics.median(on), statistics.median(off), statistics.median(mpi)
        print(f"| {text(size)} | {m_on:.3f} | {m_off:.3f} | {m_mpi:.3f} | {100 * (m_on / m_off - 1):+.1f}% | "
              f"{m_mpi / m_on:.2f}x faster |", flush=True)


if __name__ == "__main__":
    main()
