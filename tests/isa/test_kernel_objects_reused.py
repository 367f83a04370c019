"""Kernel objects reused by several runs in one process.

Tiles and GlobalTensors made once, outside the kernel functions (kernel factories,
notebooks, in-process sweeps), must behave in every run exactly as in the first one: no
memory view, push/pop plan or scoreboard time of an earlier run's cluster may leak into a
later run.  Each focused test below fails without the cache it guards being scoped to the
run's cluster.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import (DIR_C2V, GMPtr, GlobalTensor, TADDS, TASSIGN, TFREE, TLOAD, TMATMUL,
                         TMOV, TPipe, TPOP, TPUSH, TSTORE, TSYNC, TILE_NO_SPLIT, Tile, TileType,
                         float32)
from markers import line_of

HERE = os.path.basename(__file__)
TM, K, N = 16, 32, 32
SLOT = TM * N * 4
RING = 0x10000
PLATFORMS = ("a2a3", "a5")
PROTOCOLS = ("spec", "pto-isa")


def make_kernels():
    """A Cube -> AIV0 matmul + 1 kernel whose tiles and output tensor are made once, here."""
    a_l1 = Tile(TileType.Mat, float32, TM, K)
    b_l1 = Tile(TileType.Mat, float32, K, N)
    a_l0 = Tile(TileType.Left, float32, TM, K)
    b_l0 = Tile(TileType.Right, float32, K, N)
    acc = Tile(TileType.Acc, float32, TM, N)
    popped = Tile(TileType.Vec, float32, TM, N)       # bound by TPOP only (slot or staging)
    o_ub = Tile(TileType.Vec, float32, TM, N)
    out_view = GlobalTensor(float32, (TM, N))          # pointed at `out` by each run

    def cube(a, b, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING, 0)
        TASSIGN(a_l1, 0x0)
        TASSIGN(b_l1, 0x4000)
        TASSIGN(a_l0, 0x0)
        TASSIGN(b_l0, 0x0)
        TASSIGN(acc, 0x0)
        TLOAD(a_l1, a)
        TLOAD(b_l1, b)
        TMOV(a_l0, a_l1)
        TMOV(b_l0, b_l1)
        TMATMUL(acc, a_l0, b_l0)
        TPUSH(pipe, acc, TILE_NO_SPLIT)

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING, 0)
        TASSIGN(o_ub, 0x0)
        TPOP(pipe, popped, TILE_NO_SPLIT)
        TADDS(o_ub, popped, 1.0)
        TFREE(pipe)
        out_view.assign(out.data())
        TSTORE(out_view, o_ub)

    return cube, (vector, None), popped


def _args(seed):
    rng = np.random.default_rng(seed)
    return dict(a=rng.integers(-3, 4, (TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((TM, N), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT))


def _holds(res):
    """The issue-clock holds of a traced run, with the flag waited on named."""
    return [(c, kind, s, e, repr(what), loc) for c, kind, s, e, what, loc in res.cluster.waits]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_same_kernel_objects_three_runs_identical_results_and_traces(platform, protocol):
    cube, aiv, _ = make_kernels()
    runs = [ptopipe.run(cube, aiv, _args(0), platform=platform, protocol=protocol, trace=True)
            for _ in range(3)]
    args = _args(0)
    want = args["a"] @ args["b"] + 1
    for r in runs:
        np.testing.assert_array_equal(r["out"], want)
    first = runs[0]
    for r in runs[1:]:
        assert r.summary.cycles == first.summary.cycles
        assert r.cluster.trace == first.cluster.trace
        assert _holds(r) == _holds(first)
        assert ({n: c["instructions"] for n, c in r.summary.cores.items()}
                == {n: c["instructions"] for n, c in first.summary.cores.items()})


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reused_objects_compute_each_runs_own_data(platform, protocol):
    """Different inputs per run: each run returns its own result, never an earlier one's
    (A5 binds the popped tile to a slot of the consumer's UB: a stale view of the first
    cluster's UB returned the first run's data)."""
    cube, aiv, _ = make_kernels()
    for seed in range(3):
        args = _args(seed)
        res = ptopipe.run(cube, aiv, args, platform=platform, protocol=protocol)
        np.testing.assert_array_equal(res["out"], args["a"] @ args["b"] + 1)


def test_reused_tile_scoreboard_starts_at_zero_in_each_run():
    """A tile's ready/read times are cycles of its own run: carried over, they delayed the
    next run's instructions (cycles grew with every run)."""
    t = Tile(TileType.Vec, float32, 8, 8)

    def k():
        TASSIGN(t, 0x0)
        for _ in range(4):
            TADDS(t, t, 1.0)

    cycles = [ptopipe.run(aiv=(k, None)).summary.cycles for _ in range(3)]
    assert cycles[0] == cycles[1] == cycles[2]


def test_reused_global_tensor_writes_the_current_runs_gm():
    """A GlobalTensor made once at a fixed GM address: its cached view of the first run's
    GM made later runs write there (their own output stayed zero)."""
    out_at = GlobalTensor(GMPtr(0x1000, float32), (8, 8))   # `out` is laid out at GM 0x1000
    t = Tile(TileType.Vec, float32, 8, 8)

    def k(x, out):
        TASSIGN(t, 0x0)
        TLOAD(t, x)
        TSTORE(out_at, t)

    for seed in range(3):
        x = np.random.default_rng(seed).random((8, 8)).astype(np.float32)
        res = ptopipe.run(aiv=(k, None), args=dict(out=np.zeros((8, 8), np.float32), x=x))
        np.testing.assert_array_equal(res["out"], x)


def test_popped_tile_reused_on_a_gm_ring_binds_again():
    """a2a3 spec: the first run binds the popped tile to the staging ring; a later run
    must bind it again, not reject it as 'bound on AIV0 but used on AIV0'."""
    cube, aiv, popped = make_kernels()
    for _ in range(2):
        args = _args(1)
        res = ptopipe.run(cube, aiv, args, platform="a2a3", protocol="spec")
        np.testing.assert_array_equal(res["out"], args["a"] @ args["b"] + 1)
    assert popped.addr is None             # released when its run ended


def test_tile_keeps_its_final_data_after_the_run():
    t = Tile(TileType.Vec, float32, 8, 8)

    def k():
        TASSIGN(t, 0x0)
        TADDS(t, t, 2.0)

    ptopipe.run(aiv=(k, None))
    np.testing.assert_array_equal(t.array, np.full((8, 8), 2.0, np.float32))


def test_tile_bound_only_in_an_earlier_run_is_an_error_at_its_use():
    t = Tile(TileType.Vec, float32, 8, 8)

    def binds():
        TASSIGN(t, 0x0)
        TADDS(t, t, 2.0)

    def uses_without_binding():
        TADDS(t, t, 1.0)  # USE

    def reads_without_binding():
        t.array  # READ

    ptopipe.run(aiv=(binds, None))
    for fn, marker in ((uses_without_binding, "USE"), (reads_without_binding, "READ")):
        with pytest.raises(KernelError) as ei:
            ptopipe.run(aiv=(fn, None))
        assert "no address" in ei.value.what
        assert ei.value.where.endswith(f"{HERE}:{line_of(fn, marker)}"), ei.value.where


def test_event_of_an_earlier_run_is_named_as_such():
    kept = []

    def first():
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        kept.append(TADDS(t, t, 1.0))

    def second():
        TSYNC(kept[0])  # SYNC

    ptopipe.run(aiv=(first, None))
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(second, None))
    assert "earlier run" in ei.value.what
    assert ei.value.where.endswith(f"{HERE}:{line_of(second, 'SYNC')}")
