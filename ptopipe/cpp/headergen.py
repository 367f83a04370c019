"""The generated part of ptopipe's pto-isa-compatible C++ headers
(``ptopipe/cpp/include/pto/ptopipe_generated.hpp``) and the tables the Python side of the C
ABI reads - both made here from one source, so they cannot drift apart:

* the enums a kernel names (``TileType``, ``BLayout``, ``TileSplitAxis``, ``RoundMode``,
  ``pipe_t``, ``event_t`` ...) from :mod:`ptopipe.arch.vocab`, with the value each enumerator
  carries across the ABI (:func:`cpp_value`);
* the element-type codes from :data:`ptopipe.codegen.cpp_types.CTYPES`;
* the ABI operation ids (:data:`SPECIAL` then every instruction of the op catalogue);
* the instructions of the catalogue (:data:`ptopipe.arch.catalogue.OPS`), function templates as
  pto-isa declares them: one per number of arguments the instruction's Python form in
  :mod:`ptopipe.isa` takes (its positional operands, then up to :data:`MAX_EVENTS` wait events,
  as pto-isa's ``WaitEvents&... events``), each also callable with its operands' types as
  explicit template arguments (``TADD<Dst, Src0, Src1>(dst, src0, src1)``); an instruction
  pto-isa also spells with mode template arguments (:data:`MODE_FORMS`, e.g.
  ``TCI<TileData, T, descending>(dst, start)``) has those forms too, which pass the mode on as
  an operand or a keyword (:data:`KEYWORDS`) of the Python form;
* pto-isa's implementation entry point of each instruction (``TCONCAT_IMPL``), which its CPU
  tests' kernels call: the instruction (a ``#define``).

``python -m ptopipe.cpp.headergen`` rewrites the header; tests/cpp/test_headers.py checks it
is current.
"""
from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass
from enum import Enum

from ..arch import vocab as V
from ..arch.catalogue import OPS, ROW_MAJOR_ONLY, SCRATCH_BEFORE_SCALAR
from ..codegen.cpp_types import CTYPES
from ..isa.convtile import CONFIG_FIELDS

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include", "pto", "ptopipe_generated.hpp")

#: ABI operations that are not catalogue instructions (written by hand in pto-inst.hpp)
SPECIAL = ("TILE_NEW", "TASSIGN", "TPIPE", "TMPIPE", "TPUSH", "TPOP", "TFREE", "TALLOC", "TSYNC", "TSYNC_OP",
           "set_flag", "wait_flag", "pipe_barrier", "get_subblockid", "get_block_idx", "SETVALID", "TMPOP",
           "PIPE_STATUS", "SUBBLOCK_ID", "TILE_ADDR", "get_block_num", "get_subblockdim", "SYNCALL",
           "ffts_cross_core_sync", "wait_flag_dev", "set_intra_block", "wait_intra_block", "TILE_GET", "TILE_SET",
           "MAD_MODE", "EVENT_RECORD", "CONV_NEW", "PIPE_END")
#: the instructions of :data:`SPECIAL` whose pto-isa implementation entry point (``TPUSH_IMPL``) a
#: kernel may call as it calls any instruction's (``TCONCAT_IMPL``: a ``#define`` of the instruction)
IMPL_SPECIAL = ("TASSIGN", "TPUSH", "TPOP", "TFREE", "TALLOC", "TSYNC")
#: the status switches of pto-isa's ``pipe.prod`` / ``pipe.cons`` ptopipe models (the methods of
#: :class:`ptopipe.isa.pipe.channel._SideCtl`): ``PIPE_STATUS``'s index of the one to call
PIPE_STATUS = ("setAllocateStatus", "setRecordStatus", "setWaitStatus", "setFreeStatus")
#: wait events an instruction takes after its operands
MAX_EVENTS = 3
#: the most arguments of an instruction whose Python form takes ``*args`` only
MAX_VARIADIC = 8
#: the most operands of an instruction whose Python form takes some of them in ``*args``
#: (before its wait events): TMRGSORT(dst, executedNumList, tmp, src0, src1, src2, src3), the MX
#: matmuls' accumulating and biased forms (c_out, c_in, a, a_scale, b, b_scale) / (..., bias)
MOST_OPERANDS = {"TMRGSORT": 7, "TMATMUL_MX": 6, "TGEMV_MX": 6}
#: the fewest operands of a scratch-taking instruction whose Python form takes ``*args`` only
#: (the arg reductions: TROWARGMAX(dst, src, tmp))
SCRATCH_ONLY_ARGS = 3
#: the fewest operands pto-isa's pto_instr.hpp declares for an instruction whose Python form
#: defaults some of them (a call with fewer does not build with pto-isa's headers): the compare
#: mode, TCVT's RoundMode, the FP forms' indices, TDEINTERLEAVE's source, TRANDOM's key and
#: counter, TMRGSORT's executed-count list and tmp, the MX matmuls' (c, a, a_scale, b, b_scale)
PTO_ISA_FEWEST = {"TCMP": 4, "TCMPS": 4, "TCVT": 3, "TEXTRACT_FP": 5, "TINSERT_FP": 5, "TDEINTERLEAVE": 3,
                  "TRANDOM": 3, "TMRGSORT": 3, "TMATMUL_MX": 5, "TGEMV_MX": 5}

#: the instructions pto-isa's pto_instr.hpp declares only with a mode template argument no operand
#: gives (TCI's ``descending``, TTRI's ``isUpperOrLower``, THISTOGRAM's ``byte``, TQUANT's
#: ``quant_type``): a plain call does not build there, so it does not here either; the forms of
#: :data:`MODE_FORMS` are their spellings
PTO_ISA_TEMPLATE_ONLY = ("TCI", "TTRI", "THISTOGRAM", "TQUANT")

#: (C++ name, Python enum, C++ namespace or None: global, scoped ``enum class``)
ENUMS = (("TileType", V.TileType, "pto", True), ("BLayout", V.BLayout, "pto", True),
         ("SLayout", V.SLayout, "pto", True), ("TileSplitAxis", V.TileSplitAxis, "pto", True),
         ("RoundMode", V.RoundMode, "pto", True), ("CmpMode", V.CmpMode, "pto", True),
         ("PadValue", V.PadValue, "pto", True), ("MaskPattern", V.MaskPattern, "pto", True),
         ("GatherAxis", V.GatherAxis, "pto", True), ("PowAlgorithm", V.PowAlgorithm, "pto", True),
         ("QuantType", V.QuantType, "pto", True), ("PrintFormat", V.PrintFormat, "pto", True),
         ("FIFOType", V.FIFOType, "pto", True), ("VecCubeRatio", V.VecCubeRatio, "pto", True),
         ("ReluPreMode", V.ReluPreMode, "pto", True), ("HistByte", V.HistByte, "pto", True),
         ("ScatterAxis", V.ScatterAxis, "pto", True), ("AtomicType", V.AtomicType, "pto", True),
         ("Direction", V.Direction, "pto", False), ("SaturationMode", V.SaturationMode, "pto", True),
         ("SyncCoreType", V.SyncCoreType, "pto", True), ("SyncAllMode", V.SyncAllMode, "pto", True),
         ("Coalesce", V.Coalesce, "pto", True), ("GatherOOB", V.GatherOOB, "pto", True),
         ("ScatterAtomicOp", V.ScatterAtomicOp, "pto", True), ("ScatterOOB", V.ScatterOOB, "pto", True),
         ("ScatterConflict", V.ScatterConflict, "pto", True), ("GatherExec", V.GatherExec, "pto", True),
         ("SetFmatrixMode", V.SetFmatrixMode, "pto", True), ("QuantScaleAlg", V.QuantScaleAlg, "pto", True),
         ("MxQuantAlg", V.MxQuantAlg, "pto", True), ("VecStoreMode", V.VecStoreMode, "pto", True),
         ("pipe_t", V.SyncPipe, None, False), ("event_t", V.EventID, None, False))


#: pto-isa's other GlobalTensor layouts (type.hpp ``Layout``, after ND, DN, NZ): a file may name
#: them; a GlobalTensor of one does not compile (pto-inst.hpp's static_assert)
UNMODELLED_GM_LAYOUTS = ("SCALE", "MX_A_ND", "MX_A_DN", "MX_A_ZZ", "MX_B_ND", "MX_B_DN", "MX_B_NN", "HIF4_A_ZZ",
                         "HIF4_B_NN", "NC1HWC0", "GNC1HWC0", "NCHW", "GNCHW", "NHWC", "NDC1HWC0", "NCDHW",
                         "FRACTAL_Z", "FRACTAL_Z_S16S8", "FRACTAL_Z_3D", "MAX")


def enums() -> tuple:
    """:data:`ENUMS` and pto-isa's ``Op`` (the TSYNC<Op> / Event<Src, Dst> kinds of :mod:`ptopipe.isa.events`)."""
    from ..isa.events import Op
    return ENUMS + (("Op", Op, "pto", True),)

#: element types pto-isa's tiles and tensors take that ptopipe's ISA holds (numpy) but the C++
#: writer never declares: their numpy name and C++ spelling (the 8-bit floats of the MX matmuls,
#: A5: the fp8 operands and the e8m0 block scales, one byte each)
ISA_ONLY_CTYPES = {"uint16": "uint16_t", "uint64": "uint64_t", "fp8_e4m3": "float8_e4m3_t",
                   "fp8_e5m2": "float8_e5m2_t", "fp8_e8m0": "float8_e8m0_t"}
#: pto-isa's element types of its A6 only, with why a tile or tensor of one does not build
A6_ONLY_CTYPES = {"hifloat4x2_t": "hifloat4x2_t: HiFloat4 (TQUANT<grp_axis, MxQuantAlg::Hif4>, TMATMUL_MX on HiF4 "
                                  "operands) is pto-isa's A6 (dav-920r1) only; ptopipe simulates A2A3 and A5"}
#: element types in code order; the C++ spelling of each is CTYPES's (ISA_ONLY_CTYPES's)
DTYPES = tuple(n for n in CTYPES if n not in ("index", "bool")) + tuple(ISA_ONLY_CTYPES)
CPP_DTYPES = {**CTYPES, **ISA_ONLY_CTYPES}

#: the most argument words one instruction call carries (the buffer shared with a library)
MAX_WORDS = 128
#: what the callback returns when the instruction raised (the kernel then unwinds): INT64_MIN
ABORT = -(1 << 63)

#: ABI argument kinds (each argument is a kind word followed by its payload words)
KINDS = {"INT": 1, "FLT": 2, "TILE": 3, "GT": 4, "PIPE": 5, "EVENT": 6, "ENUM": 7, "PTR": 8, "NULL": 9, "KW": 10,
         "COUNTS": 11, "CONV": 12}
#: the payload words after each kind word (as pto-inst.hpp's ``enc`` writes them): a scalar, a
#: double's bits, a handle; a GlobalTensor's address, element type, 5 dims, 5 strides and layout
#: (its index in :data:`~ptopipe.arch.vocab.GM_LAYOUTS`, the C++ ``Layout`` value); an
#: enum's table and value; a pointer and its element type; a keyword argument's name
#: (:data:`KEYWORDS`), its enum table (-1: an integer) and value; the host address of a
#: ``MrgSortExecutedNumList`` (four uint16_t counts TMRGSORT writes); a ConvTile's handle and its
#: img2col fields (:data:`ptopipe.isa.convtile.CONFIG_FIELDS`, in that order)
KIND_WORDS = {"INT": 1, "FLT": 1, "TILE": 1, "GT": 13, "PIPE": 1, "EVENT": 1, "ENUM": 2, "PTR": 2, "NULL": 0,
              "KW": 3, "COUNTS": 1, "CONV": 1 + len(CONFIG_FIELDS)}


@dataclass(frozen=True)
class Form:
    """One way pto-isa spells an instruction with mode template arguments: its template
    parameters (pto-isa's, without ``WaitEvents``), its call parameters, what it passes to the
    instruction's Python form - operand names, a mode as a positional operand, or
    ``kw:NAME=PARAM`` for the Python form's keyword NAME - and a compile-time check of a mode
    (an integer's range, or a value ptopipe does not model; None: its type says it all)."""
    template: str
    params: str
    forward: tuple
    check: str | None = None
    why: str | None = None          # the check's message (default: the check itself)
    op: str | None = None           # the ABI op the form runs, a C++ expression (default: the instruction's)
    more: tuple = ()                # further (check, message) pairs, each its own static_assert


_FP = "typename DstTileData, typename SrcTileData, typename FpTileData, ReluPreMode reluMode = ReluPreMode::NoRelu"
_FP_AT = "DstTileData &dst, SrcTileData &src, FpTileData &fp, uint16_t indexRow, uint16_t indexCol"
_DESCENDING = "descending == 0 || descending == 1"
#: pto-isa's TCI CheckValid (npu/a2a3/TCI.hpp, cpu/TCI.hpp): the start's type is dst's element type
_CI_SAME_TYPE = ("std::is_same<typename TileData::DType, T>::value",
                 "the start's type T must be dst's element type (pto-isa: 'Fix: TCI expect src and dst same "
                 "datatype'); write TCI<TileData, typename TileData::DType, descending>(dst, start)")
#: ... and the tile is one row (npu/a2a3/TCI.hpp 'Fix: TCI expect tile row is 1', npu/a5/Tci.hpp, cpu/TCI.hpp)
_CI_ONE_ROW = ("TileData::Rows == 1",
               "pto-isa generates the sequence along one row: declare dst with Rows == 1 (pto-isa: 'Fix: TCI "
               "expect tile row is 1'), and TCOLEXPAND that row for more")
_D2 = "typename TileDataDst, typename TileDataSrc"
_D3 = "typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1"
_P2 = "TileDataDst &dst, TileDataSrc &src"
_P3 = "TileDataDst &dst, TileDataSrc0 &src0, TileDataSrc1 &src1"
_PS = "TileDataDst &dst, TileDataSrc &src, typename TileDataSrc::DType scalar"


def _precision(tparams: str, params: str, forward: tuple) -> Form:
    """pto-isa's ``<auto PrecisionType>`` form (``TEXP<ExpAlgorithm::HIGH_PRECISION>(dst, src)``,
    pto_instr.hpp): the algorithm is the device's way to the same function, which the ISA
    computes (in numpy) whatever it is, so it is not passed on."""
    return Form("auto PrecisionType, " + tparams, params, forward)


def _mrgsort(lists: int) -> Form:
    """pto-isa's ``TMRGSORT<Dst, Tmp, Src0, ..., exhausted>(dst, executedNumList, tmp, src0, ...)``
    of ``lists`` lists."""
    srcs = [f"Src{i}TileData" for i in range(lists)]
    return Form("typename DstTileData, typename TmpTileData, " + "".join(f"typename {t}, " for t in srcs)
                + "bool exhausted",
                "DstTileData &dst, MrgSortExecutedNumList &executedNumList, TmpTileData &tmp, "
                + ", ".join(f"{t} &src{i}" for i, t in enumerate(srcs)),
                ("dst", "executedNumList", "tmp") + tuple(f"src{i}" for i in range(lists))
                + ("kw:exhausted=exhausted",))


_MOVE = "typename DstTileData, typename SrcTileData, ReluPreMode reluMode"
_TO_VEC = "typename DstTileData, typename SrcTileData, AccToVecMode mode, ReluPreMode reluMode = ReluPreMode::NoRelu"
_QUANT = "auto quant_type, typename TileDataOut, typename TileDataSrc, typename TileDataPara"
_AT = "DstTileData &dst, SrcTileData &src, uint16_t indexRow, uint16_t indexCol"
_QUANT_AT = "DstTileData &dst, SrcTileData &src, uint64_t preQuantScalar, uint16_t indexRow, uint16_t indexCol"


def _no_relu(name: str) -> Form:
    """pto-isa's ``NAME<Dst, Src, reluMode>(dst, src, indexRow, indexCol)``: ptopipe's NAME moves
    without the fixpipe's ReLU."""
    return Form(_MOVE, _AT, ("dst", "src", "indexRow", "indexCol"), "reluMode == ReluPreMode::NoRelu",
                f"ptopipe's {name} applies no ReLU (ReluPreMode::NoRelu only): {name}_FP<Dst, Src, Fp, "
                f"reluMode>(dst, src, fp, indexRow, indexCol) or TMOV<Dst, Src, reluMode>(dst, src) apply one")


def _no_quant(name: str) -> Form:
    """pto-isa's ``NAME<Dst, Src, reluMode>(dst, src, preQuantScalar, indexRow, indexCol)``: the
    fixpipe's quantising form, which ptopipe does not model (its static_assert says so)."""
    return Form(_MOVE, _QUANT_AT, ("dst", "src", "indexRow", "indexCol"), "::ptopipe::unmodelled<DstTileData>::value",
                f"ptopipe does not model {name} with a preQuantScalar (the fixpipe's quantising {name}): "
                f"TMOV<Dst, Src, reluMode>(dst, src, preQuantScalar) quantises a whole Acc tile, {name}_FP a "
                f"block with an fp tile")


#: pto-isa's 3-tile TMOV (pto_instr.hpp, A5 and its CPU simulator; docs/isa/TMOV.md "X -> ZZ")
_ZZ_WHY = ("TMOV(dst, src, tmp) with a tmp tile is A5's microscaling exponent repack (X -> ZZ, docs/isa/TMOV.md: "
           "TMOV(dst, src, tmp) ND -> ZZ, TMOV<0>(dst, src, tmp) DN -> ZZ), which lays uint8_t / hifloat8_t / "
           "float8_e8m0_t block scales out in the ZZ boxes an MX matmul reads; ptopipe does not model the ZZ "
           "layout; A2A3 has no such form. For a plain move (ND -> NZ, "
           "Vec -> Vec, Mat -> Left / Right ...) write TMOV(dst, src): no tmp")


def _zz(grp_axis: str) -> Form:
    """pto-isa's ``[<grp_axis>]TMOV(dst, src, tmp)``, ``tmp`` a tile (its ``is_tile_data_v``
    guard): the X -> ZZ repack, not modelled (its static_assert says what it is and what to write)."""
    return Form(grp_axis + "typename DstTileData, typename SrcTileData, typename TmpTileData, "
                "std::enable_if_t<::ptopipe::is_tile<TmpTileData>::value, int> = 0",
                "DstTileData &dst, SrcTileData &src, TmpTileData &tmp", ("dst", "src"),
                "::ptopipe::unmodelled<DstTileData>::value", _ZZ_WHY)


_MM = "AccPhase Phase, typename TileRes, typename TileLeft, typename TileRight"
_MM_PARAMS = "TileRes &c, TileLeft &a, TileRight &b"


def _phase(extra_t: str = "", extra_p: str = "", forward: tuple = ("c", "a", "b"), default: bool = False) -> Form:
    """pto-isa's unit-flag ``<AccPhase Phase>`` form of a matmul (pto_instr.hpp: the same
    product, pto-inst.hpp's AccPhase)."""
    return Form(_MM.replace("AccPhase Phase", "AccPhase Phase = AccPhase::Unspecified") if default else _MM
                + extra_t, _MM_PARAMS + extra_p, forward)


_MX_TILES = ("typename TileDataOut, typename TileDataSrc, typename TileDataExp, typename TileDataMax, "
             "typename TileDataScaling")
_MX_AT = "TileDataOut &dst, TileDataSrc &src, TileDataExp *exp, TileDataMax *max, TileDataScaling *scaling"
_MX_FWD = ("dst", "src", "*exp", "*max", "*scaling")
_HIF4_WHY = ("MxQuantAlg::Hif4 (HiFloat4) is pto-isa's A6 (dav-920r1) only (include/pto/npu/a6/TQuant.hpp); ptopipe "
             "simulates A2A3 and A5: quantise to MXFP8 (MxQuantAlg::OcpMxFp8E4M3 / NvMxFp8E4M3)")
_MG = "typename TileDst, typename GlobalData, typename TileInd"
_MG_AT = "TileDst &dst, GlobalData &src, TileInd &indexes"
_MG_L1 = "typename TileDst, typename GlobalData, typename GlobalIdx, typename GlobalScratch"
_MG_L1_AT = "TileDst &dst, GlobalData &src, GlobalIdx &indexes, GlobalScratch &scratch"
_MS = "typename GlobalData, typename TileSrc, typename TileInd"
_MS_AT = "GlobalData &dst, TileSrc &src, TileInd &indexes"
_SIMT_WHY = ("ptopipe models the Cube's scalar executor of the GM -> L1 element gather (GatherExec::Scalar); "
             "GatherExec::Simt gathers on the Vector core (a SIMT launch) and hands off to the Cube through an "
             "intra-block flag, which it does not model: leave the executor out (the scalar one gathers the same)")


def _scatter(modes: tuple) -> Form:
    """pto-isa's ``MSCATTER<Mode[, Atomic[, Oob[, Conflict]]]>(dst, src, indexes)``: ``modes`` the
    (template parameter, Python keyword) pairs it spells."""
    return Form(", ".join(f"{t} {p}" for t, p, _ in modes) + ", " + _MS, _MS_AT,
                ("dst", "src", "indexes") + tuple(f"kw:{kw}={p}" for _, p, kw in modes))


_SCATTER_MODES = (("Coalesce", "Mode", "coalesce"), ("ScatterAtomicOp", "Atomic", "atomic"),
                  ("ScatterOOB", "Oob", "oob"), ("ScatterConflict", "Conflict", "conflict"))

#: the instructions pto-isa spells with mode template arguments (docs/isa/<NAME>.md) that
#: ptopipe's ISA models; each is also callable without them (the plain forms)
MODE_FORMS = {
    "TMATMUL": (_phase(),),
    "TGEMV": (_phase(),),
    "TMATMUL_BIAS": (_phase(", typename TileBias", ", TileBias &bias", ("c", "a", "b", "bias")),),
    "TGEMV_BIAS": (_phase(", typename TileBias", ", TileBias &bias", ("c", "a", "b", "bias")),),
    # TMATMUL_ACC(c, a, b): c += a @ b in place (c is c_out and c_in); <Phase>(cOut, cIn, a, b)
    "TMATMUL_ACC": (_phase(forward=("c", "c", "a", "b"), default=True),
                    Form(_MM, "TileRes &cOut, TileRes &cIn, TileLeft &a, TileRight &b", ("cOut", "cIn", "a", "b"))),
    "TGEMV_ACC": (_phase(forward=("c", "c", "a", "b"), default=True),
                  Form(_MM, "TileRes &cOut, TileRes &cIn, TileLeft &a, TileRight &b", ("cOut", "cIn", "a", "b"))),
    "TEXP": (_precision(_D2, _P2, ("dst", "src")),),
    "TLOG": (_precision(_D2, _P2, ("dst", "src")),),
    "TSQRT": (_precision(_D2, _P2, ("dst", "src")),),
    "TRECIP": (_precision(_D2, _P2, ("dst", "src")),),
    "TRSQRT": (_precision(_D2, _P2, ("dst", "src")),
               _precision(_D2 + ", typename TileDataTmp", _P2 + ", TileDataTmp &tmp", ("dst", "src", "tmp"))),
    "TDIV": (_precision(_D3, _P3, ("dst", "src0", "src1")),),
    "TFMOD": (_precision(_D3, _P3, ("dst", "src0", "src1")),),
    "TCOLEXPANDDIV": (_precision(_D3, _P3, ("dst", "src0", "src1")),),
    "TROWEXPANDDIV": (_precision(_D3, _P3, ("dst", "src0", "src1")),
                      _precision(_D3 + ", typename TileDataTmp", _P3 + ", TileDataTmp &tmp",
                                 ("dst", "src0", "src1", "tmp"))),
    "TREM": (_precision(_D3 + ", typename TileDataTmp", _P3 + ", TileDataTmp &tmp", ("dst", "src0", "src1", "tmp")),),
    "TDIVS": (_precision(_D2, _PS, ("dst", "src", "scalar")),
              _precision(_D2, "TileDataDst &dst, typename TileDataDst::DType scalar, TileDataSrc &src",
                         ("dst", "scalar", "src"))),
    "TFMODS": (_precision(_D2, _PS, ("dst", "src", "scalar")),),
    "TREMS": (_precision(_D2 + ", typename TileDataTmp", _PS + ", TileDataTmp &tmp", ("dst", "src", "scalar", "tmp")),),
    "TPOW": (Form("auto PrecisionType, typename DstTile, typename BaseTile, typename ExpTile, typename TmpTile",
                  "DstTile &dst, BaseTile &base, ExpTile &exp, TmpTile &tmp",
                  ("dst", "base", "exp", "tmp", "kw:algorithm=PrecisionType")),),
    "TPOWS": (Form("auto PrecisionType, typename DstTile, typename BaseTile, typename TmpTile",
                   "DstTile &dst, BaseTile &base, typename DstTile::DType exp, TmpTile &tmp",
                   ("dst", "base", "exp", "tmp", "kw:algorithm=PrecisionType")),),
    "TCI": (Form("typename TileData, typename T, int descending", "TileData &dst, T start",
                 ("dst", "start", "kw:descending=descending"), _DESCENDING, more=(_CI_SAME_TYPE, _CI_ONE_ROW)),
            Form("typename TileData, typename TileDataTmp, typename T, int descending",
                 "TileData &dst, T start, TileDataTmp &tmp", ("dst", "start", "tmp", "kw:descending=descending"),
                 _DESCENDING, more=(_CI_SAME_TYPE, _CI_ONE_ROW))),
    "TTRI": (Form("typename TileData, int isUpperOrLower", "TileData &dst, int diagonal",
                  ("dst", "diagonal", "isUpperOrLower")),),
    # TFILLPAD<TFillPadMode::X>(dst, src): the mode picks the catalogue's TFILLPAD, _INPLACE or _EXPAND
    "TFILLPAD": (Form("typename TileData, PadValue PadVal = PadValue::Zero", "TileData &dst, TileData &src",
                      ("dst", "src", "PadVal")),
                 Form("TFillPadMode mode, typename DstTileData, typename SrcTileData", "DstTileData &dst, SrcTileData &src",
                      ("dst", "src"), op="::ptopipe::fill_pad_op<mode>()")),
    "TPRINT": (Form("PrintFormat Format = PrintFormat::Width8_Precision4, typename TileData", "TileData &src",
                    ("src", "kw:fmt=Format")),),
    "TGATHER": (Form("typename DstTileData, typename SrcTileData, MaskPattern maskPattern, "
                     "GatherAxis gatherType = GatherAxis::GATHER_ROW", "DstTileData &dst, SrcTileData &src",
                     ("dst", "src", "maskPattern", "gatherType")),
                # the compare form: kValue one scalar, the first index an ``offset`` template
                # argument (ptoas's spelling), or kValue a per-row tile and offset an operand
                Form("typename TileDataD, typename TileDataS, typename TileDataC, typename TileDataTmp, "
                     "CmpMode cmpMode, int offset", "TileDataD &dst, TileDataS &src0, typename TileDataS::DType "
                     "k_value, TileDataC &cdst, TileDataTmp &tmp", ("dst", "src0", "k_value", "cdst", "tmp", "offset",
                                                                    "kw:mode=cmpMode")),
                Form("typename TileDataD, typename TileDataS, typename TileDataS1, typename TileDataC, "
                     "typename TileDataTmp, CmpMode cmpMode", "TileDataD &dst, TileDataS &src0, TileDataS1 &k_value, "
                     "TileDataC &cdst, TileDataTmp &tmp, int offset",
                     ("dst", "src0", "k_value", "cdst", "tmp", "offset", "kw:mode=cmpMode"))),
    "TSCATTER": (Form("MaskPattern maskPattern = MaskPattern::P1111, ScatterAxis ScatterType = ScatterAxis::SCATTER_ROW, "
                      "typename DstTileData, typename SrcTileData", "DstTileData &dst, SrcTileData &src",
                      ("dst", "src", "maskPattern", "kw:axis=ScatterType")),),
    # TSTORE<TileData, GlobalData, AtomicType::AtomicAdd>(dst, src): an atomic add into GM; an
    # Acc tile's ReLU and pre-quant scalar (ptopipe.isa.fixpipe.fixpipe_store)
    "TSTORE": (Form("typename TileData, typename GlobalData, AtomicType atomicType = AtomicType::AtomicNone",
                    "GlobalData &dst, TileData &src", ("dst", "src", "kw:atomic_type=atomicType")),
               Form("typename TileData, typename GlobalData, AtomicType atomicType = AtomicType::AtomicNone, "
                    "ReluPreMode reluPreMode", "GlobalData &dst, TileData &src",
                    ("dst", "src", "kw:atomic_type=atomicType", "kw:relu_mode=reluPreMode")),
               Form("typename TileData, typename GlobalData, AtomicType atomicType = AtomicType::AtomicNone, "
                    "ReluPreMode reluPreMode = ReluPreMode::NoRelu", "GlobalData &dst, TileData &src, uint64_t preQuantScalar",
                    ("dst", "src", "kw:atomic_type=atomicType", "kw:relu_mode=reluPreMode",
                     "kw:pre_quant=preQuantScalar")),
               # the unit-flag phase (TSTORE<STPhase::Final>(dst, src)): when the FIX pipe may take L0C,
               # a hand-off the simulator's pipes order - the same store
               Form("STPhase Phase, typename TileData, typename GlobalData", "GlobalData &dst, TileData &src",
                    ("dst", "src")),
               Form("STPhase Phase, typename TileData, typename GlobalData, AtomicType atomicType",
                    "GlobalData &dst, TileData &src", ("dst", "src", "kw:atomic_type=atomicType")),
               Form("STPhase Phase, typename TileData, typename GlobalData, AtomicType atomicType, "
                    "ReluPreMode reluPreMode", "GlobalData &dst, TileData &src",
                    ("dst", "src", "kw:atomic_type=atomicType", "kw:relu_mode=reluPreMode")),
               Form("STPhase Phase, typename TileData, typename GlobalData, AtomicType atomicType = "
                    "AtomicType::AtomicNone, ReluPreMode reluPreMode = ReluPreMode::NoRelu",
                    "GlobalData &dst, TileData &src, uint64_t preQuantScalar",
                    ("dst", "src", "kw:atomic_type=atomicType", "kw:relu_mode=reluPreMode",
                     "kw:pre_quant=preQuantScalar"))),
    # TSTORE_FP<TileData, GlobalData, FpTileData, atomicType, reluPreMode>(dst, src, fp): the Acc tile's
    # vector quantisation on its way to GM, pto-isa's (pto_instr.hpp) and its tests' spelling
    "TSTORE_FP": (Form("typename TileData, typename GlobalData, typename FpTileData, AtomicType atomicType = "
                       "AtomicType::AtomicNone, ReluPreMode reluPreMode = ReluPreMode::NoRelu",
                       "GlobalData &dst, TileData &src, FpTileData &fp",
                       ("dst", "src", "fp", "kw:atomic_type=atomicType", "kw:relu_mode=reluPreMode")),),
    # pto-isa's multi-list merge requires its ``exhausted`` template argument
    "TMRGSORT": tuple(_mrgsort(n) for n in (2, 3, 4)),
    "TEXTRACT": (_no_relu("TEXTRACT"), _no_quant("TEXTRACT")),
    "TINSERT": (_no_relu("TINSERT"), _no_quant("TINSERT")),
    # the fixpipe's ReLU and quantisation of an Acc tile's move (ptopipe.isa.fixpipe.fixpipe_move)
    "TMOV": (Form(_MOVE, "DstTileData &dst, SrcTileData &src", ("dst", "src", "kw:relu_mode=reluMode")),
             Form(_MOVE + " = ReluPreMode::NoRelu", "DstTileData &dst, SrcTileData &src, uint64_t preQuantScalar",
                  ("dst", "src", "kw:relu_mode=reluMode", "kw:pre_quant=preQuantScalar")),
             # A5's Acc -> Vec move with its AccToVecMode (pto-inst.hpp: not passed on)
             Form(_TO_VEC, "DstTileData &dst, SrcTileData &src", ("dst", "src", "kw:relu_mode=reluMode")),
             Form(_TO_VEC, "DstTileData &dst, SrcTileData &src, uint64_t preQuantScalar",
                  ("dst", "src", "kw:relu_mode=reluMode", "kw:pre_quant=preQuantScalar")),
             Form(_TO_VEC.replace("SrcTileData,", "SrcTileData, typename FpTileData,"),
                  "DstTileData &dst, SrcTileData &src, FpTileData &fp", ("dst", "src", "fp", "kw:relu_mode=reluMode"),
                  op="::ptopipe::OP_TMOV_FP"),
             # A5's microscaling exponent repack, TMOV(dst, src, tmp) / TMOV<grp_axis>(dst, src, tmp)
             *(_zz(t) for t in ("", "int grp_axis, "))),
    # TQUANT<QuantType::X, Out, Src, Para>(dst, src, scale[, tmp][, &offset]): the INT8 forms
    # (pto-isa's offset is a pointer to the offset tile); the MX forms (A5) take pointers to the
    # exponent, max and scaling tiles: TQUANT<QuantType::MXFP8[, QuantScaleAlg]> (ND),
    # TQUANT<grp_axis, MxQuantAlg[, interleave]>, and the ZZ exponent store (not modelled)
    "TQUANT": tuple(Form(_QUANT + (", typename TileDataTmp" if tmp else ""),
                         "TileDataOut &dst, TileDataSrc &src, TileDataPara &scale" + (", TileDataTmp &tmp" if tmp else "")
                         + (", TileDataPara *offset" if offset else ""),
                         ("dst", "src", "scale") + (("tmp",) if tmp else ()) + (("*offset",) if offset else ())
                         + ("kw:quant_type=quant_type",))
                    for tmp in (False, True) for offset in (False, True)) + (
        Form("auto quant_type, " + _MX_TILES + ", auto scale_alg = QuantScaleAlg::OCP", _MX_AT,
             _MX_FWD + ("kw:quant_type=quant_type", "kw:scale_alg=scale_alg")),
        Form("int grp_axis, auto mx_alg, " + _MX_TILES, _MX_AT, _MX_FWD + ("kw:grp_axis=grp_axis", "kw:mx_alg=mx_alg"),
             "mx_alg != MxQuantAlg::Hif4", _HIF4_WHY),
        Form("int grp_axis, auto mx_alg, bool interleave, " + _MX_TILES, _MX_AT,
             _MX_FWD + ("kw:grp_axis=grp_axis", "kw:mx_alg=mx_alg", "kw:interleave=interleave"),
             "mx_alg != MxQuantAlg::Hif4", _HIF4_WHY),
        Form("auto quant_type, auto store_mode, " + _MX_TILES, _MX_AT + ", TileDataExp *exp_zz", _MX_FWD,
             "::ptopipe::unmodelled<TileDataOut>::value",
             "the MXFP8 TQUANT with a ZZ exponent copy (VecStoreMode, &exp_zz) writes the ZZ order an MX matmul "
             "reads, a scale layout ptopipe does not model: TQUANT<QuantType::MXFP8>(dst, src, &exp, &max, "
             "&scaling) writes the exponents row-major")),
    "THISTOGRAM": (Form("HistByte byte, typename TileDataDst, typename TileDataSrc, typename TileDataIdx",
                        "TileDataDst &dst, TileDataSrc &src, TileDataIdx &idx", ("dst", "src", "idx", "byte")),),
    # TRANDOM<Rounds>(dst, key, counter): pto-isa's TRandomKey / TRandomCounter arrays, passed
    # on as the Python form's six words (PTO-AS pto.trandom's operands)
    "TRANDOM": (Form("uint16_t Rounds = 10, typename DstTile", "DstTile &dst, TRandomKey &key, TRandomCounter &counter",
                     ("dst", "key[0]", "key[1]", "counter[0]", "counter[1]", "counter[2]", "counter[3]",
                      "kw:rounds=Rounds"), "Rounds == 7 || Rounds == 10", "pto-isa runs 7 or 10 rounds (Rounds)"),),
    # MGATHER<Coalesce[, GatherOOB]>(dst, table, idx): into a Vec tile, or (a Mat tile) from GM rows
    # with the indices in GM; with a GM scratch tensor the GM -> L1 element gather (A5 also names
    # its executor, GatherExec)
    "MGATHER": (Form("Coalesce CMode, " + _MG, _MG_AT, ("dst", "src", "indexes", "kw:coalesce=CMode")),
                Form("Coalesce CMode, GatherOOB Mode, " + _MG, _MG_AT,
                     ("dst", "src", "indexes", "kw:coalesce=CMode", "kw:oob=Mode")),
                Form("Coalesce CMode, " + _MG_L1, _MG_L1_AT, ("dst", "src", "indexes", "scratch", "kw:coalesce=CMode")),
                Form("Coalesce CMode, GatherOOB Mode, " + _MG_L1, _MG_L1_AT,
                     ("dst", "src", "indexes", "scratch", "kw:coalesce=CMode", "kw:oob=Mode")),
                Form("Coalesce CMode, GatherOOB Mode, GatherExec Exec, " + _MG_L1, _MG_L1_AT,
                     ("dst", "src", "indexes", "scratch", "kw:coalesce=CMode", "kw:oob=Mode"),
                     "Exec == GatherExec::Scalar", _SIMT_WHY)),
    # MSCATTER<Coalesce[, ScatterAtomicOp[, ScatterOOB[, ScatterConflict (A5)]]]>(table, src, idx)
    "MSCATTER": tuple(_scatter(_SCATTER_MODES[:n]) for n in range(1, 5)),
    # TIMG2COL<Dst, ConvTile, FmatrixMode>(dst, src, posM, posK) and the img2col register writes
    # <ConvTile, FmatrixMode>(src): the mode picks the register bank and who writes it
    "TIMG2COL": (Form("typename TileData, typename ConvTileData, SetFmatrixMode FmatrixMode",
                      "TileData &dst, ConvTileData &src, uint16_t posM = 0, uint16_t posK = 0",
                      ("dst", "src", "posM", "posK", "kw:fmatrix_mode=FmatrixMode")),),
    **{name: (Form("typename ConvTileData, SetFmatrixMode FmatrixMode", "ConvTileData &src",
                   ("src", "kw:fmatrix_mode=FmatrixMode")),)
       for name in ("SETFMATRIX", "SET_IMG2COL_RPT", "SET_IMG2COL_PADDING")},
    "TMOV_FP": (Form(_FP, "DstTileData &dst, SrcTileData &src, FpTileData &fp",
                     ("dst", "src", "fp", "kw:relu_mode=reluMode")),),
    "TEXTRACT_FP": (Form(_FP, _FP_AT, ("dst", "src", "fp", "indexRow", "indexCol", "kw:relu_mode=reluMode")),),
    "TINSERT_FP": (Form(_FP, _FP_AT, ("dst", "src", "fp", "indexRow", "indexCol", "kw:relu_mode=reluMode")),),
}
#: the Python keywords a mode is passed as (KW arguments carry the index)
KEYWORDS = tuple(sorted({f[3:].split("=")[0] for forms in MODE_FORMS.values() for form in forms
                         for f in form.forward if f.startswith("kw:")}))


def cpp_value(member: Enum) -> int:
    """The value enumerator ``member`` has in C++: an integer enum keeps its value (pto-isa's
    ``Direction::DIR_C2V`` is 1, ``EVENT_ID3`` is 3), any other its position."""
    v = member.value
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return list(type(member)).index(member)


def enum_values(cls) -> dict:
    """C++ value -> member of a Python enum of :data:`ENUMS`."""
    return {cpp_value(m): m for m in cls}


def op_names() -> tuple:
    """Every ABI operation, in id order."""
    return SPECIAL + tuple(sorted(OPS))


def isa_function(name: str):
    from .. import isa
    return getattr(isa, name)


def operands(name: str) -> tuple:
    """(fewest, most operands, whether wait events follow them) of instruction ``name`` in C++:
    its Python form's positional operands (the optional ones may be left out); an instruction
    whose Python form takes ``*args`` only takes 1 to :data:`MAX_VARIADIC` arguments, events
    among them."""
    sig = inspect.signature(isa_function(name))
    req = opt = 0
    variadic = mixed = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            variadic, mixed = True, p.name != "events"
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if p.default is p.empty:
                req += 1
            else:
                opt += 1
    scratch = name in OPS and OPS[name].scratch
    if variadic and req + opt == 0:
        return (SCRATCH_ONLY_ARGS if scratch else 1), MAX_VARIADIC, False
    # a Python form whose trailing ``*rest`` holds optional operands as well as the wait events
    # (pto-isa's tmp forms: TTRANS(dst, src, tmp), TSEL(dst, mask, a, b, tmp), TGATHER(dst, src,
    # idx, tmp)) takes up to MAX_EVENTS more operands; the Python form checks them
    most = MOST_OPERANDS.get(name, req + opt + (MAX_EVENTS if mixed else 0))
    if scratch:
        # pto-isa's form requires the scratch tile: no optional operand in C++ (the Python
        # form's ``tmp=None`` or ``*rest``); one before the scalar needs the scalar too
        req += 1 + (name in SCRATCH_BEFORE_SCALAR)
    return max(req, PTO_ISA_FEWEST.get(name, 0)), most, variadic


def arities(name: str) -> tuple:
    """(fewest, most) arguments of instruction ``name`` in C++: its operands, then up to
    MAX_EVENTS wait events (:func:`operands`)."""
    lo, most, events = operands(name)
    return lo, most + (MAX_EVENTS if events else 0)


#: enums whose C++ type is pto-isa's wider one, with the enumerator it adds (type.hpp: a
#: PadValue from CustomBase up is a custom pad)
_WIDE = {"PadValue": ("uint64_t", f"CustomBase = 0x{V.CUSTOM_PAD_BASE:X}ULL")}


def _enum(name, cls, ns, scoped) -> str:
    base, *extra = _WIDE.get(name, ("int",))
    items = ", ".join([f"{m.name} = {cpp_value(m)}" for m in cls] + extra)
    kind = "enum class" if scoped else "enum"
    return f"{kind} {name} : {base} {{ {items} }};"


def render() -> str:
    out = ["// Generated by `python -m ptopipe.cpp.headergen` from ptopipe's op catalogue and",
           "// vocabulary (ptopipe/arch/catalogue.py, ptopipe/arch/vocab.py): do not edit.",
           "// Included twice by <pto/pto-inst.hpp>: the tables first, then (with",
           "// PTOPIPE_GENERATED_INSTRUCTIONS defined) the instructions.  The Python side of the ABI",
           "// reads the same tables (ptopipe/cpp/headergen.py).",
           "#ifndef PTOPIPE_GENERATED_INSTRUCTIONS", "#ifndef PTOPIPE_GENERATED_TABLES",
           "#define PTOPIPE_GENERATED_TABLES", ""]
    out.append("// element-type codes (ptopipe dtype order: " + " ".join(DTYPES) + ")")
    out.append("namespace ptopipe {")
    out.append("template <typename T> struct no_dtype : std::false_type {};")
    out.append("template <typename T> struct dtype_code {")
    for name, why in A6_ONLY_CTYPES.items():        # (first: the error a build reports)
        out.append(f"    static_assert(!std::is_same_v<T, {name}>, \"{why}\");")
    out.append("    static_assert(no_dtype<T>::value, \"this element type has no ptopipe form (the type is "
               "dtype_code's T in this error's instantiation): ptopipe's tiles and GlobalTensors take "
               + ", ".join(CPP_DTYPES[n] for n in DTYPES) + "\");")
    out.append("    static constexpr int value = -1;")
    out.append("};")
    for i, n in enumerate(DTYPES):
        out.append(f"template <> struct dtype_code<{CPP_DTYPES[n]}> {{ static constexpr int value = {i}; }};")
    out.append("enum Kind : int64_t { " + ", ".join(f"K_{k} = {v}" for k, v in KINDS.items()) + " };")
    out.append(f"constexpr int MAX_WORDS = {MAX_WORDS};")
    out.append("constexpr int64_t ABORT = INT64_MIN;")
    out.append("enum PipeStatus : int64_t { " + ", ".join(f"PS_{n} = {i}" for i, n in enumerate(PIPE_STATUS)) + " };")
    out.append("enum OpId : int32_t {")
    out += [f"    OP_{n} = {i}," for i, n in enumerate(op_names())]
    out.append("};")
    out.append("}  // namespace ptopipe")
    out.append("")
    for k, (name, cls, ns, scoped) in enumerate(enums()):
        if ns:
            out.append(f"namespace {ns} {{ {_enum(name, cls, ns, scoped)} }}")
        else:
            out.append(_enum(name, cls, ns, scoped))
        full = f"{ns}::{name}" if ns else name
        out.append(f"namespace ptopipe {{ template <> struct enum_code<{full}> {{ static constexpr int value = {k}; }}; }}")
    # a GlobalTensor's layout: pto-isa's Layout values, which ptopipe models (arch.vocab.GM_LAYOUTS)
    out.append("namespace pto { enum class Layout : int { " +
               ", ".join([f"{l.name} = {i}" for i, l in enumerate(V.GM_LAYOUTS)] + list(UNMODELLED_GM_LAYOUTS))
               + " }; }")
    out.append(f"namespace ptopipe {{ constexpr int MODELLED_GM_LAYOUTS = {len(V.GM_LAYOUTS)}; }}")
    out += ["#endif", "#else", ""]
    out.append("// the instructions of the op catalogue, as function templates (pto-isa's pto_instr.hpp declares "
               "each so: a kernel may call it with explicit template arguments)")
    out.append("namespace pto {")
    ids = {n: i for i, n in enumerate(op_names())}
    for name in sorted(OPS):
        lo, hi = arities(name)
        out += _plain(name, ids[name], lo, hi)
        if name in MODE_FORMS:
            out += _modal(name, ids[name])
    out.append("}  // namespace pto")
    out.append("// pto-isa's implementation entry points (TCONCAT_IMPL ...: what its instructions call after their "
               "wait events), which its CPU tests' kernels call too: the instruction itself")
    out += [f"#define {n}_IMPL {n}" for n in sorted(set(OPS) | set(IMPL_SPECIAL))]
    out.append("#endif")
    return "\n".join(out) + "\n"


_SITE = "::ptopipe::Site s = PTOPIPE_HERE"


#: the wait events a call may end with (defaulted: one declaration serves every number of them)
_EVENT_T = "".join(f", class E{i} = ::ptopipe::NoEvent" for i in range(MAX_EVENTS)) + \
    f", ::ptopipe::if_events<{', '.join(f'E{i}' for i in range(MAX_EVENTS))}> = 0"
_EVENT_P = [f"const E{i} &e{i} = {{}}" for i in range(MAX_EVENTS)]
_EVENT_A = [f"e{i}" for i in range(MAX_EVENTS)]


def _row_major(name: str, types: list) -> str:
    """The static_assert that the tile operands of ``types`` (an instruction's operand types, in
    order) are RowMajor where ``name`` takes RowMajor tiles only (``catalogue.ROW_MAJOR_ONLY``:
    its dst and sources, the first two of a unary form, three of a binary one), else nothing."""
    if name not in ROW_MAJOR_ONLY:
        return ""
    n = 3 if OPS[name].form == "binary" else 2
    return f"PTOPIPE_ROW_MAJOR({name}, {', '.join(types[:n])}); "


def _spelling(name: str) -> str:
    """How pto-isa spells an instruction of :data:`PTO_ISA_TEMPLATE_ONLY`: its first
    :data:`MODE_FORMS` form, template parameters by name (``TCI<TileData, T, descending>(dst,
    start)``)."""
    form = MODE_FORMS[name][0]
    names = [p.split("=")[0].split()[-1] for p in form.template.split(",")]
    args = [p.split("&")[-1].split("*")[-1].split()[-1] for p in form.params.split(",")]
    return f"{name}<{', '.join(names)}>({', '.join(args)})"


def _plain(name: str, op: int, lo: int, hi: int) -> list:
    """The plain calls of an instruction: a function template per number of operands, each
    taking up to MAX_EVENTS wait events (defaulted: ``::ptopipe::NoEvent``, which crosses the
    ABI as nothing) and its call site as defaulted last parameters.  Their leading pack ``X``
    takes the types a kernel names explicitly (pto-isa's ``TADD<Dst, Src0, Src1>(dst, src0,
    src1)``, its template parameters being the operands' types, in any order: ``TMRGSORT<Dst,
    Tmp, Src0, Src1, ...>(dst, executed, tmp, src0, src1)``); each must be the type of an
    operand.  An optional operand is no event (so that a call's events pick one declaration).  A
    call with too few or too many arguments meets the last overload, which says how many it
    takes.  The operands are const references: where a templated form (:data:`MODE_FORMS`)
    takes the same operands as non-const lvalues, as pto-isa declares them, its binding ranks
    better, on every compiler (with forwarding references the tie goes to partial ordering,
    which clang calls ambiguous).  (One declaration per number of operands and events each
    cost every kernel build a third more header to parse.)"""
    out = [f"// {name} (ABI id {op}, {lo} to {hi} arguments)"]
    first, most, events = operands(name)
    for k in range(first, most + 1):
        tparams = ", ".join(["class... X"] + [f"class A{i}" for i in range(k)])
        if events:
            tparams += _EVENT_T
            if k > first:
                tparams += f", ::ptopipe::if_operands<{', '.join(f'A{i}' for i in range(first, k))}> = 0"
        params = ", ".join([f"const A{i} &a{i}" for i in range(k)] + (_EVENT_P if events else []) + ["PTOPIPE_SITE"])
        call = "".join(f", {a}" for a in [f"a{i}" for i in range(k)] + (_EVENT_A if events else []))
        if name in PTO_ISA_TEMPLATE_ONLY:
            out.append(f"template <{tparams}> inline RecordEvent {name}({params}) "
                       f"{{ PTOPIPE_TEMPLATE_ONLY({name}, \"{_spelling(name)}\", A0); return RecordEvent(); }}")
            continue
        out.append(f"template <{tparams}> inline RecordEvent {name}({params}) "
                   f"{{ PTOPIPE_EXPLICIT_TYPES(X, {', '.join(f'A{i}' for i in range(k))}); "
                   f"{_row_major(name, [f'A{i}' for i in range(k)])}"
                   f"return RecordEvent(::ptopipe::inst({op}, s{call})); }}")
    # (with no arguments taken, one argument at least: a call with none is the overload above)
    first, more = ("class A0, ", "const A0 &, ") if lo == 0 else ("", "")
    count = ("PTOPIPE_SCRATCH_ARGUMENT_COUNT" if OPS[name].scratch else
             "PTOPIPE_PTO_ISA_ARGUMENT_COUNT" if name in PTO_ISA_FEWEST else "PTOPIPE_ARGUMENT_COUNT")
    out.append(f"template <class... X, {first}class... A> inline RecordEvent {name}({more}const A &...) "
               f"{{ {count}({name}, {lo}, {hi}, A); return RecordEvent(); }}")
    return out


#: the integer types a modal form takes a scalar operand as (an index, a pre-quant scalar)
_INTEGERS = ("int", "uint16_t", "uint64_t")


def _deduced_scalars(form: Form) -> tuple:
    """``form``'s call parameters with each integer scalar's type deduced (``Q0``, ``Q1``, ...,
    any arithmetic type), and the conversion to pto-isa's type each name is forwarded as.
    Deduced, a scalar matches an ``int`` argument exactly, as the plain form's ``const A &``
    does; declared ``uint16_t`` it would need a conversion there, so a call such as
    ``TEXTRACT_FP(dst, src, fp, 0, 0)`` or ``TSTORE(gm, acc, 3)`` - which pto-isa takes,
    converting - would find the plain and the modal form equally good and be ambiguous."""
    params, scalars, cast = [], [], {}
    for p in form.params.split(", "):
        t, _, pname = p.rpartition(" ")
        if t in _INTEGERS:
            q = f"Q{len(scalars)}"
            scalars.append(q)
            params.append(f"{q} {pname}")
            cast[pname] = f"static_cast<{t}>({pname})"
        else:
            params.append(p)
    if not scalars:
        return form.params, "", cast
    arith = " && ".join(f"::std::is_arithmetic<{q}>::value" for q in scalars)
    tmpl = "".join(f", class {q}" for q in scalars) + f", ::std::enable_if_t<{arith}, int> = 0"
    return ", ".join(params), tmpl, cast


def _modal(name: str, op: int) -> list:
    """pto-isa's templated forms of an instruction of :data:`MODE_FORMS`, each taking up to
    MAX_EVENTS wait events and its call site as defaulted last parameters."""
    out = [f"// {name}: pto-isa also spells it with mode template arguments (docs/isa/{name}.md)"]
    for form in MODE_FORMS[name]:
        call_params, scalar_t, cast = _deduced_scalars(form)
        fwd = []
        for f in form.forward:
            if f.startswith("kw:"):
                kw, param = f[3:].split("=")
                fwd.append(f"::ptopipe::kw({KEYWORDS.index(kw)}, {cast.get(param, param)})")
            else:
                fwd.append(cast.get(f, f))
        params = ", ".join([call_params] + _EVENT_P + [_SITE])
        checks = ([(form.check, form.why or form.check)] if form.check else []) + list(form.more)
        check = "".join(f"static_assert({c}, \"{name}: {why}\"); " for c, why in checks)
        call = ", ".join(fwd + _EVENT_A)
        check += _row_major(name, [f"decltype({f})" for f in form.forward])
        out.append(f"template <{form.template}{scalar_t}{_EVENT_T}> inline RecordEvent {name}({params}) "
                   f"{{ {check}return RecordEvent(::ptopipe::inst({form.op or op}, s, {call})); }}")
    return out


def main(argv=None) -> int:
    text = render()
    with open(HEADER, "w") as f:
        f.write(text)
    print(f"wrote {HEADER}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
