"""pto-isa's instruction overloads and API spelled as include/pto/common/pto_instr.hpp,
constants.hpp, cpu_stub.hpp and pto_tile.hpp declare them, in one Vector kernel
(cpp_kernels/pto_isa_forms.cpp): each form means what pto-isa's CPU model computes, checked
against numpy - not a tmp tile taken for a wait event, a scalar for a tile, an ``auto`` event
refused, a smaller valid region refused at TSTORE, a PadValue ignored."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ptopipe.arch.dtypes import float8_e4m3
from ptopipe.cpp import run_cpp
from ptopipe.errors import KernelError, MemoryConflictError

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)
from test_cpp_pto_isa_api import compile_only

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "pto_isa_forms.cpp")
R, C = 8, 32


@needs_cxx
def test_pto_isa_overloads_compute_what_pto_isa_does(cpp_cache):
    x = np.random.default_rng(0).uniform(0.5, 40, (R, C)).astype(np.float32)
    z = lambda dt=np.float32, sh=(R, C): np.zeros(sh, dt)   # noqa: E731
    u16 = (np.arange(R * 16, dtype=np.uint16) * 500).reshape(R, 16)
    args = dict(x=x, rsqrt=z(), colsum=z(sh=(1, C)), rdiv=z(), twice=z(), rowmul=z(), wrap=z(np.int16),
                sat=z(np.int16), dflt=z(np.int16), window=np.full((R, C), -1, np.float32), padded=z(), u16=u16, ids=z(np.int32),
                exp=z(), lists=_lists(), merged=z(sh=(1, 64)), counts=z(np.int32), expanded=z(sh=(R, 2 * C)),
                shaped=np.full((R, C), -1, np.float32), q8=z(np.int8), qu8=z(np.uint8), above=z(np.int32),
                n_above=z(np.int32, (1, 8)), flag_id=5)
    o = run_cpp(KERNEL, args, aiv="pto_isa_forms", sync="auto").outputs      # (its one event: the int id form)
    np.testing.assert_allclose(o["twice"], 2 * x)                       # e1 = TMULS(..., e0)
    np.testing.assert_allclose(o["rsqrt"], 1 / np.sqrt(x), rtol=1e-6)   # TRSQRT(dst, src, tmp)
    np.testing.assert_allclose(o["colsum"][0], x.sum(0), rtol=1e-5)     # TCOLSUM(dst, src, tmp, true)
    np.testing.assert_allclose(o["rdiv"], 2 / x, rtol=1e-6)             # TDIVS<DivAlgorithm::...>(dst, 2.0f, src)
    np.testing.assert_allclose(o["exp"], np.exp(x), rtol=1e-6)          # TEXP<ExpAlgorithm::...>(dst, src)
    np.testing.assert_allclose(o["rowmul"], x * x.sum(1, keepdims=True), rtol=1e-5)
    big = np.rint(x.astype(np.float64) * 1000)                          # up to 40000: past int16
    np.testing.assert_array_equal(o["wrap"], big.astype(np.int64).astype(np.int16))       # SaturationMode::OFF
    np.testing.assert_array_equal(o["sat"], np.clip(big, -32768, 32767).astype(np.int16))  # ::ON
    np.testing.assert_array_equal(o["dflt"], o["wrap"])                  # no mode: f32 -> i16 wraps
    assert (big > 32767).any()
    window = np.full((R, C), -1, np.float32)
    window[:, :8] = x[:, :8]
    np.testing.assert_array_equal(o["window"], window)                  # 8 x 8 valid into 8 x 32 GM
    padded = np.full((R, C), -np.inf, np.float32)
    padded[:, :8] = x[:, :8]
    np.testing.assert_array_equal(o["padded"], padded)                  # the destination's PadValue::Min
    wide = np.full((R, 2 * C), -np.inf, np.float32)
    wide[:, :8] = x[:, :8]
    np.testing.assert_array_equal(o["expanded"], wide)                  # TFILLPAD<TFillPadMode::Expand>
    np.testing.assert_array_equal(o["u16"], u16)
    assert (o["ids"] == 1 * 100 + 2).all()                              # get_block_num, get_subblockdim
    # TMRGSORT<..., exhausted>(dst, executedNumList, tmp, src0, src1): the merge, descending by value
    tuples = _lists().view(np.uint32).reshape(32, 2)
    want = tuples[np.argsort(-tuples[:, 0].view(np.float32), kind="stable")]
    np.testing.assert_array_equal(o["merged"].view(np.uint32).reshape(32, 2), want)
    # the counts written into the kernel's lists: all of both; with exhausted, list 0's 16 and
    # list 1's 15 (its last, the smallest value, left when list 0 ran out)
    assert (o["counts"] == 16 * 1000000 + 16 * 10000 + 16 * 100 + 15).all(), o["counts"][0, 0]
    # ptoas's spellings: SetValidShape(4, 8) of a DYNAMIC tile, the 4 x 8 stored
    shaped = np.full((R, C), -1, np.float32)
    shaped[:4, :8] = x[:4, :8]
    np.testing.assert_array_equal(o["shaped"], shaped)
    np.testing.assert_array_equal(o["q8"], np.rint(x * 2).astype(np.int8))          # TQUANT<INT8_SYM>
    np.testing.assert_array_equal(o["qu8"], np.rint(x * 2 + 10).astype(np.uint8))   # <INT8_ASYM>, &offset
    hits = x > 20                                           # TGATHER<..., CmpMode::GT, 7> compare form
    np.testing.assert_array_equal(o["n_above"][0], hits.sum(1))
    for r in range(R):
        np.testing.assert_array_equal(o["above"][r, :hits[r].sum()], np.flatnonzero(hits[r]) + 7)

    # set_flag / wait_flag take an int event id (pto-isa's cpu_stub.hpp), checked at the call
    with pytest.raises(KernelError) as ei:
        run_cpp(KERNEL, dict(args, flag_id=8), aiv="pto_isa_forms", sync="auto")
    assert "event id must be EVENT_ID0..EVENT_ID7 (0..7), got 8" in ei.value.what
    assert ei.value.where == f"{os.path.relpath(KERNEL)}:{_line('set_flag(PIPE_V, PIPE_MTE3, flag_id & 15);')}"
    # a reduction or arg-reduction whose destination overlaps its source: undefined in pto-isa,
    # refused at the call
    for flag_id, call, what in ((20, "TROWSUM(sums_in_a, a, t);", "TROWSUM's destination"),
                                (21, "TCOLMAX(maxes_in_a, a);", "TCOLMAX's destination"),
                                (22, "TROWARGMAX(rows_in_a, a, t);", "TROWARGMAX's destination"),
                                (23, "TCOLARGMIN(cols_in_a, a, t);", "TCOLARGMIN's destination")):
        with pytest.raises(MemoryConflictError) as ei:
            run_cpp(KERNEL, dict(args, flag_id=flag_id), aiv="pto_isa_forms", sync="auto")
        assert ei.value.where == f"{os.path.relpath(KERNEL)}:{_line(call)}"
        assert ei.value.what.startswith(what) and "overlaps its source" in ei.value.what


def _line(text: str) -> int:
    with open(KERNEL) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


def _lists():
    """Two sorted lists of 16 [float value, uint32 index] tuples, values interleaved: list 0
    holds 31, 29, ..., 1, list 1 30, 28, ..., 0."""
    t = np.zeros((2, 16, 2), np.uint32)
    t[0, :, 0] = (31 - 2 * np.arange(16)).astype(np.float32).view(np.uint32)
    t[1, :, 0] = (30 - 2 * np.arange(16)).astype(np.float32).view(np.uint32)
    t[:, :, 1] = np.arange(32).reshape(2, 16)
    return t.reshape(1, 64).view(np.float32)


@needs_cxx
def test_an_element_type_ptopipe_has_no_form_for_names_itself(tmp_path):
    r = compile_only(tmp_path, """
void k() {
    Tile<TileType::Vec, double, 8, 4> t;
    TASSIGN(t, 0);
}
""")
    assert r.returncode != 0
    assert "this element type has no ptopipe form" in r.stderr and "double" in r.stderr


@needs_cxx
def test_the_precision_and_tmp_forms_resolve(tmp_path):
    """Every ``<auto PrecisionType>`` form and tmp form of pto_instr.hpp ptopipe takes, with
    wait events: each call resolves to one overload (a syntax-only compile)."""
    r = compile_only(tmp_path, """
using V = Tile<TileType::Vec, float, 8, 32>;
using Col = Tile<TileType::Vec, float, 8, 1, BLayout::ColMajor, 8, 1>;
void k(V &d, V &a, V &b, V &t, Col &c, Tile<TileType::Vec, int16_t, 8, 32> &h, Tile<TileType::Vec, float, 1, 32> &r) {
    Event<Op::TEXP, Op::TRSQRT> e;
    e = TEXP(d, a);
    TSYNC(e);
    e.Wait();
    TRSQRT<RsqrtAlgorithm::HIGH_PRECISION>(d, a, t, e);
    TRSQRT<RsqrtAlgorithm::DEFAULT>(d, a);
    TROWEXPANDDIV<DivAlgorithm::DEFAULT>(d, a, c, t);
    TROWEXPANDDIV<DivAlgorithm::DEFAULT>(d, a, c);
    TROWEXPANDSUB(d, a, c, t, e);
    TREM<RemAlgorithm::DEFAULT>(d, a, b, t);
    TREMS<RemSAlgorithm::DEFAULT>(d, a, 2.0f, t);
    TFMODS<FmodSAlgorithm::DEFAULT>(d, a, 2.0f);
    TFMOD<FmodAlgorithm::DEFAULT>(d, a, b);
    TPOWS<PowAlgorithm::HIGH_PRECISION>(d, a, 2.0f, t);
    TDIVS<DivAlgorithm::DEFAULT>(d, a, 2.0f, e);
    TDIVS<DivAlgorithm::DEFAULT>(d, 2.0f, a, e);
    TDIV<DivAlgorithm::HIGH_PRECISION>(d, a, b);
    TLOG<LogAlgorithm::DEFAULT>(d, a);
    TSQRT<SqrtAlgorithm::DEFAULT>(d, a);
    TRECIP<RecipAlgorithm::DEFAULT>(d, a);
    TCOLEXPANDDIV<DivAlgorithm::DEFAULT>(d, a, r);
    TCOLSUM(r, a, t, false, e);
    TCVT(h, a, t, RoundMode::CAST_RINT, SaturationMode::OFF, e);
}
""")
    assert r.returncode == 0, r.stderr


#: calls with explicit template arguments pto-isa's function templates take (its tests' spellings)
EXPLICIT = """
using V = Tile<TileType::Vec, float, 8, 32>;
using O = Tile<TileType::Vec, uint32_t, 8, 8>;
using L = Tile<TileType::Vec, float, 1, 32>;
using A = TileAcc<float, 16, 16>;
using M = Tile<TileType::Mat, half, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor>;
using H = Tile<TileType::Vec, half, 16, 16>;
using S = Tile<TileType::Scaling, uint64_t, 1, 16, BLayout::RowMajor, 1, 16, SLayout::NoneBox>;
using GA = GlobalTensor<half, Shape<1, 1, 1, 16, 16>, Stride<256, 256, 256, 16, 1>>;
using I8 = Tile<TileType::Vec, int8_t, 8, 32>;
using I32 = Tile<TileType::Vec, int32_t, 8, 32>;
void ptoas_forms(V &d, V &a, V &b, I8 &q, I32 &ix, L &l, A &acc, H &h, S &fp, GA &g) {
    TMOV<H, A, AccToVecMode::DualModeSplitM, ReluPreMode::NormalRelu>(h, acc);
    TMOV<H, A, AccToVecMode::SingleModeVec1, ReluPreMode::NormalRelu>(h, acc, uint64_t(0x3f800000));
    TMOV<H, A, S, AccToVecMode::SingleModeVec0, ReluPreMode::NormalRelu>(h, acc, fp);
    TSTORE<STPhase::Final, A, GA, AtomicType::AtomicAdd, ReluPreMode::NormalRelu>(g, acc);
    TSTORE<STPhase::Final, A, GA, AtomicType::AtomicNone, ReluPreMode::NoRelu>(g, acc, uint64_t(1));
    TSTORE_FP<A, GA, S, AtomicType::AtomicNone, ReluPreMode::NormalRelu>(g, acc, fp);
    TQUANT<QuantType::INT8_SYM, I8, V, V>(q, a, b);
    TQUANT<QuantType::INT8_SYM, I8, V, V, V>(q, a, b, d);
    V *offset = &d;
    TQUANT<QuantType::INT8_ASYM, I8, V, V>(q, a, b, offset);
    TGATHER<I32, V, L, I32, I8, CmpMode::EQ>(ix, a, l, ix, q, 0);
    Tile<TileType::Vec, float, 8, 32, BLayout::RowMajor, -1, -1> dyn(8, 32);
    dyn.SetValidShape(4, 16);
    get_buf(PIPE_MTE2, 0, 0);
    rls_buf(PIPE_MTE2, 0, 0);
}
void explicit_forms(V &d, V &a, V &b, O &o, L &l, A &acc, M &m, H &h, Event<Op::TADD, Op::TADD> &e) {
    TADD<V, V, V>(d, a, b);
    TFUSEDMULADD<V, V, V>(d, a, b, e);
    TGATHERB<V, V, O>(d, a, o);
    TMULS<V, V>(d, a, 2.0f);
    Event<Op::TEXPANDS, Op::TADD> e2;
    e2 = TEXPANDS<V>(d, 1.0f);
    TSYNC(e2);
    TTRAP();
    MrgSortExecutedNumList ex;
    TMRGSORT<V, V, L, L, L, L, false>(d, ex, d, l, l, l, l);
    TMRGSORT(d, ex, d, l, l, e);
    TEXTRACT<M, A, ReluPreMode::NoRelu>(m, acc, 0, 0);
    TINSERT<M, A, ReluPreMode::NoRelu>(m, acc, 0, 0);
    TMOV<H, A, ReluPreMode::NormalRelu>(h, acc);
    TMOV<H, A>(h, acc, uint64_t(0x3f800000));
}
void refused(V &d, V &a, O &o, A &acc, M &m) {
    TADD<V, V, O>(d, a, a);
    TADD(d, a);
    TEXTRACT<M, A, ReluPreMode::NormalRelu>(m, acc, 0, 0);
    TINSERT<M, A, ReluPreMode::NoRelu>(m, acc, uint64_t(1), 0, 0);
    d.SetValidShape(4, 16);
}
"""
#: what each refused call is told, in order
REFUSED_EXPLICIT = ["an explicit template argument of this instruction is not the type of any of its operands",
                    "TADD takes 3 to 6 arguments (operands, then wait events)",
                    "ptopipe's TEXTRACT applies no ReLU (ReluPreMode::NoRelu only)",
                    "ptopipe does not model TINSERT with a preQuantScalar",
                    "SetValidShape: pto-isa sets the valid shape of a tile whose valid rows and columns are DYNAMIC"]


@needs_cxx
def test_explicit_template_arguments_are_the_operands_types(tmp_path):
    """Every instruction is callable as pto-isa declares it, a function template: with its
    operands' types as explicit template arguments (in pto-isa's order, which need not be the
    operands'), with pto-isa's mode arguments where ptopipe models them (TMRGSORT's exhausted,
    TMOV's ReLU and quantisation, TSTORE_FP's atomic type and ReLU) and the forms ptoas writes
    (TMOV's AccToVecMode, TSTORE's STPhase with a ReLU, TQUANT<QuantType> with the offset tile's address, TGATHER's compare
    form, SetValidShape, get_buf / rls_buf); a type that is no operand's, a wrong number of
    arguments, a mode ptopipe does not model, or SetValidShape of a tile whose valid shape is
    static (pto-isa's static_assert) is refused at the call with a message saying so."""
    import re
    r = compile_only(tmp_path, EXPLICIT)
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert len(errors) == len(REFUSED_EXPLICIT), r.stderr[-3000:]
    for msg in REFUSED_EXPLICIT:
        assert any(msg in err for err in errors), (msg, errors)
    lines = (compile_only.__globals__["PRELUDE"] + EXPLICIT).splitlines()
    at = {int(m) for m in re.findall(r"api\.cpp:(\d+):\d+:\s+(?:required from here|note: in instantiation of "
                                     r"(?:function template specialization|member function) .* requested here)",
                                     r.stderr)}
    first = lines.index("void refused(V &d, V &a, O &o, A &acc, M &m) {") + 1
    assert at == set(range(first + 1, first + 1 + len(REFUSED_EXPLICIT))), r.stderr[-3000:]


CUSTOM_PAD = os.path.join(os.path.dirname(KERNEL), "custom_pad.cpp")


@needs_cxx
def test_custom_pad_values_fill_in_the_tiles_element_type(cpp_cache):
    """A tile whose PadVal is pto-isa's PadValueCustom(v) / PadValueCustom16(bits) /
    PadCustom<v> pads with v's bits read in the tile's element type (constants.hpp GetPadValue)."""
    rng = np.random.default_rng(3)
    ins = dict(f32=rng.standard_normal((4, 32)).astype(np.float32), f16=rng.standard_normal((4, 32)).astype(np.float16),
               i8=rng.integers(-100, 100, (4, 32)).astype(np.int8), i32=rng.integers(-9, 9, (4, 32)).astype(np.int32))
    outs = dict(f32_out=np.zeros((4, 32), np.float32), f16_out=np.zeros((4, 64), np.float16),
                i8_out=np.zeros((4, 32), np.int8), i32_out=np.zeros((4, 32), np.int32))
    o = run_cpp(CUSTOM_PAD, {**ins, **outs}, aiv="custom_pad").outputs
    for name, cols, fill in (("f32", 5, -1.0), ("f16", 7, -1.0), ("i8", 3, -3), ("i32", 9, 42)):
        want = np.full_like(outs[name + "_out"], fill)
        want[:, :cols] = ins[name][:, :cols]
        np.testing.assert_array_equal(o[name + "_out"], want, err_msg=name)


ACC_PHASE = os.path.join(os.path.dirname(KERNEL), "acc_phase.cpp")


@needs_cxx
def test_unit_flag_matmuls_static_tassign_and_set_wait_flag(cpp_cache):
    """TMATMUL<AccPhase::X>, the in-place TMATMUL_ACC(c, a, b), TMATMUL_BIAS<Phase>,
    TASSIGN<Addr>(tile) and PtoSetWaitFlag<Src, Dst>() compute pto-isa's products, in the
    manual synchronisation the kernel spells."""
    rng = np.random.default_rng(4)
    a0, a1 = (rng.integers(-4, 4, (16, 32)).astype(np.float32) for _ in range(2))
    b = rng.integers(-4, 4, (32, 32)).astype(np.float32)
    bias = rng.integers(-9, 9, (1, 32)).astype(np.float32)
    z = np.zeros((16, 32), np.float32)
    o = run_cpp(ACC_PHASE, dict(a0=a0, a1=a1, b=b, bias=bias, sum=z, biased=z.copy()), aic="acc_phase",
                platform="a5").outputs
    np.testing.assert_array_equal(o["sum"], a0 @ b + a1 @ b)
    np.testing.assert_array_equal(o["biased"], a0 @ b + bias)


MX = os.path.join(os.path.dirname(KERNEL), "mx_matmul_a5.cpp")


@needs_cxx
def test_mx_matmuls_of_fp8_tiles_in_their_five_and_six_operand_forms(cpp_cache):
    """A5's TMATMUL_MX(c, a, a_scale, b, b_scale), its accumulating (c_out, c_in, a, ...) form and
    TGEMV_MX, on float8_e4m3_t operands and float8_e8m0_t scale tiles (the C++ ptoas writes for
    pto.tmatmul.mx / .acc, pto.tgemv.mx; the left scales also in pto-isa's TileLeftScale alias): fp8
    GM arrays load into fp8 tiles, and the products are the Python ISA's, summed as pto-isa's CPU
    model sums."""
    from test_mx_ops import data, golden
    a, sa, b, sb = data(np.random.default_rng(2), float8_e4m3, float8_e4m3)
    z = np.zeros((16, 16), np.float32)
    o = run_cpp(MX, dict(a=a, b=b, sa=sa, sb=sb, c=z, c2=z.copy(), row=np.zeros((1, 16), np.float32), c3=z.copy()),
                platform="a5").outputs
    want = golden(a, sa, b, sb)
    np.testing.assert_array_equal(o["c"], want)
    np.testing.assert_array_equal(o["c3"], want)            # (the left scales in a TileLeftScale)
    np.testing.assert_array_equal(o["c2"], want + want)
    np.testing.assert_array_equal(o["row"][0], want[0])


@needs_cxx
def test_pipe_constants_as_pto_isa_names_them(tmp_path):
    """TPipe<...>::RingFiFo::SLOT_NUM and TMPipe<...>::DataFiFo::fifoDepth (fifo.hpp), as
    pto-isa's flash-attention kernels size their loops by them."""
    r = compile_only(tmp_path, """
using P = TPipe<0, Direction::DIR_C2V, 1024, 8, 4>;
static_assert(P::RingFiFo::SLOT_NUM == 8 && P::RingFiFo::SLOT_SIZE == 1024 && P::RingFiFo::LOCAL_SLOT_NUM == 4, "");
using V = Tile<TileType::Vec, float, 8, 32>;
using M = TMPipe<0, FIFOType::GM_FIFO, 4, 2, TileAcc<float, 16, 32>, V>;
static_assert(M::DataFiFo::fifoDepth == 4 && M::DataFiFo::fifoPeriod == 2, "");
""")
    assert r.returncode == 0, r.stderr[-2000:]


@needs_cxx
def test_tile_strides_and_helper_declarations_as_pto_isa_names_them(tmp_path):
    """A Tile's RowStride / ColStride (pto_tile.hpp: the element distance between the rows and
    the columns of its blocks) and pto-isa's PTO_INLINE (type.hpp), with which its kernels
    declare their helpers (``AICORE PTO_INLINE void ...``)."""
    r = compile_only(tmp_path, """
using V = Tile<TileType::Vec, float, 8, 32>;
using Col = Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor, 8, 1>;
static_assert(V::RowStride == 32 && V::ColStride == 1 && Col::RowStride == 1 && Col::ColStride == 16, "");
template <typename T> AICORE PTO_INLINE int row_offset(int r) { return r * T::RowStride; }
static_assert(sizeof(row_offset<V>(1)) == sizeof(int), "");
""")
    assert r.returncode == 0, r.stderr[-2000:]


GET_SET = os.path.join(os.path.dirname(KERNEL), "get_set_value.cpp")


@needs_cxx
def test_tile_get_and_set_value_read_and_write_one_element(cpp_cache):
    """Tile::GetValue(offset) reads the element a vector instruction wrote (ordered after it on
    the scalar pipe); Tile::SetValue writes one the TSTORE moves - in float, half and int16."""
    rng = np.random.default_rng(5)
    ins = {k: rng.integers(-9, 9, (4, 16)).astype(d) for k, d in (("xf", np.float32), ("xh", np.float16),
                                                                   ("xi", np.int16))}
    outs = {"o" + k[1]: np.zeros((4, 16), v.dtype) for k, v in ins.items()}
    o = run_cpp(GET_SET, {**ins, **outs}, aiv="get_set_value").outputs
    for k, x in ins.items():
        want = 2 * x
        v = want[1, 1]
        want[0, 0], want[3, 15] = v + 1, v
        np.testing.assert_array_equal(o["o" + k[1]], want, err_msg=k)
