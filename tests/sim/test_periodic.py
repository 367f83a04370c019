"""The fast-forward engine (``engine="periodic"``, :mod:`ptopipe.sim.periodic`) gives exactly
the exact engine's results.

:func:`same` runs a kernel on both engines (checkers off: the only runs it engages on) and
asserts the outputs are bitwise equal, every field of the summary but ``wall_seconds`` is
equal (and so are the per-launch outputs and the prints), and a failing run fails with the
same error class, text, ``where`` and findings - and, where a test says so, that the periodic
run really recorded whole blocks (it did not fall back to simulating everything).

The kernels stream 16x16 tiles for 300-800 iterations (the engine engages after about
100-150) and cover: C2V, V2C and both ways; the three splits; ring depths 2, 4 and 8 and a
SyncPeriod above 1; GM and local rings; both platforms and both protocols; vector ops
between a pop and its store; a matmul chain with an accumulate (an instruction the engine
does not record: it must still be exact); a prologue and an epilogue; a trip count that is
not a multiple of the depth; a loop that changes midway; a tile read from Python inside the
loop; events passed between calls; several launches and blocks.  Then misuse that shows only
late, after the engine engaged: a leak, a deadlock, a GM window out of range, the
instruction budget and a missing TFREE - each with the exact engine's error and line.
"""
import dataclasses

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import PtoPipeError
from ptopipe.isa import *  # noqa: F403
from ptopipe.sim import periodic
from markers import line_of

T = 16
SLOT = T * T * 4
RING_UB = 0x10000            # A5 C2V ring in each AIV's UB (A2A3: the local staging ring)
RING_L1 = 0x40000            # A5 V2C ring in the Cube's L1 (A2A3: the local staging ring)


@pytest.fixture
def engines(monkeypatch):
    """The FastForward engines the runs made (so a test can see that one recorded blocks)."""
    made = []
    init = periodic.FastForward.__init__

    def spy(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(periodic.FastForward, "__init__", spy)
    return made


def _copy(args: dict) -> dict:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


def _run(aic, aiv, args, engine, kw):
    try:
        return ptopipe.run(aic, aiv, _copy(args), checks=False, engine=engine, **kw), None
    except PtoPipeError as e:
        return None, e


def _fields(summary) -> dict:
    d = dataclasses.asdict(summary)
    d.pop("wall_seconds")
    return d


def same(aic, aiv, args, made=None, engaged=True, **kw):
    """Run on both engines and assert the same results (see the module docstring); with
    ``made`` (the :func:`engines` fixture) and ``engaged``, that the periodic run recorded
    at least one whole block.  Returns the exact run's result, or its error."""
    exact, e_err = _run(aic, aiv, args, "exact", kw)
    if made is not None:
        made.clear()
    fast, f_err = _run(aic, aiv, args, "periodic", kw)
    if e_err is not None or f_err is not None:
        assert (type(f_err), str(f_err)) == (type(e_err), str(e_err))
        assert f_err.to_dict() == e_err.to_dict()
        out = e_err
    else:
        assert exact.outputs.keys() == fast.outputs.keys()
        for name in exact.outputs:
            a, b = exact.outputs[name], fast.outputs[name]
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert a.tobytes() == b.tobytes(), f"output {name} differs"
        assert _fields(fast.summary) == _fields(exact.summary)
        assert len(fast.launches) == len(exact.launches)
        for la, lb in zip(exact.launches, fast.launches):
            assert {k: v.tobytes() for k, v in la.items()} == {k: v.tobytes() for k, v in lb.items()}
        assert fast.prints == exact.prints
        out = exact
    if made is not None and engaged:
        assert made, "the periodic engine did not apply to the run"
        assert any(f.blocks_skipped > 0 for f in made), [(f.mode, f.reason) for f in made]
    return out


def rint(rng, shape, lo=-8, hi=9):
    return rng.integers(lo, hi, shape).astype(np.float32)


def _part(split):
    """(rows, cols, element offset of this lane's part in a TxT tile) of a split."""
    sub = get_subblockid()
    if split == TILE_UP_DOWN:
        return T // 2, T, sub * (T // 2) * T
    if split == TILE_LEFT_RIGHT:
        return T, T // 2, sub * (T // 2)
    return T, T, 0


# ============================================================================ C2V streams
# The Cube multiplies tile i of x by w and pushes it; each lane pops its part, combines it
# with its part of y (a binary, a scalar or a unary op), stores it and frees the slot.
def _c2v_pipe(fifo, depth, split, sync):
    peers = (0,) if split == TILE_NO_SPLIT else (0, 1)
    return TPipe(0, DIR_C2V, SLOT, depth, peers=peers, sync_period=sync)(fifo, RING_UB)


def c2v_cube(x, w, fifo, n, depth, split, sync):
    pipe = _c2v_pipe(fifo, depth, split, sync)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    w1 = Tile(TileType.Mat, float32, T, T, addr=SLOT)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    w0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(w1, w)
    TMOV(w0, w1)
    src = GlobalTensor(x.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(x1, src)
        TMOV(x0, x1)
        TMATMUL(acc, x0, w0)
        TPUSH(pipe, acc, split)


VEC_OPS = {"add": lambda o, p, y: TADD(o, p, y), "muls": lambda o, p, y: TMULS(o, p, 3.0),
           "abs": lambda o, p, y: TABS(o, p)}
GOLDEN_OPS = {"add": lambda p, y: p + y, "muls": lambda p, y: p * np.float32(3.0), "abs": lambda p, y: np.abs(p)}


def c2v_vec(y, out, fifo, n, depth, split, sync, op):
    pipe = _c2v_pipe(fifo, depth, split, sync)
    r, c, off = _part(split)
    part = Tile(TileType.Vec, float32, r, c)
    o = Tile(TileType.Vec, float32, r, c, addr=0)
    yt = Tile(TileType.Vec, float32, r, c, addr=0x1000)
    TLOAD(yt, GlobalTensor(y.data() + off, (r, c), (T, 1)))
    dst = GlobalTensor(out.data(), (r, c), (T, 1))
    fn = VEC_OPS[op]
    for i in range(n):
        TPOP(pipe, part, split)
        fn(o, part, yt)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, o)
        TFREE(pipe, split)


def c2v_args(n, depth=4, split=TILE_UP_DOWN, sync=None, op="muls", seed=0):
    rng = np.random.default_rng(seed)
    return dict(x=rint(rng, (n * T, T)), w=rint(rng, (T, T)), y=rint(rng, (T, T)),
                out=np.zeros((n * T, T), np.float32), fifo=gm_buffer(depth * SLOT), n=n, depth=depth,
                split=split, sync=sync, op=op)


def c2v_golden(a):
    prod = (a["x"].reshape(-1, T, T) @ a["w"]).reshape(-1, T)
    return GOLDEN_OPS[a["op"]](prod, np.tile(a["y"], (a["n"], 1)))


def _lanes(split):
    return (c2v_vec, c2v_vec) if split != TILE_NO_SPLIT else (c2v_vec, None)


C2V_CASES = [  # platform, protocol, split, depth, sync_period, op, iterations
    ("a2a3", "spec", TILE_UP_DOWN, 4, None, "muls", 300),
    ("a2a3", "pto-isa", TILE_LEFT_RIGHT, 2, None, "add", 300),
    ("a2a3", "pto-isa", TILE_NO_SPLIT, 8, None, "abs", 300),
    ("a2a3", "pto-isa", TILE_UP_DOWN, 8, 2, "add", 300),
    ("a5", "spec", TILE_NO_SPLIT, 2, None, "add", 300),
    ("a5", "pto-isa", TILE_UP_DOWN, 4, None, "abs", 301),       # 301: not a multiple of the depth
    ("a5", "pto-isa", TILE_NO_SPLIT, 8, 4, "muls", 300),
]


@pytest.mark.parametrize("plat,proto,split,depth,sync,op,n", C2V_CASES)
def test_c2v_streams(engines, plat, proto, split, depth, sync, op, n):
    a = c2v_args(n, depth, split, sync, op)
    res = same(c2v_cube, _lanes(split), a, engines, platform=plat, protocol=proto)
    assert np.array_equal(res.outputs["out"], c2v_golden(a))
