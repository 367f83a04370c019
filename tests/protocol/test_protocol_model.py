"""The one protocol model: flag ids, SyncPeriod, credits and free signals come from the
channel's ``model`` (SpecModel / PtoIsaModel) for every API and every consumer of them
(binding, the ops, the run summary, the profile)."""
import importlib.util
import os

import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.pipe import PTO_ISA, SPEC
from ptopipe.errors import LeakError
from ptopipe.report import profile
from markers import line_of

HERE = os.path.basename(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


pytestmark = pytest.mark.usefixtures("no_hang")


def _load(name):
    path = os.path.join(ROOT, "examples", "scenarios", name + ".py")
    spec = importlib.util.spec_from_file_location(f"_pm_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _channels(res):
    return {ch.way: ch for ch in res.cluster.state.channels.values()}


# --- one flag-id rule for TPipe and *_initialize_pipe -------------------------------------------
def _s4_with(binder):
    """S4 (DIR_BOTH, SlotNum 4 per way) with its pipe bound by ``binder(fifo)``."""
    s4 = _load("s4_both_ways")
    s4._pipe = binder(s4)
    return s4


def _tpipe(s4):
    return lambda fifo: TPipe(0, DIR_BOTH, s4.SLOT, s4.DEPTH)(fifo, s4.RING_UB, s4.RING_L1)


def _init_api(s4):
    def bind(fifo):
        init = aic_initialize_pipe if is_cube() else aiv_initialize_pipe
        return init(DIR_BOTH, s4.SLOT, fifo, s4.RING_UB, s4.RING_L1)
    return bind


def _mixed(s4):
    def bind(fifo):       # the Cube uses the seed-003 API, the Vector cores a TPipe
        return (_init_api(s4) if is_cube() else _tpipe(s4))(fifo)
    return bind


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol,ids", [("pto-isa", {"C2V": (0, 1), "V2C": (2, 3)}),
                                          ("spec", {"C2V": (0, 0), "V2C": (4, 4)})])
@pytest.mark.parametrize("binder", [_tpipe, _init_api, _mixed])
def test_dir_both_flag_ids_are_the_same_through_every_api(platform, protocol, ids, binder):
    s4 = _s4_with(binder)
    sc = s4.SCENARIO
    args = sc.make_args(np.random.default_rng(0))
    res = ptopipe.run(sc.aic, sc.aiv, args, platform=platform, protocol=protocol)
    np.testing.assert_allclose(res["out"], sc.golden(args)["out"], rtol=1e-5)
    chans = _channels(res)
    for way, (ready, free) in ids.items():
        ch = chans[way]
        assert (ch.ready_id, ch.free_id) == (ready, free), way
        for p in ch.peers:
            assert ch.ready_flags[p][0].id == ready and ch.free_flags[p][0].id == free


def test_init_api_pipe_claims_pto_isa_free_flag():
    """pto-isa: a C2V pipe from aic_/aiv_initialize_pipe uses flags 0 (ready) and 1 (free), so
    a second pipe whose ready flag is 1 on the same link is a shared-flag error."""
    def cube(fifo, fifo2):
        aic_initialize_pipe(DIR_C2V, 1024, fifo)
        TPipe(1, DIR_V2C, 1024, 2)(fifo2)  # second

    def vec(fifo, fifo2):
        aiv_initialize_pipe(DIR_C2V, 1024, fifo)
        TPipe(1, DIR_V2C, 1024, 2)(fifo2)

    with pytest.raises(ptopipe.ConfigError, match="share") as ei:
        ptopipe.run(cube, (vec, None), dict(fifo=gm_buffer(8 * 1024), fifo2=gm_buffer(2 * 1024)),
                    protocol="pto-isa")
    assert ei.value.where.endswith(f"{HERE}:{line_of(cube, 'second')}")


def test_models_state_their_rules():
    cfg4 = TPipe(0, DIR_C2V, 1024, 4)
    assert SPEC.flag_ids(2, 1, 4) == (6, 6) and PTO_ISA.flag_ids(2, 1, 4) == (4, 5)
    assert SPEC.sync_period(cfg4) == 1 and PTO_ISA.sync_period(cfg4) == 2
    assert PTO_ISA.sync_period(TPipe(0, DIR_C2V, 1024, 4, sync_period=4)) == 4
    assert PTO_ISA.sync_period(TPipe(0, DIR_C2V, 1024, 2)) == 2
    assert SPEC.startup_credits(4) == 4 and PTO_ISA.startup_credits(4) == 0


# --- the report reads the protocol from the channel; counts in one unit --------------------------
T = 16
TSLOT = T * T * 4


def _tmpipe_kernels(depth, sync_t, fifo_type):
    """A TMPipe both Vector lanes serve (V2C1_VECS, the default: each pops its half of the rows;
    pto-isa's Cube waits for both lanes' flags whatever the ratio)."""
    H = T // 2

    def cube(x, fifo, n):
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        xl1 = Tile(TileType.Mat, float32, T, T, addr=0)
        xl0 = Tile(TileType.Left, float32, T, T, addr=0)
        eye = Tile(TileType.Right, float32, T, T, addr=0)
        eye.array[...] = np.eye(T, dtype=np.float32)
        pipe = TMPipe(0, fifo_type, depth, sync_t, acc, Tile(TileType.Vec, float32, H, T))(fifo, 0x4000, 0)
        for i in range(n):
            TLOAD(xl1, GlobalTensor(x.data() + i * T * T, (T, T)))
            TMOV(xl0, xl1)
            TMATMUL(acc, xl0, eye)
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vec(out, fifo, n):
        t = Tile(TileType.Vec, float32, H, T)
        o = Tile(TileType.Vec, float32, H, T, addr=0x20000)
        pipe = TMPipe(0, fifo_type, depth, sync_t, Tile(TileType.Acc, float32, T, T), t)(fifo, 0x4000, 0)
        for i in range(n):
            TPOP(pipe, t, TILE_UP_DOWN)
            TADDS(o, t, 1.0)
            TADDS(o, o, 1.0)          # a slow consumer: the ring fills up
            TSTORE(GlobalTensor(out.data() + i * T * T + get_subblockid() * H * T, (H, T)), o)
            TFREE(pipe, TILE_UP_DOWN)
    return cube, vec


def _mean_occupancy(res, sync, startup=0):
    """Time-averaged slots in use, worked out from the trace with ``sync`` slots per free SET
    (the first ``startup`` free SETs are the consumer's start-up credits, not releases):
    push k holds a slot from its start until the free SET that covers it (of every Vector lane
    that frees: the later of them)."""
    cl = res.cluster
    tr = [(c, name, s) for c, _p, name, s, _e, _a, _l in cl.trace]
    starts = [s for c, name, s in tr if c == cl.aic.index and name == "TPUSH"]
    lanes = {}
    for sender, flag, at in cl.signals:
        if flag.signal == "free":
            lanes.setdefault(sender, []).append(at)
    sets = [max(ts) for ts in zip(*(v[startup:] for v in lanes.values()))]
    ends = [sets[k // sync] if k // sync < len(sets) else cl.cycles for k in range(len(starts))]
    return sum(max(e, s) - s for s, e in zip(starts, ends)) / cl.cycles, starts, ends


@pytest.mark.parametrize("platform,fifo_type", [("a2a3", FIFOType.GM_FIFO), ("a5", FIFOType.VEC_FIFO)])
@pytest.mark.parametrize("sync_t", [1, 4])
def test_profile_occupancy_of_a_tmpipe_under_pto_isa(platform, fifo_type, sync_t):
    """pto-isa's TMPipe (a2a3/ and a5/ TPush.hpp) never reads FiFoSyncT: its constructor posts
    one free, every TPUSH waits, every release frees - one free SET releases one slot and at
    most one tile is in the ring however deep the FIFO."""
    n, depth = 12, 4
    cube, vec = _tmpipe_kernels(depth, sync_t, fifo_type)
    x = np.arange(n * T * T, dtype=np.float32).reshape(n * T, T)
    res = ptopipe.run(cube, vec, dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(depth * TSLOT), n=n),
                      platform=platform, protocol="pto-isa", trace=True)
    np.testing.assert_array_equal(res["out"], x + 2)
    ch = _channels(res)["C2V"]
    assert (ch.sync_period, ch.wait_every, ch.startup_credits) == (1, True, 1)
    expected, starts, ends = _mean_occupancy(res, 1, startup=1)
    pops = [s for c, _p, name, s, _e, _a, _l in res.cluster.trace if name == "TPOP"]
    assert all(e >= p for e, p in zip(ends, pops))       # no slot is released before its pop
    assert all(s >= e for s, e in zip(starts[1:], ends))  # push k+1 starts after tile k's free
    (ring,) = profile(res).rings
    assert ring.mean == pytest.approx(expected)
    assert ring.peak <= 1


def _summary_and_profile(name, variant, platform):
    sc = _load(name).SCENARIO
    res, _exp = sc.run(variant, platform, "spec", trace=True)
    pipes = {p["name"]: p for p in res.summary.pipes}
    rings = {r.name: r for r in profile(res).rings}
    assert pipes.keys() == rings.keys()
    return res, pipes, rings


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_run_summary_and_profile_count_a_c2v_ring_alike(platform):
    """C2V with two lanes: 8 tiles pushed by the Cube, each popped by both Vector cores."""
    res, pipes, rings = _summary_and_profile("s1_cv_split", "default", platform)
    (name,) = pipes
    p, r = pipes[name], rings[name]
    tiles = r.tiles
    assert tiles > 1
    assert (p["tiles"], p["pushes"], p["pops"], p["frees"], p["lanes"]) == (tiles, tiles, 2 * tiles, 2 * tiles, 2)
    assert (r.tiles, r.pushes, r.pops, r.lanes) == (tiles, tiles, 2 * tiles, 2)
    assert f"{tiles} tiles pushed ({tiles} TPUSH), {2 * tiles} TPOP, {2 * tiles} TFREE, 2 lanes" \
        in res.summary.format()
    assert f"{tiles} tiles pushed ({tiles} TPUSH), {2 * tiles} TPOP, 2 lanes" in profile(res).format()


def test_one_tile_is_counted_in_the_singular():
    def cube(fifo):
        TPUSH(TPipe(0, DIR_C2V, 1024, 2, peers=(0,))(fifo), Tile(TileType.Acc, float32, 8, 32, addr=0))

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, 1024, 2, peers=(0,))(fifo)
        TPOP(pipe, Tile(TileType.Vec, float32, 8, 32))
        TFREE(pipe)
    res = ptopipe.run(cube, (vector, None), dict(fifo=ptopipe.gm_buffer(2048)), trace=True)
    assert "1 tile pushed (1 TPUSH), 1 TPOP, 1 TFREE, 1 lane " in res.summary.format()
    assert "1 tile pushed (1 TPUSH), 1 TPOP, 1 lane" in profile(res).format()


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_run_summary_and_profile_count_a_v2c_ring_alike(platform):
    """V2C with two lanes: each tile is pushed in two parts (one per Vector core), popped once."""
    res, pipes, rings = _summary_and_profile("s3_vc_dequant", "default", platform)
    (name,) = pipes
    p, r = pipes[name], rings[name]
    tiles = r.tiles
    assert tiles > 1
    assert (p["tiles"], p["pushes"], p["pops"], p["frees"], p["lanes"]) == (tiles, 2 * tiles, tiles, tiles, 2)
    assert (r.tiles, r.pushes, r.pops, r.lanes) == (tiles, 2 * tiles, tiles, 2)
    assert f"{tiles} tiles pushed ({2 * tiles} TPUSH), {tiles} TPOP" in res.summary.format()


# --- the local staging ring ------------------------------------------------------------------------
SM, SK, SN = 32, 16, 8                   # an SMxSK tile then an SKxSN tile (SN < SM) on one ring
SSLOT = 2 * SM * SK * 4                 # larger than either tile
STAGE = 0x20000                         # the Cube's staging ring (A2A3) / V2C ring (A5) in L1


def _two_size_kernels(direction=DIR_V2C, a_addr=None, b_addr=None, after=None, free=True, before=None):
    """AIV0 pushes x (SMxSK) then w (SKxSN) through one V2C ring; the Cube pops both before
    freeing either (``free=False``: never - pto-isa on A5, where a tile TPOP from a GM ring
    frees the slot itself and a TFREE would free it again; ``free="early"``: x right after its
    TMOV, before w's pop) and stores x @ w.  ``before(out)`` runs on the Cube before the pops,
    ``after()`` at the end."""
    def cube(fifo, out):
        if before is not None:
            before(out)
        pipe = TPipe(0, direction, SSLOT, 2, peers=(0,))(fifo, 0, STAGE)
        xa = Tile(TileType.Mat, float32, SM, SK, addr=a_addr)
        wb = Tile(TileType.Mat, float32, SK, SN, addr=b_addr)
        a0 = Tile(TileType.Left, float32, SM, SK, addr=0)
        b0 = Tile(TileType.Right, float32, SK, SN, addr=0)
        acc = Tile(TileType.Acc, float32, SM, SN, addr=0)
        TPOP(pipe, xa)  # first pop
        if free == "early":
            TMOV(a0, xa)
            TFREE(pipe)
        TPOP(pipe, wb)  # second pop
        if free != "early":
            TMOV(a0, xa)
        TMOV(b0, wb)
        if free is True:
            TFREE(pipe)  # first free
            TFREE(pipe)
        elif free == "early":
            TFREE(pipe)
        TMATMUL(acc, a0, b0)
        TSTORE(out, acc)
        if after is not None:
            after()

    def vec(x, w, fifo):
        pipe = TPipe(0, direction, SSLOT, 2, peers=(0,))(fifo, 0, STAGE)
        xt = Tile(TileType.Vec, float32, SM, SK, addr=0)
        wt = Tile(TileType.Vec, float32, SK, SN, addr=0x4000)
        TLOAD(xt, x)
        TPUSH(pipe, xt)
        TLOAD(wt, w)
        TPUSH(pipe, wt)
    return cube, (vec, None)


def _two_size_args():
    rng = np.random.default_rng(3)
    return dict(x=rng.integers(-4, 5, (SM, SK)).astype(np.float32),
                w=rng.integers(-4, 5, (SK, SN)).astype(np.float32),
                out=np.zeros((SM, SN), np.float32), fifo=gm_buffer(2 * SSLOT))


@pytest.mark.parametrize("platform,direction", [("a2a3", DIR_V2C), ("a5", DIR_V2C_GM), ("a5", DIR_V2C)])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_staging_ring_carries_tiles_of_different_sizes(platform, direction, protocol):
    """(A5, DIR_V2C, pto-isa: the ring is in the Cube's L1 and SyncPeriod 2; both TFREEs after
    the second TPOP test its index - pto-isa's free index - and each sends a credit where the
    producer counts on one for the two: a leak at exit, naming the first TFREE.  Freeing x
    before w's TPOP is clean.)"""
    a5_gm_pto_isa = (platform, direction, protocol) == ("a5", DIR_V2C_GM, "pto-isa")
    a5_l1_pto_isa = (platform, direction, protocol) == ("a5", DIR_V2C, "pto-isa")
    args = _two_size_args()
    if a5_gm_pto_isa:               # the TFREEs would send two frees too many: reported at exit
        with pytest.raises(LeakError) as ei:
            ptopipe.run(*_two_size_kernels(direction), args, platform=platform, protocol=protocol)
        assert "frees the slot a second time" in str(ei.value), str(ei.value)
    if a5_l1_pto_isa:
        with pytest.raises(LeakError) as ei:
            ptopipe.run(*_two_size_kernels(direction), args, platform=platform, protocol=protocol)
        free = line_of(_two_size_kernels, "first free")
        assert f":{free} released tile #0 after the TPOP of tile #1" in ei.value.what, ei.value.what
    cube, vec = _two_size_kernels(direction, free=False if a5_gm_pto_isa else "early" if a5_l1_pto_isa else True)
    res = ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res["out"], args["x"] @ args["w"])


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_tiles_without_address_popped_alternately_are_staged_again(platform, protocol):
    """Found by the fuzz: a tile that got its address from an earlier TPOP's staging must be
    staged again by its next TPOP (it used to keep its old staging slot: a correct kernel was
    reported as a use after free once another tile had used that slot)."""
    slot = 8 * 8 * 4

    def cube(a, fifo):
        pipe = TPipe(0, DIR_C2V, slot, 1, 1, peers=(0,))(fifo, 0x20000, 0)
        m, acc = Tile(TileType.Mat, float32, 8, 8, addr=0), Tile(TileType.Acc, float32, 8, 8, addr=0)
        lt, rt = Tile(TileType.Left, float32, 8, 8, addr=0), Tile(TileType.Right, float32, 8, 8, addr=0)
        TLOAD(m, a)
        TMOV(lt, m)
        TMOV(rt, m)
        for i in range(4):
            TMATMUL(acc, lt, rt)
            TPUSH(pipe, acc)

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, slot, 1, 1, peers=(0,))(fifo, 0x20000, 0)
        ys = [Tile(TileType.Vec, float32, 8, 8), Tile(TileType.Vec, float32, 8, 8)]
        o = Tile(TileType.Vec, float32, 8, 8, addr=0)
        for i in range(4):
            TPOP(pipe, ys[i % 2])
            TMULS(o, ys[i % 2], float(i + 1))
            TFREE(pipe)
            TSTORE(GlobalTensor(out.data() + i * 64, (8, 8)), o)

    a = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    res = ptopipe.run(cube, (vector, None), dict(a=a, out=np.zeros((32, 8), np.float32),
                                                 fifo=ptopipe.gm_buffer(slot)),
                      platform=platform, protocol=protocol)
    want = np.concatenate([(a @ a) * (i + 1) for i in range(4)])
    np.testing.assert_allclose(res["out"], want, rtol=1e-6)


@pytest.mark.parametrize("off,overwritten", [(SSLOT, True), (SSLOT + SSLOT // 2, False)])
def test_staging_ring_slots_are_slot_size_apart(off, overwritten):
    """The staging ring is LocalSlotNum (2) x SlotSize bytes, however small the popped tiles: the
    second pop lands SlotSize after the first.  A Cube tile there, written before the pops and
    read after them, lost its value (a MemoryConflictError at the read, naming the pop); one
    past the popped tile's bytes kept it (the ring's bytes may hold a tile the ring does not
    write)."""
    placed = []

    def place(out):
        t = Tile(TileType.Mat, float32, 8, 8, addr=STAGE + off)  # in the ring
        TLOAD(t, GlobalTensor(out.data(), (8, 8)))
        placed.append(t)

    def read():
        TMOV(Tile(TileType.Left, float32, 8, 8, addr=0x8000), placed[0])  # read it

    cube, vec = _two_size_kernels(after=read, before=place)
    if not overwritten:
        ptopipe.run(cube, vec, _two_size_args(), platform="a2a3")
        return
    # overwritten but never read again: a dead tile's bytes, no error
    ptopipe.run(*_two_size_kernels(before=place), _two_size_args(), platform="a2a3")
    placed.clear()
    with pytest.raises(ptopipe.MemoryConflictError, match="local staging") as ei:
        ptopipe.run(cube, vec, _two_size_args(), platform="a2a3")
    assert ei.value.where.endswith(f"{HERE}:{line_of(read, 'read it')}")
    assert f"{HERE}:{line_of(cube, 'second pop')}" in ei.value.what
    assert f"{HERE}:{line_of(place, 'in the ring')}" in ei.value.details


@pytest.mark.parametrize("platform,direction", [("a2a3", DIR_V2C), ("a5", DIR_V2C_GM)])
def test_pop_into_a_held_tile_is_an_error_naming_both_pops(platform, direction):
    cube, vec = _two_size_kernels(direction, a_addr=0x0, b_addr=0x100)
    with pytest.raises(ptopipe.ProtocolError, match="overlaps") as ei:
        ptopipe.run(cube, vec, _two_size_args(), platform=platform)
    err = ei.value
    first, second = f"{HERE}:{line_of(cube, 'first pop')}", f"{HERE}:{line_of(cube, 'second pop')}"
    assert err.where.endswith(second)
    assert first in str(err) and second in str(err)


# --- bad input: the two ends of a pipe use different split modes ----------------------------------
# 16 x 32 tiles: A5's LEFT_RIGHT push of an Acc takes a multiple of 32 columns
ESLOT = 16 * 32 * 4


def _split_pair(way, push_split, pop_split, platform, free_split=None):
    """One tile through a C2V or V2C pipe, pushed with ``push_split`` and popped with
    ``pop_split`` (tile shapes follow each end's own split)."""
    d = DIR_C2V if way == "C2V" else DIR_V2C
    # two Vector cores pushing whole tiles would write the same V2C slot bytes: AIV0 alone
    peers = (0,) if way == "V2C" and push_split == TILE_NO_SPLIT else (0, 1)

    def part(split, rows=16, cols=32):
        return {TILE_UP_DOWN: (rows // 2, cols), TILE_LEFT_RIGHT: (rows, cols // 2)}.get(split, (rows, cols))

    def cube(fifo):
        pipe = TPipe(0, d, ESLOT, 2, peers=peers)(fifo, 0x10000, 0x10000)
        if way == "C2V":
            TPUSH(pipe, Tile(TileType.Acc, float32, 16, 32, addr=0), push_split)  # push
        else:
            TPOP(pipe, Tile(TileType.Mat, float32, 16, 32), pop_split)  # pop
            if free_split is None:
                TFREE(pipe)
            else:
                TFREE(pipe, free_split)  # cube-free

    def vec(fifo):
        if get_subblockid() not in peers:
            return
        pipe = TPipe(0, d, ESLOT, 2, peers=peers)(fifo, 0x10000, 0x10000)
        if way == "C2V":
            t = Tile(TileType.Vec, float32, *part(pop_split))
            TPOP(pipe, t, pop_split)  # pop
            if free_split is None:
                TFREE(pipe)
            else:
                TFREE(pipe, t, free_split)  # free
        else:
            TPUSH(pipe, Tile(TileType.Vec, float32, *part(push_split), addr=0), push_split)  # push
    return cube, vec


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("way,push_split,pop_split", [
    ("V2C", TILE_UP_DOWN, TILE_NO_SPLIT),       # two halves popped as one unsplit tile
    ("V2C", TILE_NO_SPLIT, TILE_UP_DOWN),
    ("V2C", TILE_LEFT_RIGHT, TILE_UP_DOWN),
    ("C2V", TILE_NO_SPLIT, TILE_UP_DOWN),       # a whole tile popped as halves
    ("C2V", TILE_UP_DOWN, TILE_NO_SPLIT),
    ("C2V", TILE_LEFT_RIGHT, TILE_UP_DOWN)])
def test_ends_with_different_split_modes_are_reported_naming_both_lines(platform, protocol, way, push_split,
                                                                        pop_split):
    if (platform, way, push_split) == ("a2a3", "C2V", TILE_NO_SPLIT):
        return          # a GM ring: each lane pops its part of the whole tile (the test below)
    cube, vec = _split_pair(way, push_split, pop_split, platform)
    with pytest.raises(ptopipe.ProtocolError, match="split") as ei:
        ptopipe.run(cube, vec, dict(fifo=gm_buffer(2 * ESLOT)), platform=platform, protocol=protocol)
    err = ei.value
    push_fn, pop_fn = (cube, vec) if way == "C2V" else (vec, cube)
    push, pop = f"{HERE}:{line_of(push_fn, 'push')}", f"{HERE}:{line_of(pop_fn, 'pop')}"
    two_lanes = not (way == "V2C" and push_split == TILE_NO_SPLIT)
    cube_nosplit = TILE_NO_SPLIT == (push_split if way == "C2V" else pop_split)
    if platform == "a5" and two_lanes and cube_nosplit:
        # A5 (spec and pto-isa): a NO_SPLIT transfer has one lane (AIV0): the Cube's NO_SPLIT end, which
        # runs first, makes the pipe's transfers AIV0's, and the Vector core's split end is
        # reported at its own line, naming the NO_SPLIT one's (docs/protocols.md); a Vector
        # core's NO_SPLIT pop of a split push is the split mismatch below
        nosplit, split = (push, pop) if push_split == TILE_NO_SPLIT else (pop, push)
        assert err.where.endswith(split) and f"{nosplit} made this pipe's transfers AIV0's alone" in err.what
        return
    if platform == "a5" and way == "C2V" and pop_split == TILE_NO_SPLIT and "on AIV1" in err.what:
        # AIV1 at its NO_SPLIT pop before the Cube's split push: not the one lane (the schedule
        # decides whether this or AIV0's split mismatch comes first; both at the pop)
        assert err.where.endswith(pop) and "a NO_SPLIT transfer has one lane, AIV0" in err.what
        return
    assert err.where.endswith(pop)
    assert push in str(err) and pop in str(err)
    assert push_split.name in str(err) and pop_split.name in str(err)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("pop_split", [TILE_UP_DOWN, TILE_LEFT_RIGHT])
def test_a2a3_unsplit_c2v_push_is_popped_by_each_lane_as_its_part(protocol, pop_split):
    """A2A3's C2V ring is in GM and holds the Cube's whole tile whatever its split: a
    TILE_NO_SPLIT push popped UP_DOWN / LEFT_RIGHT gives each Vector core its part (pto-isa's
    pushAcc2GMFiFo; its TPUSH and TPOP pages pair these forms, and ptoas accepts them)."""
    rows, cols = (8, 32) if pop_split == TILE_UP_DOWN else (16, 16)

    def cube(x, w, out, fifo):
        pipe = TPipe(0, DIR_C2V, ESLOT, 2)(fifo, 0x10000, 0x10000)
        x1, w1 = Tile(TileType.Mat, float32, 16, 16, addr=0), Tile(TileType.Mat, float32, 16, 32, addr=0x400)
        x0, w0 = Tile(TileType.Left, float32, 16, 16, addr=0), Tile(TileType.Right, float32, 16, 32, addr=0)
        acc = Tile(TileType.Acc, float32, 16, 32, addr=0)
        TLOAD(x1, x)
        TLOAD(w1, w)
        TMOV(x0, x1)
        TMOV(w0, w1)
        TMATMUL(acc, x0, w0)
        TPUSH(pipe, acc, TILE_NO_SPLIT)

    def vec(x, w, out, fifo):
        sub = get_subblockid()
        pipe = TPipe(0, DIR_C2V, ESLOT, 2)(fifo, 0x10000, 0x10000)
        t = Tile(TileType.Vec, float32, rows, cols)
        TPOP(pipe, t, pop_split)
        off = sub * rows * 32 if pop_split == TILE_UP_DOWN else sub * cols
        TSTORE(GlobalTensor(out.data() + off, (rows, cols), (32, 1)), t)
        TFREE(pipe, t, pop_split)
    rng = np.random.default_rng(8)
    x, w = rng.integers(-3, 4, (16, 16)).astype(np.float32), rng.integers(-3, 4, (16, 32)).astype(np.float32)
    res = ptopipe.run(cube, vec, dict(x=x, w=w, out=np.zeros((16, 32), np.float32), fifo=gm_buffer(2 * ESLOT)),
                      platform="a2a3", protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], x @ w)
    assert not res.summary.leaks


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_matching_split_modes_pass(platform):
    for way in ("C2V", "V2C"):
        cube, vec = _split_pair(way, TILE_UP_DOWN, TILE_UP_DOWN, platform, free_split=TILE_UP_DOWN)
        ptopipe.run(cube, vec, dict(fifo=gm_buffer(2 * ESLOT)), platform=platform)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_cube_tfree_must_tell_no_split_from_split_as_its_tpop(platform):
    """pto-isa's Cube free of a V2C slot sets AIV1's flag too for a split, AIV0's alone for
    TILE_NO_SPLIT (``setIntraBlockBySplit``): a TILE_NO_SPLIT TFREE of a split TPOP is an
    error at the TFREE naming the TPOP (on A2A3 too: the same kernel hangs on A5)."""
    cube, vec = _split_pair("V2C", TILE_UP_DOWN, TILE_UP_DOWN, platform, free_split=TILE_NO_SPLIT)
    with pytest.raises(ptopipe.ProtocolError, match="TFREE") as ei:
        ptopipe.run(cube, vec, dict(fifo=gm_buffer(2 * ESLOT)), platform=platform)
    err = ei.value
    pop, free = f"{HERE}:{line_of(cube, 'pop')}", f"{HERE}:{line_of(cube, 'cube-free')}"
    assert err.where.endswith(free)
    assert pop in str(err) and "TILE_NO_SPLIT" in str(err) and "TILE_UP_DOWN" in str(err)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("way,free_split", [("C2V", TILE_LEFT_RIGHT), ("C2V", TILE_NO_SPLIT),
                                            ("V2C", TILE_LEFT_RIGHT)])
def test_a_tfree_of_a_split_pto_isa_does_not_tell_apart_runs(platform, way, free_split):
    """pto-isa's free tells no split from split only, and only in the Cube's free: another
    split of the same kind, or any split in a Vector core's free, releases the slot alike."""
    cube, vec = _split_pair(way, TILE_UP_DOWN, TILE_UP_DOWN, platform, free_split=free_split)
    res = ptopipe.run(cube, vec, dict(fifo=gm_buffer(2 * ESLOT)), platform=platform)
    assert [p["tiles"] for p in res.summary.pipes] == [1]


def _pops_frees(frees: int):
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, 1024, 2)(fifo, 0x10000, 0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0)
        for _ in range(3):
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, 1024, 2)(fifo, 0x10000, 0)
        t = Tile(TileType.Vec, float32, 8, 16)
        for i in range(3):
            TPOP(pipe, t, TILE_UP_DOWN)
            if i < frees:
                TFREE(pipe, t, TILE_UP_DOWN)
    return cube, vector


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a2a3", "spec"), ("a5", "pto-isa")])
def test_the_summary_counts_tfree_instructions_where_the_tpop_frees_the_slot(platform, protocol):
    """pto-isa's A2A3 tile TPOP frees its GM slot itself: the summary still counts the TFREEs
    the kernel made (2 per lane here, one TPOP left without), not the slots released."""
    cube, vector = _pops_frees(2)
    try:
        res = ptopipe.run(cube, (vector, vector), dict(fifo=ptopipe.gm_buffer(2 * 1024)), platform=platform,
                          protocol=protocol)
    except ptopipe.PtoPipeError as e:        # elsewhere a slot never freed is a leak
        assert (platform, protocol) != ("a2a3", "pto-isa"), e
        return
    assert (platform, protocol) == ("a2a3", "pto-isa")
    (p,) = res.summary.pipes
    assert (p["pops"], p["frees"]) == (6, 4)
    assert "6 TPOP, 4 TFREE" in res.summary.format()


def test_a_tfree_without_a_split_frees_with_the_librarys_default_per_platform():
    """pto-isa's TFREE<Pipe>(pipe) / TFREE(pipe): A2A3's is a no-op (no split of its own), A5's
    is Consumer::free's default TILE_UP_DOWN on every call, the CPU simulator's TILE_NO_SPLIT.
    Only the Cube consumer's free depends on the split on the device: a TILE_UP_DOWN free of a
    TILE_NO_SPLIT V2C tile also credits AIV1; the simulator's no-split free of a split tile is
    AIV0's alone."""
    from types import SimpleNamespace
    from ptopipe.arch.vocab import C2V, V2C, Protocol, TileSplitAxis as S
    from ptopipe.protocol.model import model_for
    a2a3, a5 = model_for(Protocol.PTO_ISA, "a2a3"), model_for(Protocol.PTO_ISA, "a5")
    sim = model_for(Protocol.PTO_ISA_CPUSIM, "a5")
    assert (a2a3.unsplit_free, a2a3.unsplit_free_every) == (None, False)
    assert (a5.unsplit_free, a5.unsplit_free_every) == (S.TILE_UP_DOWN, True)
    assert model_for(Protocol.SPEC, "a5").unsplit_free is None and sim.unsplit_free is S.TILE_NO_SPLIT
    c2v, v2c = SimpleNamespace(way=C2V), SimpleNamespace(way=V2C)
    assert a5.unsplit_free_error(c2v, S.TILE_NO_SPLIT) is None          # the Vector sets one flag
    assert a5.unsplit_free_error(v2c, S.TILE_LEFT_RIGHT) is None        # a split either way: both lanes
    why, fix = a5.unsplit_free_error(v2c, S.TILE_NO_SPLIT)
    assert "TILE_UP_DOWN" in why and "AIV1's free flag" in why
    assert fix == "give TFREE the split of its TPOP: TFREE<Pipe, TileSplitAxis::TILE_NO_SPLIT>(pipe)"
    assert sim.unsplit_free_error(c2v, S.TILE_NO_SPLIT) is None
    assert "AIV1 frees nothing" in sim.unsplit_free_error(c2v, S.TILE_UP_DOWN)[0]
    assert a2a3.unsplit_free_error(v2c, S.TILE_NO_SPLIT) is None
