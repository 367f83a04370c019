"""Kernel objects reused across runs in one process (kernel factories, notebooks, in-process
sweeps): Tiles created once, outside any run, and captured by the kernels.  The pipe layer's
caches (push/pop plans on tiles, slot views on channels) belong to the cluster that made
them: every run computes from its own memory."""
import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403

T = 16
N = 5
SLOT = T * T * 4

# created once at import, shared by every run below
ACC = Tile(TileType.Acc, float32, T, T)
XL1 = Tile(TileType.Mat, float32, T, T)
XL0 = Tile(TileType.Left, float32, T, T)
EYE = Tile(TileType.Right, float32, T, T)
# per Vector core (a tile lives in one core's memory)
POPPED = [Tile(TileType.Vec, float32, T // 2, T) for _ in range(2)]   # bound by TPOP (C2V halves)
OUT = [Tile(TileType.Vec, float32, T // 2, T) for _ in range(2)]
VX = [Tile(TileType.Vec, float32, T // 2, T) for _ in range(2)]
MAT = Tile(TileType.Mat, float32, T, T)                # bound by TPOP (V2C)
BL0 = Tile(TileType.Right, float32, T, T)


def _pipe(fifo, d):
    return TPipe(0, d, SLOT, 2)(fifo, 0x10000, 0x20000)


def c2v_cube(x, fifo, eye):
    TASSIGN(ACC, 0)
    TASSIGN(XL1, 0)
    TASSIGN(XL0, 0)
    TASSIGN(EYE, 0)
    TLOAD(XL1, eye)
    TMOV(EYE, XL1)
    pipe = _pipe(fifo, DIR_C2V)
    for i in range(N):
        TLOAD(XL1, GlobalTensor(x.data() + i * T * T, (T, T)))
        TMOV(XL0, XL1)
        TMATMUL(ACC, XL0, EYE)
        TPUSH(pipe, ACC, TILE_UP_DOWN)


def c2v_vec(out, fifo):
    sub = get_subblockid()
    popped, o = POPPED[sub], OUT[sub]
    TASSIGN(o, 0)
    pipe = _pipe(fifo, DIR_C2V)
    for i in range(N):
        TPOP(pipe, popped, TILE_UP_DOWN)
        TADDS(o, popped, 1.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + (i * T + sub * T // 2) * T, (T // 2, T)), o)


def v2c_cube(out, fifo):
    TASSIGN(ACC, 0)
    TASSIGN(XL0, 0)
    TASSIGN(BL0, 0)
    TASSIGN(XL1, 0)
    pipe = _pipe(fifo, DIR_V2C)
    for i in range(N):
        TPOP(pipe, MAT, TILE_UP_DOWN)
        TMOV(XL0, MAT)
        TFREE(pipe)
        TLOAD(XL1, GlobalTensor(out.data(), (T, T)))      # the identity, stashed in out[0]
        TMOV(BL0, XL1)
        TMATMUL(ACC, XL0, BL0)
        TSTORE(GlobalTensor(out.data() + (i + 1) * T * T, (T, T)), ACC)


def v2c_vec(x, fifo):
    sub = get_subblockid()
    vx = VX[sub]
    TASSIGN(vx, 0)
    pipe = _pipe(fifo, DIR_V2C)
    for i in range(N):
        TLOAD(vx, GlobalTensor(x.data() + (i * T + sub * T // 2) * T, (T // 2, T)))
        TPUSH(pipe, vx, TILE_UP_DOWN)


def _run(way, seed, platform, protocol):
    rng = np.random.default_rng(seed)
    x = rng.integers(-9, 10, (N * T, T)).astype(np.float32)
    eye = np.eye(T, dtype=np.float32)
    if way == "C2V":
        args = dict(x=x, eye=eye, out=np.zeros_like(x), fifo=gm_buffer(2 * SLOT))
        res = ptopipe.run(c2v_cube, c2v_vec, args, platform=platform, protocol=protocol)
        return res, res["out"].copy(), x + 1
    out = np.zeros(((N + 1) * T, T), np.float32)
    out[:T] = eye
    args = dict(x=x, out=out, fifo=gm_buffer(2 * SLOT))
    res = ptopipe.run(v2c_cube, v2c_vec, args, platform=platform, protocol=protocol)
    return res, res["out"][T:].copy(), x


def _tiles_are_run_scoped() -> bool:
    """Does a tile give up its binding when its run ends (isa/tile.py)?  The pipe layer's own
    caches are checked below; without that, every reused
    tile would still read the previous run's memory, whatever the pipe does."""
    t = Tile(TileType.Vec, float32, T, T)

    def k():
        TASSIGN(t, 0)
    ptopipe.run(aiv=(k, None))
    return t.addr is None


@pytest.mark.skipif(not _tiles_are_run_scoped(), reason="needs run-scoped Tile bindings (isa/tile.py)")
@pytest.mark.parametrize("way", ["C2V", "V2C"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_same_kernel_objects_run_three_times(way, platform, protocol):
    """Two lanes, UP_DOWN halves, both ways: the push/pop plans (per-lane slot views) and the
    staging bindings of one run never serve the next."""
    results = []
    for seed in (0, 1, 0):
        res, got, want = _run(way, seed, platform, protocol)
        np.testing.assert_array_equal(got, want)
        results.append((got, res.summary.cycles, {n: c["instructions"] for n, c in res.summary.cores.items()}))
    assert np.array_equal(results[0][0], results[2][0]) and results[0][1:] == results[2][1:]
