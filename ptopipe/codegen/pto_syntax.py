"""PTO-AS (``.pto``) spellings: the one place the writer and the reader share.

Owns: the ``!pto.tile_buf<...>`` long form (key order, address spaces, layouts, default
fractal / pad), the short form's positional parts, ``#pto.address_space<...>``,
``#pto.kernel_kind<...>``, ``pto.target_arch`` values, split numbering 0/1/2
(:class:`~ptopipe.arch.vocab.TileSplitAxis`), the MLIR spelling of element types and float
literals, the ``pto.t*`` names of ptopipe's tile ops (and which take a scratch tile) and the
``arith`` names of its scalar ops, event ids; and what ptoas makes of a spelling: the SlotNums it
builds, the blayout it gives Left tiles (the rings its pipe inits build are
:mod:`ptopipe.protocol.rings`'); the ``ptopipe.*`` attributes ptoas keeps and ignores.
Facts follow ptoas's frontend tests and sources (hw-native-sys/PTOAS ``test/basic/*.pto``,
``include/PTO/IR/PTOOps.td``, ``lib/PTO``).
"""
from __future__ import annotations

import functools
import math
import re

import numpy as np

from ..arch import get_platform
from ..arch.dtypes import bfloat16, float8_e4m3, float8_e5m2
from ..arch.vocab import (LEFT_LAYOUT, AtomicType, CmpMode, BLayout, Coalesce, GatherOOB, ScatterAtomicOp, ScatterOOB,
                          SLayout, SyncPipe, TileLayout, TileSplitAxis, TileType, default_layout, static_shape,
                          tile_shape_error)
from ..ir.vocab import FunctionKind
from ..ir.ops import ISA_NAMES, OPS as IR_OPS
from ..ir.types import MemorySpace, TileValueType
from ..errors import INPUT, ConfigError, Given, with_article

#: tile_buf ``loc=`` <-> where the tile lives
LOC_OF_SPACE = {MemorySpace.Vec: "vec", MemorySpace.Mat: "mat", MemorySpace.Left: "left",
                MemorySpace.Right: "right", MemorySpace.Acc: "acc", MemorySpace.Bias: "bias"}
SPACE_OF_LOC = {v: k for k, v in LOC_OF_SPACE.items()}
#: ``#pto.address_space<...>`` of a reserve_buffer <-> the IR's memory_space
ADDRESS_SPACE_OF_MEM = {"UB": "vec", "L1": "mat"}
MEM_OF_ADDRESS_SPACE = {v: k for k, v in ADDRESS_SPACE_OF_MEM.items()}
#: the long form's keys, in the one order ptoas accepts
TILE_KEYS = ("loc", "dtype", "rows", "cols", "v_row", "v_col", "blayout", "slayout", "fractal", "pad")
BLAYOUT_NAMES = {BLayout.RowMajor: "row_major", BLayout.ColMajor: "col_major"}
SLAYOUT_NAMES = {SLayout.NoneBox: "none_box", SLayout.RowMajor: "row_major",
                 SLayout.ColMajor: "col_major"}
BLAYOUT_OF = {v: k for k, v in BLAYOUT_NAMES.items()}
SLAYOUT_OF = {v: k for k, v in SLAYOUT_NAMES.items()}
#: the layout ptoas's parser gives a short form ``!pto.tile_buf<loc, RxCxT[, key=value...]>`` that
#: leaves out blayout / slayout, in every location and shape - a one-column Vec tile and a Cube
#: tile too (PTOAS PTOTypeDefs.cpp ``parseCompactTileBufFields`` takes ``TileBufConfigAttr::getDefault``:
#: row_major, none_box, fractal 512, pad 0; its printer leaves out exactly the keys of those
#: values, so a column it prints spells ``blayout=col_major``).  A Left tile's blayout is then its
#: platform's (:func:`tile_type`).  Not pto-isa's defaults (``TileLeft`` ZZ, ``TileAcc`` NZ, ...,
#: ``arch.vocab.default_layout``): those are the layouts of a DSL tile declared without one.
SHORT_FORM_LAYOUT = TileLayout.ND
#: func attribute ``pto.kernel_kind = #pto.kernel_kind<...>``
KIND_NAMES = {FunctionKind.AIC: "cube", FunctionKind.AIV: "vector"}
KIND_OF = {v: k for k, v in KIND_NAMES.items()}
#: module attribute ``pto.target_arch`` <-> platform name
ARCH_OF_PLATFORM = {"a2a3": "a3", "a5": "a5"}
PLATFORM_OF_ARCH = {"a3": "a2a3", "a2": "a2a3", "a2a3": "a2a3", "a5": "a5"}


def run_line_platform(text: str) -> str | None:
    """The platform a file's lit ``// RUN: ptoas --pto-arch=a5 ...`` line names, when its module
    carries no ``pto.target_arch`` (ptoas's own test files say their arch only there), else None."""
    if re.search(r"pto\.target_arch", text):
        return None
    m = re.search(r"^\s*//\s*RUN:.*?--pto-arch[= ](\w+)", text[:4096], re.M)
    return PLATFORM_OF_ARCH.get(m.group(1)) if m else None


#: the ops whose result type the text does not spell (``%sb = pto.get_subblock_idx``): their
#: result's type, as ptoas's PTOOps.td declares it (``I64:$result``) - a use as ``index``
#: needs an ``arith.index_cast`` first
IMPLICIT_RESULT_TYPE = {"pto.get_block_idx": "i64", "pto.get_subblock_idx": "i64", "pto.get_block_num": "i64",
                        "pto.get_subblock_num": "i64"}


#: pypto's SPMD identity parameters: its codegen lowers ``tile.get_block_idx()``,
#: ``get_block_num()`` and ``get_subblock_idx()`` to ``arith.index_cast`` of these ``i32``
#: parameters, which it appends to the signature of each function that uses them (pypto
#: src/codegen/pto/pto_codegen.cpp), and its kernel wrapper fills them per core from the runtime
SPMD_BLOCK_IDX = "__pypto_spmd_block_idx"
SPMD_BLOCK_NUM = "__pypto_spmd_block_num"
SPMD_SUBBLOCK_IDX = "__pypto_spmd_subblock_idx"
SPMD_PARAMS = (SPMD_BLOCK_IDX, SPMD_BLOCK_NUM, SPMD_SUBBLOCK_IDX)


def refuse_spmd_inputs(names, given: Given = INPUT) -> None:
    """A ConfigError for a value given (``option``) to one of pypto's SPMD identity
    parameters: the run binds them per core, as pypto's runtime does (the Vector core's lane,
    0 on the Cube; the block's index and the number of blocks, ``--blocks N``), and the static
    verifier proves the file for block 0 of 1."""
    for k in names:
        if k in SPMD_PARAMS:
            raise ConfigError(f"{given.of(k)}: pypto's runtime gives this parameter, and so does ptopipe: "
                              f"{SPMD_SUBBLOCK_IDX} is each core's lane (AIV0 0, AIV1 1, the Cube 0), "
                              f"{SPMD_BLOCK_IDX} the block's index and {SPMD_BLOCK_NUM} the number of "
                              "blocks (1 unless --blocks N)",
                              where=given.where, fix=given.drop(k))


#: ``{split = N}``: pto-isa's TileSplitAxis value, 0 / 1 / 2 / 3 / 4 = TILE_NO_SPLIT / TILE_UP_DOWN /
#: TILE_LEFT_RIGHT / TILE_UP_DOWN_ODD / TILE_LEFT_RIGHT_ODD (pypto prints it verbatim)
SPLIT_OF = {int(s): s for s in TileSplitAxis}
#: the values, as an error message says them
SPLIT_CODES = ", ".join(f"{int(s)} ({s.name})" for s in TileSplitAxis)


def nosplit_conflict(op: str, split: int, init_line: int) -> tuple:
    """``(what, fix)`` of a push / pop / free with ``split`` 1 or 2 on a pipe whose init (at
    ``init_line``) says ``nosplit = true`` - a ParseError (ptoas: "explicit 'nosplit = true'
    conflicts with downstream users that require split = 1 or split = 2")."""
    return (f"{op} with split = {split} on a pipe initialised with nosplit = true (line {init_line}): "
            "a no-split pipe moves whole tiles to AIV0 only",
            "give every tpush / tpop / tfree of the pipe split = 0, or drop nosplit = true "
            "from both inits to split the tiles between the Vector cores")
def split_mix_conflict(func: str, op: str, split: int | None, first: str, first_split: int | None,
                       first_line: int) -> tuple:
    """``(what, fix)`` of a frontend push / pop of ``func`` whose kind of tiles (whole:
    ``split`` 0 or None; split: 1 or 2) differs from its first one's, at ``first_line``: a
    function's frontend ops ride one cross-core pipe, no-split or split for its whole life
    (pto-isa's ``TPipe<..., IsNoSplit>``) - a ParseError (PTOAS
    ``PTOInferValidatePipeInitPass``: "cannot mix 'split = 0' with 'split = 1' or 'split = 2'
    on the same logical pipe"; pypto's AivSplitValid)."""
    def said(o, v):
        return f"{o} {{split = {v}}}" if v is not None else f"{o} (no split: whole tiles)"
    return (f"{said(op, split)} and {said(first, first_split)} at line {first_line} ride @{func}'s one "
            "cross-core pipe, which moves whole tiles or split ones for its whole life: ptoas refuses the "
            "file (\"cannot mix 'split = 0' with 'split = 1' or 'split = 2' on the same logical pipe\")",
            "give every tpush / tpop of the function split = 0 (whole tiles, AIV0 only) or every one a "
            "split (1 / 2: each Vector core its part), or move the whole tiles through a pipe of their "
            "own (pto.initialize_l2l_pipe / pto.initialize_l2g2l_pipe)")


PIPES = {p.value: p for p in SyncPipe}
#: IR dtype <-> MLIR element type
MLIR_DTYPE = {"f16": "f16", "f32": "f32", "bf16": "bf16", "i8": "i8", "u8": "ui8", "i16": "i16",
              "i32": "i32", "u32": "ui32", "i64": "i64", "index": "index", "bool": "i1"}
IR_DTYPE = {v: k for k, v in MLIR_DTYPE.items()}
FLOATS = ("f16", "f32", "bf16")
def ptr_type(dtype: str) -> str:
    """``!pto.ptr<f32>``: a GM pointer parameter's PTO-AS type for the IR ``dtype``."""
    return f"!pto.ptr<{MLIR_DTYPE.get(dtype, dtype)}>"


#: integer scalar types: what `arith.index_cast` reads to an index, and casts an integer loop
#: bound of another type back to one (the writer)
INT_DTYPES = ("index", "i64", "i32", "u32", "i16", "i8", "u8")

#: MLIR's builtin types that are one word: ``index``, ``none``, the integers (``i32``, ``si8``,
#: ``ui16``) and the floats (``f16`` ... ``f128``, ``bf16``, ``tf32``, the ``f8E4M3FN`` family).
#: Any other bare word where a type stands is no type to ptoas's parser ("expected
#: non-function type"); a dialect type starts with ``!``, a shaped one has ``<...>``.
MLIR_WORD_TYPE = re.compile(r"(?:index|none|[su]?i[1-9]\d*|bf16|f16|f32|f64|f80|f128|tf32|f[468]E\w+)")
_BARE_WORD = re.compile(r"[A-Za-z_][\w.$]*")


@functools.lru_cache(maxsize=4096)
def type_word_refusal(ty: str) -> tuple | None:
    """``(what, fix)`` when the type text ``ty`` is a bare word MLIR has no type of (``f33``,
    ``foo``), else None (kept per text: a file defines thousands of values with a few types)."""
    ty = ty.strip()
    if not _BARE_WORD.fullmatch(ty) or MLIR_WORD_TYPE.fullmatch(ty):
        return None
    return (f"{ty!r} is not a type: ptoas refuses the file (\"expected non-function type\")",
            "write an MLIR type: index, an integer (i1 / i8 / i16 / i32 / i64, ui8 ...), a float "
            "(f16 / bf16 / f32 / f64), or a dialect type (!pto.tile_buf<...>, !pto.ptr<f32> ...)")


def unprefixed_tile_refusal(ty: str) -> tuple:
    """``(what, fix)`` of the tile type ``ty`` written without its ``!pto.tile_buf`` name
    (``tile_buf<...>``, a bare ``<loc=vec, ...>``), which ptoas's parser does not read."""
    return (f"type {ty!r}: a tile type is written !pto.tile_buf<...> (ptoas: \"expected non-function type\")",
            "write !pto.tile_buf<loc=..., dtype=..., rows=..., cols=..., ...> (or the short form "
            "!pto.tile_buf<vec, 16x16xf32>)")


#: ptoas's ``!pto.tile<...>``: a shape and element type with no address space or layout, which
#: no op of ptoas takes or gives (PTOAS PTOTypeDefs.td ``TileType``; the ops take tile_buf)
BARE_TILE = "!pto.tile<"


def bare_tile_refusal(op: str, ty: str) -> tuple:
    """``(what, fix)`` of ``op`` taking or giving the ``!pto.tile<...>`` type ``ty``."""
    m = re.fullmatch(r"!pto\.tile<\s*([^<>]*?)\s*>", ty.strip())
    short = f"!pto.tile_buf<vec, {m.group(1)}>" if m else "!pto.tile_buf<loc=..., dtype=..., ...>"
    return (f"{op} with a {ty.strip()}: ptoas's tile ops take and give !pto.tile_buf tiles, and refuse "
            f"a !pto.tile (\"'{op}' op operand / result must be ..., but got '{ty.strip()}'\")",
            f"write the tile's type as a !pto.tile_buf - where it lives, shape and element type, e.g. "
            f"{short} (or the long form !pto.tile_buf<loc=vec, dtype=..., rows=..., cols=..., ...>)")

#: ptopipe tile op (op-table name) <-> PTO-AS op name (``pto.`` + the ISA name)
def pto_op_name(isa_name: str) -> str:
    """The PTO-AS op of an instruction: ``pto.`` + its name in lower case, the matmul / gemv
    variants and TMOV_FP dotted (``TMATMUL_ACC`` -> ``pto.tmatmul.acc``, ``TMOV_FP`` -> ``pto.tmov.fp``,
    ``TFILLPAD_INPLACE`` -> ``pto.tfillpad_inplace``, ``TSTORE_FP`` -> ``pto.tstore_fp``)."""
    low = isa_name.lower()
    if low.startswith(("tmatmul_", "tgemv_")) or low == "tmov_fp":
        low = low.replace("_", ".")
    return "pto." + low


#: PTO-AS ops whose instruction is an overload of another pto-isa function (by its operands)
OVERLOADS = {"TMATMUL_MX_ACC": "TMATMUL_MX", "TMATMUL_MX_BIAS": "TMATMUL_MX",
             "TGEMV_MX_ACC": "TGEMV_MX", "TGEMV_MX_BIAS": "TGEMV_MX"}


def isa_name_of(op_name: str) -> str:
    """The instruction a PTO-AS op names (:func:`pto_op_name`'s inverse; ``pto.tmatmul.mx.acc``
    -> ``TMATMUL_MX``, whose accumulating form it is)."""
    name = op_name[4:].replace(".", "_").upper()
    return OVERLOADS.get(name, name)


PTO_OP = {dsl: pto_op_name(isa) for dsl, isa in ISA_NAMES.items()}
IR_OP_OF_PTO = {v: k for k, v in PTO_OP.items()}
IR_OP_OF_PTO["pto.tmatmul_acc"] = "matmul_acc"

#: the trailing attribute of a ``pto.reserve_buffer {..., auto = true}``: the base ptopipe
#: placed the ring at (ptoas's PlanMemory places it itself)
PTOPIPE_BASE = "ptopipe.base"
#: how ptoas assembles a file whose tiles carry their addresses (``alloc_tile addr = %c``,
#: ``reserve_buffer {auto = false, base = N}``): level2's PlanMemory refuses both
PLACED_LEVEL = "ptoas --pto-level=level3"


def placed_level(text: str) -> bool:
    """Does ``text`` open with the writer's level3 line (a program that orders its pipes with
    events of its own, every tile at its address: ptoas builds it as written, with no sync of
    its own)?"""
    return text.startswith(f"// {PLACED_LEVEL}:")


#: the attribute of the writer's ``pto.tmov`` of a loop / branch value into the buffer that
#: carries it (pto_buffers): the reader takes the buffer to hold the moved value, no op
CARRY = "ptopipe.carry"
#: the attribute of the ``pto.tmov`` that spells the IR's named copy ``pl.copy`` of a tile
NAMED_COPY = "ptopipe.copy"
#: on a ``pto.set_flag`` / ``wait_flag`` / ``barrier`` the compiler placed before a TFREE for the
#: order the protocol's free signal lacks (the IR's ``free_order``): not the kernel's own
#: events, which make the file level3 (:data:`PLACED_LEVEL`)
FREE_ORDER = "ptopipe.free_order"
#: on the ``arith.cmpi`` whose result guards a two-lane TILE_NO_SPLIT AIV kernel's data ops
#: (``scf.if`` it: AIV0 only); the IR says the same by the kernel's split
DATA_LANE_MARK = "ptopipe.data_lane"
#: on the ``arith.subf %a, %nb`` (``%nb = arith.negf %b``) that spells the IR's float scalar
#: ``a + b``: ptoas 0.27 lowers no ``arith.addf`` ("failed to legalize operation 'arith.addf'"),
#: and ``a - (-b)`` is ``a + b`` exactly; the reader reads the pair back as the add
FLOAT_ADD_MARK = "ptopipe.float_add"

#: ops pypto writes for a newer ptoas (0.54) that the bundled ptoas 0.27 does not know ("custom op
#: 'pto.subview' is unknown"): ptopipe runs them as that ptoas lowers them (docs/pto.md), with a
#: warning at the op -> what pypto writes it for
NEWER_PTOAS_OPS = {"pto.subview": "pypto's tile.slice / tile.assemble", "pto.syncall": "pypto's system.syncall",
                   "pto.alloc_multi_tile": "pypto's memory_planner=PTOAS multi-slot allocation",
                   "pto.multi_tile_get": "pypto's memory_planner=PTOAS multi-slot allocation"}

#: ops whose ptoas form takes a scratch tile (``tmp``, of the source's type) after their
#: sources (PTOAS PTOOps.td, the ops with a ``$tmp`` operand): required by the row
#: reductions (TROWPROD too), the arg-reductions, TREM / TREMS, TXOR / TXORS, TPRELU and
#: TTRANS, optional for the row broadcasts, TRSQRT and TCOLSUM.  The writer passes one where
#: ptoas requires it (ptoas refuses the op without: "expected ','"); the reader takes it.
SCRATCH_REQUIRED = ("pto.trowmax", "pto.trowmin", "pto.trowsum", "pto.trowprod", "pto.trowargmax",
                    "pto.trowargmin", "pto.tcolargmax", "pto.tcolargmin", "pto.trem", "pto.trems", "pto.txor",
                    "pto.txors", "pto.tprelu", "pto.ttrans", "pto.tsel", "pto.tsels")
SCRATCH_OPTIONAL = ("pto.trowexpanddiv", "pto.trowexpandmul", "pto.trowexpandsub",
                    "pto.trowexpandexpdif", "pto.trowexpandmax", "pto.trowexpandmin", "pto.trsqrt",
                    "pto.tcolsum")


def missing_scratch_refusal(op: str, n_ins: int) -> tuple | None:
    """``(what, fix)`` when ``op`` (one of :data:`SCRATCH_REQUIRED`) is given ``n_ins`` operands in
    ``ins(...)``, its operands without the tmp ptoas requires, else None."""
    if op not in SCRATCH_REQUIRED or n_ins != len(IR_OPS[IR_OP_OF_PTO[op]].operands):
        return None
    return (f"{op} without its tmp operand: ptoas refuses it (its ins(...) takes a scratch tile, "
            "\"expected ','\")",
            "allocate a scratch tile of the source's type and pass it as the op's tmp, e.g. "
            "ins(%src, %tmp : T, T)")


#: ops whose scratch tile is an A2A3 form only: ptoas refuses it on A5 ("expects A5 form to
#: omit tmp", PTOAS lib/PTO/IR/PTO.cpp verifyTRowExpandReduceLikeOp)
SCRATCH_A2A3_ONLY = ("pto.trowexpandexpdif", "pto.trowexpandmax", "pto.trowexpandmin")


def a5_scratch_refusal(op: str) -> tuple:
    """``(what, fix)`` of ``op`` (one of :data:`SCRATCH_A2A3_ONLY`) given a scratch tile on A5."""
    return (f"{op} with a tmp tile on A5: ptoas refuses it (expects A5 form to omit tmp)",
            "drop the tmp operand on A5 (the A5 instruction needs no scratch tile; A2A3 takes one)")

#: element types ptoas's verifier takes (PTOAS PTO.cpp, the ops' ``verify``) where pto-isa's
#: instruction takes more: op -> {platform: (dtypes, ptoas's words)}; ``None`` as the platform:
#: every platform.  ptoas refuses the file; pto-isa's C++ of the instruction builds and runs.
_W8_16 = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16))
_W16 = frozenset(np.dtype(t) for t in (np.int16, np.uint16))
_F16_F32 = frozenset(np.dtype(t) for t in (np.float16, np.float32))
_A5_ARITH = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float16,
                                            np.float32))
_A5_MUL = _A5_ARITH - {np.dtype(np.int8), np.dtype(np.uint8)}
_EXTRACT = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.float16, np.float32)) | {bfloat16}
PTOAS_ELEMENT_TYPES = {
    **{f"pto.{op}": {"a2a3": (_W8_16, f"expects A2/A3 {op} element type to be i8/i16")}
       for op in ("tand", "tor", "txor", "tands", "tors", "txors")},
    "pto.tnot": {"a2a3": (_W16, "expects A2/A3 tnot element type to be i16")},
    "pto.trecip": {None: (_F16_F32, "expects element type to be f16 or f32")},
    "pto.tabs": {None: (_F16_F32, "expects element type to be f16 or f32")},
    **{f"pto.{op}": {"a5": (_A5_ARITH, f"expects A5 {op} element type to be i32/i16/i8/f16/f32")}
       for op in ("tsub", "tmax", "tmin", "tmaxs")},
    "pto.tmul": {"a5": (_A5_MUL, "expects A5 tmul element type to be i32/i16/f16/f32")},
    "pto.tcmps": {"a5": (_A5_ARITH, "expects A5 tcmps input element type to be i8/i16/i32/f16/f32")},
    "pto.tcmp": {"a5": (_A5_ARITH | {bfloat16},
                        "expects A5 tcmp input element type to be i8/i16/i32/f16/bf16/f32")},
    **{f"pto.{op}": {"a5": (_A5_ARITH | {bfloat16},
                            f"expects A5 {op} element type to be i8/i16/i32/f16/bf16/f32")}
       for op in ("tcolsum", "tcolmax", "tcolmin")},
    "pto.texpands": {"a2a3": (_A5_MUL, "expects A2/A3 texpands dst element type to be i16/i32/f16/f32"),
                     "a5": (_A5_ARITH, "expects A5 texpands dst element type to be i8/i16/i32/f16/f32")},
    "pto.textract": {"a2a3": (_EXTRACT, "expects A2/A3 textract element type to be i8/f16/bf16/f32"),
                     "a5": (_EXTRACT | {float8_e4m3, float8_e5m2},
                            "expects A5 textract element type to be an fp8/f16/bf16/f32 or int8 family type")},
}

#: ops ptoas's verifier refuses with one SSA value in two operand places (PTOAS PTO.cpp: "expects
#: src and dst to use different storage"): op -> (the platform it refuses it on, None: every one;
#: how many leading ``ins`` operands must differ from each other and from the destination)
PTOAS_DISTINCT_OPERANDS = {"pto.tands": (None, 1), "pto.tors": (None, 1), "pto.txors": (None, 1),
                           "pto.trecip": ("a2a3", 1), "pto.tprelu": ("a2a3", 3)}


def ptoas_storage_refusal(op: str, platform: str, ins: list, outs: list) -> tuple | None:
    """``(what, fix)`` where ``op`` (:data:`PTOAS_DISTINCT_OPERANDS`) on ``platform`` names one
    value twice among its first ``ins`` operands and its destination (``ins`` / ``outs``: the
    operands' SSA names), else None."""
    rule = PTOAS_DISTINCT_OPERANDS.get(op)
    if rule is None or rule[0] not in (None, platform) or not outs:
        return None
    names = list(ins[:rule[1]]) + [outs[0]]
    twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
    if twice is None:
        return None
    where = "" if rule[0] is None else " on A2/A3"
    words = ("src0, src1, tmp, and dst" if rule[1] == 3 else "src and dst")
    return (f"{op} names {twice} twice (in place): ptoas refuses it{where} (\"expects {'A3 ' if rule[0] else ''}"
            f"{'trecip ' if op == 'pto.trecip' else ''}{words} to use different storage\")",
            "write the result to a tile of its own (another pto.alloc_tile) and read it from there")


#: ops whose ptoas verifier takes row-major Vec tiles only (PTOAS PTO.cpp: the unary forms'
#: ``verifyVecTileCommon``, "expects src to use the row_major blayout"; the binary and tile-scalar
#: forms' ``isRowMajorTileBuf``, "expects src0, src1, and dst to use row-major layout"; the row /
#: column broadcasts, one operand at a time; A2/A3's TEXPANDS, A5's TCONCAT): op -> (the platform it
#: refuses it on, None: every one; the ``ins`` operands it checks: (position, ptoas's name of it,
#: checked only where its shape is the destination's); ptoas's words, ``{role}`` the operand's
#: name).  The destination is checked too.  pto-isa's NPU code static_asserts most of them as well
#: (``arch.catalogue.ROW_MAJOR_ONLY``); a DN [R, 1] column goes through the element-wise ones as its
#: [1, R] row (``pto.treshape``), as ptopipe's writer and pypto write it.
_ROW_MAJOR_BINARY = "src0, src1, and dst to use row-major layout"
_ONE_BY_ONE = "{role} to use row-major layout"
_SRC, _SRC01 = ((0, "src", False),), ((0, "src0", False), (1, "src1", False))
PTOAS_ROW_MAJOR = {
    **{f"pto.{op}": (None, _SRC, "{role} to use the row_major blayout")
       for op in ("tabs", "trecip", "texp", "tlog", "tsqrt", "trsqrt", "trelu", "tnot", "taxpy")},
    **{f"pto.{op}": (None, _SRC01, _ROW_MAJOR_BINARY) for op in ("tadd", "tsub", "tmul", "tdiv", "tmax", "tmin",
                                                                 "tand", "tor", "txor", "tshl", "tshr", "tfmod",
                                                                 "tprelu")},
    "pto.trem": (None, _SRC01 + ((2, "tmp", False),), "src0, src1, tmp, and dst to use row-major layout"),
    "pto.tsel": (None, ((1, "src0", False), (2, "src1", False)), _ROW_MAJOR_BINARY),
    **{f"pto.{op}": (None, _SRC, "src and dst to use row-major layout") for op in ("tands", "tors", "txors",
                                                                                   "tfmods")},
    "pto.trems": (None, _SRC + ((2, "tmp", False),), "src, tmp, and dst to use row-major layout"),
    "pto.texpands": ("a2a3", (), "vec dst to use row-major layout on A2/A3"),
    "pto.tconcat": ("a5", _SRC01, _ROW_MAJOR_BINARY),
    "pto.tcolexpand": (None, (), "{role} to use the row_major blayout"),
    **{f"pto.tcolexpand{op}": (None, _SRC01, _ONE_BY_ONE)
       for op in ("add", "sub", "mul", "div", "max", "min", "expdif")},
    "pto.trowexpandadd": (None, ((0, "src0", False),), _ONE_BY_ONE),
    **{f"pto.trowexpand{op}": (None, ((0, "src0", True),), _ONE_BY_ONE + " when it matches dst")
       for op in ("max", "min", "expdif")},
    **{f"pto.trowexpand{op}": (None, (), _ONE_BY_ONE) for op in ("sub", "mul", "div")},
}


def ptoas_row_major_refusal(op: str, platform: str, ins: list, dst) -> tuple | None:
    """``(what, fix)`` when ``op`` (:data:`PTOAS_ROW_MAJOR`) on ``platform`` has a Vec tile operand
    of another blayout than row_major among the ones ptoas checks (``ins``: its ``ins`` operands,
    tiles and scalars, in order; ``dst``: its destination), else None."""
    rule = PTOAS_ROW_MAJOR.get(op)
    if rule is None or rule[0] not in (None, platform):
        return None
    shape = (getattr(dst, "rows", None), getattr(dst, "cols", None))
    checked = [(role, ins[i]) for i, role, like_dst in rule[1]
               if i < len(ins) and (not like_dst or (getattr(ins[i], "rows", None), getattr(ins[i], "cols", None)) == shape)]
    for role, t in checked + [("dst", dst)]:
        if getattr(t, "loc", None) is TileType.Vec and t.blayout is not BLayout.RowMajor:
            column = t.cols == 1
            return (f"{op}'s {role} {t.describe()} is {BLAYOUT_NAMES.get(t.blayout, t.blayout)}: ptoas refuses it "
                    f"('{op}' op expects {rule[2].format(role=role)})",
                    "declare the tile blayout=row_major" + (
                        ": a per-row value as an [R, 1] col_major column goes through this op as its [1, R] row "
                        "(pto.treshape), or as an [R, C] row_major tile with v_col=1" if column else
                        " (pto.tmov converts a tile's layout)"))
    return None


#: ``pto.tquant``'s ``quant_type`` values (PTOAS PTOAttrs.td ``QuantType``: the INT8 forms; the
#: attribute is required) and the destination element type each writes
PTOAS_QUANT_TYPES = {"INT8_SYM": np.dtype(np.int8), "INT8_ASYM": np.dtype(np.uint8)}


def ptoas_quant_refusal(quant_type: str, dst_dtype, has_offset: bool) -> tuple | None:
    """``(what, fix)`` where ptoas's ``TQuantOp::verify`` refuses a ``pto.tquant`` of
    ``quant_type`` (:data:`PTOAS_QUANT_TYPES`) writing a ``dst_dtype`` tile with / without an
    offset operand (INT8_SYM: an i8 destination and no offset; INT8_ASYM: ui8 and an offset),
    else None."""
    want, sym = PTOAS_QUANT_TYPES[quant_type], quant_type == "INT8_SYM"
    spelled = "i8" if sym else "ui8"
    if np.dtype(dst_dtype) != want:
        return (f"pto.tquant {quant_type} into {with_article(np.dtype(dst_dtype).name)} tile: ptoas refuses it ('pto.tquant' op "
                f"expects dst element type {spelled} for {quant_type} quantization)",
                f"declare the destination {spelled}" + (", or quantise INT8_ASYM (ui8, with an offset tile)" if sym
                                                       else ", or quantise INT8_SYM (i8, no offset)"))
    if sym and has_offset:
        return ("pto.tquant INT8_SYM with an offset operand: ptoas refuses it ('pto.tquant' op INT8_SYM quantization "
                "must not have an offset operand)", "drop the offset, or quantise INT8_ASYM into a ui8 tile")
    if not sym and not has_offset:
        return ("pto.tquant INT8_ASYM without an offset operand: ptoas refuses it ('pto.tquant' op INT8_ASYM "
                "quantization requires an offset operand)",
                "pass the per-row zero points after the scale: ins(%src, %scale, %offset : ...)")
    return None


#: the tile locations ptoas's A2/A3 verifier takes for ops pto-isa also runs between Vec tiles:
#: op -> {platform: (source locations, destination locations, ptoas's words)}; its A5 rules of
#: these ops between Vec tiles are :func:`ptoas_location_refusal`'s
PTOAS_LOCATIONS = {
    "pto.textract": {"a2a3": ((TileType.Mat,), (TileType.Left, TileType.Right),
                              "expects A2/A3 textract src to use loc=mat and dst loc=left or loc=right")},
    "pto.tinsert": {"a2a3": ((TileType.Acc,), (TileType.Mat,),
                             "expects A2/A3 tinsert src to use loc=acc and dst to use loc=mat")},
}


#: ops whose destination ptoas's verifier constrains where pto-isa does not (or checks only when
#: it compiles the C++): the row reductions write one column (PTOAS verifyRowReductionValidRegion:
#: "expects dst valid_shape[1] to be 1"; pto-isa writes column 0 of a wider ND dst), the pads need
#: a pad value in the dst type ("expects dst PadVal != Null for tfillpad")
ROW_REDUCTIONS = ("pto.trowmax", "pto.trowmin", "pto.trowsum", "pto.trowprod", "pto.trowargmax", "pto.trowargmin")
FILL_PADS = ("pto.tfillpad", "pto.tfillpad_expand", "pto.tfillpad_inplace")


def ptoas_dst_refusal(op: str, v_cols, pad) -> tuple | None:
    """``(what, fix)`` when ptoas refuses ``op`` writing a ``!pto.tile_buf`` destination whose
    static valid columns are ``v_cols`` (None: dynamic) and pad value ``pad`` (None: Null), else
    None."""
    if op in ROW_REDUCTIONS and v_cols is not None and v_cols != 1:
        return (f"{op} into a destination of {v_cols} valid columns: ptoas refuses it ('{op}' op expects dst "
                "valid_shape[1] to be 1)",
                "reduce into an R x 1 tile (blayout=col_major, v_col=1), as the row reductions write one column")
    if op in FILL_PADS and pad is None:
        return (f"{op} into a destination whose type has no pad value (pad=0, Null): ptoas refuses it "
                f"(expects dst PadVal != Null for {op[4:]})",
                "give the destination type the value to pad with: pad=1 (zero), 2 (max) or 3 (min)")
    return None


#: A5's Vec -> Vec TINSERT element types in ptoas's verifier (8- / 32-bit integers, fp8, f16, bf16, f32)
_A5_VEC_INSERT = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.uint32, np.float16, np.float32)) | {
    bfloat16, float8_e4m3, float8_e5m2}


def ptoas_location_refusal(op: str, platform: str, src, dst) -> tuple | None:
    """``(what, fix)`` when ptoas's verifier refuses ``op`` from tile ``src`` to tile ``dst`` on
    ``platform`` (:data:`PTOAS_LOCATIONS`; on A5 a Vec -> Vec TEXTRACT / TINSERT takes ND tiles,
    and TINSERT :data:`_A5_VEC_INSERT` elements), else None."""
    rule = PTOAS_LOCATIONS.get(op, {}).get(platform)
    if rule and not (src.loc in rule[0] and dst.loc in rule[1]):
        return (f"{op} from a {src.loc.name} tile to a {dst.loc.name} tile on {platform.upper()}: ptoas refuses it "
                f"('{op}' op {rule[2]})",
                "on A2/A3 move Vec data with pto.tmov, or move the tiles through Mat / Left / Right as ptoas takes them")
    if platform != "a5" or src.loc is not TileType.Vec or dst.loc is not TileType.Vec:
        return None
    what = op.split(".")[1]
    if any(t.blayout is not BLayout.RowMajor or t.slayout is not SLayout.NoneBox for t in (src, dst)):
        return (f"{op} between Vec tiles on A5 not both row_major / none_box: ptoas refuses it ('{op}' op expects A5 "
                f"vec->vec {what} src/dst to use ND layout (blayout=row_major, slayout=none_box))",
                "give both tiles blayout=row_major, slayout=none_box (pto.tmov converts a tile's layout)")
    if op == "pto.tinsert" and src.dtype not in _A5_VEC_INSERT:
        return (f"{op} of {src.dtype.name} Vec tiles on A5: ptoas refuses it ('{op}' op expects A5 vec->vec tinsert "
                "src/dst to have same supported dtype (fp8/f16/bf16/f32/i8/i32))",
                "insert 8- or 32-bit integer, fp8, f16, bf16 or f32 tiles (convert with pto.tcvt first)")
    return None


def ptoas_element_refusal(op: str, platform: str, dtype) -> tuple | None:
    """``(what, fix)`` when ptoas's verifier refuses ``op`` on tiles of ``dtype`` on ``platform``
    (:data:`PTOAS_ELEMENT_TYPES`), else None."""
    rules = PTOAS_ELEMENT_TYPES.get(op)
    rule = rules and (rules.get(platform) or rules.get(None))
    if not rule or np.dtype(dtype) in rule[0]:
        return None
    where = "" if platform not in rules else f" on {platform.upper()}"
    return (f"{op} of {np.dtype(dtype).name} tiles{where}: ptoas refuses it ('{op}' op {rule[1]}), though "
            "pto-isa's instruction takes it",
            f"use one of the element types ptoas takes here ({rule[1].rsplit(' be ', 1)[-1]}), or convert "
            "with pto.tcvt first")


#: the instructions of ptopipe's op table that ptoas has no op for (PTOAS PTOOps.td): the
#: writer spells them as :func:`pto_op_name` does (the reader and the executor read them)
#: and notes that ptoas rejects the file
PTOAS_LACKS = ("pto.tpow", "pto.tpows", "pto.tsubrelu", "pto.tpairreducesum", "pto.taddreluconv",
               "pto.tsubreluconv", "pto.tadddeqrelu")

#: the IR attributes a tile op's instruction takes after its operands (``ir.ops.ISA_ATTRS``)
#: as ptoas spells them in its ``ins(... {attr} : ...)``: IR name -> (ptoas key, value -> text
#: (None: ptoas's default, left out), the reader's (family, text) -> value)
ISA_ATTR_SPELLING = {"mode": ("cmpMode", lambda v: f"#pto<cmp {CmpMode(v).name.lower()}>",
                              lambda fam, text: int(CmpMode[re.sub(r"^cmp\s*", "", text).upper()])),
                     "upper": ("upperOrLower", lambda v: f"{int(v)} : i32", lambda fam, text: int(text)),
                     "descending": ("descending", lambda v: "true" if v else None,
                                    lambda fam, text: {"true": 1, "false": 0, "1": 1, "0": 0}[text.strip().lower()])}

#: pto.tstore's ``atomicType`` attribute, in the attribute dictionary after its ``outs(...)``
#: (PTOAS PTOAttrs.td ``PTO_AtomicTypeEnum``, test/basic/tstore_forms_emitc.pto): ptoas's word
#: of each of pto-isa's ``AtomicType``s; ptoas's default, atomic_none, is left out
ATOMIC_TYPE_WORDS = {AtomicType.AtomicNone: "atomic_none", AtomicType.AtomicAdd: "atomic_add"}


def atomic_type_attr(kind) -> str:
    """`` {atomicType = #pto<atomic_type atomic_add>}``: the attribute dictionary a pto.tstore
    of ``AtomicType`` ``kind`` ends with ('' for a plain store)."""
    kind = AtomicType(kind)
    return "" if kind is AtomicType.AtomicNone else f" {{atomicType = #pto<atomic_type {ATOMIC_TYPE_WORDS[kind]}>}}"


#: the mode attributes of ``pto.mgather`` / ``pto.mscatter`` (ptoas's PTOAttrs.td: ``{gatherOob =
#: #pto<gather_oob clamp>}``, ``{scatterAtomicOp = #pto<scatter_atomic_op add>, scatterOob =
#: #pto<scatter_oob skip>}``; the words are the enumerators in lower case): key -> (mnemonic,
#: enum, the ISA's keyword)
INDEXED_ATTRS = {"gatherOob": ("gather_oob", GatherOOB, "oob"),
                 "scatterAtomicOp": ("scatter_atomic_op", ScatterAtomicOp, "atomic"),
                 "scatterOob": ("scatter_oob", ScatterOOB, "oob")}


def read_indexed_attr(key: str, text: str):
    """The member an ``INDEXED_ATTRS`` attribute's value names (its tokens' texts joined with
    spaces: ``#pto < gather_oob clamp >``), else None."""
    mnemonic, enum, _ = INDEXED_ATTRS[key]
    words = text.replace("<", " ").replace(">", " ").split()
    if len(words) != 3 or words[0] != "#pto" or words[1] != mnemonic:
        return None
    return next((m for m in enum if m.name.lower() == words[2]), None)


def indexed_coalesce(data_cols: int, index_cols: int):
    """The Coalesce a ``pto.mgather`` / ``pto.mscatter`` means, from its tiles' static columns:
    ptoas 0.27 has no Coalesce attribute (its C++ calls ``MGATHER(dst, mem, idx)``: the device's
    Row, the CPU simulator's element walk); its verifier takes an index tile of the data's columns
    (one index per element: Elem) or of one column (one per row: Row); None for any other."""
    if index_cols == data_cols:
        return Coalesce.Elem
    return Coalesce.Row if index_cols == 1 else None


def read_atomic_type(text: str):
    """The ``AtomicType`` of an ``atomicType`` attribute's value, its tokens' texts joined
    (``#pto<atomic_typeatomic_add>``), else None."""
    for kind, word in ATOMIC_TYPE_WORDS.items():
        if text == f"#pto<atomic_type{word}>":
            return kind
    return None


#: the tile ops whose ptoas form takes an integer scalar (AnyInteger, not ``index``): the
#: integer type it must have (``"dst"``: the destination's element type, as TCI's verifier
#: wants).  The writer casts an index operand to it; the reader reads the cast as its value.
INT_SCALAR_OPERAND = {"pto.tci": "dst", "pto.ttri": "i32"}
#: ptoas's tile-scalar ops whose scalar is a number - ``ScalarType`` / ``AnySignlessInteger`` in
#: PTOOps.td, tdivs's verifier alike - and not an ``index`` ("'pto.tadds' op operand #1 must be
#: numeric (integer/float), but got 'index'")
NUMBER_SCALAR_OPS = frozenset({
    "pto.tadds", "pto.taddsc", "pto.tands", "pto.taxpy", "pto.tcmps", "pto.tdivs", "pto.texpands", "pto.tfmods",
    "pto.tmaxs", "pto.tmins", "pto.tmuls", "pto.tors", "pto.trems", "pto.tsels", "pto.tshls", "pto.tshrs",
    "pto.tsubs", "pto.tsubsc", "pto.txors"})
_SIGNLESS = {"u8": "i8", "u32": "i32"}
#: the tile-scalar ops whose scalar ptoas 0.27 lowers only as a float (its PTOViewToMemref pass
#: refuses an integer one: "ins/outs are not memref yet"), whatever the tile's element type:
#: pto-isa's TMAXS / TMINS convert the scalar to it
FLOAT_SCALAR_OPS = frozenset({"pto.tmaxs", "pto.tmins"})


def float_scalar_refusal(op: str, scalar_type: str) -> tuple | None:
    """``(what, fix)`` of ``op`` (:data:`FLOAT_SCALAR_OPS`) given a scalar of MLIR type
    ``scalar_type`` that is not a float, else None."""
    if op not in FLOAT_SCALAR_OPS or scalar_type in FLOATS:
        return None
    return (f"{op}'s scalar is {scalar_type}: ptoas 0.27 lowers {op} only with a float scalar (it refuses this "
            "one: \"ins/outs are not memref yet\")",
            f"give the scalar as a float (arith.constant 3.0 : f32, or arith.sitofp %n : {scalar_type} to f32): "
            "pto-isa converts it to the tile's element type")


def scalar_cast_type(op: str, tile_dtype: str) -> str | None:
    """The type the writer casts an ``index`` scalar operand of ``op`` to (its tile -
    the destination of tci, the source of the others - of IR dtype ``tile_dtype``): ``op``'s
    :data:`INT_SCALAR_OPERAND`; for :data:`NUMBER_SCALAR_OPS` the tile's integer type (signless),
    or i32 for a float tile (pto-isa converts the scalar to the tile's type) - texpands' float
    tile's own type, as its verifier wants the scalar ("expects scalar type == dst element
    type"; the writer converts with ``arith.sitofp``), and a float for :data:`FLOAT_SCALAR_OPS`
    (the tile's float type, else f32); None where ``op`` takes an index as it is."""
    want = INT_SCALAR_OPERAND.get(op)
    if want is not None:
        return tile_dtype if want == "dst" else want
    if op in FLOAT_SCALAR_OPS:
        return tile_dtype if tile_dtype in FLOATS else "f32"
    if op not in NUMBER_SCALAR_OPS:
        return None
    if tile_dtype in INT_DTYPES and tile_dtype != "index":
        return _SIGNLESS.get(tile_dtype, tile_dtype)
    return tile_dtype if op == "pto.texpands" else "i32"

#: ptopipe scalar op suffix -> (integer spelling, float spelling); a comparison is
#: ``arith.cmpi <pred>`` / ``arith.cmpf <pred>``.  The IR's integer ``%`` floors, and MLIR
#: has no flooring remainder: the writer spells it with ``arith.floordivsi`` (:data:`FLOOR_MOD`);
#: MLIR's ``arith.divsi`` / ``remsi`` (toward zero) are the IR's ``truncdiv`` / ``truncrem``
ARITH = {"add": ("arith.addi", "arith.addf"), "sub": ("arith.subi", "arith.subf"),
         "mul": ("arith.muli", "arith.mulf"), "floordiv": ("arith.floordivsi", None),
         "mod": (None, "arith.remf"), "div": (None, "arith.divf"),
         "truncdiv": ("arith.divsi", None), "truncrem": ("arith.remsi", None),
         "bitor": ("arith.ori", None), "bitand": ("arith.andi", None),
         "neg": ("arith.negi", "arith.negf"), "not": ("arith.xori", None),
         "min": ("arith.minsi", "arith.minimumf"), "max": ("arith.maxsi", "arith.maximumf")}
#: the ops whose unsigned-integer spelling differs (pypto writes ``arith.minui`` for a u32 min)
UNSIGNED_ARITH = {"min": "arith.minui", "max": "arith.maxui"}
CMP = {"eq": ("eq", "oeq"), "ne": ("ne", "one"), "lt": ("slt", "olt"), "le": ("sle", "ole"),
       "gt": ("sgt", "ogt"), "ge": ("sge", "oge")}
#: logical and/or on i1 (the IR's ``and`` / ``or``)
LOGIC = {"and": "arith.andi", "or": "arith.ori"}
ARITH_OF = {}
for _k, (_i, _f) in ARITH.items():
    for _n in (_i, _f):
        if _n is not None:
            ARITH_OF.setdefault(_n, _k)
for _k, _n in UNSIGNED_ARITH.items():
    ARITH_OF[_n] = _k
# MLIR's NaN-ignoring float min / max: the IR's min / max (a NaN operand is not a tile size)
ARITH_OF.update({"arith.minnumf": "min", "arith.maxnumf": "max"})
#: MLIR's signed ceiling division (pypto's tile count ``ceildivsi(n, 8192)``): the IR has floor
#: division only, so it is read as ``-((-a) // b)``, which is ``ceil(a / b)`` for either sign
CEILDIV = "arith.ceildivsi"
#: MLIR's integer divisions the IR has no op for (it has floor division and ``%`` and the
#: signed ones toward zero, ``truncdiv`` / ``truncrem``), read as IR ops of the same value
#: (:func:`ptopipe.codegen.pto_ops.h_arith`): ``ceildivsi`` for any divisor; by a constant
#: divisor the unsigned ``divui`` / ``ceildivui`` / ``remui``, which read the dividend's bits as
#: unsigned (a negative value is itself + 2**bits)
LOWERED_DIVISIONS = (CEILDIV, "arith.divui", "arith.ceildivui", "arith.remui")
#: the IR's integer ``a % b`` (floor) in MLIR: ``a - floordivsi(a, b) * b``, these ops in turn
FLOOR_MOD = ("arith.floordivsi", "arith.muli", "arith.subi")


def int_bits(dtype: str) -> int:
    """The width of integer scalar type ``dtype`` (one of :data:`INT_DTYPES`): ``index`` is
    64-bit, as MLIR's on the device."""
    return 64 if dtype == "index" else int(dtype.lstrip("iu"))


CMP_OF = {}
for _k, (_i, _f) in CMP.items():
    CMP_OF[("arith.cmpi", _i)] = _k
    CMP_OF[("arith.cmpf", _f)] = _k


#: the bits of a float constant MLIR has no decimal spelling for (``arith.constant 0x7F800000 : f32``)
_FLOAT_BITS = {"f32": (32, "<f4", "<u4"), "f16": (16, "<f2", "<u2"), "bf16": (16, None, "<u2")}


def float_literal(v: float, dtype: str) -> str:
    """``v`` as an MLIR float literal of ``dtype``: a decimal with a point (``-1.0e+30``, not
    Python's ``-1e+30``, which MLIR does not read as a float), or for inf / nan the type's
    bits in hex."""
    if math.isfinite(v):
        s = repr(float(v))
        mant, e, exp = s.partition("e")
        return (mant if "." in mant else mant + ".0") + (e + exp if e else "")
    width, fmt, _ = _FLOAT_BITS[dtype]
    if fmt is None:                     # bf16: the high half of the f32 bits
        bits = int(np.array(v, "<f4").view("<u4")) >> 16
    else:
        bits = int(np.array(v, fmt).view(f"<u{width // 8}"))
    return f"0x{bits:0{width // 4}X}"


def float_of_literal(text: str, dtype: str) -> float:
    """The value of an MLIR float literal of ``dtype`` (decimal, or hex bits); ValueError if
    it is neither."""
    if not text.lower().startswith(("0x", "-0x")):
        return float(text)
    bits = int(text, 16)
    width, fmt, _ = _FLOAT_BITS[dtype]
    if bits < 0 or bits >= 1 << width:
        raise ValueError(text)
    if fmt is None:
        return float(np.array(bits << 16, "<u4").view("<f4"))
    return float(np.array(bits, f"<u{width // 8}").view(fmt))


#: event ids of ``pto.set_flag`` / ``pto.wait_flag`` (``#pto.event<EVENT_ID0>`` ...)
EVENT_IDS = range(8)


def fractal_of(t: TileValueType) -> int:
    """The ``fractal=`` value ptoas prints: 1024 for Acc, else 512."""
    return 1024 if t.space is MemorySpace.Acc else 512


def _platform_name(platform) -> str | None:
    return get_platform(platform).name if platform else None


def tile_buf(t: TileValueType, platform=None, dynamic_valid: bool = False) -> str:
    """The long form, keys in :data:`TILE_KEYS` order; a tile in the default layout has the
    ``platform``'s (``arch.vocab.default_layout``: a Left tile is ZZ on A2A3 and NZ on A5, as
    ptoas reads every Left tile, :data:`ptopipe.arch.vocab.LEFT_LAYOUT`).  ``rows`` / ``cols``
    are the static shape pto-isa's ``Tile`` takes (``arch.vocab.static_shape``, as the C++
    writer declares it), ``v_row`` / ``v_col`` the tile's own shape (``dynamic_valid``: ``?``,
    a valid shape its ``alloc_tile`` gives at run time)."""
    lay = t.written_layout(_platform_name(platform))
    r, c = ("?", "?") if dynamic_valid else t.shape
    sr, sc = t.static_shape
    return (f"!pto.tile_buf<loc={LOC_OF_SPACE[t.space]}, dtype={MLIR_DTYPE[t.dtype]}, rows={sr}, "
            f"cols={sc}, v_row={r}, v_col={c}, blayout={BLAYOUT_NAMES[lay.blayout]}, "
            f"slayout={SLAYOUT_NAMES[lay.slayout]}, fractal={fractal_of(t)}, pad=0>")


def tile_shape_refusal(loc: TileType, layout: TileLayout, rows: int, cols: int, itemsize: int,
                       valid: tuple | None = None) -> tuple | None:
    """``(what, fix)`` of a tile_buf whose static shape pto-isa's ``Tile`` refuses
    (``arch.vocab.tile_shape_error``): ptoas accepts it, the C++ it emits does not compile.
    Vec tiles are checked; the Cube's tiles are not (tests/pto_corpus/c_fp_quant_moves_a3.pto
    declares i8 NZ Mat tiles narrower than one 16x32 fractal, which pto-isa refuses too).
    ``valid``: the declared static valid shape, which the fix keeps (else the declared shape)."""
    if loc is not TileType.Vec:
        return None
    why = tile_shape_error(loc, layout, rows, cols, itemsize)
    if why is None:
        return None
    r, c = static_shape(loc, layout, rows, cols, itemsize)
    vr, vc = valid or (rows, cols)
    fix = f"declare rows={r}, cols={c} and give the data's shape as the valid shape (v_row={vr}, v_col={vc})"
    if layout is TileLayout.ND and cols == 1 and tile_shape_error(loc, TileLayout.DN, rows, cols, itemsize) is None:
        # (a short form that names no blayout is row_major: SHORT_FORM_LAYOUT)
        fix = ("declare the column blayout=col_major (the [R, 1] column the row reductions write and TROWEXPAND* "
               f"read; a tile_buf that names no blayout is row_major), or {fix}")
    return (f"a {rows}x{cols} Vec tile in layout {layout.name}: {why}; ptoas accepts it, but pto-isa's Tile "
            "refuses this static shape at compile time", fix)


def tile_type(shape, dtype: str, space: MemorySpace, blayout: BLayout | None,
              slayout: SLayout | None, platform=None) -> TileValueType:
    """The IR tile type of a tile_buf: the default layout of its space and shape
    (``arch.vocab.default_layout``) is ``layout=None``.  On a known ``platform`` a Left tile's
    blayout is the platform's, as ptoas reads it (:data:`ptopipe.arch.vocab.LEFT_LAYOUT`): in
    the default slayout it is the default layout."""
    d = default_layout(space, *tuple(shape)[:2])
    s = d.slayout if slayout is None else slayout
    if space is MemorySpace.Left and platform:
        if s is d.slayout:
            return TileValueType(tuple(shape), dtype, space, None)
        blayout = LEFT_LAYOUT[_platform_name(platform)].blayout
    b = d.blayout if blayout is None else blayout
    lay = TileLayout.of(b, s)
    return TileValueType(tuple(shape), dtype, space, None if lay is d else lay)


#: ptoas's SyncOpType (``#pto.pipe_event_type<...>`` / ``#pto.sync_op_type<...>``) -> the pipe
#: it runs on (PTOAS ``mapSyncOpTypeToPipe``)
SYNC_OP_PIPE = {"TLOAD": "PIPE_MTE2", "TSTORE_VEC": "PIPE_MTE3", "TSTORE_ACC": "PIPE_FIX",
                "TMOV_M2L": "PIPE_MTE1", "TMOV_M2B": "PIPE_MTE1", "TMOV_M2S": "PIPE_FIX",
                "TMOV_M2V": "PIPE_V", "TMOV_V2M": "PIPE_FIX", "TMATMUL": "PIPE_M", "TVEC": "PIPE_V",
                "TVECWAIT_EVENT": "PIPE_V"}
