#!/usr/bin/env python3
"""Instructions per small call: plain Open MPI against the strata interposer.

  scripts/profile/small_call_instructions.py [--calls N] [--preload PATH]

Builds small_calls.c with mpicc, runs it on 2 ranks plain and with
LD_PRELOAD=libstrata_mpi.so, rank 0 under valgrind's callgrind collecting
only inside MPI_Reduce / MPI_Allreduce / MPI_Bcast, and prints per call the
instructions (Ir) of the whole call and, preloaded, of its layers: the
interposer's own part (the whole call less strata's Communicator call: a
call that repeats the last one's arguments skips the decision and finds it
cached), strata's Communicator call, and in it the shared-memory transfer
and its waits. The first call's communicator setup
(interpose::entry_for) is left out. Counts include polling while a rank
waits for its peer; rank 0 runs slowed under valgrind, so its peer is
usually early and the waits are short. Needs valgrind (apt-get install
valgrind). Exit status 0, or 1 when a run failed.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
CALLS = (("MPI_Reduce", "reduce", "strata::host::shm::reduce("),
         ("MPI_Allreduce", "all_reduce", "strata::host::shm::small_all_reduce("),
         ("MPI_Bcast", "broadcast", "strata::host::shm::broadcast("))
WRAPPER = """#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then
  exec valgrind -q --tool=callgrind --callgrind-out-file="$OUT" \
    --toggle-collect=MPI_Reduce --toggle-collect=MPI_Allreduce --toggle-collect=MPI_Bcast \
    --toggle-collect=PMPI_Reduce --toggle-collect=PMPI_Allreduce --toggle-collect=PMPI_Bcast "$@"
fi
exec "$@"
"""


def inclusive(path):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(path)], capture_output=True, text=True,
                         check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?:(.*?) \[", line)
        if m:
            costs.setdefault(m.group(2), int(m.group(1).replace(",", "")))
    return costs


def cost(costs, prefix):
    return next((v for k, v in costs.items() if k.startswith(prefix)), 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--preload", default=str(ROOT / "build" / "lib" / "interpose" / "libstrata_mpi.so"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        program, wrapper = tmp / "small_calls", tmp / "wrap.sh"
        subprocess.run(["mpicc", "-O2", str(ROOT / "scripts" / "profile" / "small_calls.c"), "-o", str(program)],
                       check=True)
        wrapper.write_text(WRAPPER)
        wrapper.chmod(0o755)
        print(f"# 2 ranks, 8 B (2 floats, sum, root 0), {args.calls} calls; instructions per call on rank 0")
        print("| call | plain Open MPI | preloaded | interposer's own part | strata Communicator call | "
              "shared-memory transfer | its waits |")
        print("|---|---|---|---|---|---|---|")
        for which, (name, method, transfer) in enumerate(CALLS):
            runs = {}
            for side in ("plain", "preloaded"):
                out = tmp / f"cg.{side}.{which}"
                command = [sys.executable, str(ROOT / "scripts" / "launch.py"), "--mpiexec", "mpirun", "-n", "2",
                           "--env", f"OUT={out}"]
                if side == "preloaded":
                    command += ["--env", f"LD_PRELOAD={args.preload}"]
                command += [str(wrapper), str(program), str(args.calls), str(which)]
                done = subprocess.run(command, capture_output=True, text=True, timeout=600)
                if done.returncode != 0 or not out.exists():
                    print(done.stdout + done.stderr, file=sys.stderr)
                    print(f"small_call_instructions: {side} {name} failed", file=sys.stderr)
                    return 1
                runs[side] = inclusive(out)
            plain, pre = runs["plain"], runs["preloaded"]
            per = lambda v: f"{v / args.calls:.0f}"
            whole = cost(pre, name) - cost(pre, "strata::interpose::entry_for")
            communicator = cost(pre, f"strata::Communicator::{method}(")
            print(f"| {name} | {per(cost(plain, 'P' + name))} | {per(whole)} | "
                  f"{per(whole - communicator)} | {per(communicator)} | "
                  f"{per(cost(pre, transfer))} | "
                  f"{per(cost(pre, 'void strata::host::shm::steps::wait_for<&(strata::host::ShmSegment::staged'))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
