"""Views into a held slot: ``TASSIGN(view, popped.data() + offset)`` inside the slot (A5: the
ring slot in UB; A2A3: the staging copy of a GM slot) is a view of the popped tile, not a tile
overlapping the ring.  Read before the TFREE it is fine; read after the TFREE it is a use
after free reported at the read (the view's declaration is not the bug).  A tile placed in
the ring where no popped tile is held is the kernel's own: it keeps its value until the ring
writes its bytes, and reading it after that is a MemoryConflictError at the read."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError, MemoryConflictError, ProtocolError
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.explore import explore
from markers import line_of

T = 16
H = T // 2
SLOT = T * T * 4
TILES = 3
BOTH = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


def cube(a, eye, fifo, tiles, base=0x8000):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, base)
    m, e = Tile(TileType.Mat, float32, T, T, addr=0), Tile(TileType.Mat, float32, T, T, addr=0x1000)
    left, right = Tile(TileType.Left, float32, T, T, addr=0), Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(e, eye)
    TMOV(right, e)
    for i in range(tiles):
        TLOAD(m, GlobalTensor(a.data() + i * T * T, (T, T)))
        TMOV(left, m)
        TMATMUL(acc, left, right)                   # a_i @ I
        TPUSH(pipe, acc)


def halves_before_free(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    top, bot = Tile(TileType.Vec, float32, H, T), Tile(TileType.Vec, float32, H, T)
    o = Tile(TileType.Vec, float32, H, T, addr=0)
    for i in range(tiles):
        TPOP(pipe, t)
        # views into the held slot
        TASSIGN(top, t.data())
        TASSIGN(bot, t.data() + H * T * 4)
        TADD(o, top, bot)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * H * T, (H, T)), o)


def halves_after_free(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    top, bot = Tile(TileType.Vec, float32, H, T), Tile(TileType.Vec, float32, H, T)
    o = Tile(TileType.Vec, float32, H, T, addr=0)
    for i in range(tiles):
        TPOP(pipe, t)
        TASSIGN(top, t.data())                      # VIEW
        TASSIGN(bot, t.data() + H * T * 4)
        TFREE(pipe)                                 # FREE
        TADD(o, top, bot)                           # READ
        TSTORE(GlobalTensor(out.data() + i * H * T, (H, T)), o)


def own_tile_on_a_ring_at_its_default_address(out, fifo, tiles):
    """The ring bound with no consumer buffer (0, as pto-isa's default) under a tile the kernel
    places at 0 as its own: that tile is a view of the popped one."""
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo)          # BIND
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)
        o = Tile(TileType.Vec, float32, T, T, addr=0)             # PLACED
        TADDS(o, t, 1.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)   # READ


def tile_in_an_unheld_slot(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    other = Tile(TileType.Vec, float32, H, T)
    for i in range(tiles):
        TPOP(pipe, t)                               # POP
        if i == 0:
            # the next slot (ring on A5, staging on A2A3), not held
            TASSIGN(other, 0x8000 + SLOT)           # OTHER
            TEXPANDS(other, 1.0)                    # WRITE
        if i == 1:                                  # the second pop wrote the slot: other's value is gone
            TSTORE(GlobalTensor(out.data(), (H, T)), other)   # READ
        TFREE(pipe)


def write_over_the_popped_tile(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    w = Tile(TileType.Vec, float32, H, T, addr=0x8000)   # slot 0 (A5) / staging slot 0 (A2A3)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                               # lands in slot 0 at i = 0
        if i == 0:
            TEXPANDS(w, 0.0)                        # CLOBBER
        TSTORE(GlobalTensor(out.data() + i * H * T, (H, T)), t)   # USE
        TFREE(pipe)


def store_view_then_free(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    top = Tile(TileType.Vec, float32, H, T)
    for i in range(tiles):
        TPOP(pipe, t)
        TASSIGN(top, t.data())
        TSTORE(GlobalTensor(out.data() + i * H * T, (H, T)), top)   # VSTORE
        TFREE(pipe)                                                  # VFREE


def free_newer_tile_first(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    older, newer = Tile(TileType.Vec, float32, T, T), Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    TPOP(pipe, older)                               # POP-OLDER
    TPOP(pipe, newer)                               # POP-NEWER
    TFREE(pipe, newer)                              # FREE-NEWER
    TMULS(o, older, 1.0)                            # READ-OLDER
    TSTORE(GlobalTensor(out.data(), (H, T)), o)
    TFREE(pipe, older)


def _args():
    a = np.arange(TILES * T * T, dtype=np.float32).reshape(TILES * T, T) / 7
    return dict(a=a, eye=np.eye(T, dtype=np.float32), out=np.zeros((TILES * H, T), np.float32),
                fifo=ptopipe.gm_buffer(2 * SLOT), tiles=TILES)


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_views_read_before_the_free_are_the_popped_tile(platform, protocol):
    args = _args()
    a = args["a"]
    res = ptopipe.run(cube, (halves_before_free, None), args, platform=platform, protocol=protocol)
    want = np.concatenate([a[i * T:i * T + H] + a[i * T + H:(i + 1) * T] for i in range(TILES)])
    np.testing.assert_allclose(res.outputs["out"], want, rtol=1e-6)
    ex = explore((cube, (halves_before_free, None)), schedules=3, platform=platform, protocol=protocol,
                 args=_args())
    assert ex.ok, ex.first


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_view_read_after_the_free_is_a_use_after_free_at_the_read(platform, protocol):
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, (halves_after_free, None), _args(), platform=platform, protocol=protocol)
    e = ei.value
    assert "use after free" in e.what, e
    assert e.where.endswith(f":{line_of(halves_after_free, 'READ')}"), e.where
    assert "TFREE at " in e.details and f":{line_of(halves_after_free, 'FREE')}" in e.details
    assert f":{line_of(halves_after_free, 'VIEW')}" not in e.where


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_tfree_naming_the_newer_tile_releases_the_older_one(platform, protocol):
    """A TFREE releases the oldest held slot, whatever tile it names: the read of the older
    tile after it is the use after free, and the report says which tile that TFREE named."""
    k = free_newer_tile_first
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, (k, None), dict(_args(), tiles=2), platform=platform, protocol=protocol)
    e = ei.value
    assert "use after free" in e.what and e.where.endswith(f":{line_of(k, 'READ-OLDER')}"), e
    assert (f"test_slot_views.py:{line_of(k, 'FREE-NEWER')} since it was popped; that TFREE names the tile "
            "popped at ") in e.what, e.what
    assert f":{line_of(k, 'POP-NEWER')}" in e.what, e.what
    assert e.fix.startswith("free the popped tiles in the order they were popped (first a TFREE for the tile "
                            "popped at "), e.fix
    assert f":{line_of(k, 'POP-OLDER')}" in e.fix, e.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_use_after_free_of_a_tile_placed_over_the_ring_says_where_it_was_placed(platform):
    # a newcomer's `TPipe(...)(fifo)` leaves the consumer buffer at 0, under the kernel's own
    # tile at 0: the use after free says that tile is a view of the popped one, and why
    k = own_tile_on_a_ring_at_its_default_address
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, (k, None), dict(_args(), base=0), platform=platform)
    e = ei.value
    assert "use after free" in e.what and e.where.endswith(f":{line_of(k, 'READ')}"), e
    assert (f"test_slot_views.py:{line_of(k, 'PLACED')} inside the ring's bytes [0x0, {2 * SLOT:#x}) (bound "
            f"at ") in e.details and (f"test_slot_views.py:{line_of(k, 'BIND')}), over the popped tile: it is a "
                                      "view of that tile") in e.details, e.details
    assert "TPipe(...)(gm, c2v_consumer_buf, v2c_consumer_buf): 0 by default" in e.details


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_tile_in_a_slot_not_held_is_overwritten_by_the_ring(platform, protocol):
    """On A2A3 the second TPOP stages its tile over ``other`` and the read after it is the error,
    naming that TPOP; on A5 the Cube's second push may land in the slot before ``other`` is
    written (the kernel's write over an unconsumed slot is the error then) or after (the read
    is): both at the kernel's line, a MemoryConflictError."""
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (tile_in_an_unheld_slot, None), _args(), platform=platform, protocol=protocol)
    e = ei.value
    read, write = (f":{line_of(tile_in_an_unheld_slot, m)}" for m in ("READ", "WRITE"))
    if platform == "a2a3":
        assert e.where.endswith(read), e
        assert f":{line_of(tile_in_an_unheld_slot, 'POP')}" in e.what and "local staging" in e.what
    else:
        assert e.where.endswith(read) or (e.where.endswith(write) and "not yet popped" in e.what), e
    assert f":{line_of(tile_in_an_unheld_slot, 'OTHER')}" in e.details


def test_a5_pto_isa_free_does_not_wait_for_a_store_of_a_view():
    ex = explore((cube, (store_view_then_free, None)), schedules=2, platform="a5", protocol="pto-isa",
                 args=_args())
    (_, e), = ex.failures
    assert isinstance(e, DataRaceError), e
    assert e.where.endswith(f":{line_of(store_view_then_free, 'VFREE')}"), e.where
    assert f":{line_of(store_view_then_free, 'VSTORE')} (on PIPE_MTE3" in e.details


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_tile_written_over_the_popped_tile(platform, protocol):
    """A tile the kernel placed on the bytes a TPOP just filled, written while the popped tile
    is still to be read: on A5 the popped tile is the ring slot, held - the write is the error;
    on A2A3 it is a staging copy, whose value the write ends - the read of it is the error,
    naming the write."""
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (write_over_the_popped_tile, None), _args(), platform=platform, protocol=protocol)
    e = ei.value
    clobber = f":{line_of(write_over_the_popped_tile, 'CLOBBER')}"
    if platform == "a5":
        assert e.where.endswith(clobber) and "popped and not yet freed" in e.what, e
    else:
        assert e.where.endswith(f":{line_of(write_over_the_popped_tile, 'USE')}"), e
        assert "overwritten since by the TEXPANDS of Vec tile float32 8x16" in e.what and clobber in e.what, e
