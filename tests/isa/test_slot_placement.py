"""Where a C2V TPUSH puts the Cube's tile in a slot and what a TPOP reads of it, as pto-isa's
device code does it (``ptopipe.protocol.slots``): an A5 UB slot keeps the Acc's static
column pitch (``pushAcc2VecFiFo``) and the popped tile reads at its own static pitch (a
TASSIGN), an A2A3 GM slot is packed at the pushed valid columns and the pop reads at its own
valid columns (``popVecTileFromGMFiFo``).  A pop of a smaller valid region than the push (a
dynamic tail) reads the top-left block of its part; a read the device gets wrong is refused
with the device's reason."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import ProtocolError
from ptopipe.isa import (DIR_C2V, DIR_V2C, TFREE, TLOAD, TPOP, TPUSH, TSTORE, TILE_NO_SPLIT, TILE_UP_DOWN, GlobalTensor,
                         TPipe, Tile, TileType, float32, get_subblockid)

from cube_parts import square_acc
from markers import line_of

N = 16
SL = N * N * 4


def c2v(split, acc_valid, pop_shape, pop_valid):
    """The Cube pushes ``x @ x`` with valid shape ``acc_valid``; each Vector lane pops a
    ``pop_shape`` tile with valid ``pop_valid(lane)`` and stores it at its rows (UP_DOWN:
    lane 1 after lane 0's valid rows, pto-isa's split convention) of ``out``."""
    def cube(x, out, fifo):
        pipe = TPipe(0, DIR_C2V, SL, 2, peers=(0,) if split == TILE_NO_SPLIT else (0, 1))(fifo, 0x8000, 0)
        acc = square_acc(x)
        acc.SetValid(*acc_valid)
        TPUSH(pipe, acc, split)

    def vector(x, out, fifo):
        pipe = TPipe(0, DIR_C2V, SL, 2, peers=(0,) if split == TILE_NO_SPLIT else (0, 1))(fifo, 0x8000, 0)
        s = get_subblockid()
        vr, vc = pop_valid(s)
        t = Tile(TileType.Vec, float32, *pop_shape)
        t.SetValid(vr, vc)
        TPOP(pipe, t, split)                                  # POP
        if vr:
            TSTORE(GlobalTensor(out.data() + s * vr * N, (vr, vc), (N, 1)), t)
        TFREE(pipe)
    return cube, (vector, None) if split == TILE_NO_SPLIT else vector


def run(kernels, platform, protocol="spec"):
    x = (np.arange(N * N, dtype=np.float32).reshape(N, N) % 7 - 3) / 4
    out = np.zeros((N, N), np.float32)
    res = ptopipe.run(*kernels, args=dict(x=x, out=out, fifo=ptopipe.gm_buffer(2 * SL)), platform=platform,
                      protocol=protocol)
    return res.outputs["out"], x @ x


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("split", [TILE_NO_SPLIT, TILE_UP_DOWN], ids=["NO_SPLIT", "UP_DOWN"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_narrow_valid_columns_arrive_in_their_rows(platform, split, protocol):
    """An Acc with 8 of its 16 columns valid, popped with that valid shape into 16-column
    tiles: every row holds its own data (A5: the slot rows are the Acc's 16 static columns
    apart, as the popped tile reads them; A2A3: 8 apart, as the pop reads its 8 valid columns)."""
    rows = N if split == TILE_NO_SPLIT else N // 2
    got, xx = run(c2v(split, (N, 8), (rows, N), lambda s: (rows, 8)), platform, protocol)
    want = np.zeros_like(xx)
    want[:, :8] = xx[:, :8]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_dynamic_tail_pop_reads_the_top_rows(platform):
    """The whole box pushed, 5 valid rows popped (pypto's dynamic row count): the first 5 rows."""
    got, xx = run(c2v(TILE_NO_SPLIT, (N, N), (N, N), lambda s: (5, N)), platform)
    np.testing.assert_array_equal(got[:5], xx[:5])
    assert not got[5:].any()


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a2a3_split_lanes_pop_their_rows_of_a_widened_push(protocol):
    """A 16-row push, each lane pops 6 rows: pto-isa's GM pop starts lane 1 at 1 x 6 rows."""
    got, xx = run(c2v(TILE_UP_DOWN, (N, N), (N // 2, N), lambda s: (6, N)), "a2a3", protocol)
    np.testing.assert_array_equal(got[:12], xx[:12])
    assert not got[12:].any()


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_lane_pops_fewer_rows_than_its_part_when_the_other_pops_none(platform):
    """Lane 0 pops 5 rows of its part, lane 1 none (a localized tail): both platforms read them."""
    got, xx = run(c2v(TILE_UP_DOWN, (N, N), (N // 2, N), lambda s: (5 - 5 * s, N)), platform)
    np.testing.assert_array_equal(got[:5], xx[:5])
    assert not got[5:].any()


def test_a5_lane_1_of_a_widened_split_would_read_the_wrong_rows():
    """A5's pushAcc2VecFiFo gives lane 1 rows 8..15 of the 16 pushed: its 6-row pop reads rows
    8..13, not the 6..11 pto-isa's split convention gives it."""
    kernels = c2v(TILE_UP_DOWN, (N, N), (N // 2, N), lambda s: (6, N))
    with pytest.raises(ProtocolError) as ei:
        run(kernels, "a5")
    e = ei.value
    assert e.what.startswith("TPOP on AIV1: the consumer tile 8x16 valid 6x16 float32 (TILE_UP_DOWN)"), e.what
    assert "lane 1 would read rows 8..13 of the pushed tile, not rows 6..11: pto-isa's A5 pushAcc2VecFiFo hands " \
           "each Vector core half of the pushed rows (lane 1's slot holds rows 8..15)" in e.details, e.details
    assert "2 x 6; do not widen it for the split" in e.fix, e.fix
    assert e.where.endswith(f":{line_of(c2v, 'POP')}"), e.where
    assert "row stride" not in str(e)


def test_cpu_simulator_pops_a_gm_slot_into_the_whole_static_tile():
    """pto-isa's CPU simulator TLOADs a GM slot into the consumer tile's whole static shape
    (``popTileFromGMFiFo``), and its TLOAD asserts the tile's valid shape is that shape: the
    same widened push, popped 6 of 8 rows a lane, stops at lane 0's TPOP there, saying so."""
    with pytest.raises(ProtocolError) as ei:
        run(c2v(TILE_UP_DOWN, (N, N), (N // 2, N), lambda s: (6, N)), "a2a3", "pto-isa-cpusim")
    e = ei.value
    assert e.what.startswith("TPOP of Vec tile float32 8x16") and "pto-isa's CPU simulator pops into the consumer's " \
        "whole static 8x16 tile by a TLOAD from the GM slot (popTileFromGMFiFo), which asserts the tile's valid shape " \
        "is that static shape: a valid 6x16 region stops the simulated kernel" in e.what, e.what
    assert e.where.endswith(f":{line_of(c2v, 'POP')}"), e.where
    assert "pop into a tile whose static shape is its 6x16 valid shape" in e.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_ragged_tail_split_by_its_valid_rows_runs_on_the_device_only(platform):
    """8 of 16 rows pushed (a ragged tail), each lane pops its 4: the device places the parts by
    the valid rows (numpy's numbers); pto-isa's CPU simulator by the static box, so lane 1's 4
    rows are not where it reads them.  There the message says the pop takes the right part and
    the placement is what differs (not that the valid shape should be the one it already is)."""
    kernels = c2v(TILE_UP_DOWN, (8, N), (N // 2, N), lambda s: (4, N))
    got, xx = run(kernels, platform, "pto-isa")
    np.testing.assert_array_equal(got[:8], xx[:8])
    with pytest.raises(ProtocolError) as ei:
        run(kernels, platform, "pto-isa-cpusim")
    e = ei.value
    assert e.what.startswith("TPOP on AIV0: the consumer tile 8x16 valid 4x16 float32 (TILE_UP_DOWN) pops its part "
                             "of the pushed tile 16x16 valid 8x16 float32 (TILE_UP_DOWN: 4x16 per Vector core) of "
                             "slot 0, but lane 1 (AIV1) would read elements the push did not write in pto-isa's CPU "
                             "simulator"), e.what
    assert "should pop" not in e.what and "differ" not in e.what, e.what
    assert e.details.startswith("in the CPU simulator: "), e.details
    assert "places each lane's part of a split by the static box" in e.fix and "--protocol pto-isa" in e.fix, e.fix
    assert e.where.endswith(f":{line_of(c2v, 'POP')}"), e.where


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_fewer_valid_columns_than_pushed(platform):
    """8 of the 16 pushed columns popped: A5 reads the slot at the tile's static pitch (the left
    half of every row); A2A3's GM pop reads at its 8 valid columns, misaligned - refused."""
    kernels = c2v(TILE_NO_SPLIT, (N, N), (N, N), lambda s: (N, 8))
    if platform == "a5":
        got, xx = run(kernels, platform)
        np.testing.assert_array_equal(got[:, :8], xx[:, :8])
        return
    with pytest.raises(ProtocolError) as ei:
        run(kernels, platform)
    e = ei.value
    assert e.what.endswith("- the row pitch differs: the slot's rows are 16 elements apart, the pop reads them 8 "
                           "apart"), e.what
    assert "popVecTileFromGMFiFo reads the consumer's rows 8 elements apart (the consumer's valid columns), but " \
           "pto-isa's pushAcc2GMFiFo wrote the pushed rows 16 elements apart (the Acc's valid columns)" in e.details
    assert "reads the slot with the consumer's valid columns as its row stride" in e.fix, e.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_consumer_tile_narrower_than_the_acc(platform):
    """An Acc 16x16 with 8 valid columns popped into a 16x8 tile: A2A3 packs and reads at the 8
    valid columns; A5's slot rows are the Acc's 16 static columns apart, which an 8-column
    tile misreads - refused."""
    kernels = c2v(TILE_NO_SPLIT, (N, 8), (N, 8), lambda s: (N, 8))
    if platform == "a2a3":
        got, xx = run(kernels, platform)
        np.testing.assert_array_equal(got[:, :8], xx[:, :8])
        return
    with pytest.raises(ProtocolError) as ei:
        run(kernels, platform)
    e = ei.value
    assert "pto-isa's A5 popTileFromVecFiFo (a TASSIGN at the slot) reads the consumer's rows 8 elements apart " \
           "(the consumer tile's static columns), but pto-isa's A5 pushAcc2VecFiFo wrote the pushed rows 16 " \
           "elements apart (the Acc's static columns (ConsN))" in e.details, e.details
    assert e.fix.startswith("give the consumer tile 16 static columns"), e.fix


def v2c(pop_rows):
    """Each Vector lane pushes its 8 rows of ``x``'s left 8 columns in an 8x16 tile (TILE_UP_DOWN);
    the Cube pops a 16x16 Mat tile with ``pop_rows`` x 8 valid and stores it."""
    def cube(x, out, fifo):
        pipe = TPipe(0, DIR_V2C, SL, 2)(fifo, 0, 0x8000)
        m = Tile(TileType.Mat, float32, N, N)
        m.SetValid(pop_rows, 8)
        TPOP(pipe, m, TILE_UP_DOWN)
        TSTORE(GlobalTensor(out.data(), (pop_rows, 8), (N, 1)), m)
        TFREE(pipe, TILE_UP_DOWN)

    def vector(x, out, fifo):
        pipe = TPipe(0, DIR_V2C, SL, 2)(fifo, 0, 0x8000)
        s = get_subblockid()
        v = Tile(TileType.Vec, float32, N // 2, N, addr=0)
        v.SetValid(N // 2, 8)
        TLOAD(v, GlobalTensor(x.data() + s * (N // 2) * N, (N // 2, 8), (N, 1)))
        TPUSH(pipe, v, TILE_UP_DOWN)
    return cube, vector


@pytest.mark.parametrize("pop_rows", [N, 12])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_v2c_parts_with_narrow_valid_columns_arrive_in_their_rows(platform, pop_rows):
    """A5's pushVec2MatFiFo TINSERTs each part into an L1 slot tile of the Vec tile's 16 static
    columns, which the popped Mat tile reads at its own 16 (A2A3: packed at 8, read at 8); the
    Cube may pop fewer rows than the two parts hold."""
    x = (np.arange(N * N, dtype=np.float32).reshape(N, N) % 7 - 3) / 4
    out = np.zeros((N, N), np.float32)
    res = ptopipe.run(*v2c(pop_rows), args=dict(x=x, out=out, fifo=ptopipe.gm_buffer(2 * SL)), platform=platform)
    want = np.zeros_like(x)
    want[:pop_rows, :8] = x[:pop_rows, :8]
    np.testing.assert_array_equal(res.outputs["out"], want)
