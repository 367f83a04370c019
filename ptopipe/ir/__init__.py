"""ir: the IR of ptopipe kernels - nodes (Program, Function, statements, expressions,
ReserveBuffer / ImportPeerBuffer), types, the op table, a printer to DSL source,
structural equality and a verifier.  The DSL parser that builds it is in
:mod:`ptopipe.language`."""
from .equality import first_difference, structural_equal
from .nodes import (AUTO, Assign, BinOp, BufferAttr, Call, Const, Expr, ExprList, ExprStmt, For,
                    Function, FunctionKind, If, ImportPeerBuffer, Loc, Program, ReserveBuffer,
                    Return, Stmt, UnaryOp, Var, walk)
from .ops import OPS, OpSpec, lookup
from .printer import print_function, print_program, to_source
from .types import (BOOL, INDEX, NONE, BufferType, MemorySpace, NoneType, ScalarType, TensorType,
                    TileValueType, Type)
from .verifier import verify

__all__ = ["AUTO", "Assign", "BOOL", "BinOp", "BufferAttr", "BufferType", "Call", "Const", "Expr",
           "ExprList", "ExprStmt", "For", "Function", "FunctionKind", "INDEX", "If",
           "ImportPeerBuffer", "Loc", "MemorySpace", "NONE", "NoneType", "OPS", "OpSpec",
           "Program", "ReserveBuffer", "Return", "ScalarType", "Stmt", "TensorType", "TileValueType",
           "Type", "UnaryOp", "Var", "first_difference", "lookup", "print_function",
           "print_program", "structural_equal", "to_source", "verify", "walk"]
