"""The fast-forward engine (``engine="periodic"``, :mod:`ptopipe.sim.periodic`) gives exactly
the exact engine's results.

:func:`same` runs a kernel on both engines (checkers off: the only runs it engages on) and
asserts the outputs are bitwise equal, every field of the summary but ``wall_seconds`` is
equal (and so are the per-launch outputs and the prints), and a failing run fails with the
same error class, text, ``where`` and findings - and, where a test says so, that the periodic
run really recorded whole blocks (it did not fall back to simulating everything).

The kernels stream 16x16 tiles for 200-800 iterations (the engine engages after a warm-up
and learning, about 100-150) and cover: C2V, V2C and both ways; the three splits; ring depths 2, 4 and 8 and a
SyncPeriod above 1; GM and local rings; both platforms and both protocols; vector ops
between a pop and its store; a matmul chain with an accumulate (an instruction the engine
does not record: it must still be exact); a prologue and an epilogue; a trip count that is
not a multiple of the depth; a loop that changes midway; a tile read from Python inside the
loop; events passed between calls; intra-core events (set_flag / wait_flag, carried across
iterations, pipe_barrier); several launches and blocks.  Then misuse that shows only
late, after the engine engaged: a leak, a deadlock, a GM window out of range, the
instruction budget, a missing TFREE, an event waited for but never set or set but never
waited for - each with the exact engine's error and line.

Then what the kernel's Python does between recorded instructions: a scalar of -0.0 after
0.0, Tile.SetValid, a call from another line, the address flow, the ring's or a popped tile's
state read or switched (pipe.prod.getTileId(), setFreeStatus, Tile.addr / .full) - the exact
results throughout; and kernels it must record: V2C, both ways, a GlobalTensor or an Event
made per call, cores with periods of 2 and 3 tiles, the other recorded instructions.

Then ``pl`` DSL kernels, whose every TPOP pops into a new Tile: C2V and V2C, UP_DOWN and
NO_SPLIT, on both platforms; a tile held across iterations (on A2A3 staged, its ring entry
naming its staging slot) when the recording stops, and a late iteration that uses another
popped tile, skips a TFREE or stores out of range.  Last, random kernels of the fuzz
generator (clean, or with a misuse moved late).
"""
import dataclasses
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fuzz_spec
import ptopipe
import ptopipe.language as pl
from ptopipe.errors import KernelError, LeakError, PtoPipeError
from ptopipe.isa import *  # noqa: F403
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet
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
    """A run's own arguments: arrays copied, lists fresh (a kernel may log into one)."""
    return {k: v.copy() if isinstance(v, np.ndarray) else [] if isinstance(v, list) else v
            for k, v in args.items()}


def _run(aic, aiv, args, engine, kw):
    mine = _copy(args)
    logs = {k: v for k, v in mine.items() if isinstance(v, list)}
    try:
        return ptopipe.run(aic, aiv, mine, engine=engine, **{"checks": False, **kw}), None, logs
    except PtoPipeError as e:
        return None, e, logs


def _fields(summary) -> dict:
    """Every field of a summary but wall_seconds (shallow: a leak's location is a tuple subclass
    dataclasses.asdict cannot rebuild)."""
    return {f.name: getattr(summary, f.name) for f in dataclasses.fields(summary) if f.name != "wall_seconds"}


def same(aic, aiv, args, made=None, engaged=True, **kw):
    """Run on both engines (checkers off unless ``checks=True`` is given) and assert the same
    results (see the module docstring; list
    arguments start empty in each run and must end equal: a kernel may log into one); with
    ``made`` (the :func:`engines` fixture) and ``engaged``, that the periodic run recorded
    at least one whole block.  Returns the exact run's result, or its error."""
    exact, e_err, e_logs = _run(aic, aiv, args, "exact", kw)
    if made is not None:
        made.clear()
    fast, f_err, f_logs = _run(aic, aiv, args, "periodic", kw)
    assert f_logs == e_logs, "the kernels logged other values"
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
def _c2v_pipe(fifo, depth, split, sync, peers=None):
    peers = peers or ((0,) if split == TILE_NO_SPLIT else (0, 1))
    return TPipe(0, DIR_C2V, SLOT, depth, peers=peers, sync_period=sync)(fifo, RING_UB)


def c2v_cube(x, w, fifo, n, depth, split, sync, peers=None):
    pipe = _c2v_pipe(fifo, depth, split, sync, peers)
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
    ("a2a3", "spec", TILE_UP_DOWN, 4, None, "muls", 250),
    ("a2a3", "pto-isa", TILE_LEFT_RIGHT, 2, None, "add", 250),
    ("a2a3", "pto-isa", TILE_NO_SPLIT, 8, None, "abs", 250),
    ("a2a3", "pto-isa", TILE_UP_DOWN, 8, 2, "add", 250),
    ("a5", "spec", TILE_NO_SPLIT, 2, None, "add", 250),
    ("a5", "pto-isa", TILE_UP_DOWN, 4, None, "abs", 251),       # 251: not a multiple of the depth
    ("a5", "pto-isa", TILE_NO_SPLIT, 8, 4, "muls", 250),
]


@pytest.mark.parametrize("plat,proto,split,depth,sync,op,n", C2V_CASES)
def test_c2v_streams(engines, plat, proto, split, depth, sync, op, n):
    a = c2v_args(n, depth, split, sync, op)
    res = same(c2v_cube, _lanes(split), a, engines, platform=plat, protocol=proto)
    assert np.array_equal(res.outputs["out"], c2v_golden(a))


def holding_vec(out, fifo, n, depth, hold):
    """Pops ``hold`` tiles, each into a Tile of its own (alike: one line, one type), sums
    them, then frees all ``hold`` slots; n // hold groups."""
    pipe = TPipe(0, DIR_C2V, SLOT, depth, hold)(fifo, RING_UB)
    r, c, off = _part(TILE_UP_DOWN)
    ts = [Tile(TileType.Vec, float32, r, c) for _ in range(hold)]
    s = Tile(TileType.Vec, float32, r, c, addr=0)
    for g in range(n // hold):
        for t in ts:
            TPOP(pipe, t, TILE_UP_DOWN)
        TADD(s, ts[0], ts[1])
        for t in ts[2:]:
            TADD(s, s, t)
        for _ in ts:
            TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + g * T * T + off, (r, c), (T, 1)), s)


@pytest.mark.parametrize("plat,proto,depth", [("a2a3", "spec", 4), ("a2a3", "pto-isa", 4), ("a5", "pto-isa", 3)])
def test_deferred_frees_of_tiles_popped_at_one_line(engines, plat, proto, depth):
    """Three pops in a row at one line (a loop of period 9 that makes one call three times,
    not a loop of period 1), each into its own Tile, freed together later: the periodic
    engine records it and its cut restores each tile's pop record - the checkers see no
    re-pop into a held tile, as on the exact engine.  (On A5 under pto-isa the ring has 3
    slots, SyncPeriod 1: with 4 (SyncPeriod 2) the three TFREEs after a group's last TPOP
    would all test its index - pto-isa's free index - and send no credit or three.)"""
    n, hold = 600, 3
    a = c2v_args(n, depth, TILE_UP_DOWN)
    del a["split"], a["sync"], a["op"], a["y"]
    a["hold"] = hold
    res = same(c2v_cube_up_down, holding_vec, a, engines, platform=plat, protocol=proto, checks=True)
    prod = (a["x"].reshape(-1, T, T) @ a["w"]).reshape(n // hold, hold, T, T).sum(axis=1)
    assert np.array_equal(res.outputs["out"][:n // hold * T], prod.reshape(-1, T))
    assert not res.summary.leaks


def c2v_cube_up_down(x, w, fifo, n, depth, hold):
    c2v_cube(x, w, fifo, n, depth, TILE_UP_DOWN, None)


# ============================================================================ V2C streams
# Each lane loads its part of tile i of x, adds 1 and pushes it; the Cube pops the tile,
# multiplies it by w and stores the product.  ``gm``: the ring in GM on A5 too (DIR_V2C_GM).
def _v2c_pipe(fifo, depth, split, gm):
    peers = (0,) if split == TILE_NO_SPLIT else (0, 1)
    d = DIR_V2C_GM if gm and platform_id() == PLATFORM_A5 else DIR_V2C
    return TPipe(1, d, SLOT, depth, peers=peers)(fifo, 0, RING_L1)


def v2c_cube(w, out, fifo, n, depth, split, gm):
    pipe = _v2c_pipe(fifo, depth, split, gm)
    xt = Tile(TileType.Mat, float32, T, T)
    w1 = Tile(TileType.Mat, float32, T, T, addr=0)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    w0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(w1, w)
    TMOV(w0, w1)
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        TPOP(pipe, xt, split)
        TMOV(x0, xt)
        TFREE(pipe, split)
        TMATMUL(acc, x0, w0)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, acc)


def v2c_vec(x, fifo, n, depth, split, gm):
    pipe = _v2c_pipe(fifo, depth, split, gm)
    r, c, off = _part(split)
    t = Tile(TileType.Vec, float32, r, c, addr=0)
    s = Tile(TileType.Vec, float32, r, c, addr=0x1000)
    src = GlobalTensor(x.data(), (r, c), (T, 1))
    for i in range(n):
        src.assign(x.data() + i * T * T + off)
        TLOAD(t, src)
        TADDS(s, t, 1.0)
        TPUSH(pipe, s, split)


V2C_CASES = [  # platform, protocol, split, depth, GM ring on A5, iterations
    ("a2a3", "pto-isa", TILE_NO_SPLIT, 2, False, 250),      # a2a3/spec UP_DOWN: test_v2c_stream_engages
    ("a5", "spec", TILE_LEFT_RIGHT, 8, False, 250),
    ("a5", "spec", TILE_UP_DOWN, 4, True, 251),
]


@pytest.mark.parametrize("plat,proto,split,depth,gm,n", V2C_CASES)
def test_v2c_streams(engines, plat, proto, split, depth, gm, n):
    rng = np.random.default_rng(1)
    a = dict(x=rint(rng, (n * T, T)), w=rint(rng, (T, T)), out=np.zeros((n * T, T), np.float32),
             fifo=gm_buffer(depth * SLOT), n=n, depth=depth, split=split, gm=gm)
    lanes = (v2c_vec, v2c_vec) if split != TILE_NO_SPLIT else (v2c_vec, None)
    res = same(v2c_cube, lanes, a, engines, engaged=False, platform=plat, protocol=proto)
    want = ((a["x"] + 1).reshape(-1, T, T) @ a["w"]).reshape(-1, T)
    assert np.array_equal(res.outputs["out"], want)


# ============================================================================ both ways
# Seed 003's init API, DIR_BOTH: the lanes push x+1 (V2C) two tiles ahead; the Cube pops it,
# multiplies by w and pushes the product back (C2V); the lanes pop it and subtract y.
def both_cube(w, fifo, n):
    pipe = aic_initialize_pipe(DIR_C2V | DIR_V2C, SLOT, fifo, RING_UB, RING_L1)
    x = Tile(TileType.Mat, float32, T, T)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    w1 = Tile(TileType.Mat, float32, T, T, addr=0)
    w0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(w1, w)
    TMOV(w0, w1)
    for i in range(n):
        TPOP(pipe, x, TILE_UP_DOWN)
        TMOV(x0, x)
        TFREE(pipe, TILE_UP_DOWN)
        TMATMUL(acc, x0, w0)
        TPUSH(pipe, acc, TILE_UP_DOWN)


def both_vec(x, y, out, fifo, n):
    pipe = aiv_initialize_pipe(DIR_C2V | DIR_V2C, SLOT, fifo, RING_UB, RING_L1)
    h = T // 2
    sub = get_subblockid()
    a = Tile(TileType.Vec, float32, h, T, addr=0)
    b = Tile(TileType.Vec, float32, h, T, addr=0x1000)
    yt = Tile(TileType.Vec, float32, h, T, addr=0x2000)
    r = Tile(TileType.Vec, float32, h, T)
    src = GlobalTensor(x.data(), (h, T))
    ysrc = GlobalTensor(y.data(), (h, T))
    dst = GlobalTensor(out.data(), (h, T))
    lag = 2
    for i in range(n + lag):
        if i < n:
            src.assign(x.data() + (i * T + sub * h) * T)
            TLOAD(a, src)
            TADDS(b, a, 1.0)
            TPUSH(pipe, b, TILE_UP_DOWN)
        j = i - lag
        if j >= 0:
            off = (j * T + sub * h) * T
            ysrc.assign(y.data() + off)
            TLOAD(yt, ysrc)
            TPOP(pipe, r, TILE_UP_DOWN)
            TSUB(a, r, yt)
            TFREE(pipe, TILE_UP_DOWN)
            dst.assign(out.data() + off)
            TSTORE(dst, a)


@pytest.mark.parametrize("plat,proto", [("a5", "spec")])      # a2a3/pto-isa: test_both_ways_engages
def test_both_ways(engines, plat, proto):
    n = 250
    rng = np.random.default_rng(2)
    a = dict(x=rint(rng, (n * T, T)), y=rint(rng, (n * T, T)), w=rint(rng, (T, T)),
             out=np.zeros((n * T, T), np.float32), fifo=gm_buffer(8 * SLOT), n=n)
    res = same(both_cube, both_vec, a, engines, engaged=False, platform=plat, protocol=proto)
    want = ((a["x"] + 1).reshape(-1, T, T) @ a["w"]).reshape(-1, T) - a["y"]
    assert np.array_equal(res.outputs["out"], want)


# ============================================================================ variations
# One C2V ring of depth 4 (UP_DOWN) with a plain Cube producer; the lanes vary.
def identity_stream(x, n, push):
    """The Cube's side of the plain streams: tile i of ``x`` times the identity (stored after
    the data) into the Acc tile, then ``push(i, acc)``."""
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    e1 = Tile(TileType.Mat, float32, T, T, addr=SLOT)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(e1, GlobalTensor(x.data() + n * T * T, (T, T)))       # the identity, after the data
    TMOV(e0, e1)
    src = GlobalTensor(x.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(x1, src)
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        push(i, acc)


def plain_cube(x, fifo, n):
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    identity_stream(x, n, lambda i, acc: TPUSH(pipe, acc, TILE_UP_DOWN))


def plain_args(n, seed=3, **more):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rint(rng, (n * T, T)), np.eye(T, dtype=np.float32)])
    return dict(x=x, out=np.zeros((n * T, T), np.float32), fifo=gm_buffer(4 * SLOT), n=n, **more)


def _lane():
    h = T // 2
    sub = get_subblockid()
    return h, sub * h * T


def lane_stream(out, fifo, n, compute, part_for=None):
    """The Vector side of the plain streams: each lane pops its half of tile i (into one Tile,
    or ``part_for(i, o)``'s), ``compute(i, o, part)`` makes the result tile ``o`` of it, which is
    stored to its rows of ``out``, and the slot is freed."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    o = Tile(TileType.Vec, float32, h, T, addr=0)
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(n):
        p = part if part_for is None else part_for(i, o)
        TPOP(pipe, p, TILE_UP_DOWN)
        compute(i, o, p)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, o)
        TFREE(pipe, TILE_UP_DOWN)


def scaled_vec(out, fifo, n, change, scale):
    """Multiplies by ``scale[0]`` up to iteration ``change``, by ``scale[1]`` after it."""
    lane_stream(out, fifo, n, lambda i, o, part: TMULS(o, part, scale[0] if i < change else scale[1]))


@pytest.mark.parametrize("scale", [(3.0, 5.0), (2.0, 2)], ids=["value", "type"])
def test_loop_changes_midway(engines, scale):
    """A scalar that changes after iteration 220 (to another value, or to an int of the same
    value) ends the recording there."""
    a = plain_args(300, change=220, scale=scale)
    res = same(plain_cube, scaled_vec, a, engines)
    x = a["x"][:-T]
    want = np.concatenate([x[:220 * T] * np.float32(scale[0]), x[220 * T:] * np.float32(scale[1])])
    assert np.array_equal(res.outputs["out"], want)


def adding_vec(out, fifo, n, change):
    """Stores plainly up to iteration ``change``, adds into GM (an atomic store) after it."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(n):
        TPOP(pipe, part, TILE_UP_DOWN)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, part, atomic_type=AtomicType.AtomicNone if i < change else AtomicType.AtomicAdd)
        TFREE(pipe, TILE_UP_DOWN)


@pytest.mark.parametrize("change", [0, 230])
def test_store_keywords_change_midway(engines, change):
    """A store's keyword (atomic) from the start is recorded with it; one that changes after
    iteration 230 (on the same line) ends the recording there."""
    a = plain_args(300, change=change)
    a["out"] += 1
    res = same(plain_cube, adding_vec, a, engines)
    x, want = a["x"][:-T], a["out"].copy()
    want[change * T:] += x[change * T:]
    want[:change * T] = x[:change * T]
    assert np.array_equal(res.outputs["out"], want)


def moving_scalar_vec(out, fifo, n, until):
    """Adds i to tile i up to iteration ``until`` (a scalar that moves with the loop: no two
    calls of the line are the same), 1 after it."""
    lane_stream(out, fifo, n, lambda i, o, part: TADDS(o, part, float(i) if i < until else 1.0))


@pytest.mark.parametrize("until", [2000, 600])
def test_a_scalar_moving_with_the_loop_rests_learning(engines, until):
    """A line whose calls are never the same (its scalar is the iteration number) holds no
    period: learning rests - its calls made exactly, at no extra cost - and starts again later,
    so a loop that settles after a while (``until`` = 600) is still recorded."""
    a = plain_args(2000, until=until)
    same(plain_cube, moving_scalar_vec, a, engines, engaged=until < 2000)
    assert "never makes the same call twice" in engines[0].rested
    if until == 2000:
        assert engines[0].blocks_skipped == 0 and engines[0].reason == engines[0].rested


def summing_vec(y, out, total, fifo, n):
    """Prologue: load y.  Loop: out_i = part_i + y, total += part_i.  Epilogue: store total."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    yt = Tile(TileType.Vec, float32, h, T, addr=0)
    o = Tile(TileType.Vec, float32, h, T, addr=0x1000)
    s = Tile(TileType.Vec, float32, h, T, addr=0x2000)
    TLOAD(yt, GlobalTensor(y.data() + off, (h, T)))
    TSUB(s, yt, yt)
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(n):
        TPOP(pipe, part, TILE_UP_DOWN)
        TADD(o, part, yt)
        TADD(s, s, part)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, o)
        TFREE(pipe, TILE_UP_DOWN)
    TMULS(s, s, 0.5)
    TSTORE(GlobalTensor(total.data() + off, (h, T)), s)


def test_prologue_and_epilogue(engines):
    n = 303                   # not a multiple of the ring depth (4)
    rng = np.random.default_rng(4)
    a = plain_args(n, y=rint(rng, (T, T)), total=np.zeros((T, T), np.float32))
    res = same(plain_cube, summing_vec, a, engines)
    x = a["x"][:-T]
    assert np.array_equal(res.outputs["out"], x + np.tile(a["y"], (n, 1)))
    assert np.array_equal(res.outputs["total"], x.reshape(n, T, T).sum(axis=0) * np.float32(0.5))


def peeking_vec(out, fifo, n, first, seen):
    """Reads its result tile from Python every 50 iterations from iteration ``first`` on
    (into ``seen``)."""
    def compute(i, o, part):
        TADDS(o, part, 1.0)
        if i >= first and i % 50 == 49:
            seen.append((get_subblockid(), i, o.array.tobytes()))
    lane_stream(out, fifo, n, compute)


@pytest.mark.parametrize("first,n", [(0, 200), (200, 300)])
def test_tile_read_inside_the_loop(engines, first, n):
    """Read from the start, the reads keep the engine learning; read from iteration 200, they
    end its recording (it must have recorded before)."""
    a = plain_args(n, first=first, seen=[])
    res = same(plain_cube, peeking_vec, a, engines, engaged=first > 0)
    assert np.array_equal(res.outputs["out"], a["x"][:-T] + 1)


def event_cube(x, fifo, n):
    """Each instruction waits for the event of the one before it."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    e1 = Tile(TileType.Mat, float32, T, T, addr=SLOT)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    ev = TLOAD(e1, GlobalTensor(x.data() + n * T * T, (T, T)))
    ev = TMOV(e0, e1, ev)
    src = GlobalTensor(x.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        ev = TLOAD(x1, src, ev)
        ev = TMOV(x0, x1, ev)
        ev = TMATMUL(acc, x0, e0, ev)
        ev = TPUSH(pipe, acc, TILE_UP_DOWN, ev)


def test_events_between_calls(engines):
    a = plain_args(200, change=200, scale=(1.0, 1.0))
    res = same(event_cube, scaled_vec, a, engines, engaged=False)
    assert np.array_equal(res.outputs["out"], a["x"][:-T])


def acc_cube(x, w, fifo, n):
    """out_i = x_i[:, :8] @ w[:8] + x_i[:, 8:] @ w[8:]: a TMATMUL then a TMATMUL_ACC."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    k = T // 2
    xa = Tile(TileType.Mat, float32, T, k, addr=0)
    xb = Tile(TileType.Mat, float32, T, k, addr=0x1000)
    wa = Tile(TileType.Mat, float32, k, T, addr=0x2000)
    wb = Tile(TileType.Mat, float32, k, T, addr=0x3000)
    a0 = Tile(TileType.Left, float32, T, k, addr=0)
    b0 = Tile(TileType.Right, float32, k, T, addr=0)
    b1 = Tile(TileType.Right, float32, k, T, addr=0x800)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(wa, GlobalTensor(w.data(), (k, T)))
    TLOAD(wb, GlobalTensor(w.data() + k * T, (k, T)))
    TMOV(b0, wa)
    TMOV(b1, wb)
    sa = GlobalTensor(x.data(), (T, k), (T, 1))
    sb = GlobalTensor(x.data(), (T, k), (T, 1))
    for i in range(n):
        sa.assign(x.data() + i * T * T)
        sb.assign(x.data() + i * T * T + k)
        TLOAD(xa, sa)
        TLOAD(xb, sb)
        TMOV(a0, xa)
        TMATMUL(acc, a0, b0)
        TMOV(a0, xb)
        TMATMUL_ACC(acc, acc, a0, b1)
        TPUSH(pipe, acc, TILE_UP_DOWN)


@pytest.mark.parametrize("plat", ["a2a3", "a5"])
def test_matmul_accumulate(engines, plat):
    n = 300
    rng = np.random.default_rng(5)
    a = dict(x=rint(rng, (n * T, T)), w=rint(rng, (T, T)), out=np.zeros((n * T, T), np.float32),
             fifo=gm_buffer(4 * SLOT), n=n, change=n, scale=(1.0, 1.0))
    res = same(acc_cube, scaled_vec, a, engines, engaged=False, platform=plat, protocol="pto-isa")
    assert np.array_equal(res.outputs["out"], (a["x"].reshape(n, T, T) @ a["w"]).reshape(-1, T))


@pytest.mark.parametrize("launches,blocks", [(3, 1), (1, 2)])
def test_launches_and_blocks(engines, launches, blocks):
    a = c2v_args(220, 4, TILE_UP_DOWN, None, "add", seed=6)
    res = same(c2v_cube, _lanes(TILE_UP_DOWN), a, engines, launches=launches, blocks=blocks)
    assert np.array_equal(res.outputs["out"], c2v_golden(a))
    assert len(engines) == launches * blocks


# ============================================================================ differences once open
def test_negative_zero_scalar(engines):
    a = plain_args(300, change=220, scale=(0.0, -0.0))
    same(plain_cube, scaled_vec, a, engines)


def resized_vec(out, fifo, n, change):
    """Halves the valid rows of its result tiles (Tile.SetValid) for iteration ``change``."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    o = Tile(TileType.Vec, float32, h, T, addr=0)
    s = Tile(TileType.Vec, float32, h, T, addr=0x1000)
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(n):
        TPOP(pipe, part, TILE_UP_DOWN)
        if i == change + 1:
            o.SetValid(h, T)
            s.SetValid(h, T)
        TMULS(o, part, 2.0)
        if i == change:
            o.SetValid(h // 2, T)
            s.SetValid(h // 2, T)
        TADDS(s, o, 1.0)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, s)
        TFREE(pipe, TILE_UP_DOWN)


@pytest.mark.parametrize("change", [250, 299])
def test_valid_region_changed_while_recording(engines, change):
    a = plain_args(300, change=change)
    same(plain_cube, resized_vec, a, engines)


# ============================================================================ late misuse
def careless_vec(out, fifo, n, pops, skip_free):
    """Pops ``pops`` tiles (the Cube pushes ``n``) and forgets the TFREE of iteration
    ``skip_free``; its GM window walks by one tile per pop, whatever ``out`` holds."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    o = Tile(TileType.Vec, float32, h, T, addr=0)
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(pops):
        TPOP(pipe, part, TILE_UP_DOWN)  # late pop
        TADDS(o, part, 1.0)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, o)  # late store
        if i != skip_free:
            TFREE(pipe, TILE_UP_DOWN)


def _late(engines, n=300, pops=300, skip_free=-1, rows=None, **kw):
    a = plain_args(n, pops=pops, skip_free=skip_free)
    if rows is not None:
        a["out"] = np.zeros((rows, T), np.float32)
    return same(plain_cube, careless_vec, a, engines, **kw)


def test_late_leak(engines):
    """One TPOP short at the end: the last tile is never popped."""
    err = _late(engines, pops=299)
    assert isinstance(err, LeakError) and "never popped" in err.what


def test_late_extra_pop(engines):
    err = _late(engines, pops=301)
    assert isinstance(err, ptopipe.DeadlockError)
    assert f"test_periodic.py:{line_of(careless_vec, 'late pop')}" in str(err)


def test_late_window_out_of_range(engines):
    """``out`` is one row short: the last TSTORE's window ends past it."""
    err = _late(engines, rows=300 * T - 1)
    assert isinstance(err, PtoPipeError)
    assert err.where.endswith(f":{line_of(careless_vec, 'late store')}")


@pytest.mark.parametrize("budget", [1234, 1777])
def test_late_instruction_budget(engines, budget):
    """The instruction budget met in the middle of the steady state."""
    err = _late(engines, max_instructions=budget)
    assert isinstance(err, ptopipe.BudgetError)


def test_late_missing_free(engines):
    """The TFREE of iteration 700 is missing: the lanes hold one slot more from then on."""
    err = _late(engines, n=800, pops=800, skip_free=700)
    assert isinstance(err, LeakError) and "799 TFREEs" in err.what


def event_vec(out, fifo, n, style, late):
    """Each lane pops, adds 1 and stores its part; the kernel's own events order its pipes -
    ``"store"``: the store before the TFREE (set_flag / wait_flag MTE3 -> V each tile);
    ``"carried"``: the next pop's add after this store (a V <- MTE3 event set at the end of
    an iteration and waited at the next one's add, primed before the loop and drained
    after it); ``"barrier"``: pipe_barrier(PIPE_ALL) after every store.  Iteration ``late``
    waits for an event no set raised (``"hang"``) or sets one nobody waits for (``"leak"``)."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    o = Tile(TileType.Vec, float32, h, T, addr=0)
    dst = GlobalTensor(out.data(), (h, T))
    if style == "carried":
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
    for i in range(n):
        TPOP(pipe, part, TILE_UP_DOWN)
        if style == "carried":
            wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
        TADDS(o, part, 1.0)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, o)
        if style == "store":
            set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
            wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
        elif style == "carried":
            set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
        else:
            pipe_barrier(PIPE_ALL)
        if i == late[0]:
            if late[1] == "hang":
                wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID2)  # late wait
            else:
                set_flag(PIPE_MTE3, PIPE_V, EVENT_ID3)  # late set
        TFREE(pipe, TILE_UP_DOWN)
    if style == "carried":
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)


@pytest.mark.parametrize("style, plat, checks", [("store", "a5", False), ("store", "a2a3", True),
                                                 ("carried", "a2a3", False), ("carried", "a5", True),
                                                 ("barrier", "a2a3", False), ("barrier", "a5", True)])
def test_intra_core_events_are_recorded(engines, plat, style, checks):
    """set_flag / wait_flag / pipe_barrier are recorded like the instructions: the run skips
    whole blocks and its cycles, stalls and outputs are the exact run's (checkers on or off)."""
    a = plain_args(400, style=style, late=(-1, None))
    res = same(plain_cube, event_vec, a, engines, platform=plat, checks=checks)
    assert np.array_equal(res.outputs["out"], a["x"][:-T] + np.float32(1))


@pytest.mark.parametrize("style", ["store", "carried"])
def test_late_event_misuse(engines, style):
    """A wait no set raised, or a set never waited for, late in the steady state: the exact
    engine's hang / leak, at the line of the wait / the set."""
    err = same(plain_cube, event_vec, plain_args(400, style=style, late=(300, "hang")), engines)
    assert isinstance(err, ptopipe.DeadlockError)
    assert err.where.endswith(f":{line_of(event_vec, 'late wait')}")
    err = same(plain_cube, event_vec, plain_args(400, style=style, late=(300, "leak")), engines)
    assert isinstance(err, LeakError) and f":{line_of(event_vec, 'late set')}" in str(err)


def two_site_cube(x, fifo, n, change):
    """Pushes from one line up to iteration ``change``, from another after it."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    e1 = Tile(TileType.Mat, float32, T, T, addr=SLOT)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(e1, GlobalTensor(x.data() + n * T * T, (T, T)))
    TMOV(e0, e1)
    src = GlobalTensor(x.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(x1, src)
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        if i < change:
            TPUSH(pipe, acc, TILE_UP_DOWN)
        else:
            TPUSH(pipe, acc, TILE_UP_DOWN)  # second site


def test_late_leak_from_another_line(engines):
    a = plain_args(300, pops=299, skip_free=-1, change=220)
    err = same(two_site_cube, careless_vec, a, engines)
    assert err.where.endswith(f":{line_of(two_site_cube, 'second site')}")


def gm_part_vec(out, fifo, n):
    """Address flow on the consumer side: its part of the GM slot as a GlobalTensor."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    half = GlobalTensor(float32, (h, T))
    v = Tile(TileType.Vec, float32, h, T, addr=0)
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(n):
        TPOP(pipe, half, TILE_UP_DOWN)
        TLOAD(v, half)
        TFREE(pipe, half, TILE_UP_DOWN)
        TADDS(v, v, 0.5)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, v)


def test_gm_slot_popped_as_a_tensor(engines):
    """The address flow (a TPOP assigns its GlobalTensor a slot) is made exactly throughout."""
    a = plain_args(400)
    res = same(plain_cube, gm_part_vec, a, engines, engaged=False, platform="a2a3")
    assert "address flow" in engines[0].reason
    assert np.array_equal(res.outputs["out"], a["x"][:-T] + np.float32(0.5))


def tagging_cube(x, fifo, n, tags):
    """Logs the producer's tile id (pipe.prod.getTileId()) before every push."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)

    def push(i, acc):
        tags.append(pipe.prod.getTileId())
        TPUSH(pipe, acc, TILE_UP_DOWN)
    identity_stream(x, n, push)


def test_tile_id_read_while_recording(engines):
    """The ring's state read from Python (pipe.prod.getTileId()) is the exact one."""
    a = plain_args(220, pops=220, skip_free=-1, tags=[])
    same(tagging_cube, careless_vec, a, engines, engaged=False)


def popped_reading_vec(out, fifo, n, seen):
    """Logs where its popped tile is and what it holds (Tile.addr, Tile.full) every iteration."""
    def compute(i, o, part):
        TADDS(o, part, 1.0)
        seen.append((part.addr, part.full.tobytes()))
    lane_stream(out, fifo, n, compute)


def test_popped_tile_read_while_recording(engines):
    """A popped tile's address and bytes read from Python (Tile.addr, Tile.full) are the exact ones."""
    same(plain_cube, popped_reading_vec, plain_args(220, seen=[]), engines, engaged=False, platform="a5")


def addr_reading_vec(out, fifo, n, seen):
    """Logs where its popped tile is (Tile.addr: no memory read) every iteration."""
    def compute(i, o, part):
        TADDS(o, part, 1.0)
        seen.append(part.addr)
    lane_stream(out, fifo, n, compute)


@pytest.mark.parametrize("plat", ["a2a3", "a5"])
def test_popped_tile_address_while_recording(engines, plat):
    """A recorded TPOP binds its tile where the exact one would (the staging slot it
    alternates on A2A3, the ring slot of a zero-copy pop on A5): Tile.addr read from Python
    is the exact one while the engine records."""
    same(plain_cube, addr_reading_vec, plain_args(300, seen=[]), engines, platform=plat)


def withholding_vec(fifo, n):
    """Turns its free notification off before the last TPOP (pipe.cons.setFreeStatus)."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(n):
        if i == n - 1:
            pipe.cons.setFreeStatus(False)
        TPOP(pipe, t)
        TFREE(pipe)


def pushing_cube(fifo, n):
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(n):
        TPUSH(pipe, acc)
    return  # teardown


@pytest.mark.parametrize("proto", ["spec", "pto-isa"])
def test_free_switched_off_while_recording(engines, proto):
    err = same(pushing_cube, (withholding_vec, None), dict(fifo=gm_buffer(4 * SLOT), n=200), engines,
               protocol=proto)
    assert isinstance(err, ptopipe.DeadlockError)
    assert err.where.endswith(f":{line_of(pushing_cube, 'teardown')}")


def counting_vec(ctrl, n, got):
    """Pushes a control word one larger each time (the tile it reads it from: the same calls
    every iteration)."""
    pipe = TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)
    word = Tile(TileType.Vec, int32, 1, 8, addr=0)
    TEXPANDS(word, 100)
    for i in range(n):
        TPUSH(pipe, word)
        TADDS(word, word, 1)


def counted_cube(ctrl, n, got):
    pipe = TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)
    for i in range(n):
        got.append(TPOP(pipe))


def test_control_words_are_not_recorded(engines, monkeypatch):
    """A control pipe's word is memory Python reads (from the pushed tile, from the popped
    slot) and writes to GM itself: not recorded - the exact words popped and left in GM."""
    monkeypatch.setattr(periodic.engine, "WARMUP_CALLS", 8)
    a = dict(ctrl=gm_buffer(4 * 32), n=100, got=[])
    same(counted_cube, (counting_vec, None), a, engines, engaged=False, platform="a5")
    assert "TPUSH of a control pipe at " in engines[-1].reason


# ============================================================================ kernels it engages on
# Common kernels the engine records: V2C, both ways, a tensor or an event per call.
def test_v2c_stream_engages(engines):
    n = 250
    rng = np.random.default_rng(1)
    a = dict(x=rint(rng, (n * T, T)), w=rint(rng, (T, T)), out=np.zeros((n * T, T), np.float32),
             fifo=gm_buffer(4 * SLOT), n=n, depth=4, split=TILE_UP_DOWN, gm=False)
    same(v2c_cube, (v2c_vec, v2c_vec), a, engines)


def test_both_ways_engages(engines):
    n = 300
    rng = np.random.default_rng(2)
    a = dict(x=rint(rng, (n * T, T)), y=rint(rng, (n * T, T)), w=rint(rng, (T, T)),
             out=np.zeros((n * T, T), np.float32), fifo=gm_buffer(8 * SLOT), n=n)
    same(both_cube, both_vec, a, engines, platform="a2a3", protocol="pto-isa")


def fresh_tensor_vec(out, fifo, n, switch=None):
    """Stores through a new GlobalTensor each iteration (the common idiom); with ``switch``, it
    also adds 2 into another tile each iteration and stores that one from iteration ``switch``
    on (a store alike but for its tile)."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    o = Tile(TileType.Vec, float32, h, T, addr=0)
    other = Tile(TileType.Vec, float32, h, T, addr=0x1000)
    for i in range(n):
        TPOP(pipe, part, TILE_UP_DOWN)
        TADDS(o, part, 1.0)
        if switch is not None:
            TADDS(other, part, 2.0)
        TSTORE(GlobalTensor(out.data() + i * T * T + off, (h, T)), other if switch is not None and i >= switch else o)
        TFREE(pipe, TILE_UP_DOWN)


def test_fresh_tensor_per_call_engages(engines):
    a = plain_args(250)
    res = same(plain_cube, fresh_tensor_vec, a, engines)
    assert np.array_equal(res.outputs["out"], a["x"][:-T] + 1)


def test_fresh_tensor_with_another_tile(engines):
    """A call alike but for its GlobalTensor made anew must still have the learned tiles: a
    store of another tile ends the recording."""
    a = plain_args(300, switch=240)
    res = same(plain_cube, fresh_tensor_vec, a, engines)
    want = a["x"][:-T] + 1
    want[240 * T:] += 1
    assert np.array_equal(res.outputs["out"], want)


def test_event_chain_engages(engines):
    a = plain_args(250, change=250, scale=(1.0, 1.0))
    same(event_cube, scaled_vec, a, engines)


def converting_vec(x, out, n):
    """A Vector-only loop of the other recorded instructions: a fill, a product, a conversion
    there and back, an extract, a row reduction."""
    a = Tile(TileType.Vec, float32, T, T, addr=0)
    b = Tile(TileType.Vec, float32, T, T, addr=0x400)
    h = Tile(TileType.Vec, float16, T, T, addr=0x800)
    e = Tile(TileType.Vec, float32, 8, 8, addr=0xC00)
    r = Tile(TileType.Vec, float32, 8, 1, addr=0xD00)
    w = Tile(TileType.Vec, float32, 8, 8, addr=0xE00)
    src = GlobalTensor(x.data(), (T, T))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        TEXPANDS(b, 2.0)
        TMUL(b, a, b)
        TCVT(h, b)
        TCVT(a, h)
        TEXTRACT(e, a, 8, 8)
        TROWSUM(r, e, w)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, a)


@pytest.mark.parametrize("plat", ["a2a3", "a5"])
def test_fills_conversions_extracts_and_reductions(engines, plat):
    n = 300
    x = rint(np.random.default_rng(9), (n * T, T), -50, 50)
    res = same(None, (converting_vec, None), dict(x=x, out=np.zeros_like(x), n=n), engines, platform=plat)
    assert np.array_equal(res.outputs["out"], x * 2)


def _fuzz_kernel(spec: str, tmp_path):
    """The kernel tests/fuzz_render.py makes of a generator's spec (its repr), loaded."""
    import fuzz_kernels
    from fuzz_spec import KernelSpec, PipeSpec
    spec = eval(spec, {"KernelSpec": KernelSpec, "PipeSpec": PipeSpec})   # (a repr of our own dataclasses)
    return fuzz_kernels.load(fuzz_kernels.write_kernel(spec, str(tmp_path)))


# fuzz kernels that showed a difference once (benchmarks/engine_equal.py)
#: two C2V pipes whose cores settle into periods of different lengths in cycles
TWO_RATES = (
    "KernelSpec(platform='a5', protocol='spec', pipes=(PipeSpec(kind='c2v', flow='tile', gm_dir=True, "
    "slot_num=1, local_slot_num=2, flag_id=6, peers=(1,), split_c2v='TILE_NO_SPLIT', "
    "split_v2c='TILE_NO_SPLIT', dtype='f32', M=2, K=32, N=32, tiles=200, lag=0, pre=(), post=(('TABS', "
    "None),), pop_addr=True, slot_extra=0, hold_c=1, hold_v=1, api='tpipe', pad=(2, 0), mixed=False, "
    "sync=0, events=False, alt=False, ksplit=False, out16=False), PipeSpec(kind='c2v', flow='tile', "
    "gm_dir=False, slot_num=1, local_slot_num=3, flag_id=7, peers=(0, 1), split_c2v='TILE_UP_DOWN', "
    "split_v2c='TILE_LEFT_RIGHT', dtype='f16', M=4, K=32, N=32, tiles=200, lag=0, pre=(), post=(), "
    "pop_addr=True, slot_extra=0, hold_c=1, hold_v=1, api='tpipe', pad=(2, 0), mixed=False, sync=0, "
    'events=False, alt=True, ksplit=False, out16=False)), interleave=True, mutation=None, data_seed=215)')
#: a TFREE dropped late: it deadlocks while recording, before a whole block
LATE_DEADLOCK = (
    "KernelSpec(platform='a5', protocol='spec', pipes=(PipeSpec(kind='v2c', flow='tile', gm_dir=False, "
    "slot_num=7, local_slot_num=1, flag_id=0, peers=(0,), split_c2v='TILE_NO_SPLIT', "
    "split_v2c='TILE_NO_SPLIT', dtype='f16', M=16, K=16, N=8, tiles=200, lag=0, pre=(('TMINS', 0),), "
    "post=(), pop_addr=False, slot_extra=0, hold_c=1, hold_v=3, api='tpipe', pad=(2, 0), mixed=False, "
    "sync=0, events=False, alt=False, ksplit=False, out16=True), PipeSpec(kind='c2v', flow='tile', "
    "gm_dir=True, slot_num=1, local_slot_num=4, flag_id=7, peers=(0,), split_c2v='TILE_NO_SPLIT', "
    "split_v2c='TILE_NO_SPLIT', dtype='i8', M=2, K=16, N=16, tiles=200, lag=0, pre=(), post=(('TNEG', "
    "None),), pop_addr=True, slot_extra=32, hold_c=1, hold_v=1, api='tpipe', pad=(1, 0), mixed=False, "
    'sync=0, events=False, alt=True, ksplit=False, out16=False)), interleave=True, '
    "mutation=('drop_tfree', 1, 179), data_seed=0)")
#: a TFREE dropped at the last iteration: the held slot was popped by a TPOP the lane began
#: before the engine planned its snapshots
HELD_POP = (
    "KernelSpec(platform='a5', protocol='spec', pipes=(PipeSpec(kind='v2c', flow='tile', gm_dir=False, "
    "slot_num=2, local_slot_num=1, flag_id=3, peers=(0, 1), split_c2v='TILE_UP_DOWN', "
    "split_v2c='TILE_LEFT_RIGHT', dtype='f32', M=8, K=16, N=8, tiles=200, lag=0, pre=(), post=(), "
    "pop_addr=False, slot_extra=32, hold_c=1, hold_v=1, api='tpipe', pad=(2, 0), mixed=False, sync=0, "
    "events=False, alt=True, ksplit=False, out16=True), PipeSpec(kind='both', flow='tile', gm_dir=True, "
    "slot_num=1, local_slot_num=3, flag_id=5, peers=(0,), split_c2v='TILE_NO_SPLIT', "
    "split_v2c='TILE_NO_SPLIT', dtype='f32', M=2, K=32, N=32, tiles=200, lag=0, pre=(), post=(('TABS', "
    "None),), pop_addr=True, slot_extra=32, hold_c=1, hold_v=1, api='tpipe', pad=(0, 0), mixed=False, "
    'sync=0, events=False, alt=False, ksplit=False, out16=False)), interleave=False, '
    "mutation=('drop_tfree', 1, 198), data_seed=128)")


def test_times_that_drift_apart(tmp_path):
    """Two cores whose steady states have different periods in cycles: every block moves each
    time linearly, but two of them move at different rates and would change order - the
    engine stops recording before they can (recorded past it, a Vector core's busy cycles
    differed)."""
    k = _fuzz_kernel(TWO_RATES, tmp_path)
    same(k.cube, k.vector, k.make_args(np.random.default_rng(k.DATA_SEED)), platform=k.PLATFORM,
         protocol=k.PROTOCOL)


def test_deadlock_before_a_whole_recorded_block(tmp_path):
    """Every core blocks while recording, before a whole block: the exact state has nothing
    recorded to apply (the engine built the next block's data work and failed)."""
    k = _fuzz_kernel(LATE_DEADLOCK, tmp_path)
    err = same(k.cube, k.vector, k.make_args(np.random.default_rng(k.DATA_SEED)), platform=k.PLATFORM,
               protocol=k.PROTOCOL, max_instructions=20000)
    assert isinstance(err, ptopipe.DeadlockError)


# ============================================================================ the C++ ABI's pop
def rebinding_vec(out, fifo, n):
    """Pops as a C++ kernel's TPOP does (the ABI's call: the tile variable bound afresh each
    pop, staged in the next local slot on an A2A3 GM ring), frees before its store."""
    from ptopipe.cpp.abi import Dispatcher
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB, 0)
    h, off = _lane()
    part = Tile(TileType.Vec, float32, h, T)
    o = Tile(TileType.Vec, float32, h, T, addr=0x1000)
    pop = Dispatcher._pop_tile([pipe, part])
    dst = GlobalTensor(out.data(), (h, T))
    for i in range(n):
        pop(pipe, part, TILE_UP_DOWN)
        TADDS(o, part, 1.0)
        TFREE(pipe, TILE_UP_DOWN)
        dst.assign(out.data() + i * T * T + off)
        TSTORE(dst, o)


def test_cpp_abi_pop_rebinding_its_tile(engines):
    """examples/cpp/c2v_bias.cpp's loop (a C++ kernel's TPOP) on A2A3: the exact cycles."""
    a = plain_args(250)
    res = same(plain_cube, rebinding_vec, a, engines, platform="a2a3")
    assert np.array_equal(res.outputs["out"], a["x"][:-T] + 1)


def _tmpipe(fifo):
    """A TMPipe both Vector lanes serve, each popping its half of the rows (V2C1_VECS: pto-isa's
    Cube waits for both lanes' flags of a TMPipe whatever its ratio)."""
    return TMPipe(0, FIFOType.GM_FIFO, 4, 1, Tile(TileType.Acc, float32, T, T),
                  Tile(TileType.Vec, float32, T // 2, T))(fifo, RING_UB)


def tmpipe_cube(x, fifo, n):
    pipe = _tmpipe(fifo)
    identity_stream(x, n, lambda i, acc: TPUSH(pipe, acc, TILE_UP_DOWN))


def tmpipe_abi_vec(out, fifo, n):
    """Pops as a C++ kernel's ``TPOP(tile, pipe)`` of a TMPipe does (the ABI's handler: the
    ISA's TPOP, then the ring's consumer side edited for the pop's own free)."""
    import types
    from ptopipe.cpp.abi import Dispatcher
    abi = types.SimpleNamespace(keep=lambda e: e)
    abi.op_TPOP = lambda core, a: Dispatcher.op_TPOP(abi, core, a)
    pipe = _tmpipe(fifo)
    H = T // 2
    t = Tile(TileType.Vec, float32, H, T)
    o = Tile(TileType.Vec, float32, H, T, addr=0x4000)
    dst = GlobalTensor(out.data(), (H, T))
    half = get_subblockid() * H * T
    for i in range(n):
        Dispatcher.op_TMPOP(abi, None, [pipe, t, TILE_UP_DOWN])
        TADDS(o, t, 1.0)
        dst.assign(out.data() + i * T * T + half)
        TSTORE(dst, o)


@pytest.mark.parametrize("proto", ["spec", "pto-isa"])
def test_cpp_abi_tmpipe_pop_freeing_its_slot(engines, proto):
    a = plain_args(300)
    res = same(tmpipe_cube, tmpipe_abi_vec, a, engines, platform="a2a3", protocol=proto)
    assert np.array_equal(res.outputs["out"], a["x"][:-T] + 1)


def dividing_vec(x, y, out, n):
    """An int32 division per tile (A5: the vector unit divides integers)."""
    a = Tile(TileType.Vec, int32, T, T, addr=0)
    b = Tile(TileType.Vec, int32, T, T, addr=0x400)
    c = Tile(TileType.Vec, int32, T, T, addr=0x800)
    src = GlobalTensor(x.data(), (T, T))
    div = GlobalTensor(y.data(), (T, T))
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        src.assign(x.data() + i * T * T)
        div.assign(y.data() + i * T * T)
        TLOAD(a, src)
        TLOAD(b, div)
        TDIV(c, a, b)
        TADDS(c, c, 1)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, c)


def test_late_data_fault(engines):
    """One divisor element is 0 in tile 280: the numpy work fails where the exact engine applies
    it, with its core and line."""
    n = 300
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, (n * T, T)).astype(np.int32)
    y = rng.integers(1, 40, (n * T, T)).astype(np.int32)
    y[280 * T + 3, 5] = 0
    err = same(None, (dividing_vec, None), dict(x=x, y=y, out=np.zeros_like(x), n=n), engines, platform="a5")
    assert isinstance(err, KernelError) and "division by zero" in err.what


def _lane0_only(out, fifo, n):
    """A Vector kernel whose second lane returns at once (the C++ idiom
    ``if (get_subblockid() != 0) return;``)."""
    if get_subblockid() != 0:
        return
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB)
    part = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        TPOP(pipe, part)
        TADDS(o, part, 1.0)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, o)
        TFREE(pipe)


def _lane0_cube(x, fifo, n):
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB)
    identity_stream(x, n, lambda i, acc: TPUSH(pipe, acc))


def test_a_lane_that_returns_at_once(engines):
    """A kernel pair whose second lane makes no call at all is recorded (and exact)."""
    n = 300
    x = rint(np.random.default_rng(12), ((n + 1) * T, T))
    x[n * T:] = np.eye(T, dtype=np.float32)
    res = same(_lane0_cube, _lane0_only, dict(x=x, out=np.zeros((n * T, T), np.float32), fifo=gm_buffer(4 * SLOT),
                                             n=n), engines)
    assert np.array_equal(res.outputs["out"], x[:n * T] + 1)


def test_a_call_begun_before_the_snapshots(tmp_path):
    """A lane suspended in a TPOP it began before the engine planned its snapshots, whose slot
    it still holds when the run deadlocks late: the report names that TPOP's line."""
    k = _fuzz_kernel(HELD_POP, tmp_path)
    err = same(k.cube, k.vector, k.make_args(np.random.default_rng(k.DATA_SEED)), platform=k.PLATFORM,
               protocol=k.PROTOCOL, max_instructions=20000)
    assert isinstance(err, ptopipe.DeadlockError) and "TPOP at None" not in str(err)


# ============================================================================ the pl DSL
# The DSL interpreter makes a new Tile at every execution of a TPOP: the engine knows it by
# the call it was new in (sim.periodic.calls.Fresh), records its pops and its uses, and at the
# cut gives the tiles the kernel holds then the state the exact run gives them.
def dsl_stream(way, n, split):
    """A mixed ``@pl.incore`` loop of one crossing a tile: C2V (the Cube's product, 1 added
    on the Vector side) or V2C (a tile plus 1 from the Vector side, multiplied by the Cube)."""
    @pl.incore(split=split, slot_num=4)
    def c2v(a: pl.Tensor[[n * T, T], pl.f32], b: pl.Tensor[[T, T], pl.f32], out: pl.Tensor[[n * T, T], pl.f32]):
        right = pl.move(pl.load(b, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            left = pl.move(pl.load(a, [i * T, 0], [T, T], space=pl.Mat), space=pl.Left)
            v = pl.move(pl.matmul(left, right), space=pl.Vec)
            pl.store(pl.adds(v, 1.0), [i * T, 0], out)

    @pl.incore(split=split, slot_num=4)
    def v2c(a: pl.Tensor[[n * T, T], pl.f32], b: pl.Tensor[[T, T], pl.f32], out: pl.Tensor[[n * T, T], pl.f32]):
        right = pl.move(pl.load(b, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            v = pl.adds(pl.load(a, [i * T, 0], [T, T]), 1.0)
            left = pl.move(pl.move(v, space=pl.Mat), space=pl.Left)
            pl.store(pl.matmul(left, right), [i * T, 0], out)
    return pl.program(c2v if way == "c2v" else v2c, name=f"{way}_stream")


@pytest.mark.parametrize("way,plat,split,n", [("c2v", "a2a3", pl.TILE_UP_DOWN, 160),
                                              ("c2v", "a5", pl.TILE_NO_SPLIT, 160),
                                              ("v2c", "a5", pl.TILE_UP_DOWN, 160),
                                              ("v2c", "a2a3", pl.TILE_NO_SPLIT, 160)])
def test_dsl_streams(engines, way, plat, split, n):
    """A DSL kernel's pops, each into a Tile of its own, are recorded (a2a3: staged from the GM
    ring; a5: bound to the consumer's ring; NO_SPLIT: the second lane's empty replay too)."""
    ks = KernelSet(dsl_stream(way, n, split))
    rng = np.random.default_rng(21)
    a, b = rint(rng, (n * T, T), -3, 4), rint(rng, (T, T), -3, 4)
    args = with_slot_buffer(ks.source(), dict(a=a, b=b, out=np.zeros((n * T, T), np.float32)))
    res = same(ks.aic, ks.aiv, args, engines, platform=plat)
    assert np.array_equal(res.outputs["out"], a @ b + 1 if way == "c2v" else (a + 1) @ b)


def dsl_careless(n, skip_free, bad_row, swap):
    """The S1 pair by hand, the Vector side a pop ahead: it holds the tile it popped the
    iteration before (a loop-carried tile) while it pops the next - but uses the one it has
    just popped in iteration ``swap`` - skips the TFREE of iteration ``skip_free`` and stores
    iteration ``bad_row``'s tile past the end of ``out``."""
    @pl.aiv
    def vector(out: pl.Tensor[[n * T, T], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="c2v_slot_buffer", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0, slot_num=4)
        sub = pl.get_subblockid()
        prev = pl.TPOP(buf, pl.Tile[[T // 2, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        for i in pl.range(n - 1):
            part = pl.TPOP(buf, pl.Tile[[T // 2, T], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # dsl pop
            src = prev
            if i == swap:
                src = part
            o = pl.adds(src, 1.0)
            if i != skip_free:
                pl.TFREE(buf)
            pl.store(o, [i * T + sub * (T // 2) + (i == bad_row) * n * T, 0], out)  # dsl store
            prev = part
        last = pl.adds(prev, 1.0)
        pl.TFREE(buf)
        pl.store(last, [(n - 1) * T + sub * (T // 2), 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[n * T, T], pl.f32], b: pl.Tensor[[T, T], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0, slot_num=4)
        right = pl.move(pl.load(b, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            left = pl.move(pl.load(a, [i * T, 0], [T, T], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(left, right), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="careless")


def _dsl_late(engines, plat, skip_free=-1, bad_row=-1, swap=-1, n=300):
    ks = KernelSet(dsl_careless(n, skip_free, bad_row, swap))
    rng = np.random.default_rng(22)
    args = dict(a=rint(rng, (n * T, T), -3, 4), b=rint(rng, (T, T), -3, 4), out=np.zeros((n * T, T), np.float32),
                fifo=gm_buffer(4 * SLOT))
    return same(ks.aic, ks.aiv, args, engines, platform=plat), args


def test_dsl_tile_held_across_iterations(engines):
    """The cut falls where the Vector side holds a tile popped before it (A2A3: staged, its
    ring entry names its staging slot): the tile, and the ring's entry of it, are the exact
    run's when the run goes on exactly.  Iteration 160 adds to the tile it has just popped,
    not the one the learned iterations used there: recording stops, and begins again."""
    res, a = _dsl_late(engines, "a2a3", swap=160)
    want = a["a"] @ a["b"] + 1
    want[160 * T:161 * T] = want[161 * T:162 * T]
    assert np.array_equal(res.outputs["out"], want)


def test_dsl_late_missing_free(engines):
    """The TFREE of iteration 249 is missing: the next pop would stage its tile over one still
    held - one popped before the engine stopped recording (the held tile is the one its entry
    names: they share the binding, as in the exact run)."""
    err, _ = _dsl_late(engines, "a2a3", skip_free=249)
    assert isinstance(err, ptopipe.ProtocolError) and "LocalSlotNum 2" in str(err)
    assert f"test_periodic.py:{line_of(dsl_careless, 'dsl pop')}:" in err.where


def test_dsl_late_window_out_of_range(engines):
    err, _ = _dsl_late(engines, "a5", bad_row=250)
    assert isinstance(err, PtoPipeError)
    assert f"test_periodic.py:{line_of(dsl_careless, 'dsl store')}:" in err.where


def fresh_pop_vec(out, fifo, n, swap=-1, alias=None):
    """Pops each tile into a Tile made for it - but in iteration ``swap`` into ``alias``: the
    result tile the loop multiplies into (a tile of the machine state), or the tile popped
    the iteration before (one a recorded call was given)."""
    popped = [None]

    def part_for(i, o):
        h = T // 2
        part = (o if alias == "result" else popped[0]) if i == swap else Tile(TileType.Vec, float32, h, T)
        popped[0] = part
        return part
    lane_stream(out, fifo, n, lambda i, o, part: TMULS(o, part, 2.0), part_for)


@pytest.mark.parametrize("plat", ["a2a3", "a5"])
@pytest.mark.parametrize("alias", [None, "result", "earlier"])
def test_pops_into_tiles_made_per_iteration(engines, plat, alias):
    """A Python kernel that makes a Tile per pop is recorded (a tile's cache of memory views is
    no machine state); one given a tile that is not new late in the run - the result tile,
    or the tile popped before - is not recorded as the learned call: the exact results,
    whatever they are."""
    a = plain_args(600, swap=500, alias=alias)
    res = same(plain_cube, fresh_pop_vec, a, engines, platform=plat)
    if alias is None:
        assert np.array_equal(res.outputs["out"], a["x"][:-T] * 2)


# ============================================================================ random kernels
@settings(max_examples=4, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(spec=fuzz_spec.kernel_specs(flows=("tile",)), late=st.floats(0.8, 1.0))
def test_random_kernels_give_the_same_results(tmp_path_factory, spec, late):
    """The fuzz generator's kernels (clean or with a misuse), every pipe running 240
    iterations and a misuse moved late (after the engine could engage): the same outputs,
    summary and errors on both engines (benchmarks/engine_equal.py runs thousands)."""
    import fuzz_kernels
    tiles = 240
    mutation = spec.mutation
    if mutation is not None:
        name, p, it = mutation
        mutation = (name, p, max(0, int(late * tiles) - 1 - it))
    spec = dataclasses.replace(spec, mutation=mutation,
                               pipes=tuple(dataclasses.replace(p, tiles=tiles) for p in spec.pipes))
    k = fuzz_kernels.load(fuzz_kernels.write_kernel(spec, str(tmp_path_factory.mktemp("k"))))
    same(k.cube, k.vector, k.make_args(np.random.default_rng(spec.data_seed)), platform=spec.platform,
         protocol=spec.protocol, max_instructions=fuzz_spec.MAX_INSTRUCTIONS * tiles)


# ============================================================================ .pto text
PTO_STREAM = pathlib.Path(__file__).parent.parent / "pto" / "i32_trip_count_a3.pto"


@pytest.mark.parametrize("allocs", ["hoisted", "per iteration"])
def test_pto_stream(engines, allocs):
    """ptoas's spelling of the C2V stream, run by the PTO-AS executor, whose every pop makes a
    new tile: recorded (its Cube's tiles allocated once); with a pto.alloc_tile per iteration
    (a new placement each time: not recorded) the same results all the same."""
    from ptopipe.codegen.pto_exec.launch import prepare
    n = 300
    text = PTO_STREAM.read_text().replace("%c64 = arith.constant 64 : index", f"%c64 = arith.constant {n * 16} : index")
    if allocs != "hoisted":
        allocs_text = "".join(f"    {line.strip()}\n" for line in text.splitlines()
                              if line.strip().startswith(("%am = pto.alloc_tile", "%al = pto.alloc_tile",
                                                          "%acc = pto.alloc_tile")))
        for line in allocs_text.splitlines():
            text = text.replace(line + "\n", "", 1)
        loop = "scf.for %i = %c0 to %n_idx step %c1 {\n      %r = arith.muli %i, %c16 : index\n"
        text = text.replace(loop, loop + allocs_text.replace("    %", "      %"), 1)
        assert text.count("pto.alloc_tile") == 5 and allocs_text
    rng = np.random.default_rng(5)
    a, b = rng.integers(-3, 4, (n * 16, 16)).astype(np.float16), rng.integers(-3, 4, (16, 16)).astype(np.float16)
    launch = prepare(text=text, inputs=dict(a=a, b=b, n=n))
    res = same(launch.aic, launch.aiv, launch.args, engines, engaged=allocs == "hoisted", platform=launch.platform)
    out = res.outputs["out"].reshape(n * 16, 16)
    assert np.array_equal(out, a.astype(np.float32) @ b.astype(np.float32))


_PTO_VEC = "!pto.tile_buf<vec, 8x16xf32>"


@pytest.mark.parametrize("stmt,after", [
    ("%s = pto.load_scalar %out[%c0] : !pto.ptr<f32> -> f32", False),
    (f"pto.tsetval ins(%c0, %three : index, f32) outs(%t : {_PTO_VEC})", False),
    (f"%s = pto.tgetval ins(%o, %c0 : {_PTO_VEC}, index) outs : f32", True),
    ("pto.store_scalar %three, %out[%c0] : !pto.ptr<f32>, f32", True)],
    ids=["load_scalar", "tsetval", "tgetval after", "store_scalar after"])
def test_pto_scalar_accesses(engines, monkeypatch, stmt, after):
    """The PTO-AS executor's own scalar accesses - a GM element read or written, a tile element
    read or written - are no recorded call: inside the stream's loop (learning starts over at
    each, and the element a tsetval writes is written when learning gives up there), or after
    it while the other cores still record, each is made on the exact state, with the exact
    run's counts, cycles and bytes."""
    from ptopipe.codegen.pto_exec.launch import prepare
    from pto_streams import pto_stream
    monkeypatch.setattr(periodic.engine, "WARMUP_CALLS", 16)
    n = 120
    text = pto_stream(n)
    if after:
        k = text.rindex("    }\n    return\n")
        text = text[:k] + f"    }}\n    {stmt}\n" + text[k + len("    }\n"):]
    else:
        mul = "      pto.tmuls ins(%t, %three"
        text = text.replace(mul, f"      {stmt}\n{mul}", 1)
    x = np.random.default_rng(n).integers(-3, 4, (n * T, T)).astype(np.float32)
    launch = prepare(text=text, inputs=dict(x=x, eye=np.eye(T, dtype=np.float32), out=np.zeros_like(x), n=n))
    same(launch.aic, launch.aiv, launch.args, engines, engaged=after, platform=launch.platform)


def test_a_periodic_run_that_skipped_nothing_says_why():
    """Every periodic run that recorded no block says why in its report (what ``ptopipe run
    --engine periodic`` prints after "0 blocks recorded"): a short run, one that ended while
    learning, and one that ended after the engine had proved the period but before every core
    completed a recorded block - never a bare 0 with no reason."""
    from ptopipe.sim.periodic.engine import WARMUP_CALLS
    told = set()
    # (every reason and the first recorded blocks: about four hooked calls of a core a tile)
    for n in range(max(2, WARMUP_CALLS // 4 - 4), WARMUP_CALLS // 4 + 28, 2):
        ff = ptopipe.run(c2v_cube, _lanes(TILE_UP_DOWN), c2v_args(n), engine="periodic", checks=False).fast_forward
        assert ff.blocks > 0 or ff.reason, (n, ff)
        if not ff.blocks:
            told.add(ff.reason)
    assert "the run ended before a whole block was recorded (too few iterations after learning)" in told, told
