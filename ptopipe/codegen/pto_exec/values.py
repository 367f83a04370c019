"""The values an executed ``.pto`` function holds besides scalars and ISA tiles: tensor views,
reserved ring buffers, multi-slot tile regions, bound pipes, ``vector<...>`` / ``tensor<...>`` values (dense constants,
parameters), and a ``return`` in flight."""
from __future__ import annotations

import numpy as np


class View:
    """A ``pto.make_tensor_view``: the GM tensor's base pointer, shape, strides (elements) and
    the layout its ``{layout = #pto.layout<..>}`` names (None: read from the strides)."""
    __slots__ = ("ptr", "dtype", "shape", "strides", "name", "layout")

    def __init__(self, ptr, dtype, shape, strides, name, layout=None):
        self.ptr, self.dtype, self.shape, self.strides, self.name = ptr, dtype, shape, strides, name
        self.layout = layout


class Reserved:
    """A ``pto.reserve_buffer`` / ``import_reserved_buffer`` result: its local address."""
    __slots__ = ("addr", "name", "size")

    def __init__(self, addr, name, size):
        self.addr, self.name, self.size = addr, name, size

    def __int__(self):
        return self.addr


class MultiTile:
    """A ``pto.alloc_multi_tile`` region: its MultiSpec, the address of slot 0, the valid shape
    every slot has, and the statement's result name (slot ``i`` is named ``%mb[i]``)."""
    __slots__ = ("spec", "addr", "valid", "name")

    def __init__(self, spec, addr, valid, name):
        self.spec, self.addr, self.valid, self.name = spec, addr, valid, name


class PipeVal:
    """A pipe bound on this core (the init's result or the function's implicit pipe) and
    the line:col of its init."""
    __slots__ = ("handle", "dirs", "one_lane", "where")

    def __init__(self, handle, dirs, one_lane, where=None):
        self.handle, self.dirs, self.one_lane, self.where = handle, dirs, one_lane, where


class Elements:
    """A ``vector<...>`` / ``tensor<...>`` value: its elements (numpy, the type's shape and
    element dtype).  ptoas lowers ``vector<4xi16>`` to pto-isa's MrgSortExecutedNumList (the
    counts a multi-list TMRGSORT writes): :meth:`executed` is that view of the value."""
    __slots__ = ("data",)

    def __init__(self, data: np.ndarray):
        self.data = data

    def executed(self) -> "ExecutedList":
        return ExecutedList(self.data)


class ExecutedList:
    """A 4-element :class:`Elements` as the ISA's MrgSortExecutedNumList: TMRGSORT's counts
    are written into the value's elements (wrapped to their dtype, as the C++ stores them)."""
    __slots__ = ("_data",)

    def __init__(self, data: np.ndarray):
        self._data = data

    def _count(i):
        def get(self):
            return int(self._data.reshape(-1)[i])

        def put(self, v):
            self._data.reshape(-1)[i] = np.array(v).astype(np.int64).astype(self._data.dtype)
        return property(get, put)

    mrgSortList0, mrgSortList1, mrgSortList2, mrgSortList3 = _count(0), _count(1), _count(2), _count(3)
    del _count


class Return(Exception):
    """A ``return`` in flight: unwinds the function's statements with its values."""

    def __init__(self, values):
        self.values = values
