"""sluice.bsp.exec: a Python function as an SPMD program on the threads backend (each process a
thread; the GIL serialises the Python code, so this is for correctness and teaching, not
speed). An all-to-all and a prefix sum equal NumPy's; a put whose bytes another message reads
in the same superstep raises BspError (the Checked backend); a Python exception in one process
reaches the caller.

Needs the package (`pip install ./crates/py`).
"""

import numpy as np
import pytest

sluice = pytest.importorskip("sluice", reason="skipping: install the package: pip install ./crates/py")
import sluice.bsp  # noqa: E402


def alltoall(ctx, data, k):
    s, p = ctx.pid, ctx.nprocs
    send = np.ascontiguousarray(data[s])
    recv = np.full(p * k, -1, dtype=send.dtype)
    slot = ctx.register(recv)
    ctx.sync()  # the registration takes effect
    for t in range(p):
        ctx.put(send[t * k:(t + 1) * k], slot, t, s * k)
    assert (recv == -1).all(), "nothing moves before the sync"
    ctx.sync()
    return recv


@pytest.mark.parametrize("p", [1, 2, 4])
def test_all_to_all_equals_numpy(p):
    k = 5
    data = np.random.default_rng(p).integers(0, 1 << 40, size=(p, p * k))
    got = sluice.bsp.exec(p, alltoall, data, k)
    # Process t receives block t of every process's row, in pid order: a block transpose.
    want = data.reshape(p, p, k).transpose(1, 0, 2).reshape(p, p * k)
    assert len(got) == p
    for t in range(p):
        np.testing.assert_array_equal(got[t], want[t])


def prefix_sum(ctx, x):
    s, p = ctx.pid, ctx.nprocs
    mine = np.array_split(x, p)[s]
    local = np.cumsum(mine)
    totals = np.zeros(p)
    slot = ctx.register(totals)
    ctx.sync()
    total = np.array([local[-1] if len(local) else 0.0])
    for t in range(s + 1, p):
        ctx.put(total, slot, t, s)
    ctx.sync()
    return local + totals[:s].sum()


@pytest.mark.parametrize("p", [1, 3, 4])
def test_prefix_sum_equals_numpy_cumsum(p):
    x = np.random.default_rng(7).integers(0, 100, 1001).astype(np.float64)
    got = np.concatenate(sluice.bsp.exec(p, prefix_sum, x))
    np.testing.assert_array_equal(got, np.cumsum(x))


def get_ring(ctx):
    s, p = ctx.pid, ctx.nprocs
    mine = np.array([s * 10, s * 10 + 1], dtype=np.int32)
    got = np.zeros(2, dtype=np.int32)
    a, b = ctx.register(mine), ctx.register(got)
    ctx.sync()
    ctx.get((s + 1) % p, a, 0, b, 0, 2)
    ctx.sync()
    return got.tolist()


def test_get_reads_the_neighbours_slot():
    assert sluice.bsp.exec(3, get_ring) == [[10, 11], [20, 21], [0, 1]]


def overlap(ctx):
    s = ctx.pid
    a = np.arange(4, dtype=np.int64)
    b = np.zeros(4, dtype=np.int64)
    sa, sb = ctx.register(a), ctx.register(b)
    ctx.sync()
    if s == 0:
        ctx.put(np.array([7, 7], dtype=np.int64), sa, 1, 1)  # writes a[1:3] of process 1
    if s == 2:
        ctx.get(1, sa, 2, sb, 0, 2)  # reads a[2:4] of process 1: overlaps a[2]
    ctx.sync()


def test_a_put_overlapping_a_read_in_one_superstep_raises_bsp_error():
    with pytest.raises(sluice.BspError):
        sluice.bsp.exec(3, overlap)


def disjoint(ctx):
    s = ctx.pid
    a = np.arange(4, dtype=np.int64)
    b = np.zeros(4, dtype=np.int64)
    sa, sb = ctx.register(a), ctx.register(b)
    ctx.sync()
    if s == 0:
        ctx.put(np.array([7], dtype=np.int64), sa, 1, 1)  # a[1] of process 1
    if s == 2:
        ctx.get(1, sa, 2, sb, 0, 2)  # a[2:4] of process 1: no overlap
    ctx.sync()
    return a.tolist(), b.tolist()


def test_the_same_program_without_the_overlap_runs():
    got = sluice.bsp.exec(3, disjoint)
    assert got[1][0] == [0, 7, 2, 3]
    assert got[2][1] == [2, 3, 0, 0]


def fails_on_one(ctx):
    ctx.sync()
    if ctx.pid == 1:
        raise ValueError("process 1 gives up")
    ctx.sync()


def test_an_exception_in_one_process_reaches_the_caller():
    with pytest.raises(ValueError, match="process 1 gives up"):
        sluice.bsp.exec(3, fails_on_one)


def test_bad_arguments_raise_input_error():
    with pytest.raises(sluice.InputError, match="register: the array is not contiguous"):
        sluice.bsp.exec(2, lambda ctx: ctx.register(np.zeros(8)[::2]))
    with pytest.raises(sluice.InputError, match="put: slot 3 is not registered"):
        sluice.bsp.exec(2, lambda ctx: ctx.put(np.zeros(1), 3, 0))
    with pytest.raises(sluice.InputError, match="at least 1"):
        sluice.bsp.exec(0, lambda ctx: None)
