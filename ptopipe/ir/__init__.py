"""ir: the IR of ptopipe kernels - one op/region IR, what the DSL parser
(:mod:`ptopipe.language`) builds, the passes rewrite, the runtime interprets and the writers
print.

* core: Operation / Block / Region / Value with uses and a rewriting API; opdefs: every op
  once, derived from the op table, with typed accessors; op_verifier; asm_printer /
  asm_parser: the MLIR-like text form; printer: DSL source;
* types, the op table (ops) and structural equality up to value renaming (equality).
"""
from .asm_parser import parse_ir, parse_ops
from .asm_printer import print_ir
from .core import (Block, BlockArgument, Builder, Operation, OpResult, Region, Use, Value,
                   gc_paused)
from .equality import first_difference, structural_equal
from .op_verifier import verify_ops, verify_program
from .opdefs import OPDEFS, OpDef, lookup_op
from .vocab import AUTO, FunctionKind, Loc
from .ops import OPS, OpSpec, lookup
from .printer import print_function, print_program, to_source
from .types import (BOOL, INDEX, NONE, BufferType, MemorySpace, NoneType, ScalarType, TensorType,
                    TileValueType, Type)

__all__ = ["Block", "BlockArgument", "Builder", "gc_paused", "OPDEFS", "OpDef", "OpResult", "Operation", "Region", "Use",
           "Value", "lookup_op", "parse_ir", "parse_ops", "print_ir", "verify_ops",
           "AUTO", "BOOL", "BufferType", "FunctionKind", "INDEX", "Loc", "MemorySpace", "NONE",
           "NoneType", "OPS", "OpSpec", "ScalarType", "TensorType", "TileValueType", "Type",
           "first_difference", "lookup", "print_function", "print_program", "structural_equal",
           "to_source", "verify_program"]
