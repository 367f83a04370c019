"""Code generation: ptopipe's compiled op programs in the formats of the PTO toolchain.

:func:`write_cpp` (:mod:`.cpp_writer`, spelling in :mod:`.cpp_types`): a compiled program as
pto-isa C++ (``TPipe`` / ``Tile`` / ``TASSIGN`` / ``TPUSH`` ...); docs/cpp.md.
"""
from .cpp_writer import write_cpp

__all__ = ["write_cpp"]
