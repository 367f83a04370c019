"""The values an executed ``.pto`` function holds besides scalars and ISA tiles: tensor views,
reserved ring buffers, bound pipes, and a ``return`` in flight."""
from __future__ import annotations


class View:
    """A ``pto.make_tensor_view``: the GM tensor's base pointer, shape, strides (elements)."""
    __slots__ = ("ptr", "dtype", "shape", "strides", "name")

    def __init__(self, ptr, dtype, shape, strides, name):
        self.ptr, self.dtype, self.shape, self.strides, self.name = ptr, dtype, shape, strides, name


class Reserved:
    """A ``pto.reserve_buffer`` / ``import_reserved_buffer`` result: its local address."""
    __slots__ = ("addr", "name", "size")

    def __init__(self, addr, name, size):
        self.addr, self.name, self.size = addr, name, size

    def __int__(self):
        return self.addr


class PipeVal:
    """A pipe bound on this core (the init's result or the function's implicit pipe)."""
    __slots__ = ("handle", "dirs", "one_lane")

    def __init__(self, handle, dirs, one_lane):
        self.handle, self.dirs, self.one_lane = handle, dirs, one_lane


class Return(Exception):
    """A ``return`` in flight: unwinds the function's statements with its values."""

    def __init__(self, values):
        self.values = values
