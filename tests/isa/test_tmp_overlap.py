"""An instruction's scratch ``tmp`` tile that shares bytes with one of its sources or its
destination is a MemoryConflictError at the instruction, on the platforms where the device
computes through it (catalogue.tmp_written: A2A3, and TSORT32 / TMRGSORT / TCOLSUM on A5);
where the device leaves tmp alone (A5's TPOW; A2A3's one-repeat float row reductions and
whole-block TSORT32) the op runs, checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import MemoryConflictError
from ptopipe.arch.catalogue import tmp_written
from ptopipe.arch.vocab import PlatformID
from ptopipe.isa import *  # noqa: F403
from markers import line_of

_BASE = np.linspace(0.5, 2.0, 64, dtype=np.float32).reshape(8, 8)
_EXP = np.linspace(-1.0, 3.0, 64, dtype=np.float32).reshape(8, 8)


def _pow_kernel(tmp_addr):
    def k(out, a, b):
        s0 = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        s1 = Tile(TileType.Vec, float32, 8, 8, addr=0x100)
        d = Tile(TileType.Vec, float32, 8, 8, addr=0x200)
        tmp = Tile(TileType.Vec, float32, 8, 8, addr=tmp_addr)
        TLOAD(s0, GlobalTensor(a.data(), (8, 8)))
        TLOAD(s1, GlobalTensor(b.data(), (8, 8)))
        TPOW(d, s0, s1, tmp)  # the pow
        TSTORE(GlobalTensor(out.data(), (8, 8)), d)
    return k


def _run(k, platform):
    return ptopipe.run(aiv=(k, None), args=dict(out=np.zeros((8, 8), np.float32), a=_BASE, b=_EXP),
                       platform=platform).outputs["out"]


@pytest.mark.parametrize("tmp_addr,role", [(0x0, "source"), (0xc0, "source"), (0x2c0, "destination")])
def test_a2a3_tpow_tmp_on_an_operand_is_an_error_at_the_instruction(tmp_addr, role):
    k = _pow_kernel(tmp_addr)
    with pytest.raises(MemoryConflictError) as ei:
        _run(k, "a2a3")
    e = ei.value
    assert "TPOW's tmp" in e.what and f"overlaps its {role}" in e.what and "A2A3" in e.what, e.what
    assert e.where.endswith(f"test_tmp_overlap.py:{line_of(k, 'the pow')}"), e.where
    assert "apart from TPOW's destination and sources" in e.fix


def test_tmp_apart_runs_and_a5_ignores_tpows_tmp():
    want = _BASE ** _EXP
    np.testing.assert_allclose(_run(_pow_kernel(0x300), "a2a3"), want, rtol=1e-5)
    np.testing.assert_allclose(_run(_pow_kernel(0x0), "a5"), want, rtol=1e-5)   # A5: tmp unused


def test_a5_tsort32_computes_through_its_tmp():
    assert tmp_written("TSORT32", PlatformID.PLATFORM_A5) and not tmp_written("TPOW", PlatformID.PLATFORM_A5)

    def k(out, a):
        src = Tile(TileType.Vec, float32, 1, 32, addr=0x0)
        idx = Tile(TileType.Vec, uint32, 1, 32, addr=0x100)
        dst = Tile(TileType.Vec, float32, 1, 64, addr=0x200)
        tmp = Tile(TileType.Vec, float32, 1, 32, addr=0x40)
        TLOAD(src, GlobalTensor(a.data(), (1, 32)))
        TCI(idx, 0)
        TSORT32(dst, src, idx, tmp)
        TSTORE(GlobalTensor(out.data(), (1, 64)), dst)
    a = np.arange(32, dtype=np.float32).reshape(1, 32)
    with pytest.raises(MemoryConflictError, match="TSORT32's tmp .* overlaps its source"):
        ptopipe.run(aiv=(k, None), args=dict(out=np.zeros((1, 64), np.float32), a=a), platform="a5")


def _rowmax_kernel(cols: int, tmp_is_src: bool):
    def k(out, a):
        src = Tile(TileType.Vec, float32, 8, cols, addr=0x0)
        dst = Tile(TileType.Vec, float32, 8, 1, addr=0x4000)
        tmp = src if tmp_is_src else Tile(TileType.Vec, float32, 8, cols, addr=0x2000)
        TLOAD(src, GlobalTensor(a.data(), (8, cols)))
        TROWMAX(dst, src, tmp)  # the row max
        TSTORE(GlobalTensor(out.data(), (8, 1), layout=TileLayout.DN), dst)
    return k


@pytest.mark.parametrize("cols", [64, 128])
def test_a2a3_row_reduction_writes_tmp_only_past_one_repeat(cols):
    """A2A3's TROWMAX of a float row of at most one 256-byte repeat never touches tmp
    (a2a3/TRowReduceOps.hpp OneRepeatProc): pto-isa's own test passes the source as tmp; a
    longer row folds through tmp, so there the overlap is an error."""
    a = np.random.default_rng(1).standard_normal((8, cols)).astype(np.float32)
    k = _rowmax_kernel(cols, tmp_is_src=True)
    args = dict(out=np.zeros((8, 1), np.float32), a=a)
    if cols == 64:
        out = ptopipe.run(aiv=(k, None), args=args, platform="a2a3").outputs["out"]
        np.testing.assert_array_equal(out[:, 0], a.max(axis=1))
    else:
        with pytest.raises(MemoryConflictError, match="TROWMAX's tmp .* overlaps its source"):
            ptopipe.run(aiv=(k, None), args=args, platform="a2a3")


def test_a2a3_tsort32_of_whole_blocks_leaves_tmp_alone():
    """A2A3's TSORT32 of 32-element blocks takes the form without tmp (a2a3/TSort32.hpp)."""
    assert not tmp_written("TSORT32", PlatformID.PLATFORM_A2A3, Tile(TileType.Vec, float32, 1, 32))
    assert tmp_written("TSORT32", PlatformID.PLATFORM_A2A3, Tile(TileType.Vec, float32, 1, 32, valid_cols=20))


_BITS = np.arange(-64, 64, dtype=np.int16).reshape(4, 32)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("name", ["TANDS", "TORS", "TXORS"])
def test_a_bitwise_scalar_op_in_place_is_refused_where_it_expands_the_scalar_into_dst(platform, name):
    """pto-isa's A2A3 TANDS / TORS (and TXORS, built on them) expand the scalar into dst before
    they read src: in place, the device ANDs the scalar with itself - a MemoryConflictError at
    the call.  A5's run in place, checked against numpy."""
    def k(out, a):
        t = Tile(TileType.Vec, int16, 4, 32, addr=0x0)
        tmp = Tile(TileType.Vec, int16, 4, 32, addr=0x400)
        TLOAD(t, GlobalTensor(a.data(), (4, 32)))
        if name == "TXORS":
            TXORS(t, t, 0x0F0F, tmp)  # the xors
        else:
            getattr(ptopipe.isa, name)(t, t, 0x0F0F)  # the and / or
        TSTORE(GlobalTensor(out.data(), (4, 32)), t)

    def run():
        return ptopipe.run(aiv=(k, None), args=dict(out=np.zeros((4, 32), np.int16), a=_BITS),
                           platform=platform).outputs["out"]
    if platform == "a2a3":
        with pytest.raises(MemoryConflictError, match=f"{name}'s destination .* overlaps its source") as e:
            run()
        assert e.value.where.endswith(f":{line_of(k, 'the xors' if name == 'TXORS' else 'the and / or')}")
        return
    want = {"TANDS": np.bitwise_and, "TORS": np.bitwise_or, "TXORS": np.bitwise_xor}[name](_BITS, np.int16(0x0F0F))
    np.testing.assert_array_equal(run(), want)
