"""strata's all_reduce from Python next to mpi4py's Allreduce, in the same
run, on the same numpy float32 arrays (sum, in place). For each size it
alternates the two, times every call as the slowest rank's time (a barrier
before each call, the max over ranks after), and prints medians.

    PYTHONPATH=build/python mpirun -np 2 /usr/bin/python3 python/examples/bench_allreduce.py [iterations]
"""
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import strata

WORLD = MPI.COMM_WORLD
SIZES = [8, 4096, 1 << 20, 64 << 20]  # bytes


def timed(call):
    WORLD.Barrier()
    start = time.perf_counter()
    call()
    mine = time.perf_counter() - start
    return WORLD.allreduce(mine, op=MPI.MAX)


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    comm = strata.Communicator(WORLD)
    if WORLD.rank == 0:
        print(f"{WORLD.size} ranks, float32 sum in place, median of {iterations} calls (slowest rank per call)")
        print(f"{'bytes':>10} {'strata (us)':>12} {'mpi4py (us)':>12} {'mpi4py/strata':>14}  strata algorithm")
    for nbytes in SIZES:
        x = np.ones(nbytes // 4, np.float32)
        runs = {"strata": [], "mpi4py": []}
        for i in range(iterations + 3):  # the first 3 of each are warm-up
            a = timed(lambda: comm.all_reduce(x))
            b = timed(lambda: WORLD.Allreduce(MPI.IN_PLACE, x))
            if i >= 3:
                runs["strata"].append(a)
                runs["mpi4py"].append(b)
        s, m = (statistics.median(runs[k]) * 1e6 for k in ("strata", "mpi4py"))
        if WORLD.rank == 0:
            print(f"{nbytes:>10} {s:>12.1f} {m:>12.1f} {m / s:>14.2f}  {comm.algorithm_for(nbytes)}")
    comm.close()


if __name__ == "__main__":
    main()
