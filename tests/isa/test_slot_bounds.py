"""A GM pointer handed out by the address flow stays within what it was handed: a
view built from a TALLOCed slot (``GlobalTensor(g.data() + off, ...)``) or a
popped one is bounded by that slot - or by the lane's split part of it - and one built
from the GM slot buffer argument (``fifo.data()``) by that argument, like any run argument.
A store into the NEXT slot, past the ring into the next argument, or into the other lane's
part is a MemoryConflictError at the access line on both platforms and both protocols -
not a silent overwrite (a MismatchError at another line, or a data race only under spec).
Correct kernels that write exactly their slot or part stay clean, in both directions."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import MemoryConflictError, ProtocolError
from ptopipe.isa import *  # noqa: F403
from ptopipe.sim import gm_layout
from markers import line_of

T = 16
H = T // 2
SLOT = T * T * 4
DEPTH = 2
COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


def _dir(way):
    gm = platform_id() == PLATFORM_A5
    return {"C2V": DIR_C2V_GM if gm else DIR_C2V, "V2C": DIR_V2C_GM if gm else DIR_V2C}[way]


def _part(split):
    """(shape, stride) of one lane's part of a T x T tile, and its element offset in a row-major
    T x T matrix for lane ``sub`` (a function)."""
    if split == TILE_UP_DOWN:
        return (H, T), (T, 1), lambda sub: sub * H * T
    return (T, H), (T, 1), lambda sub: sub * H


def _c2v(split, mode):
    """Cube TALLOCs a slot, TSTOREs x's tile i into it, TPUSHes; each lane TPOPs its part,
    TLOADs it, TFREEs and TSTOREs it into out.  ``mode`` breaks one access."""
    shape, stride, off = _part(split)

    def cube(x, fifo, tiles):
        pipe = TPipe(0, _dir("C2V"), SLOT, DEPTH)(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        for i in range(tiles):
            TLOAD(m, GlobalTensor(x.data() + i * T * T, (T, T)))
            TALLOC(pipe, g, split)
            if mode == "next":
                dst = GlobalTensor(g.data() + T * T, (T, T))                      # NEXT
            elif mode == "past":
                dst = GlobalTensor(g.data() + (DEPTH - i % DEPTH) * T * T, (T, T))  # PAST
            elif mode == "fifo":
                dst = GlobalTensor(fifo.data().cast(float32) + DEPTH * T * T, (T, T))  # FIFO
            else:               # the slot through a derived pointer: exactly the slot
                dst = GlobalTensor(g.data().cast(int32).cast(float32) + 0, (T, T))
            TSTORE(dst, m)                                                        # STORE
            TPUSH(pipe, g, split)

    def vector(out, fifo, tiles):
        pipe = TPipe(0, _dir("C2V"), SLOT, DEPTH)(fifo, 0, 0)
        sub = get_subblockid()
        g = GlobalTensor(float32, shape, stride)
        t = Tile(TileType.Vec, float32, *shape, addr=0)
        for i in range(tiles):
            TPOP(pipe, g, split)
            d = 0
            if mode == "other_part" and sub == 0:
                d = off(1)
            elif mode == "pop_next" and sub == 1:
                d = T * T
            view = (shape[1], 1) if mode == "flat" else stride     # a LEFT_RIGHT half read contiguously
            TLOAD(t, GlobalTensor(g.data() + d, shape, view))                     # POP_LOAD
            TFREE(pipe, g, split)
            TSTORE(GlobalTensor(out.data() + i * T * T + off(sub), shape, (T, 1)), t)
    return cube, vector


def _v2c(split, mode):
    """Each lane TLOADs its part of x's tile i, TALLOCs its part of a slot, TSTOREs, TPUSHes;
    the Cube TPOPs the whole slot, TLOADs it, TFREEs and TSTOREs it into out."""
    shape, stride, off = _part(split)

    def vector(x, fifo, tiles):
        pipe = TPipe(0, _dir("V2C"), SLOT, DEPTH)(fifo, 0, 0)
        sub = get_subblockid()
        t = Tile(TileType.Vec, float32, *shape, addr=0)
        g = GlobalTensor(float32, shape, stride)
        for i in range(tiles):
            TLOAD(t, GlobalTensor(x.data() + i * T * T + off(sub), shape, (T, 1)))
            TALLOC(pipe, g, split)
            d = 0
            if mode == "other_part" and sub == 0:
                d = off(1)
            elif mode == "next" and sub == 1:
                d = off(1)
            view = (shape[1], 1) if mode == "flat" else stride
            TSTORE(GlobalTensor(g.data() + d, shape, view), t)                    # PART_STORE
            TPUSH(pipe, g, split)

    def cube(out, fifo, tiles):
        pipe = TPipe(0, _dir("V2C"), SLOT, DEPTH)(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        for i in range(tiles):
            TPOP(pipe, g, split)
            TLOAD(m, GlobalTensor(g.data() + (T * T // 2 if mode == "cube_pop" else 0), (T, T)))  # CUBE_LOAD
            TFREE(pipe, g, split)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), m)
    return cube, vector


def _args(tiles=3):
    x = np.arange(tiles * T * T, dtype=np.float32).reshape(tiles * T, T)
    return dict(fifo=gm_buffer(DEPTH * SLOT), x=x, out=np.zeros_like(x), tiles=tiles)


def _at():
    """The GM addresses of _args()'s arrays as run() lays them out (the ring is at 'fifo')."""
    a = _args()
    (f, x, o), _ = gm_layout([a["fifo"].nbytes, a["x"].nbytes, a["out"].nbytes])
    return {"fifo": f, "x": x, "out": o}


def _raises(kernels, platform, protocol, marker, fn):
    cube, vector = kernels
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, vector, _args(), platform=platform, protocol=protocol)
    e = ei.value
    assert e.where is not None and e.where.endswith(f"test_slot_bounds.py:{line_of(fn, marker)}"), e.where
    assert "access out of bounds" in e.what
    return e


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("way", [_c2v, _v2c])
@pytest.mark.parametrize("split", [TILE_UP_DOWN, TILE_LEFT_RIGHT])
@pytest.mark.parametrize("checks", [True, False])
def test_a_kernel_writing_exactly_its_slot_or_part_is_clean(platform, protocol, way, split, checks):
    cube, vector = way(split, "ok")
    args = _args()
    res = ptopipe.run(cube, vector, args, platform=platform, protocol=protocol, checks=checks)
    np.testing.assert_array_equal(res.outputs["out"], args["x"])


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_store_into_the_next_slot_is_reported_at_its_line(platform, protocol):
    e = _raises(_c2v(TILE_UP_DOWN, "next"), platform, protocol, "STORE", _c2v)
    f = _at()["fifo"]
    assert (f"outside slot 0 [{f:#x}, {f + SLOT:#x}) of C2V pipe FlagID 0 (peers AIV0,AIV1), which its pointer comes "
            "from (TALLOC): bytes 1024 to 2047 of its 1024; it reaches into slot 1 of the ring") in e.what
    assert "SlotSize 1024" in e.fix and "next TALLOC" in e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_store_past_the_ring_names_the_argument_it_overwrites(platform, protocol):
    e = _raises(_c2v(TILE_UP_DOWN, "past"), platform, protocol, "STORE", _c2v)
    at = _at()
    f, x = at["fifo"], at["x"]
    assert (f"outside slot 0 [{f:#x}, {f + SLOT:#x}) of C2V pipe FlagID 0 (peers AIV0,AIV1)" in e.what
            and f"bytes 2048 to 3071 of its 1024; it reaches past the ring [{f:#x}, {f + 2 * SLOT:#x}) into "
                f"argument 'x' [{x:#x}, {x + 3 * SLOT:#x})" in e.what), e.what


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_pointer_from_the_slot_buffer_argument_is_bounded_by_it(platform, protocol):
    e = _raises(_c2v(TILE_UP_DOWN, "fifo"), platform, protocol, "STORE", _c2v)
    f = _at()["fifo"]
    assert f"outside argument 'fifo' [{f:#x}, {f + 2 * SLOT:#x}) that its pointer comes from (elements 512 to 767 of 512)" \
        in e.what
    assert "fifo.data()" in e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_popped_part_is_bounded_by_the_lane_s_part(platform, protocol):
    e = _raises(_c2v(TILE_UP_DOWN, "other_part"), platform, protocol, "POP_LOAD", _c2v)
    f = _at()["fifo"]
    assert (f"outside AIV0's TILE_UP_DOWN part [{f:#x}, {f + SLOT // 2:#x}) of slot 0 [{f:#x}, {f + SLOT:#x}) of C2V pipe FlagID 0 "
            "(peers AIV0,AIV1), which its pointer comes from (TPOP): bytes 512 to 1023 of its 512; it reaches "
            "into the other lane's part of the slot") in e.what, e.what
    assert "this lane's part" in e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_popped_part_reaching_into_the_next_slot_is_reported(platform, protocol):
    e = _raises(_c2v(TILE_UP_DOWN, "pop_next"), platform, protocol, "POP_LOAD", _c2v)
    f = _at()["fifo"]
    assert (f"outside AIV1's TILE_UP_DOWN part [{f + SLOT // 2:#x}, {f + SLOT:#x}) of slot 0" in e.what
            and "(TPOP): bytes 1024 to 1535 of its 512; it reaches into slot 1 of the ring" in e.what), e.what


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("split,mode,lane,reach", [
    (TILE_UP_DOWN, "other_part", 0, "into the other lane's part of the slot"),
    (TILE_LEFT_RIGHT, "next", 1, "into slot 1 of the ring")])
def test_a_talloced_part_is_bounded_by_the_lane_s_part(platform, protocol, split, mode, lane, reach):
    e = _raises(_v2c(split, mode), platform, protocol, "PART_STORE", _v2c)
    assert f"outside AIV{lane}'s {split.name} part" in e.what and "(TALLOC)" in e.what, e.what
    assert e.what.endswith(reach), e.what


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("way,marker,theirs", [(_c2v, "POP_LOAD", "which the Cube pushed for AIV"),
                                               (_v2c, "PART_STORE", "which AIV")])
def test_a_left_right_part_viewed_without_the_slot_s_row_stride_is_reported(platform, protocol, way, marker,
                                                                            theirs):
    """A lane's view of its LEFT_RIGHT half with the half's width as its row stride (a contiguous
    view) stays within the part's hull but reads (C2V TPOP) or writes (V2C TALLOC) the other
    lane's columns: a MemoryConflictError at the access naming the stride to give, not a
    wrong result at the output's store (or nothing, without a golden)."""
    e = _raises(way(TILE_LEFT_RIGHT, "flat"), platform, protocol, marker, way)
    assert "it reaches into the other lane's part of the slot" in e.what and theirs in e.what, e.what
    assert f"its rows are {T * 4} bytes apart (the slot tile's row stride), the view's {H * 4}" in e.fix, e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_whole_popped_slot_is_bounded_by_the_slot(platform, protocol):
    e = _raises(_v2c(TILE_UP_DOWN, "cube_pop"), platform, protocol, "CUBE_LOAD", _v2c)
    f = _at()["fifo"]
    assert (f"outside slot 0 [{f:#x}, {f + SLOT:#x}) of V2C pipe FlagID 0 (peers AIV0,AIV1), which its pointer comes "
            "from (TPOP): bytes 512 to 1535 of its 1024; it reaches into slot 1 of the ring") in e.what, e.what
    assert "next TPOP" in e.fix


def test_a_cast_popped_pointer_still_sees_its_tfree():
    """``SlotPtr.cast`` keeps the slot: a TLOAD through a cast of a popped pointer after its
    TFREE is a use-after-free, as through the pointer itself."""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        TALLOC(pipe, g)
        TSTORE(g, m)
        TPUSH(pipe, g)

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        t = Tile(TileType.Vec, int32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        TPOP(pipe, g)
        p = g.data().cast(int32)
        TFREE(pipe, g)
        TLOAD(t, GlobalTensor(p, (T, T)))                                         # UAF

    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, (vector, None), dict(fifo=gm_buffer(DEPTH * SLOT)))
    assert ei.value.where.endswith(f":{line_of(test_a_cast_popped_pointer_still_sees_its_tfree, 'UAF')}")
    assert "use after free" in ei.value.what and "slot 0" in ei.value.what


def test_a_store_past_a_dir_both_gm_c2v_ring_names_the_v2c_ring_it_reaches():
    """DIR_BOTH_GM (A5, spec: pto-isa rejects it at binding) puts the V2C ring right after the
    C2V ring in the slot buffer: a store past the C2V ring lands in it."""
    def cube(fifo, x):
        pipe = TPipe(0, DIR_BOTH_GM, SLOT, DEPTH)(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        TLOAD(m, GlobalTensor(x.data(), (T, T)))
        TALLOC(pipe, g, TILE_UP_DOWN)
        TSTORE(GlobalTensor(g.data() + DEPTH * T * T, (T, T)), m)                 # BOTH
        TPUSH(pipe, g, TILE_UP_DOWN)

    def vector(fifo):
        pipe = TPipe(0, DIR_BOTH_GM, SLOT, DEPTH)(fifo, 0, 0)
        g = GlobalTensor(float32, (H, T))
        TPOP(pipe, g, TILE_UP_DOWN)
        TFREE(pipe, g, TILE_UP_DOWN)

    fn = test_a_store_past_a_dir_both_gm_c2v_ring_names_the_v2c_ring_it_reaches
    (f, _), _ = gm_layout([2 * DEPTH * SLOT, T * T * 4])
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, vector, dict(fifo=gm_buffer(2 * DEPTH * SLOT), x=np.ones((T, T), np.float32)),
                    platform="a5", protocol="spec")
    e = ei.value
    assert e.where.endswith(f":{line_of(fn, 'BOTH')}"), e.where
    assert e.what.endswith(f"it reaches past the ring [{f:#x}, {f + DEPTH * SLOT:#x}) into the GM ring of "
                           f"DIR_BOTH_GM pipe FlagID 0 (V2C way, peers AIV0,AIV1) [{f + DEPTH * SLOT:#x}, {f + 2 * DEPTH * SLOT:#x})"), e.what


def _whole_slot_talloc(x, fifo, tiles):
    pipe = TPipe(0, _dir("V2C"), SLOT, DEPTH)(fifo, 0, 0)
    g = GlobalTensor(float32, (T, T))                  # the whole slot tile, not the lane's part
    TALLOC(pipe, g, TILE_UP_DOWN)                      # WHOLE_TALLOC


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_split_talloc_of_the_whole_slot_shape_is_reported_at_the_talloc(platform, protocol):
    """A split TALLOC hands a lane its part: given the whole slot's shape, lane 1's part lay
    past the slot and the store was reported with an empty part."""
    cube, _ = _v2c(TILE_UP_DOWN, None)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, _whole_slot_talloc, _args(), platform=platform, protocol=protocol)
    e = ei.value
    assert e.where.endswith(f"test_slot_bounds.py:{line_of(_whole_slot_talloc, 'WHOLE_TALLOC')}"), e.where
    assert "two 16x16 parts make a 32x16 slot (2048 bytes) but SlotSize is 1024" in e.what
    assert "give TALLOC the lane's part (8x16" in e.fix
