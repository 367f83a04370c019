"""Manual synchronisation around the ring instructions: pto-isa orders nothing inside a
TPUSH / TPOP but its cross-core flags (``ProtocolModel.ring_data``), so a manual kernel
needs the events PTOAS's InsertSync would place - M -> FIX before the TPUSH of an
accumulator (a TSTORE / TMOV of L0C on PIPE_FIX), FIX -> M before the next TMATMUL into it,
MTE2 -> V after a TPOP from a GM ring (a TLOAD on PIPE_MTE2) - and after a zero-copy TPOP of
an A5 consumer-local ring none for its readers on the pipe its ready wait holds (V for the C2V
ring in UB), one from that pipe for the others.  A missing one is a DataRaceError at the later
instruction naming the earlier one and the event to add.

The kernel pair: the Cube loads 16-row blocks of A, multiplies them with B and pushes each
accumulator; each Vector core pops its half, adds its half of the bias and stores it."""
import numpy as np
import pytest

import ptopipe
from ptopipe import DataRaceError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

M, K, N = 16, 32, 32
H = M // 2
SLOT = M * N * 4
RING_UB = 0x10000          # the Vector's consumer buffer (A5 local ring / the GM ring's staging)


def gt(t, off, shape):
    return GlobalTensor(t.data() + off, shape)


def cube(a, b, fifo, n, way, drop=None):
    pipe = TPipe(0, way, SLOT, 2)(fifo, RING_UB)
    a1 = Tile(TileType.Mat, float32, M, K, addr=0)
    b1 = Tile(TileType.Mat, float32, K, N, addr=0x4000)
    a0 = Tile(TileType.Left, float32, M, K, addr=0)
    b0 = Tile(TileType.Right, float32, K, N, addr=0)
    acc = Tile(TileType.Acc, float32, M, N, addr=0)
    TLOAD(b1, b)
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
    wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
    TMOV(b0, b1)
    set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)             # prime: a1 free
    set_flag(PIPE_M, PIPE_MTE1, EVENT_ID1)                # prime: a0 free
    if drop != "fix_m":
        set_flag(PIPE_FIX, PIPE_M, EVENT_ID0)             # prime: acc free
    for i in range(n):
        wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)
        TLOAD(a1, gt(a, i * M * K, (M, K)))
        set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID2)
        wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID2)
        wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID1)
        TMOV(a0, a1)
        set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)
        set_flag(PIPE_MTE1, PIPE_M, EVENT_ID2)
        wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID2)
        if drop != "fix_m":
            wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0)
        TMATMUL(acc, a0, b0)                              # matmul
        set_flag(PIPE_M, PIPE_MTE1, EVENT_ID1)
        if drop != "m_fix":
            set_flag(PIPE_M, PIPE_FIX, EVENT_ID0)
            wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0)
        TPUSH(pipe, acc, TILE_UP_DOWN)                    # push
        if drop != "fix_m":
            set_flag(PIPE_FIX, PIPE_M, EVENT_ID0)
    wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)            # drain
    wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID1)
    if drop != "fix_m":
        wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0)


def vector(bias, out, fifo, n, way, drop=None, tfree=True):
    pipe = TPipe(0, way, SLOT, 2)(fifo, RING_UB)
    sub = get_subblockid()
    bt = Tile(TileType.Vec, float32, H, N, addr=0)
    o = Tile(TileType.Vec, float32, H, N, addr=0x1000)
    t = Tile(TileType.Vec, float32, H, N)
    TLOAD(bt, gt(bias, sub * H * N, (H, N)))
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)                # prime: the staging slots free
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID2)                # prime: o free
    for i in range(n):
        wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)
        TPOP(pipe, t, TILE_UP_DOWN)                       # pop
        if drop != "mte2_v":
            set_flag(PIPE_MTE2, PIPE_V, EVENT_ID1)
            wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID1)
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID2)
        TADD(o, t, bt)                                    # add
        set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)
        if tfree:
            TFREE(pipe)
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID3)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID3)
        TSTORE(gt(out, i * M * N + sub * H * N, (H, N)), o)
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID2)
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)               # drain
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID2)


def args(way, drop=None, n=2, tfree=True):
    rng = np.random.default_rng(7)
    return dict(a=rng.integers(-3, 4, (n * M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32),
                out=np.zeros((n * M, N), np.float32), fifo=gm_buffer(2 * SLOT), n=n, way=way, drop=drop,
                tfree=tfree)


def golden(a):
    n = a["n"]
    return (a["a"].reshape(n, M, K) @ a["b"] + a["bias"]).reshape(n * M, N)


#: (platform, protocol, direction, the ring is in GM: its TPOP loads the tile on MTE2)
CASES = [(p, q, d, p == "a2a3" or d is Direction.DIR_C2V_GM)
         for p, dirs in (("a2a3", (Direction.DIR_C2V,)), ("a5", (Direction.DIR_C2V, Direction.DIR_C2V_GM)))
         for d in dirs for q in ("spec", "pto-isa")]
IDS = [f"{p}-{q}-{d.name}" for p, q, d, _ in CASES]


def run(platform, protocol, way, drop=None):
    # pto-isa on A5: a TPOP from a GM ring frees its slot itself, a TFREE after it frees twice (M21)
    a = args(way, drop, tfree=not (platform == "a5" and protocol == "pto-isa" and way is Direction.DIR_C2V_GM))
    res = ptopipe.run(cube, vector, a, platform=platform, protocol=protocol, sync="manual")
    return a, res


@pytest.mark.parametrize("platform,protocol,way,in_gm", CASES, ids=IDS)
def test_a_kernel_with_the_ring_events_is_clean_and_matches_numpy(platform, protocol, way, in_gm, no_hang):
    a, res = run(platform, protocol, way)
    np.testing.assert_array_equal(res["out"], golden(a))
    # a zero-copy pop writes its tile (isa.unwritten), the cube's TMATMUL its push
    assert not [w for w, _ in res.summary.leaks if "before anything wrote" in w], res.summary.leaks


#: the dropped pair -> (kernel, line of the later access = where, line of the earlier one, the event)
DROPS = {"m_fix": (cube, "push", "matmul", "(PIPE_M, PIPE_FIX"),
         "fix_m": (cube, "matmul", "push", "(PIPE_FIX, PIPE_M"),      # loop-carried: iteration 1
         "mte2_v": (vector, "add", "pop", "(PIPE_MTE2, PIPE_V")}


@pytest.mark.parametrize("drop", sorted(DROPS))
@pytest.mark.parametrize("platform,protocol,way,in_gm", CASES, ids=IDS)
def test_a_missing_ring_event_is_a_race_naming_both_instructions(drop, platform, protocol, way, in_gm, no_hang):
    if drop == "mte2_v" and not in_gm:
        pytest.skip("a zero-copy TPOP moves no byte: test_a_zero_copy_tpop_needs_no_event")
    with pytest.raises(DataRaceError) as ei:
        run(platform, protocol, way, drop)
    fn, later, earlier, event = DROPS[drop]
    e = ei.value
    assert e.where.endswith(f"test_ring_events.py:{line_of(fn, later)}"), str(e)
    assert f"test_ring_events.py:{line_of(fn, earlier)}" in e.details, str(e)
    assert f"set_flag{event}" in e.fix, e.fix
    assert e.findings[0]["kind"] == "pipe_race"


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_zero_copy_tpop_needs_no_event(protocol, no_hang):
    """A5's TPOP of a consumer-local ring only points the tile at its slot (TASSIGN): the
    producer core wrote the bytes, so the add may read them with no MTE2 -> V event."""
    a, res = run("a5", protocol, Direction.DIR_C2V, "mte2_v")
    np.testing.assert_array_equal(res["out"], golden(a))


def _store_popped(event):
    """A5 C2V ring in UB: the Vector core stores the tile it popped straight from its slot."""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
        acc = Tile(TileType.Acc, float32, M, N, addr=0)
        TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB)
        t = Tile(TileType.Vec, float32, H, N)
        TPOP(pipe, t, TILE_UP_DOWN)                       # popped
        if event:
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        TSTORE(gt(out, get_subblockid() * H * N, (H, N)), t)      # store-popped
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
        TFREE(pipe, TILE_UP_DOWN)
    return cube, vector


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_zero_copy_tpops_ready_wait_holds_only_the_vector_pipe(protocol, no_hang):
    """A5's ready wait on the C2V ring in UB is wait_intra_block(PIPE_V) (Consumer::wait): a
    TSTORE (MTE3) of the popped tile needs a V -> MTE3 event after the TPOP."""
    args = dict(out=np.full((M, N), 7, np.float32), fifo=gm_buffer(2 * SLOT))
    cube, vector = _store_popped(True)
    res = ptopipe.run(cube, vector, dict(args), platform="a5", protocol=protocol, sync="manual")
    np.testing.assert_array_equal(res.outputs["out"], np.zeros((M, N), np.float32))
    cube, vector = _store_popped(False)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, vector, dict(args), platform="a5", protocol=protocol, sync="manual")
    e = ei.value
    assert e.where.endswith(f"test_ring_events.py:{line_of(_store_popped, 'store-popped')}"), e.where
    assert f"test_ring_events.py:{line_of(_store_popped, 'popped')}" in e.details
    assert "set_flag(PIPE_V, PIPE_MTE3" in e.fix, e.fix


# ============================================================ a control ring (V2C)
def _ctrl_pipe(protocol, ctrl):
    if protocol == "spec":
        return TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)
    # pto-isa: a TMPipe with a CTRL_FIFO (no ctrl TPipe), which both Vector lanes push - its Cube
    # waits for both lanes' flags whatever the VecCubeRatio
    w = Tile(TileType.Vec, int32, 1, 8)
    return TMPipe(0, FIFOType.CTRL_FIFO, 4, 1, w, w)(ctrl)


def ctrl_words(platform, protocol, event):
    got = []

    def cube(ctrl):
        pipe = _ctrl_pipe(protocol, ctrl)
        for _ in range(3):
            got.append(TPOP(pipe))

    def vec(ctrl):
        pipe = _ctrl_pipe(protocol, ctrl)
        word = Tile(TileType.Vec, int32, 1, 8, addr=0)
        for i in range(3):
            TEXPANDS(word, 100 + i)                       # ctrl-write
            if event:
                set_flag(PIPE_V, PIPE_S, EVENT_ID0)
                wait_flag(PIPE_V, PIPE_S, EVENT_ID0)
            TPUSH(pipe, word)                             # ctrl-push

    ptopipe.run(cube, (vec, None) if protocol == "spec" else vec, dict(ctrl=gm_buffer(4 * 32)), platform=platform,
                protocol=protocol, sync="manual")
    return got, vec


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_control_push_reads_its_word_on_the_scalar_unit(platform, protocol, no_hang):
    """The control word is read by a scalar load: A2A3's library waits for PIPE_V first
    (``set_flag(PIPE_V, PIPE_S)`` in ``pushVec2CtrlFiFo``), A5's does not, so there the kernel
    needs the V -> S event after the TEXPANDS that writes the word; with it both are clean (and
    the next TEXPANDS may rewrite the word: the load has completed)."""
    assert ctrl_words(platform, protocol, True)[0] == [100, 101, 102]
    if platform == "a2a3":
        assert ctrl_words(platform, protocol, False)[0] == [100, 101, 102]
        return
    with pytest.raises(DataRaceError) as ei:
        ctrl_words(platform, protocol, False)
    e = ei.value
    vec = ctrl_words(platform, protocol, True)[1]
    assert e.where.endswith(f"test_ring_events.py:{line_of(vec, 'ctrl-push')}"), str(e)
    assert f"test_ring_events.py:{line_of(vec, 'ctrl-write')}" in e.details, str(e)
    assert "set_flag(PIPE_V, PIPE_S" in e.fix, e.fix


# ============================================================ a round trip through the other core
def _round_trip(late_read):
    """DIR_BOTH: the Cube pushes tile i (C2V), each Vector lane pops its half into a GM ring's
    staging slot, adds 1 and pushes it back (V2C); the Cube pops it and stores it.  The Vector
    has no reader -> MTE2 event for its staging slots: on A2A3 the TPOP of tile i + 2 (the
    same staging slot) waits for the Cube's push of it, which follows the Cube's pop of result
    i + 1, which follows the Vector's push of it, which its V -> MTE3 event orders after
    everything the Vector's V pipe did before - and wait_flag_dev holds the Vector's whole
    issue.  ``late_read``: the Vector reads tile i again after its push of result i + 1 (the
    tile is held until then), which that round trip does not order."""
    n = 4

    def cube(a, fifo, out):
        pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, RING_UB, 0x40000)
        a1 = Tile(TileType.Mat, float32, M, N, addr=0)
        acc = Tile(TileType.Acc, float32, M, N, addr=0)
        a0 = Tile(TileType.Left, float32, M, N, addr=0)
        eye = Tile(TileType.Right, float32, N, N, addr=0)
        e1 = Tile(TileType.Mat, float32, N, N, addr=0x10000)
        back = Tile(TileType.Mat, float32, M, N)
        TLOAD(e1, gt(a, n * M * N, (N, N)))
        set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1)
        wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1)
        TMOV(eye, e1)
        for i in range(n):
            TLOAD(a1, gt(a, i * M * N, (M, N)))
            set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
            wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
            TMOV(a0, a1)
            set_flag(PIPE_MTE1, PIPE_M, EVENT_ID0)
            wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID0)
            TMATMUL(acc, a0, eye)
            set_flag(PIPE_M, PIPE_FIX, EVENT_ID0)
            wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0)
            TPUSH(pipe, acc, TILE_UP_DOWN)
            TPOP(pipe, back, TILE_UP_DOWN)
            set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID2)     # A2A3: the pop loads L1 on MTE2
            wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID2)
            set_flag(PIPE_MTE1, PIPE_MTE3, EVENT_ID2)     # A5: its ready wait holds MTE1
            wait_flag(PIPE_MTE1, PIPE_MTE3, EVENT_ID2)
            TSTORE(gt(out, i * M * N, (M, N)), back)
            pipe_barrier(PIPE_ALL)
            TFREE(pipe, TILE_UP_DOWN)

    def vector(fifo, out2):
        pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, RING_UB, 0x40000)
        sub = get_subblockid()
        parts = [Tile(TileType.Vec, float32, H, N), Tile(TileType.Vec, float32, H, N)]
        v = Tile(TileType.Vec, float32, H, N, addr=0)
        w = Tile(TileType.Vec, float32, H, N, addr=0x1000)
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
        for i in range(n):
            part = parts[i % 2]
            TPOP(pipe, part, TILE_UP_DOWN)                # trip-pop
            set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
            wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
            wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
            TADDS(v, part, 1.0)
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
            TPUSH(pipe, v, TILE_UP_DOWN)
            set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
            if not late_read:
                TFREE(pipe, TILE_UP_DOWN)
            elif i:
                wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
                TMULS(w, parts[1 - i % 2], 2.0)           # trip-late-read
                set_flag(PIPE_V, PIPE_MTE3, EVENT_ID3)
                wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID3)
                TSTORE(gt(out2, ((i - 1) * M + sub * H) * N, (H, N)), w)
                set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
                TFREE(pipe, TILE_UP_DOWN)
        if late_read:
            TFREE(pipe, TILE_UP_DOWN)
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)
    return cube, vector, n


def _trip_args(n):
    x = np.random.default_rng(3).integers(-5, 6, (n * M, N)).astype(np.float32)
    return x, dict(a=np.concatenate([x, np.eye(N, dtype=np.float32)]), fifo=gm_buffer(4 * SLOT),
                   out=np.zeros_like(x), out2=np.zeros_like(x))


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_round_trip_through_the_other_core_orders_the_staging_slots_reuse(platform, protocol, no_hang):
    cube, vector, n = _round_trip(False)
    x, args = _trip_args(n)
    res = ptopipe.run(cube, vector, args, platform=platform, protocol=protocol, sync="manual")
    np.testing.assert_array_equal(res.outputs["out"], x + 1)


def test_a_read_the_round_trip_does_not_order_is_a_race_on_a2a3(no_hang):
    """The late read of tile i (after the push of result i + 1) and the TPOP of tile i + 2 into
    its staging slot: pto-isa's A2A3 TPOP sent tile i's free itself, so no cross-core chain
    follows the read - the race is reported."""
    cube, vector, n = _round_trip(True)
    x, args = _trip_args(n)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, vector, args, platform="a2a3", protocol="pto-isa", sync="manual")
    e = ei.value
    assert e.where.endswith(f"test_ring_events.py:{line_of(_round_trip, 'trip-pop')}"), str(e)
    assert f"test_ring_events.py:{line_of(_round_trip, 'trip-late-read')}" in e.details, str(e)



def _store_popped_then_free(wait_s: bool):
    """A5 C2V ring in UB, the Cube's n tiles through two slots: each Vector core stores the tile
    it popped straight from its slot, then (``wait_s``) waits for the store on PIPE_S before the
    TFREE."""
    def vector(bias, out, fifo, n, way, drop=None, tfree=True):
        pipe = TPipe(0, way, SLOT, 2)(fifo, RING_UB)
        t = Tile(TileType.Vec, float32, H, N)
        for i in range(n):
            TPOP(pipe, t, TILE_UP_DOWN)
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
            TSTORE(gt(out, i * M * N + get_subblockid() * H * N, (H, N)), t)
            if wait_s:
                set_flag(PIPE_MTE3, PIPE_S, EVENT_ID1)
                wait_flag(PIPE_MTE3, PIPE_S, EVENT_ID1)
            TFREE(pipe, TILE_UP_DOWN)                     # s-free
    return vector


def test_a_free_after_a_wait_into_the_scalar_pipe_follows_the_store_of_its_slot(no_hang):
    """pto-isa's A5 free of the UB ring is a SET on PIPE_V; an MTE3 -> S wait before the TFREE
    holds the core's issue until the store of the popped slot is done, so the free follows it
    (it was reported as the next push overwriting the slot under the store); without the wait
    it is that race."""
    a = args(Direction.DIR_C2V, n=4)
    res = ptopipe.run(cube, _store_popped_then_free(True), dict(a), platform="a5", protocol="pto-isa", sync="manual")
    np.testing.assert_array_equal(res["out"], golden(a) - np.tile(a["bias"], (4, 1)))
    fn = _store_popped_then_free(False)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, fn, dict(a), platform="a5", protocol="pto-isa", sync="manual")
    assert f"test_ring_events.py:{line_of(fn, 's-free')}" in str(ei.value), str(ei.value)
