"""ir: the IR of ptopipe kernels.

* the op/region IR, what the DSL parser (:mod:`ptopipe.language`) builds and the passes
  rewrite (core: Operation / Block / Region / Value with uses and a rewriting API; opdefs:
  every op once, derived from the op table; op_verifier; asm_printer / asm_parser: the
  MLIR-like text form; printer: DSL source);
* the statement tree (nodes: Program, Function, statements, expressions, ReserveBuffer /
  ImportPeerBuffer) that the allocator and the runtime still run, and convert: tree <-> ops;
* types, the op table (ops) and structural equality (up to value renaming for ops).
"""
from .asm_parser import parse_ir, parse_ops
from .asm_printer import print_ir
from .convert import to_ops, to_tree
from .core import (Block, BlockArgument, Builder, Operation, OpResult, Region, Use, Value,
                   gc_paused)
from .equality import first_difference, structural_equal
from .op_verifier import verify_ops, verify_program
from .opdefs import OPDEFS, OpDef, lookup_op
from .nodes import (Assign, BinOp, BufferAttr, Call, Const, Expr, ExprList, ExprStmt, For, Function, If,
                    ImportPeerBuffer, Program, ReserveBuffer, Return, Stmt, UnaryOp, Var, walk)
from .vocab import AUTO, FunctionKind, Loc
from .ops import OPS, OpSpec, lookup
from .printer import print_function, print_program, to_source
from .types import (BOOL, INDEX, NONE, BufferType, MemorySpace, NoneType, ScalarType, TensorType,
                    TileValueType, Type)

__all__ = ["Block", "BlockArgument", "Builder", "gc_paused", "OPDEFS", "OpDef", "OpResult", "Operation", "Region", "Use",
           "Value", "lookup_op", "parse_ir", "parse_ops", "print_ir", "to_ops", "to_tree",
           "verify_ops",
           "AUTO", "Assign", "BOOL", "BinOp", "BufferAttr", "BufferType", "Call", "Const", "Expr",
           "ExprList", "ExprStmt", "For", "Function", "FunctionKind", "INDEX", "If",
           "ImportPeerBuffer", "Loc", "MemorySpace", "NONE", "NoneType", "OPS", "OpSpec",
           "Program", "ReserveBuffer", "Return", "ScalarType", "Stmt", "TensorType", "TileValueType",
           "Type", "UnaryOp", "Var", "first_difference", "lookup", "print_function",
           "print_program", "structural_equal", "to_source", "verify_program", "walk"]
