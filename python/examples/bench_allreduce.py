"""strata's all_reduce from Python next to mpi4py's Allreduce, in the same
run, on the same numpy float32 arrays (sum, in place). For each size it
alternates the two; a sample is `calls` consecutive calls after a barrier
(many for small sizes, so that the timer's resolution does not matter),
timed on every rank and reduced to the slowest rank; it prints the median
sample divided by `calls`. At 1 rank the 8 B row is the Python binding's
per-call cost.

    PYTHONPATH=build/python mpirun -np 2 /usr/bin/python3 python/examples/bench_allreduce.py [samples]
"""
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import strata

WORLD = MPI.COMM_WORLD
SIZES = [8, 4096, 1 << 20, 64 << 20]  # bytes


def per_call(call, calls):
    WORLD.Barrier()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    mine = (time.perf_counter() - start) / calls
    return WORLD.allreduce(mine, op=MPI.MAX)


def main():
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    comm = strata.Communicator(WORLD)
    if WORLD.rank == 0:
        print(f"{WORLD.size} ranks, float32 sum in place, median of {samples} samples (slowest rank per sample)")
        print(f"{'bytes':>10} {'calls':>6} {'strata (us)':>12} {'mpi4py (us)':>12} {'mpi4py/strata':>14}  strata algorithm")
    for nbytes in SIZES:
        x = np.ones(nbytes // 4, np.float32)
        calls = max(1, min(1000, (256 << 10) // nbytes))
        runs = {"strata": [], "mpi4py": []}
        for i in range(samples + 3):  # the first 3 of each are warm-up
            a = per_call(lambda: comm.all_reduce(x), calls)
            b = per_call(lambda: WORLD.Allreduce(MPI.IN_PLACE, x), calls)
            if i >= 3:
                runs["strata"].append(a)
                runs["mpi4py"].append(b)
        s, m = (statistics.median(runs[k]) * 1e6 for k in ("strata", "mpi4py"))
        if WORLD.rank == 0:
            print(f"{nbytes:>10} {calls:>6} {s:>12.2f} {m:>12.2f} {m / s:>14.2f}  {comm.algorithm_for(nbytes)}")
    comm.close()


if __name__ == "__main__":
    main()
