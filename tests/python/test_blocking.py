"""Calls that block: a timeout names the missing rank and breaks the
communicator; collectives release the GIL while they wait. Needs >= 2 ranks.
Each test waits at most a few seconds by construction (timeout_seconds), and
the conftest watchdog bounds anything else."""
import sys
import threading

import numpy as np
import pytest

import strata
from helpers import WORLD, all_inputs, assert_equal, rank_input, reference

RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
ABSENT = 0  # the rank that never calls

pytestmark = pytest.mark.skipif(SIZE < 2, reason="needs at least 2 ranks")


@pytest.mark.parametrize("implementation", ["auto", "ring"])
def test_timeout_names_the_missing_rank_then_the_communicator_is_broken(implementation):
    comm = strata.Communicator(WORLD)
    options = strata.CommunicationOptions(timeout_seconds=1.0, implementation=implementation)
    waiting_for = None
    if RANK != ABSENT:
        x = np.ones(100000, np.float32)
        with pytest.raises(strata.DeadlineExceeded) as info:
            comm.all_reduce(x, options=options)
        assert isinstance(info.value, TimeoutError) and isinstance(info.value, strata.Error)
        waiting_for = info.value.waiting_for
        assert all(0 <= r < SIZE and r != RANK for r in waiting_for), f"waiting_for = {waiting_for}"
        assert comm.broken
        with pytest.raises(strata.PeerFailure):
            comm.all_reduce(x)
    everyone = WORLD.allgather(waiting_for)  # mpi4py's own communicator: still fine
    assert any(w and ABSENT in w for w in everyone), f"no rank names rank {ABSENT}: {everyone}"
    comm.close()


def test_collectives_release_the_gil():
    # Rank 1 starts an all_reduce in a thread; rank 0 joins only after rank
    # 1's main thread -- which needs the GIL -- tells it to. If the blocked
    # call held the GIL, the message could never be sent, and the call would
    # end in DeadlineExceeded after 20 s instead of the right sum.
    comm = strata.Communicator(WORLD)
    options = strata.CommunicationOptions(timeout_seconds=20)
    x = rank_input(RANK, 1000, "float64", "sum")
    if RANK == 1:
        errors = []
        calling = threading.Event()

        def run():
            try:
                calling.set()
                comm.all_reduce(x, options=options)
            except Exception as e:  # reported below, on the main thread
                errors.append(e)

        # With a switch interval longer than the test, the worker keeps the
        # GIL from calling.set() until it blocks: inside all_reduce, if the
        # call releases the GIL. So the main thread runs again only once the
        # worker is inside the call (or never, if the call holds the GIL).
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1000.0)
        try:
            worker = threading.Thread(target=run)
            worker.start()
            assert calling.wait(timeout=30), "the all_reduce thread did not start"
        finally:
            sys.setswitchinterval(interval)
        WORLD.send("join now", dest=0, tag=7)
        worker.join(timeout=30)
        assert not worker.is_alive(), "the all_reduce thread did not finish"
        assert not errors, f"the all_reduce thread raised {errors[0]!r}"
    else:
        if RANK == 0:
            assert WORLD.recv(source=1, tag=7) == "join now"
        comm.all_reduce(x, options=options)
    assert_equal(x, reference(all_inputs(1000, "float64", "sum"), "float64", "sum"), "threaded all_reduce")
    comm.close()
