"""strata.Request: the *_async and *_init methods of strata.Communicator,
with and without the progress thread, against references computed
independently (numpy over every rank's known input): every form's result
and return value; several requests outstanding, waited out of order;
persistent requests rerun on new data; errors from wait() and test() (one
rank's invalid arguments: ValueError there, strata.Mismatch elsewhere);
dropping an active request, closing its communicator; the arrays kept
alive until the request completes and let go afterwards; the GIL released
while test() and wait() block; the progress thread running a request that
nobody waits for."""
import gc
import threading
import time
import weakref

import numpy as np
import pytest
from mpi4py import MPI

import strata
from helpers import WORLD, all_inputs, assert_equal, assert_same_on_every_rank, rank_input, reference

RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
LAST = SIZE - 1


@pytest.fixture(scope="module", params=[False, True], ids=["caller", "progress-thread"])
def comm(request):
    with strata.Communicator(WORLD, progress_thread=request.param) as c:
        yield c


def blocks(count, dtype, op, salt=0):
    """Every rank's whole reduce_scatter input, distinct per rank and block:
    rank r's is rank_input(r + salt, SIZE * count)."""
    return [rank_input(r + salt, SIZE * count, dtype, op) for r in range(SIZE)]


def test_every_form_outstanding_at_once_waited_out_of_order(comm):
    n, block = 4099, 37
    x = rank_input(RANK, n, "float32", "sum")
    out = np.full(n, -1, np.float32)
    r_all = comm.all_reduce_async(x, out=out)
    y = rank_input(RANK + 1, n, "int64", "max")  # in place
    r_inplace = comm.all_reduce_async(y, op="max")
    z = rank_input(RANK + 2, n, "int32", "sum")
    z_out = np.full(n, -1, np.int32) if RANK == LAST else None
    r_reduce = comm.reduce_async(z, LAST, out=z_out)
    b = rank_input(LAST, n, "float64", "sum") if RANK == LAST else np.zeros(n)
    r_bcast = comm.broadcast_async(b, root=LAST)
    s = rank_input(RANK, SIZE * block, "float32", "sum")
    r_scatter = comm.reduce_scatter_async(s)  # out=None: allocated now
    g = rank_input(RANK + 5, block, "uint8", "max")
    r_gather = comm.all_gather_async(g)
    arrays = [rank_input(RANK + 3, 300, "float32", "sum"), rank_input(RANK + 4, 5000, "int64", "sum")]
    r_batch = comm.batch_all_reduce_async(arrays, num_packs=2)
    requests = [r_all, r_inplace, r_reduce, r_bcast, r_scatter, r_gather, r_batch]
    assert all(isinstance(r, strata.Request) and not r.persistent for r in requests)

    # Out of order: the batch first (test loop), then the rest backwards.
    deadline = time.monotonic() + 50
    while not r_batch.test():
        assert time.monotonic() < deadline, "the batch never completed"
    assert r_batch.wait() is arrays
    gathered = r_gather.wait()
    scattered = r_scatter.wait()
    assert r_bcast.wait() is b
    assert r_reduce.wait() is (z_out if RANK == LAST else z)
    assert r_inplace.wait() is y
    assert r_all.wait() is out
    assert all(r.test() and not r.active for r in requests)

    assert_equal(out, reference(all_inputs(n, "float32", "sum"), "float32", "sum"), "all_reduce_async")
    assert_equal(x, rank_input(RANK, n, "float32", "sum"), "all_reduce_async left x alone")
    assert_equal(y, reference([rank_input(r + 1, n, "int64", "max") for r in range(SIZE)], "int64", "max"),
                 "all_reduce_async in place")
    if RANK == LAST:
        assert_equal(z_out, reference([rank_input(r + 2, n, "int32", "sum") for r in range(SIZE)], "int32", "sum"),
                     "reduce_async at the root")
    assert_equal(z, rank_input(RANK + 2, n, "int32", "sum"), "reduce_async left x alone")
    assert_equal(b, rank_input(LAST, n, "float64", "sum"), "broadcast_async")
    whole = reference(blocks(block, "float32", "sum"), "float32", "sum")
    assert_equal(scattered, whole[RANK * block:(RANK + 1) * block], "reduce_scatter_async")
    assert_equal(gathered, np.stack([rank_input(r + 5, block, "uint8", "max") for r in range(SIZE)]),
                 "all_gather_async")
    assert_equal(arrays[0], reference([rank_input(r + 3, 300, "float32", "sum") for r in range(SIZE)], "float32",
                                      "sum"), "batch_all_reduce_async[0]")
    assert_equal(arrays[1], reference([rank_input(r + 4, 5000, "int64", "sum") for r in range(SIZE)], "int64",
                                      "sum"), "batch_all_reduce_async[1]")
    assert_same_on_every_rank(out)


def test_blockwise_async_into_out_and_in_place(comm):
    block = 1001
    s = rank_input(RANK, SIZE * block, "int32", "max")
    out = np.full(block, -1, np.int32)
    r1 = comm.reduce_scatter_async(s, out=out, op="max")
    s2 = rank_input(RANK + 7, SIZE * block, "float64", "sum")
    r2 = comm.reduce_scatter_async(s2, out=s2[RANK * block:(RANK + 1) * block])  # in place
    gathered = np.full((SIZE, block), -1, np.float32)
    gathered[RANK] = rank_input(RANK, block, "float32", "sum")
    r3 = comm.all_gather_async(gathered[RANK], out=gathered)  # in place
    assert r3.wait() is gathered
    assert r1.wait() is out
    r2.wait()
    assert_equal(out, reference(blocks(block, "int32", "max"), "int32", "max")[RANK * block:(RANK + 1) * block],
                 "reduce_scatter_async into out")
    want = reference([rank_input(r + 7, SIZE * block, "float64", "sum") for r in range(SIZE)], "float64", "sum")
    assert_equal(s2[RANK * block:(RANK + 1) * block], want[RANK * block:(RANK + 1) * block],
                 "reduce_scatter_async in place")
    assert_equal(gathered, np.stack([rank_input(r, block, "float32", "sum") for r in range(SIZE)]),
                 "all_gather_async in place")


def test_a_blocking_call_completes_the_requests_before_it(comm):
    xs = [rank_input(RANK + k, 100 + 997 * k, "float64", "sum") for k in range(4)]
    requests = [comm.all_reduce_async(x) for x in xs]
    later = rank_input(RANK, 64, "float32", "sum")
    comm.all_reduce(later)
    for k, x in enumerate(xs):  # already complete, though not yet waited for
        assert_equal(x, reference([rank_input(r + k, 100 + 997 * k, "float64", "sum") for r in range(SIZE)],
                                  "float64", "sum"), f"request {k}")
    assert all(r.test() for r in requests)
    assert_equal(later, reference(all_inputs(64, "float32", "sum"), "float32", "sum"), "the blocking call")


def test_persistent_requests_rerun_on_new_data(comm):
    n, block = 2049, 53
    x = np.zeros(n, np.int64)
    out = np.full(n, -1, np.int64)
    r = comm.all_reduce_init(x, out=out)
    assert r.persistent and not r.active
    assert r.test() and r.wait() is out  # inactive: at once
    for round in range(8):
        x[:] = rank_input(RANK + round, n, "int64", "sum")  # read anew at each start
        r.start()
        assert r.active
        with pytest.raises(ValueError, match="still running"):
            r.start()
        if round % 2:
            assert r.wait() is out
        else:
            while not r.test():
                pass
        assert not r.active
        assert_equal(out, reference([rank_input(q + round, n, "int64", "sum") for q in range(SIZE)], "int64", "sum"),
                     f"round {round}")

    red = np.zeros(n, np.float32)
    red_out = np.full(n, -1, np.float32)
    rr = comm.reduce_init(red, 0, out=red_out, op="min")
    bc = np.zeros(n, np.float64)
    rb = comm.broadcast_init(bc, root=LAST)
    s = np.zeros(SIZE * block, np.float32)
    rs = comm.reduce_scatter_init(s, op="mean")
    g = np.zeros(block, np.int32)
    rg = comm.all_gather_init(g)
    scattered, gathered = rs.wait(), rg.wait()  # the arrays allocated once, by *_init
    for round in range(3):
        red[:] = rank_input(RANK + round, n, "float32", "min")
        bc[:] = rank_input(LAST + round, n, "float64", "sum") if RANK == LAST else -1
        s[:] = rank_input(RANK + round, SIZE * block, "float32", "mean")
        g[:] = rank_input(RANK + 10 * round, block, "int32", "sum")
        for req in (rr, rb, rs, rg):
            req.start()
        assert rg.wait() is gathered and rs.wait() is scattered
        assert rb.wait() is bc and rr.wait() is red_out
        if RANK == 0:
            assert_equal(red_out, reference([rank_input(q + round, n, "float32", "min") for q in range(SIZE)],
                                            "float32", "min"), f"reduce_init round {round}")
        assert_equal(bc, rank_input(LAST + round, n, "float64", "sum"), f"broadcast_init round {round}")
        want = reference([rank_input(q + round, SIZE * block, "float32", "mean") for q in range(SIZE)], "float32",
                         "mean")
        assert_equal(scattered, want[RANK * block:(RANK + 1) * block], f"reduce_scatter_init round {round}")
        assert_equal(gathered, np.stack([rank_input(q + 10 * round, block, "int32", "sum") for q in range(SIZE)]),
                     f"all_gather_init round {round}")

    once = comm.all_reduce_async(np.ones(4))
    with pytest.raises(ValueError, match="persistent"):
        once.start()
    once.wait()


def test_errors_come_from_wait_and_test(comm):
    x = rank_input(RANK, 64, "float32", "sum")
    # Every rank: an invalid root, raised by wait() (not by the call), once.
    r = comm.broadcast_async(x, root=SIZE)
    with pytest.raises(ValueError, match="root"):
        r.wait()
    assert r.wait() is x and r.test()
    # Rejected by the module itself (as the blocking call): at the call.
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.all_reduce_async(np.zeros((4, 4))[:, ::2])
    if SIZE < 2:
        return
    # The last rank's root is invalid: ValueError there, strata.Mismatch elsewhere.
    r = comm.reduce_async(x, root=SIZE if RANK == LAST else 0)
    with pytest.raises(strata.InvalidArgument if RANK == LAST else strata.Mismatch, match="root"):
        r.wait()
    # The last rank's out has another size: from test() this time.
    out = np.zeros(65 if RANK == LAST else 64, np.float32)
    r = comm.all_reduce_async(x, out=out)
    with pytest.raises(strata.InvalidArgument if RANK == LAST else strata.Mismatch):
        while not r.test():
            pass
    assert r.test()  # reported once
    # Still usable.
    y = rank_input(RANK, 100, "int32", "sum")
    comm.all_reduce_async(y).wait()
    assert_equal(y, reference(all_inputs(100, "int32", "sum"), "int32", "sum"), "after the errors")
    assert not comm.broken


def test_a_dropped_request_completes_and_writes_nothing_afterwards(comm):
    n = 100003
    x = rank_input(RANK, n, "float32", "sum")
    out = np.full(n, -1, np.float32)
    comm.all_reduce_async(x, out=out)  # dropped at once
    assert_equal(out, reference(all_inputs(n, "float32", "sum"), "float32", "sum"), "dropped request")
    out[:] = 7
    comm.all_reduce(rank_input(RANK, n, "float32", "sum"))
    assert np.all(out == 7), "a completed request's array was written afterwards"
    # A persistent request dropped while running.
    y = rank_input(RANK, 1000, "int64", "max")
    r = comm.all_reduce_init(y, op="max")
    r.start()
    del r
    assert_equal(y, reference(all_inputs(1000, "int64", "max"), "int64", "max"), "dropped persistent request")


def test_closing_the_communicator_completes_its_requests():
    c = strata.Communicator(WORLD)
    x = rank_input(RANK, 5000, "float64", "sum")
    started = c.all_reduce_async(x)
    bound = c.all_reduce_init(np.zeros(8), np.zeros(8))
    c.close()
    assert_equal(x, reference(all_inputs(5000, "float64", "sum"), "float64", "sum"), "completed by close()")
    assert started.wait() is x
    with pytest.raises(ValueError, match="no longer exists"):
        bound.start()
    with pytest.raises(ValueError, match="closed"):
        c.all_reduce_async(x)


def test_the_request_keeps_its_arrays_alive_until_it_completes(comm):
    n = 70001
    x = rank_input(RANK, n, "float32", "sum")
    out = np.full(n, -1, np.float32)
    wx, wout = weakref.ref(x), weakref.ref(out)
    r = comm.all_reduce_async(x, out=out)
    del x, out
    gc.collect()
    garbage = [np.full(n, 1e9, np.float32) for _ in range(8)]  # would reuse freed memory
    assert wx() is not None and wout() is not None, "the request let its arrays go while running"
    result = r.wait()
    assert result is wout()
    assert_equal(result, reference(all_inputs(n, "float32", "sum"), "float32", "sum"), "kept alive")
    gc.collect()
    assert wx() is None, "the completed request still holds its input"
    del result, r, garbage
    gc.collect()
    assert wout() is None, "nothing should hold the result after the request is gone"

    # A batch: the list and each array, even when the caller empties the list.
    arrays = [rank_input(RANK, 1000, "int32", "sum"), rank_input(RANK + 1, 3000, "float64", "sum")]
    refs = [weakref.ref(a) for a in arrays]
    r = comm.batch_all_reduce_async(arrays)
    first = arrays[0]
    arrays.clear()
    gc.collect()
    assert all(w() is not None for w in refs), "the batch let an array go while running"
    assert r.wait() is arrays
    assert_equal(first, reference(all_inputs(1000, "int32", "sum"), "int32", "sum"), "batch kept alive")
    gc.collect()
    assert refs[1]() is None, "the completed batch still holds its arrays"

    # A persistent request holds its arrays for its whole life.
    y = np.zeros(100, np.float64)
    wy = weakref.ref(y)
    r = comm.all_reduce_init(y)
    del y
    r.start()
    r.wait()
    gc.collect()
    assert wy() is not None, "a persistent request let its array go"
    del r
    gc.collect()
    assert wy() is None


@pytest.mark.skipif(SIZE < 2, reason="needs a rank that arrives late")
def test_wait_and_test_release_the_gil():
    # Without the progress thread test() and wait() run the collective, so
    # they block until the late last rank arrives (1 s); a Python thread
    # must keep running meanwhile.
    with strata.Communicator(WORLD) as c:
        for method in ("wait", "test"):
            x = rank_input(RANK, 1000, "float32", "sum")
            if RANK == LAST:
                time.sleep(1.0)
            r = c.all_reduce_async(x)
            ticks = []
            stop = threading.Event()

            def tick():
                while not stop.is_set():
                    ticks.append(1)
                    time.sleep(0.01)
            t = threading.Thread(target=tick)
            t.start()
            try:
                if method == "wait":
                    r.wait()
                else:
                    while not r.test():
                        pass
            finally:
                stop.set()
                t.join()
            if RANK != LAST:
                assert len(ticks) > 10, f"{method}() held the GIL ({len(ticks)} ticks in ~1 s)"
            assert_equal(x, reference(all_inputs(1000, "float32", "sum"), "float32", "sum"), method)


def test_the_progress_thread_runs_a_request_nobody_waits_for():
    # mpi4py initialises MPI_THREAD_MULTIPLE, where the thread may run every
    # host request (on one node it runs the shared-memory ones in any case).
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
    with strata.Communicator(WORLD, progress_thread=True) as c:
        n = 32768  # 128 KiB: the thread takes requests from 64 KiB
        x = rank_input(RANK, n, "float32", "sum")
        out = np.full(n, -1, np.float32)
        want = reference(all_inputs(n, "float32", "sum"), "float32", "sum")
        r = c.all_reduce_async(x, out=out)
        deadline = time.monotonic() + 30
        while not np.array_equal(out, want) and time.monotonic() < deadline:  # polled, never tested
            time.sleep(0.001)
        assert np.array_equal(out, want), "the progress thread did not run the request"
        assert r.active  # not yet reported complete
        assert r.wait() is out


def test_request_objects(comm):
    with pytest.raises(TypeError):
        strata.Request()
    r = comm.all_reduce_init(np.zeros(3))
    assert repr(r) == "<strata.Request all_reduce_init>"
    r.start()
    assert repr(r) == "<strata.Request all_reduce_init, active>"
    r.wait()
    r = comm.batch_all_reduce_async([np.zeros(3)])
    r.wait()
    assert repr(r) == "<strata.Request batch_all_reduce_async>"
    assert "Request" in strata.__all__
