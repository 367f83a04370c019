"""codegen: ptopipe's compiled op programs as text for the real PTO toolchain.

* ``.pto`` (PTO-AS, the MLIR ``pto`` dialect ptoas reads): :func:`write_pto` prints a compiled
  ``pl.program`` op, :func:`read_pto` reads PTO-AS text (what the writer prints, and the
  subset of ptoas's frontend tests documented in docs/pto.md) back into the op IR.
* pto-isa C++: :func:`write_cpp` (:mod:`.cpp_writer`, spelling in :mod:`.cpp_types`) prints a
  compiled program as ``TPipe`` / ``Tile`` / ``TASSIGN`` / ``TPUSH`` ... (docs/cpp.md).
"""
from .cpp_writer import write_cpp
from .pto_reader import read_pto
from .pto_writer import write_pto

__all__ = ["read_pto", "write_cpp", "write_pto"]
