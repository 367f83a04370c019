"""The race checker records, for every TPUSH and TPOP of a GM ring, exactly the slot bytes the
move touches - where the protocol's placement puts them (protocol.slots: rows at the valid or
the static pitch, lane 1 at its part or at the static half) - for both placements, both
directions, every split, a valid region smaller than the tile and the whole tile.  A record
short of the bytes hides a race with a raw access of the slot; one past them reports a race
that is none."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403
from cube_parts import square_acc

N = 16
SLOT = N * N * 4


def _recorded(res, write: bool) -> set:
    """The slot elements (float32 indices into the ring buffer) of the checker's ring records."""
    chk = res.cluster.checker
    gm = res.cluster.gm
    out = set()
    for key, regs in chk._ring_regions.items():
        if key[2] is not write:
            continue
        for mem, lo, hi, rows, *_ in regs:
            assert mem is gm
            if rows is None:
                spans = [(lo, hi)]
            else:
                a, n, rl, st = rows
                spans = [(a + k * st, a + k * st + rl) for k in range(n)]
            for s0, s1 in spans:
                out.update(range(s0 // 4, s1 // 4))
    return out


def _ring_base(res) -> int:
    ch, = res.cluster.state.channels.values()
    return ch.gm_base // 4


# (pto-isa's CPU simulator TLOADs a GM slot into the popping tile's whole static shape, its TLOAD
# asserting the valid shape is that one: a partial valid region is refused at the TPOP there,
# tests/isa/test_slot_placement.py)
COMBOS = [(p, s, part) for p in ("pto-isa", "pto-isa-cpusim") for s in (TILE_UP_DOWN, TILE_LEFT_RIGHT)
          for part in (False, True) if not (p == "pto-isa-cpusim" and part)]


@pytest.mark.parametrize("protocol,split,partial", COMBOS)
def test_a_c2v_push_and_pops_record_the_bytes_they_move(protocol, split, partial):
    valid = (N, 8) if partial else (N, N)
    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 1)(fifo, 0x8000, 0)
        acc = square_acc(x, N)
        acc.SetValid(*valid)
        TPUSH(pipe, acc, split)

    def vector(x, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 1)(fifo, 0x8000, 0)
        part = (N // 2, N) if split == TILE_UP_DOWN else (N, N // 2)
        t = Tile(TileType.Vec, float32, *part, addr=0x8000)
        t.SetValid(part[0], valid[1] if split == TILE_UP_DOWN else valid[1] // 2)
        TPOP(pipe, t, split)
        TFREE(pipe)

    fifo = gm_buffer(SLOT)
    res = ptopipe.run(cube, vector, dict(x=np.ones((N, N), np.float32), fifo=fifo), platform="a2a3",
                      protocol=protocol)
    slot = res.outputs["fifo"].view(np.float32)
    written = {int(k) for k in np.flatnonzero(slot)}          # ones @ ones: N in every moved element
    base = _ring_base(res)
    assert {k - base for k in _recorded(res, True)} == written
    # the two lanes' pops read what was pushed, nothing else
    assert {k - base for k in _recorded(res, False)} == written


@pytest.mark.parametrize("protocol,split,partial", COMBOS)
def test_a_v2c_push_of_each_lane_records_the_bytes_it_moves(protocol, split, partial):
    shape, valid = (8, N), ((8, 8) if partial else (8, N))

    def cube(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 1)(fifo, 0x8000, 0)
        whole = (2 * shape[0], shape[1]) if split == TILE_UP_DOWN else (shape[0], 2 * shape[1])
        t = Tile(TileType.Mat, float32, *whole, addr=0x10000)
        t.SetValid(*((2 * valid[0], valid[1]) if split == TILE_UP_DOWN else (valid[0], 2 * valid[1])))
        TPOP(pipe, t, split)
        TFREE(pipe)

    def vector(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 1)(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, *shape, addr=0)
        t.SetValid(*valid)
        TEXPANDS(t, 1.0 + get_subblockid())
        TPUSH(pipe, t, split)

    res = ptopipe.run(cube, vector, dict(fifo=gm_buffer(SLOT)), platform="a2a3", protocol=protocol)
    slot = res.outputs["fifo"].view(np.float32)
    base = _ring_base(res)
    assert {k - base for k in _recorded(res, True)} == {int(k) for k in np.flatnonzero(slot)}
