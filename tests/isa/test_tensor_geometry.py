"""A GlobalTensor's geometry (padded shape and stride, rows x cols, its 2-D view, extent,
row grid) is derived once per (shape, stride, element size) given as tuples and kept
(tensor._geometry, a bounded memo): kernels build their views inside their loops from the
same shape every time.  A tensor built from the kept geometry must be the tensor built
from scratch (from lists, which are never kept), for every shape and stride, equal keys of
other types (np.int64) included; bad ones raise the same and are not kept."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ptopipe.arch.vocab import TileLayout
from ptopipe.errors import KernelError
from ptopipe.isa import tensor
from ptopipe.isa.tensor import GlobalTensor, GMPtr
from markers import line_of

SLOTS = ("dtype", "shape", "stride", "rows", "cols", "shape2", "_geom2", "_mat2", "_extent", "_rb", "item")
DIM = st.integers(0, 5)


def _fields(gt) -> tuple:
    return tuple(getattr(gt, k) for k in SLOTS)


@settings(max_examples=120, deadline=None)
@given(st.lists(DIM, min_size=1, max_size=6), st.none() | st.lists(st.integers(-3, 40), min_size=1, max_size=6),
       st.sampled_from((np.float32, np.float16, np.int8, np.float64)), st.booleans())
def test_a_tensor_from_the_kept_geometry_is_the_tensor_built_from_scratch(shape, stride, dt, numpy_ints):
    ptr = GMPtr(0x1000, dt)
    fresh = (ptr, list(shape), None if stride is None else list(stride))      # never kept
    kept = (ptr, tuple(shape), None if stride is None else tuple(stride))
    other = (ptr, tuple(np.int64(n) if numpy_ints else n for n in shape), kept[2])
    try:
        want = _fields(GlobalTensor(*fresh))
    except KernelError as e:
        misses = tensor._geometry.cache_info().misses
        with pytest.raises(KernelError, match=re.escape(e.what)):
            GlobalTensor(*kept)
        with pytest.raises(KernelError, match=re.escape(e.what)):
            GlobalTensor(*kept)                                              # not kept: derived again
        assert tensor._geometry.cache_info().misses == misses + 2
        return
    assert _fields(GlobalTensor(*kept)) == want          # made and kept
    assert _fields(GlobalTensor(*kept)) == want          # from the kept geometry
    assert _fields(GlobalTensor(*other)) == want         # an equal key of other types


def test_the_geometry_is_derived_once_per_shape(monkeypatch):
    made = []
    derive = tensor._derive
    monkeypatch.setattr(tensor, "_derive", lambda *a: made.append(a) or derive(*a))
    ptr = GMPtr(0x1000, np.float32)
    shape = (3, 7, 11)                      # (not made by any other test)
    for i in range(5):
        GlobalTensor(ptr + 64 * i, shape)
        GlobalTensor(ptr, [3, 7, 11])       # a list: derived each time
    assert made.count((shape, None, 4, None)) == 1 and made.count(([3, 7, 11], None, 4, None)) == 5


def _nz(x: np.ndarray, c0: int) -> np.ndarray:
    """``x`` (R x C) as NZ fractals in GM order: [C / c0 column blocks][R rows][c0]."""
    r, c = x.shape
    return x.reshape(r, c // c0, c0).transpose(1, 0, 2).copy()


def test_a_dn_and_an_nz_tensor_are_the_matrix_of_their_layout():
    """pto-isa's GlobalTensor Layout (MapTileIndicesToGlobalOffset): DN is d3 rows of
    d0*d1*d2*d4 columns, NZ d2*d3 rows of d0*d1*d4 columns (c0-wide column blocks of 16-row
    fractals); TLOAD reads, TSTORE writes the matrix so, through outer dims that are not 1."""
    import ptopipe
    from ptopipe.isa import TLOAD, TMOV, TSTORE, Tile, TileType

    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    xnz = _nz(x, 8)                                         # 4 blocks x 32 rows x 8
    xdn = x.T.reshape(2, 16, 32).copy()                     # columns, in 2 groups of 16

    def vector(x, xnz, xdn, out_nz, out_dn, back_nz, back_dn):
        # a Vec tile moves only between GM and a tile of its own layout (pto-isa's TLOAD /
        # TSTORE): an ND tile and TMOVs between it and the DN / NZ tiles
        t = Tile(TileType.Vec, np.float32, 32, 32, addr=0)
        tnz = Tile(TileType.Vec, np.float32, 32, 32, layout=TileLayout.NZ, addr=0x1000)
        tdn = Tile(TileType.Vec, np.float32, 32, 32, layout=TileLayout.DN, addr=0x2000)
        nd = GlobalTensor(x.data(), (32, 32))
        nz = (1, 4, 2, 16, 8), (1024, 256, 128, 8, 1)       # d1 = 4 column blocks, d2 = 2 row blocks
        dn = (1, 1, 2, 32, 16), (1024, 1024, 512, 1, 32)    # d2 = 2 column groups of d4 = 16
        TLOAD(t, nd)
        TMOV(tnz, t)
        TSTORE(GlobalTensor(out_nz.data(), *nz, layout=TileLayout.NZ), tnz)
        TMOV(tdn, t)
        TSTORE(GlobalTensor(out_dn.data(), *dn, layout=TileLayout.DN), tdn)
        TLOAD(tnz, GlobalTensor(xnz.data(), *nz, layout=TileLayout.NZ))
        TMOV(t, tnz)
        TSTORE(GlobalTensor(back_nz.data(), (32, 32)), t)
        TLOAD(tdn, GlobalTensor(xdn.data(), *dn, layout=TileLayout.DN))
        TMOV(t, tdn)
        TSTORE(GlobalTensor(back_dn.data(), (32, 32)), t)

    args = dict(x=x, xnz=xnz, xdn=xdn, out_nz=np.zeros_like(xnz), out_dn=np.zeros_like(xdn),
                back_nz=np.zeros_like(x), back_dn=np.zeros_like(x))
    res = ptopipe.run(lambda **_: None, (vector, None), args)
    np.testing.assert_array_equal(res.outputs["out_dn"], xdn)
    np.testing.assert_array_equal(res.outputs["out_nz"], xnz)
    np.testing.assert_array_equal(res.outputs["back_nz"], x)
    np.testing.assert_array_equal(res.outputs["back_dn"], x)
    g = GlobalTensor(GMPtr(0x1000, np.float32), (1, 4, 2, 16, 8), layout=TileLayout.NZ)
    assert (g.rows, g.cols) == (32, 32) and "layout=NZ" in g.describe()
    with pytest.raises(KernelError, match="layout is one of ND, DN, NZ"):
        GlobalTensor(GMPtr(0x1000, np.float32), (16, 16), layout=TileLayout.ZZ)



@pytest.mark.parametrize("shape,stride,dim,value", [((8, 8), (-8, 1), 0, -8), ((2, 4, 8), (64, 8, -1), 2, -1),
                                                    ((1, 8), (-8, 1), None, None)])
def test_a_negative_stride_is_refused_where_the_view_is_made(shape, stride, dim, value):
    """A view that walks GM backwards is none pto-isa's TLOAD / TSTORE can move (their DMA gaps
    are unsigned); a dimension of one element may carry any stride (it never moves)."""
    if dim is None:
        assert GlobalTensor(GMPtr(0x1000, np.float32), shape, stride).rows == 1
        return
    with pytest.raises(KernelError) as ei:
        GlobalTensor(GMPtr(0x1000, np.float32), shape, stride)                 # <- negative
    assert ei.value.what == (f"GlobalTensor of shape {shape} with stride {stride}: the stride of dimension "
                             f"{dim} is {value}, negative")
    line = line_of(test_a_negative_stride_is_refused_where_the_view_is_made, "<- negative")
    assert "a stride >= 0" in ei.value.fix and ei.value.where.endswith(f"test_tensor_geometry.py:{line}")
