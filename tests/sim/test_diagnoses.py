"""Split consistency, overlapping GM rings, use after TFREE
on A2A3, and diagnoses that name the cause.

Every sentence of the capabilities has a correct kernel (clean on every platform and
protocol where it is valid) and a broken one, reported with its error class at the
offending line (``# <marker>`` comments, found with ``line_of``) and a message naming
the cause."""
import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, DeadlockError, MemoryConflictError, ProtocolError
from ptopipe.errors import LeakError, MismatchError, PtoPipeError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
T = 16
SLOT = T * T * 4
RING_UB = 0x10000            # A5 C2V ring in each AIV's UB (A2A3: the local staging ring)
RING_L1 = 0x40000            # A5 V2C ring in the Cube's L1 (A2A3: the local staging ring)


def _gm(d):
    """``d`` with its ring in GM on A5 too (A2A3 rings are always in GM)."""
    if platform_id() != PLATFORM_A5:
        return d
    return {DIR_C2V: DIR_C2V_GM, DIR_V2C: DIR_V2C_GM, DIR_BOTH: DIR_BOTH_GM}[d]


def _args(**extra):
    rng = np.random.default_rng(7)
    d = dict(x=rng.integers(-4, 5, (T, T)).astype(np.float32), out=np.zeros((T, T), np.float32),
             fifo=ptopipe.gm_buffer(8 * SLOT))
    d.update(extra)
    return d


def _run(aic, aiv, args=None, platform="a2a3", protocol="spec", **kw):
    kw.setdefault("timeout", 20)
    return ptopipe.run(aic, aiv, args if args is not None else _args(), platform=platform,
                       protocol=protocol, **kw)


def _raises(cls, fn, marker, aic, aiv, args=None, platform="a2a3", protocol="spec", **kw):
    """Run; the error is exactly ``cls`` and its ``where`` is ``fn``'s ``# marker`` line."""
    with pytest.raises(PtoPipeError) as ei:
        _run(aic, aiv, args, platform, protocol, **kw)
    err = ei.value
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    assert _line(err.where) == line_of(fn, marker), str(err)
    return err


def _line(where) -> int:
    """The line of ``where`` (without the kernel lines that called a function holding it)."""
    path, _, line = (where or "").split(" (called from ", 1)[0].rpartition(":")
    assert path.endswith("test_diagnoses.py"), where
    return int(line)


def _at(fn, marker) -> str:
    return f"test_diagnoses.py:{line_of(fn, marker)}"


# ===================================================================== 7. split consistency
# V2C: each AIV pushes its half of a 16x16 tile (UP_DOWN: 8 rows each); the Cube pops the
# whole tile.  Correct: TPOP and TFREE with UP_DOWN.
def v2c_vec(x, fifo, split=TILE_UP_DOWN):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    h = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    w = Tile(TileType.Vec, float32, T, T // 2, addr=0)
    t = h if split == TILE_UP_DOWN else (w if split == TILE_LEFT_RIGHT else Tile(TileType.Vec, float32, T, T, addr=0))
    TEXPANDS(t, float(get_subblockid() + 1))
    for i in range(2):
        TPUSH(pipe, t, split)  # v2c-push


def v2c_vec_nosplit(x, fifo):
    v2c_vec(x, fifo, TILE_NO_SPLIT)


def v2c_vec_left_right(x, fifo):
    v2c_vec(x, fifo, TILE_LEFT_RIGHT)


def v2c_cube_ok(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, t, TILE_UP_DOWN)
        TFREE(pipe, TILE_UP_DOWN)


def v2c_cube_free_split(fifo, free_split=TILE_NO_SPLIT):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, t, TILE_UP_DOWN)  # v2c-pop
        TFREE(pipe, free_split)  # v2c-free-split


def v2c_cube_free_other_split(fifo):
    v2c_cube_free_split(fifo, TILE_LEFT_RIGHT)


def v2c_cube_pop_split(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, t, TILE_UP_DOWN)  # v2c-pop-split
        TFREE(pipe, TILE_UP_DOWN)


def v2c_cube_nosplit(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, t)
        TFREE(pipe)


# C2V address flow on a GM ring: the AIVs pop their UP_DOWN halves and free them.
def addr_cube(x, fifo):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 2)(fifo)
    v = Tile(TileType.Mat, float32, T, T, addr=0)
    slot = GlobalTensor(float32, (T, T))
    TLOAD(v, x)
    for i in range(2):
        TALLOC(pipe, slot, TILE_UP_DOWN)
        TSTORE(slot, v)
        TPUSH(pipe, slot, TILE_UP_DOWN)


def addr_vec(out, fifo, free_split=TILE_UP_DOWN):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 2)(fifo)
    half = GlobalTensor(float32, (T // 2, T))
    t = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    sub = get_subblockid()
    for i in range(2):
        TPOP(pipe, half, TILE_UP_DOWN)
        TLOAD(t, half)
        TFREE(pipe, half, free_split)  # addr-free
        TSTORE(GlobalTensor(out.data() + sub * (T // 2) * T, (T // 2, T)), t)


def addr_vec_other_split(out, fifo):
    addr_vec(out, fifo, TILE_LEFT_RIGHT)


# C2V tile flow with TMPipe-style two lanes: the Cube pushes UP_DOWN, the AIVs pop UP_DOWN and
# free with the pipe's split (a 16-column Acc: A5's LEFT_RIGHT push takes a multiple of 32).
def c2v_cube(x, fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    e0.array[...] = np.eye(T, dtype=np.float32)
    TLOAD(x1, x)
    TMOV(x0, x1)
    TMATMUL(acc, x0, e0)
    for i in range(2):
        TPUSH(pipe, acc, TILE_UP_DOWN)


def c2v_vec(fifo, out, free_split=TILE_UP_DOWN):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T // 2, T)
    o = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    for i in range(2):
        TPOP(pipe, t, TILE_UP_DOWN)
        TADDS(o, t, 0.0)
        TFREE(pipe, free_split)
    TSTORE(GlobalTensor(out.data() + get_subblockid() * (T // 2) * T, (T // 2, T), (T, 1)), o)


def c2v_vec_free_split(fifo, out):
    c2v_vec(fifo, out, TILE_NO_SPLIT)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_split_consistent_kernels_are_clean(platform, protocol, no_hang):
    a = _args()
    res = _run(v2c_cube_ok, v2c_vec, a, platform, protocol)
    assert res.summary.pipes[0]["tiles"] == 2
    res = _run(addr_cube, addr_vec, _args(), platform, protocol)
    np.testing.assert_array_equal(res["out"], a["x"])
    res = _run(c2v_cube, c2v_vec, _args(), platform, protocol)
    np.testing.assert_array_equal(res["out"], a["x"])


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_cube_tfree_must_tell_no_split_from_split_as_its_tpop(platform, protocol, no_hang):
    """pto-isa's Cube frees a V2C slot on AIV0's flag alone for TILE_NO_SPLIT and on both
    lanes' for a split (A5 setIntraBlockBySplit): a TILE_NO_SPLIT TFREE of a split TPOP never
    gives AIV1 its slot back.  Reported also where pto-isa's A2A3 TPOP already freed the slot
    (the TFREE is a no-op there, but the same kernel hangs on A5)."""
    err = _raises(ProtocolError, v2c_cube_free_split, "v2c-free-split", v2c_cube_free_split, v2c_vec,
                  platform=platform, protocol=protocol)
    assert "TILE_NO_SPLIT" in err.what and "TILE_UP_DOWN" in err.what and "AIV1" in err.what
    assert _at(v2c_cube_free_split, "v2c-pop") in str(err)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_tfree_naming_another_split_of_the_same_kind_or_a_vector_free_is_clean(platform, protocol, no_hang):
    """What pto-isa's device code does not tell apart runs: a Cube TFREE naming another split
    than its TPOP's (both split), and any split in a Vector core's TFREE (its free is one set
    of its own flag) - tile flow and address flow."""
    a = _args()
    res = _run(v2c_cube_free_other_split, v2c_vec, a, platform, protocol)
    assert res.summary.pipes[0]["tiles"] == 2
    res = _run(c2v_cube, c2v_vec_free_split, _args(), platform, protocol)
    np.testing.assert_array_equal(res["out"], a["x"])
    res = _run(addr_cube, addr_vec_other_split, _args(), platform, protocol)
    np.testing.assert_array_equal(res["out"], a["x"])


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_no_split_push_on_two_producer_lanes(platform, protocol, no_hang):
    """V2C with two Vector lanes: a NO_SPLIT push makes both lanes write the whole slot
    (the same bytes) - reported at the first such TPUSH, not as a wrong matrix."""
    err = _raises(ProtocolError, v2c_vec, "v2c-push", v2c_cube_nosplit, v2c_vec_nosplit,
                  platform=platform, protocol=protocol)
    assert "TILE_NO_SPLIT" in err.what and "AIV0" in err.what and "AIV1" in err.what
    assert "UP_DOWN" in err.fix
    # one lane: a NO_SPLIT push is the normal case
    one = lambda fifo: _one_lane_cube(fifo)  # noqa: E731
    _run(one, (_one_lane_vec, None), platform=platform, protocol=protocol)


def _one_lane_cube(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    TPOP(pipe, t)
    TFREE(pipe)


def _one_lane_vec(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0, RING_L1)
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    TEXPANDS(t, 1.0)
    TPUSH(pipe, t)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_split_modes_differ_at_the_two_ends(platform, protocol, no_hang):
    """V2C: the lanes push LEFT_RIGHT halves, the Cube pops UP_DOWN: reported at the
    Cube's first TPOP, naming the push."""
    err = _raises(ProtocolError, v2c_cube_pop_split, "v2c-pop-split", v2c_cube_pop_split,
                  v2c_vec_left_right, platform=platform, protocol=protocol)
    assert _at(v2c_vec, "v2c-push") in str(err)


# ============================================================ 9. use after TFREE on A2A3
# A C2V ring of two 16x16 tiles; AIV0 pops each into a tile without an address of its own
# (A2A3: a staging copy in its UB; A5: the ring slot itself, zero-copy).
def _uaf_cube(x, fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    acc.array[...] = 0                  # (what is pushed: set by the test, not computed)
    for i in range(2):
        TPUSH(pipe, acc)


def uaf_vec_ok(fifo, out):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    TEXPANDS(o, 1.0)
    for i in range(2):
        TPOP(pipe, t)
        TADD(o, o, t)
        TFREE(pipe)
    TSTORE(out, o)


def uaf_vec(fifo, out):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    TEXPANDS(o, 1.0)
    for i in range(2):
        TPOP(pipe, t)  # uaf-pop
        TFREE(pipe)  # uaf-free
        TADD(o, o, t)  # uaf-read
    TSTORE(out, o)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_use_after_tfree_reported_on_every_platform(platform, protocol, no_hang):
    """The same class and line on A2A3 (staging copy; under pto-isa the TFREE is a no-op
    on the device, its TPOP freed the GM slot) as on A5 (zero-copy), naming the TFREE."""
    res = _run(_uaf_cube, (uaf_vec_ok, None), platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res["out"], np.ones((T, T), np.float32))
    err = _raises(ProtocolError, uaf_vec, "uaf-read", _uaf_cube, (uaf_vec, None), platform=platform,
                  protocol=protocol)
    assert err.what.startswith("use after free") and f"TFREE at tests/sim/{_at(uaf_vec, 'uaf-free')}" in err.what
    assert ("LocalSlotNum" in err.fix) == (platform == "a2a3"), err.fix     # staging only on A2A3
    assert f"popped at tests/sim/{_at(uaf_vec, 'uaf-pop')}" in err.details, err.details   # A2A3 too


def uaf_addr_vec(out, fifo):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 2)(fifo)
    half = GlobalTensor(float32, (T // 2, T))
    t = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    for i in range(2):
        TPOP(pipe, half, TILE_UP_DOWN)
        TFREE(pipe, half, TILE_UP_DOWN)  # uaf-addr-free
        TLOAD(t, half)  # uaf-addr-read


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_address_flow_use_after_free_names_the_tfree(platform, protocol, no_hang):
    err = _raises(ProtocolError, uaf_addr_vec, "uaf-addr-read", addr_cube, uaf_addr_vec, platform=platform,
                  protocol=protocol)
    assert f"by the TFREE at tests/sim/{_at(uaf_addr_vec, 'uaf-addr-free')}" in err.what, err.what


def uaf_vec_local(fifo, out):
    """A tile with an address of its own on A2A3 (spec) is loaded there, not staged: it is
    the kernel's own buffer and stays valid after TFREE (A5 still binds it to the slot)."""
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T, T, addr=0x2000)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    TEXPANDS(o, 1.0)
    for i in range(2):
        TPOP(pipe, t)
        TFREE(pipe)
        TADD(o, o, t)  # own-read
    TSTORE(out, o)


def test_own_buffer_read_after_tfree_is_clean_on_a2a3_spec(no_hang):
    res = _run(_uaf_cube, (uaf_vec_local, None), platform="a2a3", protocol="spec")
    np.testing.assert_array_equal(res["out"], np.ones((T, T), np.float32))
    _raises(ProtocolError, uaf_vec_local, "own-read", _uaf_cube, (uaf_vec_local, None), platform="a5",
            protocol="spec")


# ================================================================= 8. overlapping GM rings
# Two one-lane C2V pipes: A to AIV0, B to AIV1.  Each AIV binds only its own pipe; the
# Cube binds A, fills it and blocks on its third push until AIV0 frees a slot, so AIV1
# creates B before the Cube binds it: the pipes are created by different cores.
def _two_cube(x, fifo, b_off):
    a = TPipe(0, _gm(DIR_C2V), SLOT, 2, peers=(0,))(fifo)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    e0.array[...] = np.eye(T, dtype=np.float32)
    TLOAD(x1, x)
    TMOV(x0, x1)
    TMATMUL(acc, x0, e0)
    for i in range(3):
        TPUSH(a, acc)
    b = TPipe(4, _gm(DIR_C2V), SLOT, 2, peers=(1,))(fifo.data() + b_off)  # bind-b
    for i in range(3):
        TPUSH(b, acc)  # push-b


def _two_vec(fifo, out, b_off):
    sub = get_subblockid()
    if sub == 0:
        pipe = TPipe(0, _gm(DIR_C2V), SLOT, 2, peers=(0,))(fifo)
    else:
        pipe = TPipe(4, _gm(DIR_C2V), SLOT, 2, peers=(1,))(fifo.data() + b_off)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(3):
        TPOP(pipe, t)
        TSTORE(GlobalTensor(out.data() + sub * T * T, (T, T)), t)
        TFREE(pipe)


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_rings_of_pipes_bound_by_different_cores_overlap(platform, protocol, seed, no_hang):
    """Reported at the Cube's binding of the second pipe whichever core created each pipe
    (schedule seeds), naming both pipes; one slot further on, the kernel is clean."""
    a = _args(b_off=2 * SLOT, out=np.zeros((2 * T, T), np.float32))
    if platform == "a5":
        # A5 (spec and pto-isa): a NO_SPLIT transfer reaches AIV0 only, so pipe B (peers AIV1) is
        # not a correct kernel there (docs/protocols.md); its overlap is still found at the binding
        _raises(ProtocolError, _two_cube, "push-b", _two_cube, _two_vec, a, platform, protocol,
                schedule_seed=seed)
    else:
        res = _run(_two_cube, _two_vec, a, platform, protocol, schedule_seed=seed)
        np.testing.assert_array_equal(res["out"], np.vstack([a["x"], a["x"]]))
    err = _raises(MemoryConflictError, _two_cube, "bind-b", _two_cube, _two_vec,
                  _args(b_off=SLOT, out=np.zeros((2 * T, T), np.float32)),
                  platform, protocol, schedule_seed=seed)
    assert "FlagID 0" in err.what and "FlagID 4" in err.what, err.what


# Both directions on one GM buffer: a C2V pipe and a V2C pipe, the V2C ring placed without
# the C2V ring's offset (as a DIR_BOTH buffer needs: C2V ring first, then V2C).
def _both_bind(fifo, v2c_off):
    c2v = TPipe(0, _gm(DIR_C2V), SLOT, 2, peers=(0,))(fifo)
    v2c = TPipe(4, _gm(DIR_V2C), SLOT, 2, peers=(0,))(fifo.data() + v2c_off)  # bind-v2c
    return c2v, v2c


def both_cube(fifo, v2c_off):
    c2v, v2c = _both_bind(fifo, v2c_off)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    acc.array[...] = 0                  # (what is pushed: set by the test, not computed)
    m = Tile(TileType.Mat, float32, T, T)
    TPUSH(c2v, acc)
    TPOP(v2c, m)
    TFREE(v2c)


def both_vec(fifo, v2c_off):
    c2v, v2c = _both_bind(fifo, v2c_off)
    t = Tile(TileType.Vec, float32, T, T)
    TPOP(c2v, t)
    TPUSH(v2c, t)
    TFREE(c2v)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_v2c_ring_without_the_c2v_offset_overlaps(platform, protocol, no_hang):
    _run(both_cube, (both_vec, None), _args(v2c_off=2 * SLOT), platform, protocol)
    err = _raises(MemoryConflictError, _both_bind, "bind-v2c", both_cube, (both_vec, None),
                  _args(v2c_off=0), platform, protocol)
    assert "C2V pipe FlagID 0" in err.what and "V2C pipe FlagID" in err.what, err.what


# A DIR_BOTH pipe whose GM buffer is sized for one ring, passed as a raw pointer: the V2C
# ring runs past the buffer into the next argument, `out`.
def _dirboth_bind(fifo, raw):
    buf = fifo.data() if raw else fifo
    return TPipe(0, _gm(DIR_BOTH), SLOT, 2, peers=(0,))(buf)  # bind-both


def dirboth_cube(fifo, raw):
    pipe = _dirboth_bind(fifo, raw)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    acc.array[...] = 0                  # (what is pushed: set by the test, not computed)
    m = Tile(TileType.Mat, float32, T, T)
    TPUSH(pipe, acc)
    TPOP(pipe, m)
    TFREE(pipe)


def dirboth_vec(fifo, out, raw):
    pipe = _dirboth_bind(fifo, raw)
    t = Tile(TileType.Vec, float32, T, T)
    TPOP(pipe, t)
    TPUSH(pipe, t)
    TSTORE(out, t)
    TFREE(pipe)


def _dirboth_args(nbytes, raw):
    return dict(fifo=ptopipe.gm_buffer(nbytes), out=np.ones((T, T), np.float32), raw=raw)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_dir_both_buffer_sized_for_one_ring(platform, protocol, no_hang):
    if (platform, protocol) == ("a5", "pto-isa"):   # DIR_BOTH_GM does not work in pto-isa on A5
        err = _raises(ConfigError, _dirboth_bind, "bind-both", dirboth_cube, (dirboth_vec, None),
                      _dirboth_args(4 * SLOT, True), platform, protocol)
        assert "DIR_BOTH_GM" in err.what, err.what
        return
    for raw in (False, True):
        _run(dirboth_cube, (dirboth_vec, None), _dirboth_args(4 * SLOT, raw), platform, protocol)
    err = _raises(MemoryConflictError, _dirboth_bind, "bind-both", dirboth_cube, (dirboth_vec, None),
                  _dirboth_args(2 * SLOT, True), platform, protocol)
    assert "'fifo'" in err.what and "argument 'out'" in err.what, err.what
    assert "allocate 4096 bytes for 'fifo'" in err.fix, err.fix
    # sized through the GlobalTensor: the buffer's own size is known
    err = _raises(ConfigError, _dirboth_bind, "bind-both", dirboth_cube, (dirboth_vec, None),
                  _dirboth_args(2 * SLOT, False), platform, protocol)
    assert "needs 4096" in err.what


# A raw-pointer slot buffer of SlotNum 4 in a buffer of 2 slots, followed by `out`: the
# Scenario's golden would be wrong (the ring's slots 2, 3 are `out`), but the binding is
# reported first.
def raw_cube(x, fifo):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 4, peers=(0,))(fifo.data())  # raw-ring
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    e0.array[...] = np.eye(T, dtype=np.float32)
    TLOAD(x1, x)
    TMOV(x0, x1)
    TMATMUL(acc, x0, e0)
    for i in range(4):
        TPUSH(pipe, acc)


def raw_vec(fifo, out, free=True):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 4, peers=(0,))(fifo.data())
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0x1000)
    TEXPANDS(o, 0.0)
    for i in range(4):
        TPOP(pipe, t)
        TADD(o, o, t)
        if free:
            TFREE(pipe)
    TSTORE(out, o)


def _frees(platform, protocol) -> bool:
    """Does a consumer TFREE a tile popped from a GM ring?  Not under pto-isa on A5: the
    TPOP frees the slot and a TFREE would free it again (docs/protocols.md)."""
    return (platform, protocol) != ("a5", "pto-isa")


def _raw_scenario(slots, free=True):
    def make_args(rng):
        return dict(x=rng.integers(-4, 5, (T, T)).astype(np.float32), fifo=ptopipe.gm_buffer(slots * SLOT),
                    out=np.zeros((T, T), np.float32), free=free)
    return ptopipe.Scenario("raw_ring", raw_cube, (raw_vec, None), make_args,
                            lambda a: {"out": 4 * a["x"]})


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_raw_pointer_ring_running_into_another_tensor(platform, protocol, no_hang):
    free = _frees(platform, protocol)
    _raw_scenario(4, free).check(platform=platform, protocol=protocol, timeout=20)
    with pytest.raises(PtoPipeError) as ei:
        _raw_scenario(2, free).check(platform=platform, protocol=protocol, timeout=20)
    err = ei.value
    assert type(err) is MemoryConflictError, f"{type(err).__name__}: {err}"
    assert _line(err.where) == line_of(raw_cube, "raw-ring")
    assert "argument 'out'" in err.what


# ========================================================= 10. diagnoses that name the cause
# D1: the Cube holds a V2C slot (popped first, freed at the end - fine) while AIV0 never
#     frees the C2V tiles it pops: the hint names AIV0's TPOP, not the Cube's held slot.
def d1_cube(fifo):
    c2v = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    v2c = TPipe(4, DIR_V2C, SLOT, 2, peers=(0,))(fifo.data() + 2 * SLOT, 0, RING_L1)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    m = Tile(TileType.Mat, float32, T, T)
    TPOP(v2c, m)  # d1-cube-pop
    for i in range(3):
        TPUSH(c2v, acc)  # d1-push
    TFREE(v2c)


def d1_vec(fifo):
    c2v = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    v2c = TPipe(4, DIR_V2C, SLOT, 2, peers=(0,))(fifo.data() + 2 * SLOT, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T, T, addr=0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    TEXPANDS(v, 1.0)
    TPUSH(v2c, v)
    for i in range(3):
        TPOP(c2v, t)  # d1-pop


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_deadlock_names_the_tpop_never_freed(platform, protocol, no_hang):
    if (platform, protocol) == ("a2a3", "pto-isa"):      # TPOP frees inside: nothing is held
        _run(d1_cube, (d1_vec, None), platform=platform, protocol=protocol)
        return
    err = _raises(DeadlockError, d1_cube, "d1-push", d1_cube, (d1_vec, None), platform=platform,
                  protocol=protocol)
    assert _at(d1_vec, "d1-pop") in err.fix and _at(d1_cube, "d1-cube-pop") not in err.fix, err.fix
    cause = [f["text"] for f in err.findings if f["kind"] == "cause"]
    assert cause and "AIV0 has made 0" in cause[0] and "slot 0" in cause[0], cause


# D2: a two-lane pipe whose second lane runs no kernel (C2V: the Cube waits for AIV1's
#     free; V2C: the Cube waits for AIV1's data).
def d2_c2v_cube(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(3):
        TPUSH(pipe, acc, TILE_UP_DOWN)  # d2-push


def d2_c2v_vec(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(3):
        TPOP(pipe, t, TILE_UP_DOWN)
        TFREE(pipe)


def d2_v2c_cube(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    TPOP(pipe, t, TILE_UP_DOWN)  # d2-pop
    TFREE(pipe)


def d2_v2c_vec(x, fifo):
    v2c_vec(x, fifo)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_deadlock_names_the_lane_that_never_runs(platform, protocol, no_hang):
    _run(d2_c2v_cube, d2_c2v_vec, platform=platform, protocol=protocol)
    for cube, vec, fn, marker, wait in [(d2_c2v_cube, d2_c2v_vec, d2_c2v_cube, "d2-push", "free"),
                                        (d2_v2c_cube, d2_v2c_vec, d2_v2c_cube, "d2-pop", "ready")]:
        err = _raises(DeadlockError, fn, marker, cube, (vec, None), platform=platform, protocol=protocol)
        cause = [f["text"] for f in err.findings if f["kind"] == "cause"]
        assert cause and cause[0].startswith("AIV1 never takes part") and "runs no kernel" in cause[0], cause
        assert f"waits for AIV1's {wait}[" in cause[0], cause
        assert "peers=(0,)" in err.fix and "AIV1" in err.fix, err.fix


# D3: SlotNum 4; the consumer pops three tiles, frees the oldest and pops two more.
#     spec: fine (push #4 needs one TFREE).  pto-isa (SyncPeriod 2): push #4 waits for the
#     first notification, sent at TFREE #2 (the TFREE tests the index of the latest TPOP, #2,
#     which does not end a period either), but the consumer has made one TFREE and waits for
#     push #4's data: a deadlock caused by the withheld credit.  (A window kept by popping the
#     next tile before freeing the oldest is no such deadlock under pto-isa: that TFREE tests
#     the next tile's index, which ends a period, and sends the credit early - an overwrite,
#     tests/protocol/test_free_index.py.)
def _d3(sync_period=None):
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, 4, peers=(0,), sync_period=sync_period)(fifo, RING_UB)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        acc.array[...] = 0              # (what is pushed: set by the test, not computed)
        for i in range(6):
            TPUSH(pipe, acc)  # d3-push

    def vec(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, 4, peers=(0,), sync_period=sync_period)(fifo, RING_UB)
        ts = [Tile(TileType.Vec, float32, T, T) for _ in range(6)]
        for i in range(3):
            TPOP(pipe, ts[i])
        TFREE(pipe)
        TPOP(pipe, ts[3])
        TPOP(pipe, ts[4])  # d3-pop
        for i in range(4):
            TFREE(pipe)
        TPOP(pipe, ts[5])
        TFREE(pipe)
    return cube, (vec, None)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_deadlock_names_the_credit_withheld_by_sync_period(platform, protocol, no_hang):
    cube, vec = _d3()
    if protocol == "spec" or platform == "a2a3":     # A2A3 pto-isa: the GM-ring TPOP frees inside
        _run(cube, vec, platform=platform, protocol=protocol)
        return
    _run(*_d3(sync_period=1), platform=platform, protocol=protocol)      # the fix the hint gives
    with pytest.raises(DeadlockError) as ei:
        _run(cube, vec, platform=platform, protocol=protocol)
    err = ei.value
    cause = [f["text"] for f in err.findings if f["kind"] == "cause"][0]
    for part in ("SyncPeriod = 2 TFREEs", "SlotNum 4", "push #4 waits for notification #1",
                 "sent at TFREE #2", "has made 1 TFREE(s)", f"AIV0 is blocked at tests/sim/{_at(_d3, 'd3-pop')}"):
        assert part in cause, cause
    assert _line(err.where) == line_of(_d3, "d3-push") and "sync_period=1" in err.fix, err.fix
    assert "call TFREE" not in err.fix


# M-series: a golden mismatch names the last writer of the first wrong element.
# 'value': AIV1 adds 1 to its half (rows 8..15); 'short': AIV1 stores only the top half of its
# rows, so rows 12..15 of `out` are never written.
def mm_cube(x, fifo):
    c2v_cube(x, fifo)


def mm_vec(fifo, out, bug):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T // 2, T)
    o = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    sub = get_subblockid()
    for i in range(2):
        TPOP(pipe, t, TILE_UP_DOWN)
        TADDS(o, t, 1.0 if (bug == "value" and sub == 1) else 0.0)
        TFREE(pipe, TILE_UP_DOWN)
    rows = T // 4 if (bug == "short" and sub == 1) else T // 2      # AIV1 stores only its top rows
    src = o if rows == T // 2 else Tile(TileType.Vec, float32, rows, T, addr=0)     # o's top rows
    TSTORE(GlobalTensor(out.data() + sub * (T // 2) * T, (rows, T), (T, 1)), src)  # mm-store


def _mm_scenario(bug):
    def make_args(rng):
        return dict(x=rng.integers(-4, 5, (T, T)).astype(np.float32), fifo=ptopipe.gm_buffer(4 * SLOT),
                    out=np.zeros((T, T), np.float32), bug=bug)
    return ptopipe.Scenario("mm", mm_cube, mm_vec, make_args, lambda a: {"out": a["x"]})


# The ring's GM buffer is the output tensor itself (the wrong argument bound): the Cube's
# TPUSHes land in `out`, and the consumer's result is overwritten by the ring slot.
def mmr_cube(x, out):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 1, peers=(0,))(out)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TPUSH(pipe, acc)  # mmr-push


def mmr_vec(out, free=True):
    pipe = TPipe(0, _gm(DIR_C2V), SLOT, 1, peers=(0,))(out)
    t = Tile(TileType.Vec, float32, T, T)
    TPOP(pipe, t)
    if free:
        TFREE(pipe)


def _mmr_scenario(free=True):
    def make_args(rng):
        return dict(x=np.ones((T, T), np.float32), out=np.zeros((T, T), np.float32), free=free)
    return ptopipe.Scenario("mmr", mmr_cube, (mmr_vec, None), make_args,
                            lambda a: {"out": np.full((T, T), 7, np.float32)})


def _mismatch(sc, platform, protocol):
    with pytest.raises(PtoPipeError) as ei:
        sc.check(platform=platform, protocol=protocol, timeout=20)
    err = ei.value
    assert type(err) is MismatchError, f"{type(err).__name__}: {err}"
    return err


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_mismatch_names_the_last_writer_and_its_line(platform, protocol, no_hang):
    _mm_scenario("none").check(platform=platform, protocol=protocol, timeout=20)
    err = _mismatch(_mm_scenario("value"), platform, protocol)
    assert _line(err.where) == line_of(mm_vec, "mm-store")
    assert f"out[8, 0] (GM " in str(err) and f"last written by AIV1 TSTORE at tests/sim/{_at(mm_vec, 'mm-store')}" in str(err)
    from ptopipe.isa.explore import run_schedule      # `ptopipe check`'s path: a perturbed schedule
    with pytest.raises(MismatchError) as ei:
        run_schedule(_mm_scenario("value"), 3, platform=platform, protocol=protocol, timeout=20)
    assert _line(ei.value.where) == line_of(mm_vec, "mm-store"), str(ei.value)
    err = _mismatch(_mm_scenario("short"), platform, protocol)
    assert "out[12, 0] (GM " in str(err) and "was never written by the kernel" in str(err), str(err)
    err = _mismatch(_mmr_scenario(_frees(platform, protocol)), platform, protocol)
    assert _line(err.where) == line_of(mmr_cube, "mmr-push")
    assert "last written by AIC TPUSH into slot 0 of C2V pipe FlagID 0" in str(err), str(err)


def test_mismatch_never_written_element_and_default_run_records_nothing(no_hang):
    """The recorder's answers, and the default run does not pay for it."""
    from ptopipe.isa.checks import KernelChecks, WriteRecorder
    sc = _mm_scenario("short")
    res, _ = sc.run()
    assert type(res.cluster.checker) is KernelChecks
    res, _ = sc.run(record_writes=True)
    assert isinstance(res.cluster.checker, WriteRecorder)
    rec = res.cluster.checker
    lo = dict((n, a) for n, a, _ in res.cluster.context.gm_args)["out"]
    assert rec.last_writer(lo + (12 * T + 8) * 4) is None             # out[12, 8]: never written
    assert rec.last_writer(lo + (7 * T + 15) * 4)["core"] == "AIV0"    # out[7, 15]
    assert rec.last_writer(lo + (11 * T + 15) * 4)["core"] == "AIV1"   # out[11, 15]
    assert rec.last_writer(lo + (11 * T + 15) * 4 + 4) is None         # out[12, 0]


# Overwrite wording.  OW1: the Cube skips the free-slot wait (setAllocateStatus(False)) and
# pushes a third tile into SlotNum 2 before AIV0 popped anything: written before it was
# read.  OW2: the Cube waits for AIV0's go-ahead (a V2C tile sent after AIV0 popped slot 0
# and still holds it), then pushes without waiting: reused before freed.
def _ow_pipes(fifo):
    c2v = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    v2c = TPipe(4, DIR_V2C, SLOT, 2, peers=(0,))(fifo.data() + 2 * SLOT, 0, RING_L1)
    return c2v, v2c


def _ow_cube(fifo, held):
    c2v, v2c = _ow_pipes(fifo)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    m = Tile(TileType.Mat, float32, T, T)
    TPUSH(c2v, acc)
    TPUSH(c2v, acc)
    if held:
        TPOP(v2c, m)
        TFREE(v2c)
    c2v.prod.setAllocateStatus(False)
    TPUSH(c2v, acc)  # ow-push


def _ow_vec(fifo, held):
    c2v, v2c = _ow_pipes(fifo)
    ts = [Tile(TileType.Vec, float32, T, T) for _ in range(3)]
    v = Tile(TileType.Vec, float32, T, T, addr=0x8000)
    if not held:
        for t in ts:
            TPOP(c2v, t)
            TFREE(c2v)
        return
    TPOP(c2v, ts[0])  # ow-pop
    TEXPANDS(v, 1.0)
    TPUSH(v2c, v)                       # go-ahead: slot 0 is popped and held
    TPOP(c2v, ts[1])
    TPOP(c2v, ts[2])                    # blocks until the Cube's third push (slot 0 again)
    for t in ts:
        TFREE(c2v)


def _skipped_wait_leak(vec, platform, protocol):
    """The Cube's unwaited push leaves a free credit on the flag: the teardown at the end of
    its kernel (the ow-push line is its last) reports it as a leak the next launch inherits."""
    err = _raises(LeakError, _ow_cube, "ow-push", _ow_cube, (vec, None), _args(held=True), platform, protocol)
    assert "skipped its free-slot wait" in err.what and "setAllocateStatus" in err.fix, str(err)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_overwrite_says_written_before_read_or_reused_before_freed(platform, protocol, no_hang):
    err = _raises(ProtocolError, _ow_cube, "ow-push", _ow_cube, (_ow_vec, None), _args(held=False),
                  platform, protocol)
    assert "written before it was read" in err.what and "reused" not in err.what, err.what
    assert "setAllocateStatus" in err.fix, err.fix            # the cause here, on either protocol
    if (platform, protocol) == ("a2a3", "pto-isa"):      # TPOP freed the GM slot: the reuse is fine,
        _skipped_wait_leak(_ow_vec, platform, protocol)   # but the skipped wait leaves its credit
        return
    err = _raises(ProtocolError, _ow_cube, "ow-push", _ow_cube, (_ow_vec, None), _args(held=True),
                  platform, protocol)
    assert "reused before freed" in err.what and f"popped it at tests/sim/{_at(_ow_vec, 'ow-pop')}" in err.what
    assert "setAllocateStatus" in err.fix, err.fix


# OW3: as OW2, but AIV0 frees slot 0 right after its go-ahead: in simulated order the TFREE
#      came first, yet nothing orders it before the Cube's unwaited push - on A5 (the tile
#      is the UB slot itself) the race checker reports it as reused before freed; on A2A3
#      the TPOP's copy finished before the go-ahead, so the reuse is harmless.
def _ow3_vec(fifo):
    c2v, v2c = _ow_pipes(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    v = Tile(TileType.Vec, float32, T, T, addr=0x8000)
    TPOP(c2v, t)
    TEXPANDS(v, 1.0)
    TPUSH(v2c, v)
    TFREE(c2v)  # ow3-free
    for i in range(2):
        TPOP(c2v, t)
        TFREE(c2v)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_unordered_reuse_after_tfree_is_reused_before_freed(platform, protocol, no_hang):
    if platform == "a2a3":
        _skipped_wait_leak(_ow3_vec, platform, protocol)
        return
    err = _raises(ProtocolError, _ow_cube, "ow-push", _ow_cube, (_ow3_vec, None), _args(held=True),
                  platform, protocol)
    assert "reused before freed" in err.what and "TFREE" in err.what, err.what
    assert _at(_ow3_vec, "ow3-free") in str(err) and "setAllocateStatus" in err.fix, err.fix


def d2_wrong_flag_vec(fifo):
    pipe = TPipe(2, DIR_C2V, SLOT, 2)(fifo, RING_UB)  # d2-wrong-flag
    t = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(3):
        TPOP(pipe, t, TILE_UP_DOWN)
        TFREE(pipe)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_deadlock_names_a_lane_bound_to_another_flag_id(platform, protocol, no_hang):
    """AIV1 runs but binds FlagID 2: the cause names both bindings, the fix the FlagID.
    (A5: the second ring reserved at the same UB base is reported first, at that binding.)"""
    if platform == "a5":
        _raises(MemoryConflictError, d2_wrong_flag_vec, "d2-wrong-flag", d2_c2v_cube,
                (d2_c2v_vec, d2_wrong_flag_vec), platform=platform, protocol=protocol)
        return
    with pytest.raises(DeadlockError) as ei:
        _run(d2_c2v_cube, (d2_c2v_vec, d2_wrong_flag_vec), platform=platform, protocol=protocol)
    err = ei.value
    cause = [f["text"] for f in err.findings if f["kind"] == "cause"][0]
    assert f"AIV1 binds C2V pipe FlagID 2" in cause and _at(d2_wrong_flag_vec, "d2-wrong-flag") in cause, cause
    assert "same FlagID" in err.fix


# Address flow: a V2C TALLOC with TILE_NO_SPLIT on a pipe with two producer lanes gives both
# lanes the same slot bytes - reported at the TALLOC; UP_DOWN gives each its half.
def _talloc_cube(fifo):
    pipe = TPipe(0, _gm(DIR_V2C), SLOT, 2)(fifo)
    slot = GlobalTensor(float32, (T, T))
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    TPOP(pipe, slot, TILE_UP_DOWN)
    TLOAD(m, slot)
    TFREE(pipe, slot, TILE_UP_DOWN)


def _talloc_vec(fifo, split=TILE_UP_DOWN):
    pipe = TPipe(0, _gm(DIR_V2C), SLOT, 2)(fifo)
    half = GlobalTensor(float32, (T // 2, T))
    v = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    TEXPANDS(v, 1.0)
    TALLOC(pipe, half, split)  # talloc
    TSTORE(half, v)
    TPUSH(pipe, half, split)


def _talloc_vec_nosplit(fifo):
    _talloc_vec(fifo, TILE_NO_SPLIT)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_talloc_no_split_on_two_producer_lanes(platform, protocol, no_hang):
    _run(_talloc_cube, _talloc_vec, platform=platform, protocol=protocol)
    err = _raises(ProtocolError, _talloc_vec, "talloc", _talloc_cube, _talloc_vec_nosplit,
                  platform=platform, protocol=protocol)
    assert err.what.startswith("TALLOC TILE_NO_SPLIT") and "AIV0 and AIV1" in err.what, err.what


# ... and the converse: a split push - a Cube TPUSH or a lane's TALLOC - on a pipe declared with
# one Vector lane sends the other lane's part to no one (on A5 the Cube's split handshake waits
# for that lane's flags): reported at the push, not as a wrong result or a hang.
def _lane0_split_cube(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TPUSH(pipe, acc, TILE_UP_DOWN)  # one-lane-push


def _lane0_split_vec(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, T // 2, T)
    TPOP(pipe, t, TILE_UP_DOWN)
    TFREE(pipe)


def _lane0_talloc_cube(fifo):
    pipe = TPipe(0, _gm(DIR_V2C), SLOT, 2, peers=(0,))(fifo)
    TPOP(pipe, GlobalTensor(float32, (T, T)), TILE_UP_DOWN)


def _lane0_talloc_vec(fifo):
    pipe = TPipe(0, _gm(DIR_V2C), SLOT, 2, peers=(0,))(fifo)
    TALLOC(pipe, GlobalTensor(float32, (T // 2, T)), TILE_UP_DOWN)  # one-lane-talloc


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("cube,vec,fn,marker", [
    (_lane0_split_cube, _lane0_split_vec, _lane0_split_cube, "one-lane-push"),
    (_lane0_talloc_cube, _lane0_talloc_vec, _lane0_talloc_vec, "one-lane-talloc")])
def test_a_split_push_on_a_one_lane_pipe_is_reported_at_the_push(platform, protocol, cube, vec, fn, marker,
                                                                  no_hang):
    err = _raises(ProtocolError, fn, marker, cube, (vec, None), platform=platform, protocol=protocol)
    assert "the pipe has one Vector lane, AIV0, but TILE_UP_DOWN divides each tile" in err.what, err.what
    assert "TILE_NO_SPLIT at both ends" in err.fix and "peers=(0, 1)" in err.fix, err.fix


# The correct kernels above stay clean under explored schedules (perturbed latencies and
# core order), on every platform and protocol.
CLEAN = {
    "v2c_split": (v2c_cube_ok, v2c_vec, lambda: _args()),
    "addr_split": (addr_cube, addr_vec, lambda: _args()),
    "c2v_split": (c2v_cube, c2v_vec, lambda: _args()),
    "uaf_ok": (_uaf_cube, (uaf_vec_ok, None), lambda: _args()),
    "two_pipes": (_two_cube, _two_vec, lambda: _args(b_off=2 * SLOT, out=np.zeros((2 * T, T), np.float32))),
    "both": (both_cube, (both_vec, None), lambda: _args(v2c_off=2 * SLOT)),
    "dirboth_raw": (dirboth_cube, (dirboth_vec, None), lambda: _dirboth_args(4 * SLOT, True)),
    "talloc": (_talloc_cube, _talloc_vec, lambda: _args()),
}


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_correct_kernels_clean_under_explored_schedules(platform, protocol, no_hang):
    from ptopipe.isa.explore import explore
    for name, (aic, aiv, make) in CLEAN.items():
        if (platform, protocol) == ("a5", "pto-isa") and name == "dirboth_raw" or platform == "a5" and \
                name == "two_pipes":
            continue        # DIR_BOTH_GM / an AIV1-only NO_SPLIT pipe: reported there (tests above)
        res = explore((aic, aiv), schedules=20, platform=platform, protocol=protocol, args=make(), timeout=20)
        assert not res.failures, (name, res.first)
    d3 = explore(_d3(), schedules=20, platform=platform, protocol="spec", args=_args(), timeout=20)
    assert not d3.failures, d3.first


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_raw_pointer_ring_running_past_the_last_argument(platform, protocol, no_hang):
    """No tensor after the buffer (it is the last argument): still an error at binding,
    a ConfigError with the size to allocate."""
    args = dict(x=np.ones((T, T), np.float32), out=np.zeros((T, T), np.float32),
                fifo=ptopipe.gm_buffer(2 * SLOT))
    err = _raises(ConfigError, raw_cube, "raw-ring", raw_cube, (raw_vec, None), args, platform, protocol,
                  gm_extra=8 * SLOT)
    assert "runs past the end of its GM argument 'fifo'" in err.what and "allocate 4096 bytes" in err.fix


# The registry of correct kernels (tests/corpus.py): CLEAN above with its exclusions and the
# goldens of the tests, D3 where its SyncPeriod is not the problem, and D3 with the hint's fix;
# run by test_clean_corpus.py and benchmarks/schedules.py --kernels new.
def _clean_registry():
    from corpus import kernel, of_scenario
    a5_isa = ("a5", "pto-isa")
    why = {"two_pipes": {("a5", q): "A5: an AIV1-only NO_SPLIT pipe, where a NO_SPLIT pipe has one lane (AIV0) "
                                    "(reported)" for q in ("spec", "pto-isa")},
           "dirboth_raw": {a5_isa: "pto-isa on A5: DIR_BOTH_GM is a ConfigError (M20)"}}
    same_x = lambda a: {"out": a["x"]}                                        # noqa: E731
    golden = {"addr_split": same_x, "c2v_split": same_x,
              "two_pipes": lambda a: {"out": np.vstack([a["x"], a["x"]])}}
    out = [kernel(f"diag_{name}", aic, aiv, lambda rng, make=make: make(), golden.get(name), why.get(name))
           for name, (aic, aiv, make) in CLEAN.items()]
    out.append(kernel("diag_d3_window", *_d3(), lambda rng: _args(),
                      excluded={a5_isa: "pto-isa on A5: SyncPeriod 2 withholds the credit push #4 waits for (D3)"}))
    out.append(kernel("diag_d3_sync_period_1", *_d3(sync_period=1), lambda rng: _args()))
    out.append(kernel("diag_own_buffer_after_tfree", _uaf_cube, (uaf_vec_local, None), lambda rng: _args(),
                      lambda a: {"out": np.ones((T, T), np.float32)},
                      excluded={c: "A5 binds a popped tile to its ring slot: reading it after TFREE is a use "
                                   "after free" for c in COMBOS if c[0] == "a5"}
                      | {("a2a3", "pto-isa"): "pto-isa on A2A3 stages the popped tile (a copy the TFREE "
                                              "releases): reading it after TFREE is a use after free"}))
    out.append(of_scenario("diag_raw_ring_4_slots_tfree", _raw_scenario(4, True),
                           excluded={a5_isa: "pto-isa on A5: a TPOP from a GM ring frees, a TFREE frees again"}))
    out.append(of_scenario("diag_raw_ring_4_slots_no_tfree", _raw_scenario(4, False),
                           excluded={c: "spec: every TPOP needs its TFREE (pto-isa: a GM-ring TPOP frees)"
                                     for c in COMBOS if c[1] == "spec"}))
    out.append(of_scenario("diag_mm_none", _mm_scenario("none")))
    return out


CLEAN_KERNELS = _clean_registry()


def _lanes_store(mode):
    """The Cube pushes 2 tiles UP_DOWN; each Vector core stores its half - to its own rows
    (``mode`` "own"), both to the same rows ("shared"), or at an offset of half a row per lane
    instead of half the tile's rows ("elements": the windows start apart but overlap)."""
    def cube(x, eye, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
        a, e = Tile(TileType.Mat, float32, T, T, addr=0), Tile(TileType.Mat, float32, T, T, addr=SLOT)
        left, right = Tile(TileType.Left, float32, T, T, addr=0), Tile(TileType.Right, float32, T, T, addr=0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        TLOAD(e, eye)
        TMOV(right, e)
        for i in range(2):
            TLOAD(a, GlobalTensor(x.data() + i * T * T, (T, T)))
            TMOV(left, a)
            TMATMUL(acc, left, right)
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
        sub = get_subblockid()
        t = Tile(TileType.Vec, float32, T // 2, T)
        o = Tile(TileType.Vec, float32, T // 2, T, addr=0x8000)
        for i in range(2):
            TPOP(pipe, t, TILE_UP_DOWN)
            TMOV(o, t)
            TFREE(pipe, TILE_UP_DOWN)
            row = i * T + (sub * T // 2 if mode == "own" else 0)
            extra = sub * T // 2 if mode == "elements" else 0
            TSTORE(GlobalTensor(out.data() + row * T + extra, (T // 2, T)), o)      # LANE STORE
    return cube, (vector, vector)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_both_lanes_storing_the_same_rows_are_told_to_split_them(platform):
    x = np.arange(2 * T * T, dtype=np.float32).reshape(2 * T, T)
    cube, aiv = _lanes_store("own")
    args = dict(x=x, eye=np.eye(T, dtype=np.float32), out=np.zeros_like(x), fifo=ptopipe.gm_buffer(2 * SLOT))
    res = ptopipe.run(cube, aiv, dict(args), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], x)
    for mode, fix in (("shared", "both Vector cores run this TSTORE on the same bytes"),
                      ("elements", f"windows of this TSTORE start {T // 2 * 4} bytes apart but each spans "
                                   f"{T // 2 * T * 4}: the per-lane offset is there")):
        cube, aiv = _lanes_store(mode)
        with pytest.raises(PtoPipeError) as ei:
            ptopipe.run(cube, aiv, dict(args), platform=platform)
        e = ei.value
        assert type(e).__name__ == "DataRaceError" and e.where.endswith(f":{line_of(_lanes_store, 'LANE STORE')}")
        assert fix in e.fix and "pipe_barrier" not in e.fix, e.fix
