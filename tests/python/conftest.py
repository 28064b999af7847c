"""Shared by the strata Python tests, which run under mpirun (one pytest per
rank, every rank running the same tests in the same order).

- A watchdog per test: a test still running after STRATA_PY_TEST_WATCHDOG_S
  seconds (default 60) dumps every thread's stack and exits, so a hang fails
  with a message instead of waiting for meson's timeout.
- `comm`: a Communicator over MPI.COMM_WORLD shared by a module's tests (a
  module that needs another defines its own).
- Fail fast: a failing test on one rank would leave the others waiting in the
  next collective, so the failing rank prints its report and aborts the job.
"""
import faulthandler
import os
import sys

import pytest
from mpi4py import MPI

WATCHDOG_S = float(os.environ.get("STRATA_PY_TEST_WATCHDOG_S", "60"))


@pytest.fixture(autouse=True)
def watchdog(request):
    sys.stderr.write("")  # make sure stderr exists before faulthandler needs it
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def comm():
    import strata  # the module under test (PYTHONPATH), imported only when a test asks for it

    with strata.Communicator(MPI.COMM_WORLD) as c:
        yield c


def pytest_runtest_logreport(report):
    if report.failed:
        rank = MPI.COMM_WORLD.Get_rank()
        sys.stderr.write(f"\n=== rank {rank}: {report.nodeid} failed ({report.when}) ===\n{report.longreprtext}\n")
        sys.stderr.write(f"=== rank {rank}: aborting the job so that no rank waits for it ===\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
