"""Shared by the strata Python tests, which run under mpirun (one pytest per
rank, every rank running the same tests in the same order).

- A watchdog per test, with the MPI test harness's contract
  (tests/mpi/harness_watchdog.hpp): a test still running after
  STRATA_PY_TEST_WATCHDOG_S seconds (default 60) prints "strata-test HANG:
  test '<id>' on rank R exceeded N s", dumps every thread's stack and exits
  124, so a hang fails with a message instead of waiting for meson's
  timeout. A call that holds the GIL keeps that Python timer from running:
  then faulthandler's own thread, a second later, dumps the stacks and
  exits (status 1).
- `comm`: a Communicator over MPI.COMM_WORLD shared by a module's tests (a
  module that needs another defines its own).
- Fail fast: a failing test on one rank would leave the others waiting in the
  next collective, so the failing rank prints its report and aborts the job.
"""
import faulthandler
import os
import sys
import threading

import pytest
from mpi4py import MPI

WATCHDOG_S = float(os.environ.get("STRATA_PY_TEST_WATCHDOG_S", "60"))


def _hang(config, test, rank):
    # pytest holds stderr while a test runs: give it back, so the line shows.
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.suspend_global_capture(in_=False)
    sys.stderr.write(f"strata-test HANG: test '{test}' on rank {rank} exceeded {WATCHDOG_S:g} s\n")
    sys.stderr.flush()
    faulthandler.dump_traceback(all_threads=True)
    sys.stdout.flush()
    os._exit(124)


@pytest.fixture(autouse=True)
def watchdog(request):
    sys.stderr.write("")  # make sure stderr exists before faulthandler needs it
    timer = threading.Timer(WATCHDOG_S, _hang, args=(request.config, request.node.nodeid, MPI.COMM_WORLD.Get_rank()))
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(WATCHDOG_S + 1, exit=True)  # the backstop, GIL or not
    yield
    faulthandler.cancel_dump_traceback_later()
    timer.cancel()


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
