"""A GM buffer rewritten before its reader on another core is done with it - the Cube stores
tile i into workspace copy i % W, then TPUSHes it; a Vector core TPOPs, TLOADs its copy and
TFREEs - is a data race the report calls a write-after-read (of a reused buffer when the
reader is ordered after the buffer's previous write), naming which occurrence of each
instruction raced and a fix that orders the write after the reader's TFREE.  A store after
the TPUSH that should cover it keeps the plain read/write report."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError
from ptopipe.isa import (DIR_C2V, TFREE, TILE_NO_SPLIT, TLOAD, TPOP, TPUSH, TSTORE, GlobalTensor, Tile,
                         TileType, TPipe, float32, gm_buffer)
from ptopipe.isa.explore import explore

R, C = 8, 16
SLOT = R * C * 4
TILES = 4


def _kernels(copies: int, push_first: bool = False):
    def cube(ws, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x20000, 0)
        acc = Tile(TileType.Acc, float32, R, C, addr=0)
        for i in range(TILES):
            if push_first:
                TPUSH(pipe, acc, TILE_NO_SPLIT)
            TSTORE(GlobalTensor(ws.data() + (i % copies) * R * C, (R, C)), acc)     # ws-store
            if not push_first:
                TPUSH(pipe, acc, TILE_NO_SPLIT)

    def vector(ws, out, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x20000, 0)
        y = Tile(TileType.Vec, float32, R, C)
        w = Tile(TileType.Vec, float32, R, C, addr=0)
        for i in range(TILES):
            TPOP(pipe, y, TILE_NO_SPLIT)
            TLOAD(w, GlobalTensor(ws.data() + (i % copies) * R * C, (R, C)))      # ws-load
            TFREE(pipe, TILE_NO_SPLIT)
            TSTORE(GlobalTensor(out.data() + i * R * C, (R, C)), w)
    return cube, (vector, None)


def _args(copies: int) -> dict:
    return dict(ws=np.zeros((copies * R, C), np.float32), out=np.zeros((TILES * R, C), np.float32),
                fifo=gm_buffer(2 * SLOT))


def _line(marker: str) -> int:
    src, start = inspect.getsourcelines(_kernels)
    (i,) = [k for k, t in enumerate(src) if f"# {marker}" in t]
    return start + i


def test_a_workspace_rewritten_before_its_reader_freed_it_is_a_write_after_read_of_a_reused_buffer():
    cube, vec = _kernels(2)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, vec, _args(2))
    e = ei.value
    st, ld = _line("ws-store"), _line("ws-load")
    assert e.what == (f"data race (write-after-read) on GM: AIC's 3rd TSTORE at :{st} writes bytes that AIV0's "
                      f"1st TLOAD at :{ld} reads, and nothing orders the write after the read - a reused buffer")
    assert e.where.endswith(f":{ld}")
    assert f":{ld} (1st): GM[" in e.details and f":{st} (3rd): GM[" in e.details
    assert ("AIV0's TLOAD reads what the 1st TSTORE wrote there (ordered before it); AIC's 3rd TSTORE "
            "rewrites the buffer before any signal tells AIC that AIV0 is done with it") in e.details
    assert e.fix.startswith("make AIC's TSTORE wait for a signal AIV0 sends after its TLOAD (its TFREE)")
    assert "TALLOC" in e.fix and "SlotNum + 1" in e.fix
    assert "TPUSH / SET after its access" not in e.fix       # what the kernel already does
    assert e.findings[0]["order"] == "write-after-read"


def test_every_schedule_of_the_reused_buffer_reports_a_write_after_read():
    cube, vec = _kernels(2)
    res = explore((cube, vec), schedules=6, args=_args(2), stop_on_first=False, include_default=False)
    # the store made after the load (reported at the store) and before it (at the load)
    assert {int(e.where.rsplit(":", 1)[1]) for _, e in res.failures} == {_line("ws-store"), _line("ws-load")}
    for _, e in res.failures:
        assert isinstance(e, DataRaceError) and e.what.startswith("data race (write-after-read) on GM: AIC's "), e
        assert "its TFREE" in e.fix, e


def test_the_fix_it_gives_works_a_buffer_more_than_the_ring_has_slots():
    cube, vec = _kernels(3)
    res = explore((cube, vec), schedules=6, args=_args(3))
    assert res.ok, res.failures


def test_a_store_after_the_push_keeps_the_read_before_write_report():
    cube, vec = _kernels(2, push_first=True)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, vec, _args(2))
    e = ei.value
    assert e.what == ("data race (read/write) on GM: AIV0 TLOAD and AIC TSTORE touch the same bytes with no "
                      "happens-before order")
    assert f":{_line('ws-store')} (1st): GM[" in e.details
    assert e.fix.startswith("order the two accesses with the protocol")
