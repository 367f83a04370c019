"""Tile layouts (ND / NZ ... as a tile attribute, checked across rings, converted by TMOV)
and empty valid regions (the no-split lane-1 replay: no data moves, the handshake does),
on both platforms and both protocols: correct kernels clean with numpy-exact results,
broken ones reported with the error class and the exact line."""
import numpy as np
import pytest

from ptopipe import DeadlockError, KernelError, ProtocolError
from ptopipe.errors import LeakError
from ptopipe.isa import *
from ptopipe.arch import get_platform
from ptopipe.arch.vocab import DEFAULT_LAYOUT

from cube_parts import square_acc
from markers import line_of

COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
T = 16
SLOT = T * T * 4
RING_UB, RING_L1 = 0x8000, 0x40000


def _line(err) -> int:
    return int(err.where.rpartition(":")[2])


def _one_lane_nosplit(platform, protocol, run_it, lines) -> bool:
    """A5 (spec and pto-isa): a NO_SPLIT transfer has one lane (AIV0), so AIV1's replay of the
    A2A3 handshakes is reported at its first transfer (docs/protocols.md)."""
    if platform != "a5":
        return False
    with pytest.raises(ProtocolError) as ei:
        run_it()
    assert "NO_SPLIT transfer has one lane" in ei.value.what and _line(ei.value) in lines, str(ei.value)
    return True


# -- the vocabulary -------------------------------------------------------------------------
def test_layout_names_and_defaults():
    assert TileLayout.of(BLayout.ColMajor, SLayout.RowMajor) is TileLayout.NZ
    assert TileLayout.of(BLayout.RowMajor, SLayout.NoneBox) is TileLayout.ND
    assert TileLayout.NZ.fractal and not TileLayout.DN.fractal
    # pto-isa: Vec / Mat default to the Tile template's RowMajor / NoneBox; the Cube's
    # operand tiles are fractal (TileLeft ZZ on A2A3, TileRight ZN, TileAcc NZ)
    got = {tt: Tile(tt, float32, T, T).layout for tt in (TileType.Vec, TileType.Mat, TileType.Left,
                                                          TileType.Right, TileType.Acc)}
    assert got == {TileType.Vec: TileLayout.ND, TileType.Mat: TileLayout.ND, TileType.Left: TileLayout.ZZ,
                   TileType.Right: TileLayout.ZN, TileType.Acc: TileLayout.NZ}
    assert all(got[tt] is DEFAULT_LAYOUT[tt] for tt in got)
    t = Tile(TileType.Mat, float32, T, T, blayout=BLayout.ColMajor, slayout=SLayout.RowMajor)
    assert t.layout is TileLayout.NZ and "NZ" in t.describe()
    assert Tile(TileType.Mat, float32, T, T, blayout=BLayout.ColMajor).layout is TileLayout.DN
    with pytest.raises(KernelError, match="not a tile layout"):
        Tile(TileType.Mat, float32, T, T, blayout=BLayout.ColMajor, slayout=SLayout.ColMajor)
    with pytest.raises(KernelError, match="contradicts"):
        Tile(TileType.Mat, float32, T, T, layout=TileLayout.NZ, blayout=BLayout.RowMajor)


# -- V2C into an NZ Mat tile: correct with a TMOV, broken without ---------------------------------
def nz_cube(a, out, fifo, convert):
    pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0, RING_L1)
    a_l1 = Tile(TileType.Mat, float32, T, T, addr=0x0)
    a_l0 = Tile(TileType.Left, float32, T, T, addr=0x0)
    b_l0 = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    b = Tile(TileType.Mat, float32, T, T, layout=TileLayout.NZ)
    TLOAD(a_l1, a)
    TMOV(a_l0, a_l1)
    for k in range(3):
        TPOP(pipe, b)                                   # nz-pop
        TMOV(b_l0, b)
        TFREE(pipe)
        TMATMUL(acc, a_l0, b_l0)
        TSTORE(GlobalTensor(out.data() + k * T * T, (T, T)), acc)


def nz_vector(x, fifo, convert):
    pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T, T, addr=0x0)
    nz = Tile(TileType.Vec, float32, T, T, addr=0x1000, layout=TileLayout.NZ)
    for k in range(3):
        TLOAD(v, GlobalTensor(x.data() + k * T * T, (T, T)))
        TADDS(v, v, float(k))
        if convert:
            TMOV(nz, v)                                 # ND -> NZ: the matrix is kept
            TPUSH(pipe, nz)                             # nz-push
        else:
            TPUSH(pipe, v)                              # nd-push


def _nz_args(rng):
    return dict(a=rng.integers(-4, 5, (T, T)).astype(np.float32),
                x=rng.integers(-4, 5, (3 * T, T)).astype(np.float32),
                out=np.zeros((3 * T, T), np.float32), fifo=gm_buffer(2 * SLOT))


#: pto-isa's A2A3 V2C TPUSH TSTOREs the Vec tile into an ND GlobalTensor over the GM slot
#: (a2a3/TPush.hpp pushVec2GMFiFo), which refuses an NZ Vec tile
NZ_PUSH_REFUSED = {("a2a3", q): "A2A3 pushes a Vec tile with TSTORE to an ND GM slot: an NZ tile is refused"
                   for q in ("spec", "pto-isa")}


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_v2c_nz_with_tmov_is_clean_and_exact(platform, protocol, no_hang):
    args = _nz_args(np.random.default_rng(1))
    if (platform, protocol) in NZ_PUSH_REFUSED:
        with pytest.raises(KernelError) as e:
            run(nz_cube, (nz_vector, None), dict(args, convert=True), platform=platform, protocol=protocol)
        assert ("TPUSH of the NZ tile" in e.value.what and "an ND GM tensor" in e.value.what
                and "TSTORE of a Vec tile on A2A3 moves only ND->ND, DN->DN, NZ->NZ" in e.value.what)
        assert e.value.where.endswith(f":{line_of(nz_vector, 'nz-push')}")
        return
    r = run(nz_cube, (nz_vector, None), dict(args, convert=True), platform=platform, protocol=protocol)
    want = np.concatenate([args["a"] @ (args["x"][k * T:(k + 1) * T] + k) for k in range(3)])
    np.testing.assert_array_equal(r.outputs["out"], want)
    assert not r.summary.leaks


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_v2c_nd_push_into_nz_pop_names_both_lines(platform, protocol, no_hang):
    args = _nz_args(np.random.default_rng(2))
    if platform == "a2a3":
        # the GM ring holds ND rows and the Cube's TPOP TLOADs them into its NZ tile,
        # converting (pto-isa a2a3 popMatTileFromGMFiFo): clean and exact
        r = run(nz_cube, (nz_vector, None), dict(args, convert=False), platform=platform, protocol=protocol)
        want = np.concatenate([args["a"] @ (args["x"][k * T:(k + 1) * T] + k) for k in range(3)])
        np.testing.assert_array_equal(r.outputs["out"], want)
        return
    with pytest.raises(ProtocolError) as ei:
        run(nz_cube, (nz_vector, None), dict(args, convert=False), platform=platform, protocol=protocol)
    err = ei.value
    assert _line(err) == line_of(nz_cube, "nz-pop")
    assert f":{line_of(nz_vector, 'nd-push')}" in str(err)
    assert "NZ" in err.what and "ND" in err.what and "TMOV" in err.fix


# -- C2V: the FIX pipe writes ND; an NZ Vec consumer is an error ----------------------------------
def c2v_cube(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    TPUSH(pipe, acc)                                    # acc-push


def c2v_vector(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T, layout=TileLayout.NZ)
    TPOP(pipe, t)                                       # nz-vec-pop
    TFREE(pipe)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_c2v_pop_into_nz_vec_is_reported(platform, protocol, no_hang):
    """On A5 the slot holds the pushed NZ accumulator, which an NZ Vec tile may not read; on
    A2A3 pto-isa's TPOP TLOADs the GM slot as an ND tensor, which it refuses for an NZ Vec
    tile (before any layout comparison)."""
    want = KernelError if platform == "a2a3" else ProtocolError
    with pytest.raises(want) as ei:
        run(c2v_cube, (c2v_vector, None), dict(fifo=gm_buffer(2 * SLOT)), platform=platform, protocol=protocol)
    assert _line(ei.value) == line_of(c2v_vector, "nz-vec-pop")
    if platform == "a2a3":
        assert "TPOP of the NZ tile" in ei.value.what and "TLOAD of a Vec tile on A2A3" in ei.value.what
        return
    assert f":{line_of(c2v_cube, 'acc-push')}" in str(ei.value)


def test_tmov_between_layouts_keeps_the_matrix():
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)

    def vec(x, out):
        nd = Tile(TileType.Vec, float32, T, T, addr=0x0)
        nz = Tile(TileType.Vec, float32, T, T, addr=0x1000, layout=TileLayout.NZ)
        back = Tile(TileType.Vec, float32, T, T, addr=0x2000)
        TLOAD(nd, x)
        TMOV(nz, nd)
        TMOV(back, nz)
        TSTORE(out, back)
    r = run(None, (vec, None), dict(x=x, out=np.zeros_like(x)))
    np.testing.assert_array_equal(r.outputs["out"], x)


# -- empty valid regions: the no-split lane-1 replay ---------------------------------------------
def replay_cube(x, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)          # lanes AIV0 and AIV1
    a = Tile(TileType.Mat, float32, T, T, addr=0x0)
    left = Tile(TileType.Left, float32, T, T, addr=0x0)
    right = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    TLOAD(a, x)
    TMOV(left, a)
    TMOV(right, a)
    for i in range(tiles):
        TMATMUL(acc, left, right)
        TPUSH(pipe, acc, TILE_NO_SPLIT)                 # replay-push


def replay_vector(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    m = Tile(TileType.Vec, float32, T, 8, addr=0x1000)
    if get_subblockid() == 1:                           # lane 1: same handshakes, no data
        t.SetValid(0, 0)
        o.SetValid(0, 0)
        m.SetValid(0, 0)
    for i in range(tiles):
        TPOP(pipe, t, TILE_NO_SPLIT)                    # replay-pop
        TMULS(o, t, 2.0)
        TROWMAX(m, t)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


def _replay_args(tiles, rng):
    x = rng.integers(-3, 4, (T, T)).astype(np.float32)
    return dict(x=x, out=np.zeros((tiles * T, T), np.float32), fifo=gm_buffer(2 * SLOT), tiles=tiles)


def _lane0_transfers(platform, protocol, args) -> bool:
    """A5 (spec and pto-isa): the Cube's NO_SPLIT transfers are AIV0's alone, so a launch
    without AIV1 runs clean there (the pipe's constructor and destructor leave AIV1 nothing to
    wait for)."""
    if platform != "a5":
        return False
    r = run(replay_cube, (replay_vector, None), args, platform=platform, protocol=protocol)
    tiles = args["tiles"]
    np.testing.assert_array_equal(r.outputs["out"], np.tile(args["x"] @ args["x"] * 2, (tiles, 1)))
    (p,) = r.summary.pipes
    assert p["pops"] == p["frees"] == tiles
    return True


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("tiles", [1, 5])
def test_c2v_no_split_lane1_replay_is_clean_and_exact(platform, protocol, tiles, no_hang):
    args = _replay_args(tiles, np.random.default_rng(3))
    if _one_lane_nosplit(platform, protocol, lambda: run(replay_cube, replay_vector, args, platform=platform,
                                                         protocol=protocol), {line_of(replay_vector, "replay-pop")}):
        return
    r = run(replay_cube, replay_vector, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(r.outputs["out"], np.tile(args["x"] @ args["x"] * 2, (tiles, 1)))
    aiv1 = r.summary.cores["AIV1"]
    # no data moved or computed: AIV1's V pipe only signals its TFREEs (A5: a UB ring's free
    # is set from PIPE_V, ProtocolModel.free_pipe), one flag op each
    flag_v = tiles * get_platform(platform).costs.flag_op if platform == "a5" else 0
    assert aiv1["busy"]["V"] == flag_v and aiv1["busy"]["MTE3"] == 0
    assert r.summary.cores["AIV0"]["busy"]["V"] > 0
    (p,) = r.summary.pipes
    assert p["pops"] == p["frees"] == 2 * tiles                        # both lanes in every handshake


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_c2v_lane1_not_dispatched_is_named(platform, protocol, no_hang):
    args = _replay_args(5, np.random.default_rng(4))
    if _lane0_transfers(platform, protocol, args):
        return
    with pytest.raises(DeadlockError) as ei:
        run(replay_cube, (replay_vector, None), args, platform=platform, protocol=protocol)
    err = ei.value
    assert _line(err) == line_of(replay_cube, "replay-push")
    assert "AIV1 never takes part" in err.what and "dispatches only AIV0" in err.what
    assert "SetValid(0, 0)" in err.fix
    (lane,) = [f for f in err.findings if f["kind"] == "absent_lane"]
    assert lane["core"] == "AIV1" and lane["signal"] == "free"


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_lane1_missing_without_wrap_is_a_leak_naming_the_lane(platform, no_hang):
    # pto-isa: one push never waits for a free, so the missing lane shows at kernel end
    args = _replay_args(1, np.random.default_rng(5))
    if _lane0_transfers(platform, "pto-isa", args):
        return
    with pytest.raises(LeakError) as ei:
        run(replay_cube, (replay_vector, None), args, platform=platform, protocol="pto-isa")
    assert _line(ei.value) == line_of(replay_cube, "replay-push")
    assert "AIV1 never popped it (AIV1 never binds the pipe" in ei.value.what


def v2c_cube(a, out, fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)           # lanes AIV0 and AIV1
    a_l1 = Tile(TileType.Mat, float32, T, T, addr=0x0)
    a_l0 = Tile(TileType.Left, float32, T, T, addr=0x0)
    b_l0 = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    b = Tile(TileType.Mat, float32, T, T)
    TLOAD(a_l1, a)
    TMOV(a_l0, a_l1)
    for k in range(3):
        TPOP(pipe, b, TILE_NO_SPLIT)                    # v2c-pop
        TMOV(b_l0, b)
        TFREE(pipe)
        TMATMUL(acc, a_l0, b_l0)
        TSTORE(GlobalTensor(out.data() + k * T * T, (T, T)), acc)


def v2c_vector(x, fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T, T, addr=0x0)
    if get_subblockid() == 1:
        v.SetValid(0, T)                                # lane 1 pushes an empty tile
    for k in range(3):
        TLOAD(v, GlobalTensor(x.data() + k * T * T, (T, T)))
        TADDS(v, v, 1.0)
        TPUSH(pipe, v, TILE_NO_SPLIT)                   # v2c-push


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_v2c_no_split_lane1_replay_is_clean_and_exact(platform, protocol, no_hang):
    args = _nz_args(np.random.default_rng(6))
    del args["x"]
    args["x"] = np.random.default_rng(7).integers(-4, 5, (3 * T, T)).astype(np.float32)
    if _one_lane_nosplit(platform, protocol, lambda: run(v2c_cube, v2c_vector, args, platform=platform,
                                                         protocol=protocol),
                         {line_of(v2c_cube, "v2c-pop"), line_of(v2c_vector, "v2c-push")}):
        return
    r = run(v2c_cube, v2c_vector, args, platform=platform, protocol=protocol)
    want = np.concatenate([args["a"] @ (args["x"][k * T:(k + 1) * T] + 1) for k in range(3)])
    np.testing.assert_array_equal(r.outputs["out"], want)
    assert r.summary.cores["AIV1"]["busy"]["MTE3"] == 0


def test_empty_tiles_move_nothing_and_cost_nothing():
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)

    def vec(x, out):
        a = Tile(TileType.Vec, float32, T, T, addr=0x0, valid_rows=0)
        b = Tile(TileType.Vec, float32, T, T, addr=0x1000, valid_rows=0)
        s = Tile(TileType.Vec, float32, T, 8, addr=0x2000, valid_rows=0)
        h = Tile(TileType.Vec, float16, T, T, addr=0x3000, valid_rows=0)
        TLOAD(a, x)
        TADD(b, a, a)
        TROWMAX(s, a)
        TROWSUM(s, a)
        TCVT(h, b)
        TEXPANDS(b, 7.0)
        TSTORE(out, b)
    r = run(None, (vec, None), dict(x=x, out=np.full_like(x, -1.0)))
    np.testing.assert_array_equal(r.outputs["out"], np.full_like(x, -1.0))
    assert sum(r.summary.cores["AIV0"]["busy"].values()) == 0
    assert r.summary.cores["AIV0"]["instructions"] == 7


def test_valid_shape_bounds():
    t = Tile(TileType.Vec, float32, T, T, valid_rows=0, valid_cols=0)
    assert t.empty and t.GetValidRow() == 0
    with pytest.raises(KernelError):
        Tile(TileType.Vec, float32, T, T, valid_rows=-1)
    with pytest.raises(KernelError, match="0..16 rows"):
        t.SetValid(T + 1, 0)


# -- the pl DSL carries the layout: pl.Tile[..., pl.Mat, pl.NZ], pl.move(..., layout=pl.NZ) ----------
def _dsl_program(convert: bool):
    import ptopipe.language as pl

    @pl.aic
    def lay_cube(a: pl.Tensor[[T, T], pl.f32], out: pl.Tensor[[T, T], pl.f32],
                 fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="v2c_ring", size=2 * SLOT, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=2)
        a0 = pl.move(pl.load(a, [0, 0], [T, T], space=pl.Mat), space=pl.Left)
        b = pl.TPOP(buf, pl.Tile[[T, T], pl.f32, pl.Mat, pl.NZ], split=pl.TILE_UP_DOWN)  # DSL-POP
        b0 = pl.move(b, space=pl.Right)
        pl.TFREE(buf)
        acc = pl.matmul(a0, b0)
        pl.store(acc, [0, 0], out)

    @pl.aiv
    def lay_vec(x: pl.Tensor[[T, T], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="v2c_ring", peer_func=lay_cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=peer.base,
                               slot_num=2)
        sub = pl.get_subblockid()
        h = pl.load(x, [sub * (T // 2), 0], [T // 2, T])
        if convert:
            nz = pl.move(h, space=pl.Vec, layout=pl.NZ)
            pl.TPUSH(nz, peer, split=pl.TILE_UP_DOWN)
        else:
            pl.TPUSH(h, peer, split=pl.TILE_UP_DOWN)  # DSL-PUSH
    return pl.program(lay_cube, lay_vec, name=f"layouts_{convert}"), lay_cube, lay_vec


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_dsl_layouts(platform, no_hang):
    import inspect

    from ptopipe.ir.printer import print_program
    from ptopipe.runtime import run as run_dsl
    rng = np.random.default_rng(8)
    args = dict(a=rng.integers(-4, 5, (T, T)).astype(np.float32), x=rng.integers(-4, 5, (T, T)).astype(np.float32),
                out=np.zeros((T, T), np.float32), fifo=gm_buffer(2 * SLOT))
    prog, _, _ = _dsl_program(True)
    text = print_program(prog)
    assert "pl.Tile[[16, 16], pl.f32, pl.Mat, pl.NZ]" in text and "layout=pl.NZ" in text
    import ptopipe.language as pl
    again = pl.parse(text, filename="<printed>")                     # the printed IR round-trips
    from op_build import same
    assert same(again, prog) is None and print_program(again) == text
    if (platform, "spec") in NZ_PUSH_REFUSED:
        with pytest.raises(KernelError) as ke:
            run_dsl(prog, dict(args), platform=platform)
        assert "TPUSH of the NZ tile" in ke.value.what
    else:
        res = run_dsl(prog, dict(args), platform=platform)
        np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["x"])
    prog, cube, vec = _dsl_program(False)
    if platform == "a2a3":          # a GM ring: the Cube's TPOP converts the ND rows it loads
        res = run_dsl(prog, dict(args, out=np.zeros((T, T), np.float32)), platform=platform)
        np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["x"])
        return
    with pytest.raises(ProtocolError) as ei:
        run_dsl(prog, dict(args, out=np.zeros((T, T), np.float32)), platform=platform)

    def line(fn, needle):
        src, start = inspect.getsourcelines(fn.pyfunc)
        (i,) = [start + k for k, ln in enumerate(src) if needle in ln]
        return i
    assert f"test_layouts.py:{line(cube, '# DSL-POP')}:" in ei.value.where
    assert f":{line(vec, '# DSL-PUSH')}" in str(ei.value)


def v2c_vector_both(x, fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for k in range(3):
        TLOAD(v, GlobalTensor(x.data() + k * T * T, (T, T)))
        TADDS(v, v, float(get_subblockid()))            # the lanes' tiles differ
        TPUSH(pipe, v, TILE_NO_SPLIT)                   # both-push


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_v2c_no_split_both_lanes_with_data_is_reported(platform, protocol, no_hang):
    # the same kernel as the replay, but lane 1 keeps its full valid shape and pushes other
    # data: both lanes write the one NO_SPLIT slot, unordered - reported at the TPUSH, never
    # silently clobbered (identical tiles are a warning: tests/sim/test_checkers.py)
    with pytest.raises(ProtocolError) as ei:
        run(v2c_cube, v2c_vector_both, _nz_args(np.random.default_rng(9)), platform=platform, protocol=protocol)
    assert _line(ei.value) == line_of(v2c_vector_both, "both-push")


def v2c_vector_lane0(x, fifo):
    """pto-isa's own A5 tpushpop_vc_nosplit pattern: every core constructs the two-lane pipe
    (IsNoSplit = false), AIV1 then takes no part in its transfers."""
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    if get_subblockid() == 0:
        v = Tile(TileType.Vec, float32, T, T, addr=0x0)
        for k in range(3):
            TLOAD(v, GlobalTensor(x.data() + k * T * T, (T, T)))
            TADDS(v, v, 1.0)
            TPUSH(pipe, v, TILE_NO_SPLIT)


def test_a5_no_split_transfers_of_a_two_lane_pipe_are_aiv0s(no_hang):
    """pto-isa on A5: the Cube's NO_SPLIT wait and free use AIV0's flag ids alone, so a two-lane
    pipe whose NO_SPLIT transfers AIV1 stays out of runs clean - whichever core gets there
    first (the Cube's pop waits for AIV0 alone from its first pop on)."""
    args = _nz_args(np.random.default_rng(10))
    want = np.concatenate([args["a"] @ (args["x"][k * T:(k + 1) * T] + 1) for k in range(3)])
    r = run(v2c_cube, v2c_vector_lane0, dict(args), platform="a5", protocol="pto-isa")
    np.testing.assert_array_equal(r.outputs["out"], want)
    (p,) = r.summary.pipes
    assert p["pops"] == 3 and r.summary.cores["AIV1"]["busy"]["MTE3"] == 0
    from ptopipe.isa.explore import explore
    ex = explore((v2c_cube, v2c_vector_lane0), schedules=3, platform="a5", protocol="pto-isa",
                 args=dict(args, out=np.zeros_like(args["out"])))
    assert ex.ok, ex.first


def test_a5_split_transfer_after_a_no_split_one_is_reported(no_hang):
    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
        acc = square_acc(x, T)
        TPUSH(pipe, acc, TILE_NO_SPLIT)                 # lane0-push
        TPUSH(pipe, acc, TILE_UP_DOWN)                  # split-push

    def vec(fifo):
        TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
    with pytest.raises(ProtocolError) as ei:
        run(cube, vec, dict(x=np.eye(T, dtype=np.float32), fifo=gm_buffer(2 * SLOT)), platform="a5",
            protocol="pto-isa")
    assert _line(ei.value) == line_of(cube, "split-push")
    assert f":{line_of(cube, 'lane0-push')} made this pipe's transfers AIV0's alone" in ei.value.what


@pytest.mark.parametrize("role", ["left", "right", "acc"])
def test_matmul_operands_must_be_fractal(role, no_hang):
    lay = {r: None for r in ("left", "right", "acc")}
    lay[role] = TileLayout.ND

    def cube():
        a = Tile(TileType.Left, float32, T, T, addr=0x0, layout=lay["left"])
        b = Tile(TileType.Right, float32, T, T, addr=0x0, layout=lay["right"])
        c = Tile(TileType.Acc, float32, T, T, addr=0x0, layout=lay["acc"])
        TMATMUL(c, a, b)                                # mm
    with pytest.raises(KernelError) as ei:
        run(cube, None, {})
    assert _line(ei.value) == line_of(cube, "mm") and "layout ND" in ei.value.what


def test_left_tile_may_be_nz_as_on_a5(no_hang):
    def cube():
        a = Tile(TileType.Left, float32, T, T, addr=0x0, layout=TileLayout.NZ)
        b = Tile(TileType.Right, float32, T, T, addr=0x0)
        c = Tile(TileType.Acc, float32, T, T, addr=0x0)
        TMATMUL(c, a, b)
    run(cube, None, {}, platform="a5")


# -- the registry of correct kernels (tests/corpus.py): run by test_clean_corpus.py and
# benchmarks/schedules.py --kernels new, with the goldens of the tests above.
def _clean_registry():
    from corpus import kernel
    from ptopipe.runtime import KernelSet
    one_lane = {("a5", q): "A5: a NO_SPLIT transfer has one lane (AIV0), the A2A3 no-split lane-1 "
                           "replay is reported at its first transfer" for q in ("spec", "pto-isa")}
    out = [kernel("layouts_v2c_nz_tmov", nz_cube, (nz_vector, None), lambda rng: dict(_nz_args(rng), convert=True),
                  lambda a: {"out": np.concatenate([a["a"] @ (a["x"][k * T:(k + 1) * T] + k) for k in range(3)])},
                  excluded=NZ_PUSH_REFUSED)]
    for tiles in (1, 5):
        out.append(kernel(f"layouts_c2v_replay_{tiles}", replay_cube, replay_vector,
                          lambda rng, tiles=tiles: _replay_args(tiles, rng),
                          lambda a: {"out": np.tile(a["x"] @ a["x"] * 2, (a["tiles"], 1))}, excluded=one_lane))
    out.append(kernel("layouts_v2c_replay", v2c_cube, v2c_vector, _nz_args,
                      lambda a: {"out": np.concatenate([a["a"] @ (a["x"][k * T:(k + 1) * T] + 1)
                                                        for k in range(3)])}, excluded=one_lane))
    ks = KernelSet(_dsl_program(True)[0])
    out.append(kernel("layouts_dsl_nz", ks.aic, ks.aiv,
                      lambda rng: dict(a=rng.integers(-4, 5, (T, T)).astype(np.float32),
                                       x=rng.integers(-4, 5, (T, T)).astype(np.float32),
                                       out=np.zeros((T, T), np.float32), fifo=gm_buffer(2 * SLOT)),
                      lambda a: {"out": a["a"] @ a["x"]}, excluded=NZ_PUSH_REFUSED))
    return out


CLEAN_KERNELS = _clean_registry()


# -- TLOAD / TSTORE between a tile and GM: the layout pairs pto-isa moves ------------------------
def _store_vec(layout, gm_layout=None, shape=(T, T)):
    def vec(x, out):
        nd = Tile(TileType.Vec, float32, *shape, addr=0x0)
        t = Tile(TileType.Vec, float32, *shape, addr=0x1000, layout=layout)
        TLOAD(nd, GlobalTensor(x.data(), shape))
        TMOV(t, nd)
        TSTORE(GlobalTensor(out.data(), shape, layout=gm_layout), t)        # layout-store
    return vec


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_vec_tile_moves_only_to_and_from_gm_of_its_own_layout(platform):
    """pto-isa static_asserts "Src and dst layout must be same" for a Vec tile: an NZ tile to
    a row-major (ND) tensor is a located error; a DN column tile goes to a contiguous column
    (a tensor ND and DN both describe: the tile decides), and to one declared DN."""
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)
    with pytest.raises(KernelError) as e:
        run(None, (_store_vec(TileLayout.NZ), None), dict(x=x, out=np.zeros_like(x)), platform=platform)
    assert (f"TSTORE of the NZ tile Vec tile float32 16x16 NZ" in e.value.what and "an ND GM tensor" in e.value.what
            and f"moves only ND->ND, DN->DN, NZ->NZ" in e.value.what)
    assert e.value.where.endswith(f":{line_of(_store_vec, 'layout-store')}")
    assert "declare the tile ND (blayout=RowMajor, slayout=NoneBox)" in e.value.fix
    r = run(None, (_store_vec(TileLayout.NZ, TileLayout.NZ), None), dict(x=x, out=np.zeros_like(x)),
            platform=platform)
    np.testing.assert_array_equal(r.outputs["out"], x)
    col = x[:, :1].copy()
    for gm in (None, TileLayout.DN):
        r = run(None, (_store_vec(TileLayout.DN, gm, (T, 1)), None), dict(x=col, out=np.zeros_like(col)),
                platform=platform)
        np.testing.assert_array_equal(r.outputs["out"], col)

    def load_dn(x):
        t = Tile(TileType.Vec, float32, T, 8, addr=0x0, layout=TileLayout.DN)
        TLOAD(t, GlobalTensor(x.data(), (T, 8)))                        # dn-load
    with pytest.raises(KernelError) as e:
        run(None, (load_dn, None), dict(x=x[:, :8].copy()), platform=platform)
    assert "TLOAD of the DN tile" in e.value.what and "moves only ND<-ND, DN<-DN, NZ<-NZ" in e.value.what
    assert e.value.where.endswith(f":{line_of(load_dn, 'dn-load')}")


def test_a_mat_tile_loads_nd_into_nz_but_not_into_zn():
    """TLOAD converts ND to NZ into L1 (both platforms); ND into a ZN Mat tile is refused
    (A2A3 pairs DN with ZN only)."""
    a = np.arange(T * T, dtype=np.float32).reshape(T, T)

    def cube(a, layout):
        m = Tile(TileType.Mat, float32, T, T, addr=0x0, layout=layout)
        TLOAD(m, GlobalTensor(a.data(), (T, T)))                        # mat-load
    run(cube, None, dict(a=a, layout=TileLayout.NZ), platform="a2a3")
    with pytest.raises(KernelError) as e:
        run(cube, None, dict(a=a, layout=TileLayout.ZN), platform="a2a3")
    assert "TLOAD of the ZN tile" in e.value.what
    assert "ND<-ND, DN<-DN, NZ<-NZ, NZ<-ND, ZN<-DN" in e.value.what


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_mat_tiles_nd_to_nz_load_takes_a_two_dimensional_tensor(platform):
    """pto-isa's ND -> NZ TLOAD into L1 static_asserts a GlobalTensor of dims 0..2 all 1 ("only
    support 2 dim"): the same rows as two 8-row groups (a 3-D view) is a located error; into
    an ND Mat tile, whose TLOAD loops over the outer dims, it loads."""
    a = np.arange(T * T, dtype=np.float32).reshape(T, T)

    def cube(a, layout):
        m = Tile(TileType.Mat, float32, T, T, addr=0x0, layout=layout)
        TLOAD(m, GlobalTensor(a.data(), (2, T // 2, T)))                # groups-load
    run(cube, None, dict(a=a, layout=TileLayout.ND), platform=platform)
    with pytest.raises(KernelError) as e:
        run(cube, None, dict(a=a, layout=TileLayout.NZ), platform=platform)
    assert "takes a two-dimensional GlobalTensor" in e.value.what and "(1, 1, 2, 8, 16)" in e.value.what
    assert e.value.where.endswith(f":{line_of(cube, 'groups-load')}")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_an_acc_tile_stores_to_nd_or_nz_but_never_to_dn(platform):
    """The fixpipe writes an accumulator to an ND or NZ GM tensor (pto-isa static_asserts the
    GM layout of an Acc TSTORE on both platforms): a DN destination is a located error whose
    fix names the layouts it writes; ND stores the product."""
    a = np.arange(T * T, dtype=np.float32).reshape(T, T) % 7
    eye = np.eye(T, dtype=np.float32)

    def cube(a, eye, out, gm_layout):
        m, e = Tile(TileType.Mat, float32, T, T, addr=0x0), Tile(TileType.Mat, float32, T, T, addr=SLOT)
        left, right = Tile(TileType.Left, float32, T, T, addr=0x0), Tile(TileType.Right, float32, T, T, addr=0x0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
        TLOAD(m, GlobalTensor(a.data(), (T, T)))
        TLOAD(e, GlobalTensor(eye.data(), (T, T)))
        TMOV(left, m)
        TMOV(right, e)
        TMATMUL(acc, left, right)
        TSTORE(GlobalTensor(out.data(), (T, T), layout=gm_layout), acc)   # acc-store
    args = dict(a=a, eye=eye, out=np.zeros_like(a))
    r = run(cube, None, dict(args, gm_layout=TileLayout.ND), platform=platform)
    np.testing.assert_array_equal(r.outputs["out"], a)
    with pytest.raises(KernelError) as e:
        run(cube, None, dict(args, gm_layout=TileLayout.DN), platform=platform)
    assert "TSTORE of the NZ tile Acc tile" in e.value.what and "a DN GM tensor" in e.value.what
    assert "converts it only to an ND or NZ GM tensor" in e.value.what
    assert e.value.where.endswith(f":{line_of(cube, 'acc-store')}")
    assert "ND or NZ GM tensor" in e.value.fix
