"""What the interposer's mpi4py programs (collectives.py, blockwise.py)
share, as the MPI harness's core (tests/mpi/harness_core.hpp) gives the C++
programs: a watchdog over the program, one rank's tally of checks against
numpy references, and the report check_interpose.py reads. It makes no MPI
call of its own, so the interposer's logs hold the program's calls only."""
import itertools
import os
import sys
import threading

from mpi4py import MPI
import numpy as np

# The reductions the programs check: MPI's op and numpy's.
OPS = {"sum": (MPI.SUM, np.add), "prod": (MPI.PROD, np.multiply), "min": (MPI.MIN, np.minimum), "max": (MPI.MAX, np.maximum)}

_tags = itertools.count(1)


def next_tag():
    """1, 2, 3, ...: a fresh seed for each call's inputs."""
    return next(_tags)


class ProgramChecks:
    def __init__(self, program, rank, bound_s=120):
        """Starts the watchdog: past STRATA_TEST_WATCHDOG_S seconds (bound_s
        where that is unset) the process prints "strata-test HANG: program
        '<program>' on rank R exceeded N s" and exits 124."""
        self.program, self.rank, self.checks, self.failures = program, rank, 0, []
        try:
            seconds = int(os.environ.get("STRATA_TEST_WATCHDOG_S", ""))
        except ValueError:
            seconds = 0
        seconds = seconds if seconds > 0 else bound_s
        self._watchdog = threading.Timer(seconds, self._hang, args=(seconds,))
        self._watchdog.daemon = True
        self._watchdog.start()

    def _hang(self, seconds):
        sys.stderr.write(f"strata-test HANG: program '{self.program}' on rank {self.rank} exceeded {seconds} s\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(124)

    def check(self, name, got, want):
        """Counts a check: `got` has `want`'s dtype, shape and values (a NaN
        where `want` has one)."""
        self.checks += 1
        got, want = np.asarray(got), np.asarray(want)
        if got.dtype != want.dtype or got.shape != want.shape:
            self.failures.append(f"{name}: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
            return
        same = got == want
        if got.dtype.kind in "fc":
            same |= np.isnan(got) & np.isnan(want)
        if not same.all():
            bad = np.flatnonzero(~same)
            i = bad[0]
            self.failures.append(f"{name}: {bad.size} of {got.size} elements differ, first at [{i}]: "
                                 f"got {got.flat[i]}, want {want.flat[i]}")

    def finish(self):
        """Stops the watchdog and prints, in one write (mpirun forwards each
        rank's output as it comes, and a line written in pieces can
        interleave with another rank's), "<program>: FAIL on rank R: ..."
        per failure and "<program>: rank R: P of N checks passed". Returns
        the exit status: 0 iff every check passed."""
        self._watchdog.cancel()
        report = [f"{self.program}: FAIL on rank {self.rank}: {f}" for f in self.failures]
        report.append(f"{self.program}: rank {self.rank}: {self.checks - len(self.failures)} of {self.checks} checks passed")
        sys.stdout.write("".join(line + "\n" for line in report))
        sys.stdout.flush()
        return 1 if self.failures else 0
