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

from ptopipe.errors import KernelError
from ptopipe.isa import tensor
from ptopipe.isa.tensor import GlobalTensor, GMPtr

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
    assert made.count((shape, None, 4)) == 1 and made.count(([3, 7, 11], None, 4)) == 5
