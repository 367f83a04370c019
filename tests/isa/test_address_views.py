"""The address flow judges a core's accesses to the slots it was handed by the slot's life,
whatever pointer they go through (a C++ kernel's GlobalTensor carries a plain address, not
the popped slot): a TLOAD of a popped slot after its TFREE is a use after free, a TSTORE into
a TALLOCed slot after its TPUSH a write into a pushed slot - each reported at that access's
line on both platforms and both protocols, even where no later push makes it a data race."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ConfigError, DataRaceError, LeakError, ProtocolError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

T = 16
SLOT = T * T * 4
DEPTH = 2
TILES = 2                   # one tile per slot: nothing refills a slot, so no race either
COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


def _dir():
    return DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V


def _slot_view(fifo, i):
    """Slot ``i % DEPTH`` of the ring through the GM slot buffer argument: a plain pointer."""
    return GlobalTensor(fifo.data().cast(float32) + (i % DEPTH) * T * T, (T, T))


def _kernels(mode):
    def cube(x, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        for i in range(TILES):
            TLOAD(m, GlobalTensor(x.data() + i * T * T, (T, T)))
            TALLOC(pipe, g)
            TSTORE(g, m)
            TPUSH(pipe, g)
            if mode == "store_after_push":
                TSTORE(_slot_view(fifo, i), m)                # LATE-STORE

    def vector(out, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        g = GlobalTensor(float32, (T, T))
        t = Tile(TileType.Vec, float32, T, T, addr=0)
        if mode.startswith("free_newer"):        # two views held, the newer one named first
            a, b = GlobalTensor(float32, (T, T)), GlobalTensor(float32, (T, T))
            TPOP(pipe, a)                                     # POP-A
            TPOP(pipe, b)                                     # POP-B
            if mode == "free_newer_after_reads":
                TLOAD(t, a)
                TSTORE(GlobalTensor(out.data(), (T, T)), t)
            TLOAD(t, b)
            TSTORE(GlobalTensor(out.data() + T * T, (T, T)), t)
            TFREE(pipe, b)                                    # FREE-B
            if mode == "free_newer_first":
                TLOAD(t, a)                                   # READ-A
                TSTORE(GlobalTensor(out.data(), (T, T)), t)
            TFREE(pipe, a)
            return
        for i in range(TILES):
            TPOP(pipe, g)
            if mode != "load_after_free":
                TLOAD(t, _slot_view(fifo, i))
            TFREE(pipe, g)
            if mode == "load_after_free":
                TLOAD(t, _slot_view(fifo, i))                 # LATE-LOAD
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
    return cube, vector


def _run(mode, platform, protocol):
    x = np.arange(TILES * T * T, dtype=np.float32).reshape(TILES * T, T)
    cube, vector = _kernels(mode)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(DEPTH * SLOT))
    return x, ptopipe.run(cube, (vector, None), args, platform=platform, protocol=protocol)


def test_slot_views_used_in_their_life_are_clean():
    x, res = _run("ok", "a2a3", "pto-isa")
    np.testing.assert_array_equal(res.outputs["out"], x)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_load_of_a_freed_slot_through_any_pointer_is_a_use_after_free(platform, protocol):
    with pytest.raises(ProtocolError) as ei:
        _run("load_after_free", platform, protocol)
    e = ei.value
    assert e.what.startswith("use after free") and "slot 0" in e.what, e
    assert e.where.endswith(f":{line_of(_kernels, 'LATE-LOAD')}"), e.where
    assert e.fix.startswith("move the TLOAD before the TFREE at "), e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_tfree_naming_the_newer_view_releases_the_older_one(platform, protocol):
    """A TFREE releases the oldest held slot whatever GlobalTensor it names (pto-isa's
    ``TFREE(pipe, gmTensor)`` ignores the tensor): freeing the newer view first releases the
    older one, so the first access in conflict is the later read of the older view - reported
    there, naming the TFREE, the view it named and the fix (free in pop order)."""
    with pytest.raises(ProtocolError) as ei:
        _run("free_newer_first", platform, protocol)
    e = ei.value
    line = lambda tag: f":{line_of(_kernels, tag)}"     # noqa: E731
    assert e.what.startswith("use after free") and "slot 0" in e.what, e
    assert e.where.endswith(line("READ-A")), e.where
    assert "released by the TFREE at " in e.what and line("FREE-B") in e.what, e.what
    assert "that TFREE names the view popped at " in e.what and f"{line('POP-B')} (slot 1)" in e.what, e.what
    assert e.fix.startswith("free the popped views in the order they were popped"), e.fix
    assert line("POP-A") in e.fix, e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_views_freed_in_any_order_after_their_reads_are_clean(platform, protocol):
    """Under spec the two views may be freed in any order once both are read.  Under pto-isa
    (SlotNum 2: SyncPeriod 2) both TFREEs come after the second TPOP and test its index
    (``TFREE(pipe, gmTensor)``: ``shouldNotifyFree(cons.tileIndex - 1)``, on A2A3 and A5), so
    each sends a free credit where the producer counts on one for the two: the second is left
    on the flag for the next launch - a LeakError naming the first TFREE and the rule."""
    if protocol == "pto-isa":
        with pytest.raises(LeakError) as ei:
            _run("free_newer_after_reads", platform, protocol)
        e = ei.value
        assert "sent 2 frees where 1 are due for 2 pushes" in e.what, e.what
        assert f":{line_of(_kernels, 'FREE-B')} released tile #0 after the TPOP of tile #1" in e.what, e.what
        assert "latest TPOP" in e.what, e.what
        return
    x, res = _run("free_newer_after_reads", platform, protocol)
    np.testing.assert_array_equal(res.outputs["out"], x)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_store_into_a_pushed_slot_is_reported_at_the_store(platform, protocol):
    with pytest.raises(ProtocolError) as ei:
        _run("store_after_push", platform, protocol)
    e = ei.value
    assert e.what.startswith("write into a pushed slot") and "slot 0" in e.what, e
    assert e.where.endswith(f":{line_of(_kernels, 'LATE-STORE')}"), e.where
    assert e.fix.startswith("move the TSTORE before the TPUSH at "), e.fix


def _late_mark_kernels():
    """AIV0 writes ``mark`` after its second TFREE and the Cube reads it after its third push:
    under pto-isa (SyncPeriod 2) that TFREE's free lets the third TALLOC pass, but nothing
    orders the later write before the Cube's read - a data race."""
    def cube(x, mark, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        for i in range(3):
            TLOAD(m, GlobalTensor(x.data(), (T, T)))
            TALLOC(pipe, g)
            TSTORE(g, m)
            TPUSH(pipe, g)
        TLOAD(m, GlobalTensor(mark.data(), (T, T)))           # MARK-READ

    def vector(mark, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        g = GlobalTensor(float32, (T, T))
        t = Tile(TileType.Vec, float32, T, T, addr=0)
        for i in range(3):
            TPOP(pipe, g)
            TLOAD(t, g)
            TFREE(pipe, g)
            if i == 1:
                TSTORE(GlobalTensor(mark.data(), (T, T)), t)
    return cube, vector


def test_a_globaltensor_tfree_signals_so_a_race_report_does_not_call_it_a_no_op():
    """pto-isa on A2A3 frees a GM slot inside a tile TPOP (its tile TFREE is a no-op), but a
    GlobalTensor TPOP frees nothing and its TFREE sends the free: a race after such a TFREE
    is not explained by a TFREE that signals nothing."""
    cube, vector = _late_mark_kernels()
    x = np.ones((T, T), np.float32)
    args = dict(x=x, mark=np.zeros_like(x), fifo=ptopipe.gm_buffer(DEPTH * SLOT))
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, (vector, None), args, platform="a2a3", protocol="pto-isa")
    e = ei.value
    assert e.where.endswith(f":{line_of(_late_mark_kernels, 'MARK-READ')}"), e
    assert "signals nothing" not in e.fix, e.fix


def _write_back_kernels(sync: bool):
    """AIV0 writes each popped tile back into its slot (a TSTORE on MTE3) right before TFREE: pto-isa's
    free is one set on PIPE_MTE2 (Consumer::free), which does not wait for the store, so the
    Cube's TSTORE into the slot the free hands back races it - unless an event orders the store
    first (``sync``).  Four tiles through two slots: pushes come back to each slot."""
    def cube(x, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        for i in range(4):
            TLOAD(m, GlobalTensor(x.data() + i * T * T, (T, T)))
            TALLOC(pipe, g)
            TSTORE(g, m)                                       # REFILL
            TPUSH(pipe, g)

    def vector(out, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
        g = GlobalTensor(float32, (T, T))
        t = Tile(TileType.Vec, float32, T, T, addr=0)
        for i in range(4):
            TPOP(pipe, g)
            TLOAD(t, g)
            TSTORE(g, t)                                       # WRITE-BACK
            if sync:
                set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0)
                wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0)
            TFREE(pipe, g)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
    return cube, vector


def _write_back_args():
    x = np.arange(4 * T * T, dtype=np.float32).reshape(4 * T, T)
    return dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(DEPTH * SLOT))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("causal", [False, True])
def test_a_write_into_a_popped_slot_before_a_pto_isa_tfree_races_the_refill(platform, causal):
    """``run`` agrees with ``check``: the free SET is sent when MTE2 reaches the TFREE (its simulated
    time does not wait for the MTE3 store either, as on the device), so the store has not
    completed by it and the Cube's refill of the slot is the first access in conflict."""
    cube, vector = _write_back_kernels(False)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, (vector, None), _write_back_args(), platform=platform, protocol="pto-isa",
                    causal=causal)
    e = ei.value
    assert e.where.endswith(f":{line_of(_write_back_kernels, 'REFILL')}"), e.where
    assert f":{line_of(_write_back_kernels, 'WRITE-BACK')}" in e.details, e.details
    assert "PIPE_MTE3" in e.details and "make AIV0's signal wait for its TSTORE" in e.fix, e.fix


@pytest.mark.parametrize("platform,protocol,sync", [("a2a3", "spec", False), ("a5", "spec", False),
                                                    ("a2a3", "pto-isa", True), ("a5", "pto-isa", True)])
def test_a_write_into_a_popped_slot_ordered_before_the_free_is_clean(platform, protocol, sync):
    """spec's free follows every access of the slot; under pto-isa an MTE3 -> MTE2 event orders it."""
    cube, vector = _write_back_kernels(sync)
    args = _write_back_args()
    res = ptopipe.run(cube, (vector, None), args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["x"])


def _indexed_kernels(op: str):
    """The slot accessed by pto-isa's indexed ops before its signal: AIV0 MSCATTERs a popped tile's
    rows back into its slot reversed, or MGATHERs them reversed from it, before TFREE ("scatter",
    "gather"); or ("v2c") AIV0 MSCATTERs its tile's rows reversed into a TALLOCed slot before
    TPUSH, which the Cube pops and loads.  A5 runs both on PIPE_V, A2A3 on the scalar unit and
    MTE2 / MTE3 with the library's own events after them (MTE3 -> MTE2 among them)."""
    def ring(fifo, way):
        a5 = platform_id() == PLATFORM_A5
        d = (DIR_C2V_GM if a5 else DIR_C2V) if way == "C2V" else (DIR_V2C_GM if a5 else DIR_V2C)
        return TPipe(0, d, SLOT, DEPTH, peers=(0,))(fifo, 0, 0)

    def cube(x, out, fifo):
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        if op == "v2c":
            pipe = ring(fifo, "V2C")
            for i in range(4):
                TPOP(pipe, g)
                TLOAD(m, g)                                    # CUBE-READ
                TFREE(pipe, g)
            return
        pipe = ring(fifo, "C2V")
        for i in range(4):
            TLOAD(m, GlobalTensor(x.data() + i * T * T, (T, T)))
            TALLOC(pipe, g)
            TSTORE(g, m)                                       # IX-REFILL
            TPUSH(pipe, g)

    def vector(x, out, rev, fifo):
        g = GlobalTensor(float32, (T, T))
        t = Tile(TileType.Vec, float32, T, T, addr=0)
        idx = Tile(TileType.Vec, int32, 1, T, addr=0x2000)
        TLOAD(idx, rev)
        if op == "v2c":
            pipe = ring(fifo, "V2C")
            for i in range(4):
                TLOAD(t, GlobalTensor(x.data() + i * T * T, (T, T)))
                TALLOC(pipe, g)
                MSCATTER(g, t, idx)
                TPUSH(pipe, g)
            return
        pipe = ring(fifo, "C2V")
        for i in range(4):
            TPOP(pipe, g)
            if op == "scatter":
                TLOAD(t, g)
                MSCATTER(g, t, idx)
            else:
                MGATHER(t, g, idx)
            TFREE(pipe, g)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
    return cube, vector


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("platform,protocol,op", [
    ("a2a3", "pto-isa", "scatter"),     # the library's MTE3 -> MTE2 event orders it before the MTE2 free
    ("a2a3", "spec", "scatter"),
    ("a5", "spec", "scatter"), ("a5", "spec", "gather"), ("a5", "spec", "v2c"),   # spec's signals follow them
    ("a5", "pto-isa", "scatter"), ("a5", "pto-isa", "gather"), ("a5", "pto-isa", "v2c")])
def test_indexed_ops_on_a_slot_before_its_signal(platform, protocol, op, causal):
    """A5's MGATHER / MSCATTER run on PIPE_V, which pto-isa's free (a set on PIPE_MTE2) and record
    (a set on PIPE_MTE3) do not wait for: the other core's next access of the slot races it, in
    run and check alike.  spec's free and TPUSH follow every access of the slot; on A2A3 the
    library's own events after the op order it before the MTE2 free in the auto mode too."""
    cube, vector = _indexed_kernels(op)
    x = np.arange(4 * T * T, dtype=np.float32).reshape(4 * T, T)
    args = dict(x=x, out=np.zeros_like(x), rev=np.arange(T - 1, -1, -1, dtype=np.int32).reshape(1, T),
                fifo=ptopipe.gm_buffer(DEPTH * SLOT))
    if platform == "a5" and protocol == "pto-isa":
        with pytest.raises(DataRaceError) as ei:
            ptopipe.run(cube, (vector, None), args, platform=platform, protocol=protocol, causal=causal)
        at = "CUBE-READ" if op == "v2c" else "IX-REFILL"
        assert ei.value.where.endswith(f":{line_of(_indexed_kernels, at)}"), ei.value
        assert ("MGATHER" if op == "gather" else "MSCATTER") in ei.value.details
        return
    res = ptopipe.run(cube, (vector, None), args, platform=platform, protocol=protocol, causal=causal)
    if op == "gather":
        np.testing.assert_array_equal(res.outputs["out"], x.reshape(4, T, T)[:, ::-1].reshape(4 * T, T))
    elif op == "scatter":
        np.testing.assert_array_equal(res.outputs["out"], x)


def _misfit_vector(out, fifo):
    """Each lane pops a T x T/2 column half (a LEFT_RIGHT part) of the slot, but says UP_DOWN, as
    the push did: AIV1's view starts half a slot in and its rows, at the slot's row stride, run
    past it."""
    pipe = TPipe(0, _dir(), SLOT, DEPTH)(fifo, 0, 0)
    g = GlobalTensor(float32, (T, T // 2), (T, 1))
    t = Tile(TileType.Vec, float32, T, T // 2, addr=0)
    for i in range(TILES):
        TPOP(pipe, g, TILE_UP_DOWN)                                   # MISFIT
        TLOAD(t, g)
        TFREE(pipe, g, TILE_UP_DOWN)


def _half_vector(out, fifo):
    """The lane pops its UP_DOWN half as a view of the half's shape, as the push split it."""
    pipe = TPipe(0, _dir(), SLOT, DEPTH)(fifo, 0, 0)
    g = GlobalTensor(float32, (T // 2, T))
    t = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    for i in range(TILES):
        TPOP(pipe, g, TILE_UP_DOWN)
        TLOAD(t, g)
        TFREE(pipe, g, TILE_UP_DOWN)


def _split_cube(split):
    def cube(x, fifo):
        pipe = TPipe(0, _dir(), SLOT, DEPTH)(fifo, 0, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        g = GlobalTensor(float32, (T, T))
        for i in range(TILES):
            TLOAD(m, GlobalTensor(x.data() + i * T * T, (T, T)))
            TALLOC(pipe, g, split)
            TSTORE(g, m)
            TPUSH(pipe, g, split)                                     # SPLIT-PUSH
    return cube


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a5", "spec")])
def test_a_popped_view_past_its_slot_is_refused_at_the_tpop(platform, protocol):
    x = np.zeros((TILES * T, T), np.float32)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(DEPTH * SLOT))
    with pytest.raises(ProtocolError) as ei:
        # (AIV0 pops its half right: its column-half view would read AIV1's rows, an error of its own)
        ptopipe.run(_split_cube(TILE_UP_DOWN), (_half_vector, _misfit_vector), args, platform=platform,
                    protocol=protocol)
    e = ei.value
    assert "does not fit SlotSize 1024" in e.what and "AIV1's offset 512" in e.what, e
    assert e.where.endswith(f":{line_of(_misfit_vector, 'MISFIT')}"), e.where
    assert "fits with TILE_LEFT_RIGHT" in e.fix and "NO_SPLIT" not in e.fix, e.fix


def _nosplit_vector(out, fifo):
    """Each lane pops its UP_DOWN half of the slot as a view, but names no split: both views
    start at the slot's start, so AIV1 reads AIV0's rows."""
    pipe = TPipe(0, _dir(), SLOT, DEPTH)(fifo, 0, 0)
    g = GlobalTensor(float32, (T // 2, T))
    t = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    for i in range(TILES):
        TPOP(pipe, g)                                                 # POP-NOSPLIT
        TLOAD(t, g)
        TFREE(pipe, g)
        TSTORE(GlobalTensor(out.data() + (i * T + get_subblockid() * (T // 2)) * T, (T // 2, T)), t)


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec")])
@pytest.mark.parametrize("vector,split,pop", [(_nosplit_vector, TILE_UP_DOWN, "TILE_NO_SPLIT"),
                                              (_misfit_vector, TILE_LEFT_RIGHT, "TILE_UP_DOWN")])
def test_a_popped_view_of_another_split_than_the_push_is_refused_at_the_tpop(platform, protocol, vector, split,
                                                                             pop):
    """A GlobalTensor TPOP's split places the lane's view in the slot: with another split than
    the Cube's push a lane views what is not its part (no error of the bytes shows it)."""
    x = np.zeros((TILES * T, T), np.float32)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(DEPTH * SLOT))
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(_split_cube(split), (vector, vector), args, platform=platform, protocol=protocol)
    e = ei.value
    tpop = 'POP-NOSPLIT' if vector is _nosplit_vector else 'MISFIT'
    assert e.where.endswith(f":{line_of(vector, tpop)}"), e.where
    if platform == "a5" and vector is _nosplit_vector and "on AIV1" in e.what:
        # A5: AIV1 at its NO_SPLIT pop before the push landed is not the pipe's one lane (the
        # schedule decides whether this or the split mismatch comes first; both at the pop)
        assert "a NO_SPLIT transfer has one lane, AIV0" in e.what
        return
    assert f"split {pop} does not match the pushed tile's split {split.name}" in e.what, e
    assert f":{line_of(_split_cube, 'SPLIT-PUSH')}" in e.what
    assert "getPopSubAIVOffset" in e.fix


def _both_cube(x, out, fifo):
    pipe = TPipe(0, DIR_BOTH, SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    g, back = GlobalTensor(float32, (T, T)), GlobalTensor(float32, (T, T))
    TLOAD(m, x)
    TALLOC(pipe, g)
    TSTORE(g, m)
    TPUSH(pipe, g)
    TPOP(pipe, back)
    TLOAD(m, back)
    TFREE(pipe, back)
    TSTORE(out, m)


def _both_vector(fifo):
    pipe = TPipe(0, DIR_BOTH, SLOT, DEPTH, peers=(0,))(fifo, 0, 0)
    g, mine = GlobalTensor(float32, (T, T)), GlobalTensor(float32, (T, T))
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    TPOP(pipe, mine)
    TLOAD(t, mine)
    TFREE(pipe, mine)
    TALLOC(pipe, g)                                                   # V2C-TALLOC
    TSTORE(g, t)
    TPUSH(pipe, g)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_the_address_flow_of_a_two_way_a2a3_pipe_is_refused_under_pto_isa(protocol):
    """pto-isa's TALLOC / GlobalTensor TPOP put a DIR_BOTH pipe's V2C way at the C2V way's slots
    on A2A3 as on A5 (DIR_BOTH_GM, refused at binding there): refused at the V2C TALLOC; the
    spec protocol gives each way its own ring."""
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(2 * DEPTH * SLOT))
    if protocol == "spec":
        res = ptopipe.run(_both_cube, (_both_vector, None), args, platform="a2a3", protocol=protocol)
        np.testing.assert_array_equal(res.outputs["out"], x)
        return
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(_both_cube, (_both_vector, None), args, platform="a2a3", protocol=protocol)
    e = ei.value
    assert "both ways use the same GM ring (TALLOC/TPOP add no V2C offset" in e.what, e
    assert e.where.endswith(f":{line_of(_both_vector, 'V2C-TALLOC')}"), e.where
    assert e.fix.startswith("use a DIR_C2V pipe and a DIR_V2C pipe"), e.fix
