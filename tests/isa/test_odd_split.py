"""pto-isa's odd splits (TILE_UP_DOWN_ODD / TILE_LEFT_RIGHT_ODD): AIV0 takes the extra row /
column of an odd extent and each lane finds its band in a Cube->Vector GM slot from its own
popped extent (popVecTileFromGMFiFo: lane 1 starts at e1 + 1; LEFT_RIGHT_ODD rows 2*e + 2*sub - 1
columns apart).  Runs on A2A3 (the ring is in GM) and A5 DIR_C2V_GM, checked against numpy; a
lane popping the wrong share is reported at its TPOP; the transfers pto-isa has no odd case for
are refused where they are written."""
import numpy as np
import pytest

import ptopipe
from ptopipe.arch.vocab import TileSplitAxis
from ptopipe.errors import ProtocolError
from ptopipe.isa import *  # noqa: F403
from ptopipe.protocol.geometry import lane_extent, odd_pop_problem, part_of, part_rows
from markers import line_of

T = N = 16
SLOT = T * N * 4
UD, LR = TileSplitAxis.TILE_UP_DOWN_ODD, TileSplitAxis.TILE_LEFT_RIGHT_ODD
EVEN_UD = TileSplitAxis.TILE_UP_DOWN
GM_RING = {"a2a3": DIR_C2V, "a5": DIR_C2V_GM}


def matmul_split(split, pushed, lanes, direction):
    """The Cube pushes ``x @ w`` with a ``pushed`` (rows, cols) valid region, split ``split``;
    Vector core ``s`` pops a valid ``lanes[s]`` part and stores it where its band starts."""
    vr, vc = pushed

    def cube(x, w, fifo):
        pipe = TPipe(0, direction, SLOT, 2)(fifo, 0x8000, 0)
        mx = Tile(TileType.Mat, float32, T, N, addr=0, valid_rows=vr)
        mw = Tile(TileType.Mat, float32, N, N, addr=T * N * 4, valid_cols=vc)
        a = Tile(TileType.Left, float32, T, N, addr=0, valid_rows=vr)
        b = Tile(TileType.Right, float32, N, N, addr=0, valid_cols=vc)
        acc = Tile(TileType.Acc, float32, T, N, addr=0, valid_rows=vr, valid_cols=vc)
        TLOAD(mx, GlobalTensor(x.data(), (vr, N)))
        TLOAD(mw, GlobalTensor(w.data(), (N, vc), (N, 1)))
        TMOV(a, mx)
        TMOV(b, mw)
        TMATMUL(acc, a, b)
        TPUSH(pipe, acc, split)                                     # PUSH

    def vector(out, fifo):
        pipe = TPipe(0, direction, SLOT, 2)(fifo, 0x8000, 0)
        sub = get_subblockid()
        r, c = lanes[sub]
        shape = (T // 2, N) if split in (UD, EVEN_UD) else (T, N // 2)
        p = Tile(TileType.Vec, float32, *shape, valid_rows=r, valid_cols=c)
        TPOP(pipe, p, split)                                        # POP
        at = sub * (r + sub) * N if split == UD else sub * r * N if split == EVEN_UD else sub * (c + sub)
        TSTORE(GlobalTensor(out.data() + at, (r, c), (N, 1)), p)
        TFREE(pipe)
    return cube, vector


def run(split, pushed, lanes, platform, direction=None):
    cube, vector = matmul_split(split, pushed, lanes, direction or GM_RING[platform])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, N)).astype(np.float32)
    w = rng.standard_normal((N, N)).astype(np.float32)
    res = ptopipe.run(cube, vector, dict(x=x, w=w, out=np.zeros((T, N), np.float32),
                                         fifo=ptopipe.gm_buffer(2 * SLOT)), platform=platform)
    return res.outputs["out"], x @ w


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("split,pushed,lanes,valid", [
    (UD, (15, N), [(8, N), (7, N)], (15, N)),       # an odd row count: AIV0 8 rows, AIV1 7 from row 8
    (LR, (T, 15), [(T, 8), (T, 7)], (T, 15)),       # an odd column count: rows 15 apart, AIV1 from column 8
    (UD, (T, N), [(8, N), (7, N)], (15, N)),        # pypto's form: the push widened to the Acc's box
    (UD, (1, N), [(1, N), (0, N)], (1, N)),         # one row (a decode's M = 1): AIV1's share is empty
    (LR, (T, 1), [(T, 1), (T, 0)], (T, 1)),         # one column: AIV1 pops none
    (UD, (T, N), [(1, N), (0, N)], (1, N)),         # one row in the widened box
    (EVEN_UD, (T, N), [(5, N), (0, N)], (5, N)),    # pypto's ragged tail within AIV0's half: AIV1 pops none
])
def test_an_odd_split_matches_numpy(split, pushed, lanes, valid, platform):
    out, gold = run(split, pushed, lanes, platform)
    r, c = valid
    np.testing.assert_allclose(out[:r, :c], gold[:r, :c], rtol=1e-5, atol=1e-5)
    assert not out[r:].any() and not out[:, c:].any()


@pytest.mark.parametrize("split,pushed,lanes,says,fix", [
    (UD, (15, N), [(8, N), (8, N)], "AIV1 pops 8 valid rows of the Cube's 15", "pop 7 valid rows on AIV1"),
    (LR, (T, 15), [(T, 8), (T, 8)], "reads its rows 17 columns apart (2 * 8 + 1)", "pop 7 valid columns on AIV1"),
    (UD, (T, N), [(8, N), (8, N)], "reads rows 9..16, past the 16 rows", "one row fewer than AIV0"),
    # an even split's lanes each start their band at their own extent: 8 / 4 rows read rows 0..7 and 4..7
    (EVEN_UD, (T, N), [(8, N), (4, N)], "AIV0 pops 8 valid rows and AIV1 4", "the same number of rows on both"),
    (EVEN_UD, (T, N), [(4, N), (8, N)], "AIV1 rows 8..15 of the slot - rows 4..7 no lane reads", "same number"),
])
def test_a_lane_popping_the_wrong_share_is_reported_at_its_tpop(split, pushed, lanes, says, fix, no_hang):
    with pytest.raises(ProtocolError) as ei:
        run(split, pushed, lanes, "a2a3")
    assert says in ei.value.what and fix in ei.value.fix, ei.value
    assert ei.value.where.endswith(f":{line_of(matmul_split, 'POP')}"), ei.value.where


def test_a5_has_no_odd_split_into_the_vector_cores_ub(no_hang):
    """pto-isa's A5 pushAcc2VecFiFo has no odd case: the TPUSH would move nothing."""
    with pytest.raises(ProtocolError) as ei:
        run(UD, (15, N), [(8, N), (7, N)], "a5", DIR_C2V)
    assert "pushAcc2VecFiFo has no TILE_UP_DOWN_ODD case" in ei.value.what and "DIR_C2V_GM" in ei.value.fix
    assert ei.value.where.endswith(f":{line_of(matmul_split, 'PUSH')}"), ei.value.where


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_vector_side_odd_push_is_refused(platform, no_hang):
    def cube(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, 0x20000)
        TPOP(pipe, Tile(TileType.Mat, float32, T, N), LR)
        TFREE(pipe)

    def vector(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, 0x20000)
        TPUSH(pipe, Tile(TileType.Vec, float32, T, N // 2, addr=0), LR)    # VPUSH
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vector, dict(fifo=ptopipe.gm_buffer(2 * SLOT)), platform=platform)
    assert "Cube->Vector transfers only" in ei.value.what, ei.value
    assert ei.value.where.endswith(f":{line_of(vector, 'VPUSH')}"), ei.value.where


def test_the_lane_geometry_is_pto_isas():
    """fifo.hpp: AIV0 = n/2 + 1, AIV1 = n/2; popVecTileFromGMFiFo: a2a3 test case 14 (valid 5 x 127,
    lanes 64 / 63 columns) reads AIV1 from column 64, both lanes' rows 127 columns apart."""
    assert [lane_extent(UD, s, 15) for s in (0, 1)] == [8, 7]
    assert part_rows(LR, 0, 5, 64, 4) == (0, 127 * 4)
    assert part_rows(LR, 1, 5, 63, 4) == (64 * 4, 127 * 4)
    assert part_rows(UD, 1, 7, 16, 4) == (8 * 16 * 4, 16 * 4)
    a = np.arange(15 * 3).reshape(15, 3)
    assert part_of(a, UD, 0).shape == (8, 3) and part_of(a, UD, 1)[0, 0] == 24
    assert odd_pop_problem(LR, 1, (5, 63), (5, 127)) is None
    assert "an even width splits TILE_LEFT_RIGHT" in odd_pop_problem(LR, 1, (5, 63), (5, 128))[1]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_the_address_flow_has_no_odd_split(platform, no_hang):
    """pto-isa's getPopSubAIVOffset puts AIV1 at the TILE_LEFT_RIGHT offset whatever the odd split.
    (The Cube pushes for both lanes: an A5 NO_SPLIT push would be AIV0's alone.)"""
    def cube(fifo):
        pipe = TPipe(0, GM_RING[platform], SLOT, 2)(fifo, 0, 0)
        g = GlobalTensor(float32, (T, N))
        TALLOC(pipe, g, TILE_UP_DOWN)
        TPUSH(pipe, g, TILE_UP_DOWN)

    def vector(fifo):
        pipe = TPipe(0, GM_RING[platform], SLOT, 2)(fifo, 0, 0)
        TPOP(pipe, GlobalTensor(float32, (T // 2, N)), UD)                     # APOP
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vector, dict(fifo=ptopipe.gm_buffer(2 * SLOT)), platform=platform)
    assert "address flow has no TILE_UP_DOWN_ODD case" in ei.value.what, ei.value
    assert ei.value.where.endswith(f":{line_of(vector, 'APOP')}"), ei.value.where


def test_a_band_past_the_slot_of_an_address_push_is_said_against_slot_size(no_hang):
    """A slot the Cube filled through the address flow records no tile to compare with: AIV1's
    16 rows start at row 17 (its extent + 1), past the 16-row slot."""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0, 0)
        g = GlobalTensor(float32, (T, N))
        TALLOC(pipe, g)
        TPUSH(pipe, g)

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0, 0)
        TPOP(pipe, Tile(TileType.Vec, float32, T, N), UD)                    # BPOP
        TFREE(pipe)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vector, dict(fifo=ptopipe.gm_buffer(2 * SLOT)), platform="a2a3")
    assert "past SlotSize 1024" in ei.value.what and "AIV1" in ei.value.what, ei.value
    assert ei.value.where.endswith(f":{line_of(vector, 'BPOP')}"), ei.value.where
