"""The op catalogue is the one definition of every instruction: the ISA functions, the cost
table, TSYNC's Op vocabulary, the IR op specs, the DSL stubs and the interpreter's dispatch
are all derived from it, and the ISA and the IR accept exactly the same local moves."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ptopipe
import ptopipe.isa as isa
import ptopipe.language as pl
from ptopipe import KernelError
from ptopipe.arch import PipeUnit, PlatformID, TileType, catalogue
from ptopipe.arch.costs import CostTable
from ptopipe.arch.dtypes import as_dtype
from ptopipe.arch.catalogue import tcvt_pair_error
from ptopipe.ir import ops as irops
from ptopipe.ir.ops import OpError
from ptopipe.ir.types import TILE_SPACES, MemorySpace, TileValueType
from ptopipe.language.surface import STUBS
from ptopipe.runtime import closures

CAT = catalogue.OPS


def test_every_instruction_is_an_isa_function_of_its_name():
    for name in CAT:
        fn = getattr(isa, name)
        assert fn.__name__ == name and name in isa.__all__


def test_an_ops_dtype_check_without_its_message_is_its_dtype_error():
    """OpDef.takes (what ``allowed``, the ISA's fast check, is made of) judges every dtype on
    every platform as dtype_error does, without making the message."""
    for op in catalogue.OPS.values():
        for d in catalogue.KNOWN_DTYPES:
            for p in (None, *PlatformID):
                assert op.takes(np.dtype(d), p) == (op.dtype_error(d, p) is None), (op.name, d, p)


def test_vector_costs_come_from_the_catalogue():
    table = CostTable()
    for op in CAT.values():
        if op.pipe is PipeUnit.V:
            assert table.vector[op.name] == op.cost, op.name
    assert set(table.vector) == {op.name for op in CAT.values() if op.cost is not None}


def test_every_vector_instruction_is_a_tsync_op_on_the_vector_pipe():
    for op in CAT.values():
        if op.pipe is PipeUnit.V:
            assert isa.Op[op.name].pipe is PipeUnit.V


def test_ir_specs_dsl_stubs_and_dispatch_are_derived():
    dsl = {op.dsl: op for op in CAT.values() if op.dsl}
    for name, op in dsl.items():
        spec = irops.OPS[name]
        assert op.name in spec.doc
        assert irops.ISA_NAMES[name] == op.name
        assert STUBS[name].op == name and getattr(pl, name) is STUBS[name]
        if op.form not in ("load", "store"):
            assert closures._TILE_RESULT[name] is getattr(isa, op.name)
    assert irops.BINARY == {n: o.name for n, o in dsl.items() if o.form == "binary"}


def test_one_location_vocabulary():
    assert isa.TileType is TileType is MemorySpace
    assert pl.Vec is TileType.Vec and pl.Acc is TileType.Acc
    assert TileType.Vec.mem_space.value == "UB" and TileType.Acc.core == "aic"


# -- the move table: ISA and IR accept the same pairs ------------------------------------------
def _ir_move_ok(src: TileType, dst: TileType) -> bool:
    arg = type("V", (), {"type": TileValueType((16, 16), "f32", src)})()
    try:
        irops.OPS["move"].infer(None, {"tile": arg}, {"space": dst, "dtype": None})
        return True
    except OpError:
        return False


def _isa_move_ok(src: TileType, dst: TileType, platform="a2a3") -> bool:
    def k():
        s = isa.Tile(src, isa.float32, 1, 16, addr=0x0)
        # (an accumulator moves into L1 as f16 on every platform, as f32 only on A5)
        d = isa.Tile(dst, isa.float16 if src is TileType.Acc else isa.float32, 1, 16, addr=0x40)
        isa.TMOV(d, s)
    core_ok = (src is TileType.Vec) == (dst is TileType.Vec)   # both tiles on one core
    if not core_ok:
        return False
    kw = {"aiv": (k, None)} if src is TileType.Vec else {"aic": k}
    try:
        ptopipe.run(**kw, platform=platform)
        return True
    except KernelError as e:
        assert "not a local path" in e.what, e
        return False


def test_isa_and_ir_accept_exactly_the_catalogue_moves():
    """The ISA takes every catalogue move; the IR those between its tile spaces (no Bias).
    A2A3 has no MX scale buffers: a ScaleLeft / ScaleRight tile there is refused, naming A5."""
    a5_only = (TileType.ScaleLeft, TileType.ScaleRight)
    for t in a5_only:
        with pytest.raises(KernelError) as e:
            ptopipe.run(aic=lambda: isa.Tile(t, isa.uint8, 1, 32, addr=0x0), platform="a2a3")
        assert "A5 only" in e.value.what
    for src in TileType:
        for dst in TileType:
            if src in a5_only or dst in a5_only:
                continue
            want = (src, dst) in catalogue.MOVES
            assert _isa_move_ok(src, dst) == want, (src, dst)
            assert _ir_move_ok(src, dst) == (want and src in TILE_SPACES and dst in TILE_SPACES), \
                (src, dst)
    assert (TileType.Mat, TileType.Bias) in catalogue.MOVES
    assert not _ir_move_ok(TileType.Mat, TileType.Bias)


# -- the scalar rule: the ISA's fast path agrees with the catalogue's rule ------------------------
_DTYPES = sorted(catalogue.SCALAR_RANGE, key=str)
_SCALARS = st.one_of(st.integers(-(1 << 40), 1 << 40), st.floats(allow_nan=True),
                     st.sampled_from([0, 1, -1, 127, 128, -129, 255, 256, 65504.0, 65520.0, 2.5,
                                      1e6, 3.4e38, np.int8(5), np.float32(2.5), True, "1", 0.0,
                                      -0.0, np.float32(-0.0), 1.0]))


@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(_DTYPES), scalar=_SCALARS)
def test_scalar_fast_path_equals_the_rule(dtype, scalar):
    """TADDS & co. reject a scalar iff catalogue.scalar_error does, and take exactly the
    value numpy converts it to - also when the checked value comes from the memo."""
    from ptopipe.isa.ops import _scalar_value

    class _Core:
        def where(self):
            return None

    class _Dst:
        def __init__(self, dt):
            self.dtype = dt

        def describe(self):
            return f"{self.dtype.name} tile"

    bad = catalogue.scalar_error(dtype, scalar)
    for _ in range(2):                       # the second call may hit the memo
        try:
            got = _scalar_value(_Core(), "TADDS", _Dst(dtype), scalar)
        except KernelError:
            got = None
        assert (got is None) == (bad is not None), (dtype, scalar, bad)
        if got is not None:
            assert got.dtype == dtype and got.tobytes() == dtype.type(scalar).tobytes()


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "i8", "u8", "fp8_e4m3"])
def test_matmul_inputs_have_an_accumulator(name):
    acc = catalogue.accum_dtype(as_dtype(name))
    assert acc == (np.int32 if name in ("i8", "u8") else np.float32)


# -- the dtype rules: the ISA, the IR and the catalogue agree, and nothing fails later ---------
_VECTOR_FORMS = ("binary", "scalar", "unary", "row_expand", "row_reduce", "col_reduce", "convert",
                 "col_expand", "ternary", "scalar_ternary", "part")
_TILE_DTYPES = ["f16", "f32", "bf16", "i8", "u8", "i16", "i32"]


def _isa_accepts(op, dtype, platform) -> bool:
    """Run ``op`` on ``dtype`` tiles on ``platform`` end to end (the queued work applied and
    stored): True if it runs, False if it is rejected at issue; anything else fails the test."""
    fn = getattr(isa, op.name)
    dt = as_dtype(dtype)

    def k(out):
        a = isa.Tile(TileType.Vec, dt, 16, 16, addr=0x0)
        r = isa.Tile(TileType.Vec, dt, 16, 16, addr=0x200 * dt.itemsize)
        isa.TEXPANDS(a, 3)
        isa.TEXPANDS(r, 2)
        if op.form in ("unary", "row_reduce", "col_reduce", "convert"):
            fn(a, r)
        elif op.form == "scalar":
            fn(a, r, 2)
        elif op.form == "ternary":
            fn(a, a, r, r)
        elif op.form == "scalar_ternary":
            fn(a, a, 2, r)
        elif op.form == "row_expand":                   # the per-row operand: a DN column
            col = isa.Tile(TileType.Vec, dt, 16, 1, addr=0x400 * dt.itemsize)
            isa.TEXPANDS(col, 2)
            fn(a, a, col)
        else:
            fn(a, a, r)
        isa.TSTORE(isa.GlobalTensor(out.data(), (16, 16)), a)
    try:
        ptopipe.run(aiv=(k, None), args={"out": np.zeros((16, 16), dt)}, platform=platform)
        return True
    except KernelError as e:
        assert op.name in e.what and e.where and "test_catalogue.py" in e.where, e
        return False


def _ir_accepts(op, dtype) -> bool:
    arg = type("V", (), {"type": TileValueType((16, 16), dtype, MemorySpace.Vec)})()
    column = type("V", (), {"type": TileValueType((16, 1), dtype, MemorySpace.Vec)})()   # DN: per-row
    args = {"a": arg, "b": arg, "c": arg, "row": column, "col": arg,
            "scalar": type("S", (), {"type": irops.INDEX})()}
    try:
        irops.OPS[op.dsl].infer(None, args, {"dtype": dtype})
        return True
    except OpError:
        return False


@pytest.mark.parametrize("op", [o for o in CAT.values() if o.form in _VECTOR_FORMS],
                         ids=lambda o: o.name)
def test_isa_and_ir_apply_the_catalogue_dtype_rule(op):
    """The ISA takes a dtype on a platform iff the catalogue's rule for that platform does;
    the IR (no platform) iff either platform does."""
    def rule(dtype, platform=None):     # TCVT's rule is its pair table (dtype -> dtype here)
        if op.name == "TCVT":
            return tcvt_pair_error(as_dtype(dtype), as_dtype(dtype), platform)
        return op.dtype_error(as_dtype(dtype), platform)
    for dtype in _TILE_DTYPES:
        for platform in PlatformID:
            want = rule(dtype, platform) is None
            assert _isa_accepts(op, dtype, platform.name[9:].lower()) == want, (op.name, dtype, platform)
        if op.dsl is not None:
            assert _ir_accepts(op, dtype) == (rule(dtype) is None), (op.name, dtype)


def test_move_error_lists_exactly_the_legal_moves():
    """A DSL move off the table: the fix lists the IR's move table (no Mat->Bias, which the
    IR refuses) and, in a mixed function, the boundary moves - each from its table."""
    from markers import line_of
    from ptopipe.errors import CompileError
    with pytest.raises(CompileError) as ei:
        @pl.aic
        def cube(a: pl.Tensor[[16, 16], pl.f32]):
            t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
            u = pl.move(t, space=pl.Right)  # BAD-MOVE
    e = ei.value
    assert e.what == "pl.move: move from Left to Right is not a local path"
    assert e.fix == ("valid: Mat->Left, Mat->Right, Acc->Mat, Vec->Vec; across cores use "
                     "TPUSH/TPOP")
    assert e.where.split(":")[-2] == str(line_of(test_move_error_lists_exactly_the_legal_moves,
                                                 "BAD-MOVE"))
    listed = {tuple(p.split("->")) for p in e.fix[len("valid: "):].split(";")[0].split(", ")}
    assert listed == {(s.value, d.value) for s, d in irops.LOCAL_MOVES}
    with pytest.raises(CompileError) as ei:
        @pl.incore
        def mixed(a: pl.Tensor[[16, 16], pl.f32]):
            t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
            u = pl.move(t, space=pl.Vec)  # BAD-CROSS
    assert ei.value.fix == ("valid: Mat->Left, Mat->Right, Acc->Mat, Vec->Vec; across cores "
                            "(in a mixed @pl.incore function): Acc->Vec (C2V), Vec->Mat (V2C), "
                            "Vec->Left (V2C), Vec->Right (V2C)")


def test_the_isa_reference_page_is_the_catalogues():
    """docs/isa.md is made from the catalogue (``python -m ptopipe.report.isa_reference >
    docs/isa.md``): every instruction, its .pto spelling the executor reads back."""
    import os
    from ptopipe.codegen.pto_exec.program import catalogue_name
    from ptopipe.codegen.pto_syntax import pto_op_name
    from ptopipe.report.isa_reference import page
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "isa.md")
    text = page()
    with open(path, encoding="utf-8") as f:
        assert f.read() == text, "docs/isa.md is stale: python -m ptopipe.report.isa_reference > docs/isa.md"
    for name in catalogue.OPS:
        assert catalogue_name(pto_op_name(name)) == name
        assert f"| `{name}` | `{pto_op_name(name)}` |" in text


def test_tile_shape_error_is_pto_tiles_static_shape_rule():
    """pto_tile.hpp: unboxed rows / columns of whole 32-byte blocks, boxed tiles of whole
    fractals (16 x 32 bytes row-major inside, 32 bytes x 16 column-major, 16 x 16 in an Acc
    tile's 1024-byte fractal), a Vec tile's or a one-row tile's rows free."""
    from ptopipe.arch.vocab import TileLayout as L, TileType as T, tile_shape_error as bad
    assert bad(T.Vec, L.ND, 16, 12, 4) and bad(T.Vec, L.ND, 16, 6, 4) and not bad(T.Vec, L.ND, 3, 8, 4)
    assert bad(T.Vec, L.DN, 12, 1, 4) and not bad(T.Vec, L.DN, 16, 1, 2)
    assert not bad(T.Vec, L.NZ, 4, 8, 4) and bad(T.Mat, L.NZ, 4, 8, 4) and not bad(T.Mat, L.NZ, 1, 8, 4)
    assert bad(T.Mat, L.NZ, 16, 16, 1) and not bad(T.Mat, L.NZ, 16, 32, 1)
    assert bad(T.Right, L.ZN, 16, 8, 2) and not bad(T.Right, L.ZN, 16, 16, 2) and bad(T.Right, L.ZN, 8, 16, 4) is None
    assert bad(T.Acc, L.NZ, 8, 8, 4) and not bad(T.Acc, L.NZ, 16, 16, 4)


def test_static_shape_rounds_a_tile_up_to_the_shape_pto_tile_takes():
    """The padded static shape both writers declare: whole 32-byte rows (ND) / columns (DN),
    whole fractals for a boxed tile (a Vec tile's rows and a one-row tile's kept); a padded
    shape is one the rule takes."""
    from ptopipe.arch.vocab import TileLayout as L, TileType as T, static_shape as pad, tile_shape_error as bad
    assert pad(T.Vec, L.ND, 16, 4, 1) == (16, 32) and pad(T.Vec, L.DN, 4, 1, 1) == (32, 1)
    assert pad(T.Vec, L.ND, 3, 8, 4) == (3, 8) and pad(T.Vec, L.DN, 4, 1, 4) == (8, 1)
    assert pad(T.Vec, L.NZ, 4, 4, 4) == (4, 8) and pad(T.Mat, L.NZ, 4, 4, 4) == (16, 8)
    assert pad(T.Mat, L.NZ, 1, 8, 4) == (1, 8) and pad(T.Mat, L.NZ, 16, 16, 1) == (16, 32)
    assert pad(T.Right, L.ZN, 8, 8, 2) == (16, 16) and pad(T.Acc, L.NZ, 8, 8, 4) == (16, 16)
    for loc in (T.Vec, T.Mat, T.Left, T.Right, T.Acc):
        for lay in L:
            for r, c, size in ((1, 1, 1), (5, 3, 2), (16, 16, 4), (17, 9, 8)):
                assert bad(loc, lay, *pad(loc, lay, r, c, size), size) is None, (loc, lay, r, c, size)


# pto-isa's static_asserts (include/pto/npu/<platform>/<header>:<line>) of the element-wise,
# unary and reduction families, over the dtypes ptopipe names (uint16 / uint64 spelled out)
_PTO_ISA_DTYPES = {
    # a2a3 TAdd.hpp:62 / a5 TAdd.hpp:60 (TSUB, TMAX, TMIN and the scalar forms alike)
    "TADD": ("f16 f32 i16 i32", "f16 f32 i16 i32 i8 u8 uint16 u32 i64 uint64 bf16"),
    "TMAXS": ("f16 f32 i16 i32", "f16 f32 i16 i32 i8 u8 uint16 u32 i64 uint64 bf16"),
    # a2a3 TMul.hpp:61 / a5 TMul.hpp:59, TMulS.hpp:57: no 8-bit integers on A5; TNEG is TMULS by -1
    "TMUL": ("f16 f32 i16 i32", "f16 f32 i16 i32 uint16 u32 i64 uint64 bf16"),
    "TMULS": ("f16 f32 i16 i32", "f16 f32 i16 i32 uint16 u32 i64 uint64 bf16"),
    "TNEG": ("f16 f32 i16 i32", "f16 f32 i16 i32 uint16 u32 i64 uint64 bf16"),
    # a2a3 TDiv.hpp:58 (floats) / a5 TDiv.hpp:67 (no bf16, no 8-bit integers)
    "TDIV": ("f16 f32", "f16 f32 i16 uint16 i32 u32 i64 uint64"),
    # a2a3 TDivS.hpp:220 / a5 TDivS.hpp:138: no bf16 (TRECIP is TDIVS(dst, 1, src))
    "TDIVS": ("f16 f32 i16 i32", "f16 f32 i16 uint16 i32 u32 i64 uint64"),
    "TRECIP": ("f16 f32 i16 i32", "f16 f32 i16 uint16 i32 u32 i64 uint64"),
    # a2a3 TUnaryOp.hpp:265 / a5 TUnaryOp.hpp:149, TRsqrt.hpp:194, TUnaryOp.hpp:316 (TABS)
    "TEXP": ("f16 f32", "f16 f32"),
    "TRSQRT": ("f16 f32", "f16 f32"),
    "TABS": ("f16 f32", "f16 f32 i8 i16 i32"),
    # a2a3 TUnaryOp.hpp:408 / a5 TUnaryOp.hpp:247
    "TRELU": ("f16 f32 i32", "f16 f32 i32"),
    # a2a3 TRowReduceOps.hpp:197 / a5 TRowReduce.hpp:393 (TROWSUM), :365 (TROWMAX)
    "TROWSUM": ("f16 f32 i16 i32", "f16 f32 i16 i32"),
    "TROWMAX": ("f16 f32 i16 i32", "f16 f32 i16 i32 i8 u8"),
    # a2a3 TColSum.hpp:102 / a5 TColReduceOps.hpp:31
    "TCOLSUM": ("f16 f32 i16 i32", "f16 f32 i16 i32 i8 u8 uint16 u32 i64 uint64 bf16"),
    # a2a3 TColReduceIdx.hpp:26 / a5 TColReduceIdx.hpp:65 (b8 / b16 / b32)
    "TCOLARGMAX": ("f16 f32 uint16 u32", "f16 f32 bf16 i8 u8 i16 uint16 i32 u32"),
    # a2a3 TRowExpandAdd.hpp:40 / a5 TRowExpandAdd.hpp:55; TRowExpandDiv.hpp:55 / :84
    "TROWEXPANDADD": ("f16 f32 i16 i32", "f16 f32 i16 i32 i8 u8 uint16 u32 bf16"),
    "TROWEXPANDDIV": ("f16 f32", "f16 f32 bf16 i8 u8 i16 uint16 i32 u32"),
    # a2a3 TExpandS.hpp:144 / a5 TExpandS.hpp:149
    "TEXPANDS": ("f16 f32 i16 i32 i8 u8 uint16 u32 bf16", "f16 f32 i16 i32 i8 u8 uint16 u32 i64 uint64 bf16"),
}


@pytest.mark.parametrize("name", sorted(_PTO_ISA_DTYPES))
def test_element_wise_dtype_rules_are_pto_isas_per_platform(name):
    """bf16 TADD is A5's (A2A3's TADD static_assert leaves it out, and ptoas refuses it)."""
    names = _TILE_DTYPES + ["u32", "i64", "uint16", "uint64"]
    for platform, want in zip(PlatformID, _PTO_ISA_DTYPES[name]):
        got = {n for n in names if CAT[name].dtype_error(as_dtype(n), platform) is None}
        assert got == set(want.split()), (name, platform, sorted(got))
