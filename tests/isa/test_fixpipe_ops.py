"""The fixpipe's quantising moves and store (TMOV_FP, TEXTRACT_FP, TINSERT_FP, TSTORE_FP)
against numpy on both platforms: an accumulator converted per column with the uint64 words
of a Scaling tile (scale, offset, signed / unsigned byte range, int32 -> int16 shift), the
paths and dtype pairs each platform has, and the operand checks."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403
from markers import line_of
from test_catalogue_ops import PLATFORMS

pytestmark = pytest.mark.usefixtures("no_hang")
U64 = np.uint64


def word(scale, offset=0, signed=True, shift=0) -> int:
    """pto-isa's quant word: the scale's float32 bits without their last 13 mantissa bits,
    the int32 -> int16 shift - 1 in bits 32..35, the offset in 37..45, signed in 46."""
    bits = int(np.float32(scale).view(np.uint32)) & 0xFFFFE000
    return bits | (shift << 32) | (offset << 37) | (int(signed) << 46)


def words(n) -> np.ndarray:
    return np.array([[word(0.25 + 0.125 * (c % 4), offset=c % 5, signed=c % 2 == 0, shift=c % 3)
                      for c in range(n)]], U64)


def reference(acc, q, dtype, relu=False):
    """The conversion in plain numpy (the scale decoded from its float32 bits); ``relu`` cuts
    below 0 before the result is stored in ``dtype``."""
    w = q[0].astype(np.int64)
    scale = ((w & 0xFFFFE000).astype(np.uint32)).view(np.float32)
    offset, signed, shift = (w >> 37) & 0x1FF, ((w >> 46) & 1).astype(bool), ((w >> 32) & 0xF) + 1
    if np.dtype(dtype) == np.int16:
        r = (acc.astype(np.int64) >> shift).astype(np.int16)
    elif np.dtype(dtype) == np.float16:
        r = np.clip(acc.astype(np.float32) * scale, -65504, 65504)
    else:
        r = np.rint(acc.astype(np.float32) * scale + offset.astype(np.float32))
        r = np.clip(r, np.where(signed, -128, 0), np.where(signed, 127, 255)).astype(np.int64)
    return (np.maximum(r, 0) if relu else r).astype(dtype)


def cube(platform, body, a, b, q, outs):
    """Run ``body(acc, fp, outs)`` after acc = a @ b (f16 -> f32 or i8 -> i32) and fp = q
    (through L1); returns the stored outputs."""
    idt = a.dtype
    acc_dt = np.int32 if idt == np.int8 else np.float32

    def k(A, B, Q, **o):
        ta, tb = Tile(TileType.Mat, idt, 16, 32, addr=0), Tile(TileType.Mat, idt, 32, 16, addr=2048)
        tq = Tile(TileType.Mat, U64, 1, q.shape[1], addr=4096)
        TLOAD(ta, A)
        TLOAD(tb, B)
        TLOAD(tq, Q)
        la, rb = Tile(TileType.Left, idt, 16, 32, addr=0), Tile(TileType.Right, idt, 32, 16, addr=0)
        TMOV(la, ta)
        TMOV(rb, tb)
        acc = Tile(TileType.Acc, acc_dt, 16, 16, addr=0)
        TMATMUL(acc, la, rb)
        fp = Tile(TileType.Scaling, U64, 1, q.shape[1], addr=0)
        TMOV(fp, tq)
        body(acc, fp, o)
    args = dict(A=a, B=b, Q=q) | {k: v.copy() for k, v in outs.items()}
    return ptopipe.run(aic=k, args=args, platform=platform).outputs


def operands(rng, dtype):
    if np.dtype(dtype) == np.int8:
        return rng.integers(-60, 60, (16, 32)).astype(np.int8), rng.integers(-60, 60, (32, 16)).astype(np.int8)
    return rng.integers(-3, 4, (16, 32)).astype(np.float16), rng.integers(-3, 4, (32, 16)).astype(np.float16)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("src,dst", [(np.float16, np.int8), (np.float16, np.uint8), (np.int8, np.int8),
                                     (np.int8, np.float16)])
def test_mov_insert_extract_store_convert_per_column(platform, src, dst):
    rng = np.random.default_rng(4)
    a, b = operands(rng, src)
    q = words(16)
    acc = a.astype(np.int64 if src == np.int8 else np.float32) @ b.astype(np.int64 if src == np.int8 else np.float32)
    want = reference(acc, q, dst)

    def body(acc_t, fp, o):
        m = Tile(TileType.Mat, dst, 16, 16, addr=8192)
        TMOV_FP(m, acc_t, fp)
        TSTORE(o["y"], m)
        big = Tile(TileType.Mat, dst, 16, 32, addr=16384)
        TLOAD(big, o["z"])
        TINSERT_FP(big, acc_t, fp, 0, 16)
        TSTORE(o["z"], big)
        part = Tile(TileType.Mat, dst, 16, 8, addr=24576)
        TEXTRACT_FP(part, acc_t, fp, 0, 8)
        TSTORE(o["w"], part)
        TSTORE_FP(o["g"], acc_t, fp)
        TSTORE_FP(o["r"], acc_t, fp, relu_mode=ReluPreMode.NormalRelu)
        if dst != np.uint8:                                     # (the atomic unit adds no uint8)
            TSTORE_FP(o["s"], acc_t, fp, atomic_type=AtomicType.AtomicAdd)
    z = np.full((16, 32), 5, dst)
    got = cube(platform, body, a, b, q, dict(y=np.zeros((16, 16), dst), z=z, w=np.zeros((16, 8), dst),
                                             g=np.zeros((16, 16), dst), r=np.zeros((16, 16), dst),
                                             s=np.full((16, 16), 3, dst)))
    if dst != np.uint8:                 # converted, then added into what GM held in its dtype
        np.testing.assert_array_equal(got["s"], np.full((16, 16), 3, dst) + want)
    np.testing.assert_array_equal(got["r"], reference(acc, q, dst, relu=True))
    assert (got["r"] != want).any()                             # the ReLU cut something
    np.testing.assert_array_equal(got["y"], want)
    np.testing.assert_array_equal(got["g"], want)
    np.testing.assert_array_equal(got["w"], want[:, 8:])
    z[:, 16:] = want
    np.testing.assert_array_equal(got["z"], z)


def test_tstore_relu_and_pre_quant_scalar():
    """pto-isa's TSTORE<Acc, G, AtomicType, ReluPreMode>(dst, acc[, preQuantScalar]): the
    fixpipe's ReLU, its one-word quantisation, both, and with an atomic add; a Vec tile has no
    fixpipe on its way to GM."""
    rng = np.random.default_rng(9)
    a, b = operands(rng, np.float16)
    acc = a.astype(np.float32) @ b.astype(np.float32)
    w = word(0.5, offset=3)
    q = np.full((1, 16), w, U64)

    def body(acc_t, fp, o):
        TSTORE(o["r"], acc_t, relu_mode=ReluPreMode.NormalRelu)
        TSTORE(o["q"], acc_t, pre_quant=w)
        TSTORE(o["rq"], acc_t, relu_mode=ReluPreMode.NormalRelu, pre_quant=w)
        TSTORE(o["ra"], acc_t, atomic_type=AtomicType.AtomicAdd, relu_mode=ReluPreMode.NormalRelu)
    got = cube("a2a3", body, a, b, words(16), dict(r=np.zeros((16, 16), np.float32), q=np.zeros((16, 16), np.int8),
                                                   rq=np.zeros((16, 16), np.int8), ra=np.ones((16, 16), np.float32)))
    assert (acc < 0).any()
    np.testing.assert_array_equal(got["r"], np.maximum(acc, 0))
    np.testing.assert_array_equal(got["q"], reference(acc, q, np.int8))
    np.testing.assert_array_equal(got["rq"], reference(acc, q, np.int8, relu=True))
    np.testing.assert_array_equal(got["ra"], 1 + np.maximum(acc, 0))

    def vec_relu(acc_t, fp, o):
        TSTORE(o["r"], Tile(TileType.Mat, float32, 16, 16, addr=8192), relu_mode=ReluPreMode.NormalRelu)

    def vec_quant(acc_t, fp, o):            # (to another dtype: pto-isa's tstore_quant test's Vec tile)
        TSTORE(o["r"], Tile(TileType.Mat, float32, 16, 16, addr=8192), pre_quant=w)
    for bad, gm in ((vec_relu, np.float32), (vec_quant, np.float16)):
        with pytest.raises(KernelError, match="TSTORE's ReLU and pre-quant scalar are the fixpipe's: they move an "
                                              "Acc tile"):
            cube("a2a3", bad, a, b, words(16), dict(r=np.zeros((16, 16), gm)))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("src", [np.float16, np.int8])
@pytest.mark.parametrize("dst", [np.float16, bfloat16])
def test_a5_pre_quant_scales_an_accumulator_into_a_half_float(platform, src, dst):
    """A5's fixpipe takes f32 / i32 accumulators to f16 and bf16 with one scale word
    ((V)QF322F16_PRE, (V)QF322BF16_PRE, (V)DEQF16, (V)QS322BF16_PRE: a5/common.hpp): ``acc *
    scale`` in the destination's dtype, clipped to its largest finite value.  A2A3 has only
    i32 -> f16 of these."""
    rng = np.random.default_rng(12)
    a, b = operands(rng, src)
    acc = a.astype(np.int64 if src == np.int8 else np.float32) @ b.astype(np.int64 if src == np.int8 else np.float32)
    w = word(0.25)

    def body(acc_t, fp, o):
        TSTORE(o["q"], acc_t, pre_quant=w)
    run = lambda: cube(platform, body, a, b, words(16), dict(q=np.zeros((16, 16), dst)))  # noqa: E731
    if platform == "a2a3" and not (src == np.int8 and dst == np.float16):
        with pytest.raises(KernelError, match="scalar pre-quant does not convert"):
            run()
        return
    want = (acc.astype(np.float32) * np.float32(0.25)).astype(dst)
    np.testing.assert_array_equal(run()["q"].astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int32_to_int16_shift_is_a2a3_only(platform):
    rng = np.random.default_rng(6)
    a, b = operands(rng, np.int8)
    q = words(16)

    def body(acc_t, fp, o):
        TSTORE_FP(o["g"], acc_t, fp)
    if platform == "a2a3":
        got = cube(platform, body, a, b, q, dict(g=np.zeros((16, 16), np.int16)))
        np.testing.assert_array_equal(got["g"], reference(a.astype(np.int64) @ b.astype(np.int64), q, np.int16))
    else:
        with pytest.raises(KernelError) as e:
            cube(platform, body, a, b, q, dict(g=np.zeros((16, 16), np.int16)))
        assert "does not convert int32 to int16 on A5" in e.value.what


@pytest.mark.parametrize("platform", PLATFORMS)
def test_operand_checks(platform):
    rng = np.random.default_rng(8)
    a, b = operands(rng, np.float16)

    def left_dst(acc_t, fp, o):                         # the fixpipe writes L1 (A5: also UB)
        TMOV_FP(Tile(TileType.Left, int8, 16, 16, addr=0), acc_t, fp)

    def f32_dst(acc_t, fp, o):                          # f32 -> f32 is no quantisation pair
        TMOV_FP(Tile(TileType.Mat, float32, 16, 16, addr=8192), acc_t, fp)

    def mat_fp(acc_t, fp, o):                           # fp must be in the fixpipe buffer
        TMOV_FP(Tile(TileType.Mat, int8, 16, 16, addr=8192), acc_t, Tile(TileType.Mat, U64, 1, 16, addr=4096))

    def short_fp(acc_t, fp, o):                         # 8 words for 16 columns
        TMOV_FP(Tile(TileType.Mat, int8, 16, 16, addr=8192), acc_t, Tile(TileType.Scaling, U64, 1, 8, addr=0))

    def outside(acc_t, fp, o):
        TEXTRACT_FP(Tile(TileType.Mat, int8, 16, 16, addr=8192), acc_t, fp, 0, 8)
    cases = [(f32_dst, "does not convert float32 to float32"), (mat_fp, "TileType.Scaling"),
             (short_fp, "need 16 8-byte words"), (outside, "outside the 16x16 source"),
             (left_dst, f"from Acc to Left is not a path on {platform.upper()}")]
    for body, words_ in cases:
        with pytest.raises(KernelError) as e:
            cube(platform, body, a, b, words(16), {})
        assert words_ in e.value.what, (words_, e.value.what)
        assert "test_fixpipe_ops.py" in e.value.where


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tmov_relu_and_pre_quant_scalar(platform):
    """TMOV<..., NormalRelu>(dst, acc) casts and cuts below 0; TMOV(dst, acc, preQuantScalar)
    converts every column with the one word (then the ReLU, as with an fp tile)."""
    rng = np.random.default_rng(8)
    a, b = operands(rng, np.float16)
    acc = a.astype(np.float32) @ b.astype(np.float32)
    w = word(0.5, offset=2)
    one = np.full((1, 16), w, U64)

    def body(acc_t, fp, o):
        for name, dt, kw in (("relu", np.float16, dict(relu_mode=ReluPreMode.NormalRelu)),   # (A2A3: f16 / bf16)
                             ("q", np.int8, dict(pre_quant=w)),
                             ("qr", np.int8, dict(pre_quant=w, relu_mode=ReluPreMode.NormalRelu))):
            m = Tile(TileType.Mat, dt, 16, 16, addr=8192 * (1 + len(name)))
            TMOV(m, acc_t, **kw)
            TSTORE(o[name], m)
        with pytest.raises(KernelError, match="TMOV's ReLU and pre-quant scalar are the fixpipe's"):
            TMOV(Tile(TileType.Left, np.float16, 16, 32, addr=0), Tile(TileType.Mat, np.float16, 16, 32, addr=0),
                 relu_mode=ReluPreMode.NormalRelu)
    got = cube(platform, body, a, b, words(16), dict(relu=np.zeros((16, 16), np.float16),
                                                     q=np.zeros((16, 16), np.int8), qr=np.zeros((16, 16), np.int8)))
    np.testing.assert_array_equal(got["relu"], np.maximum(acc, 0).astype(np.float16))
    assert (acc < 0).any()
    np.testing.assert_array_equal(got["q"], reference(acc, one, np.int8))
    np.testing.assert_array_equal(got["qr"], reference(acc, one, np.int8, relu=True))
    assert (got["q"] != got["qr"]).any()


#: moves of an accumulator without a quantisation word pto-isa's static_asserts refuse: into
#: L1 (a2a3 CheckTMovAccToMat: f32 -> f16 / bf16; a5 CheckTMovAccValid: also f32 -> f32 and
#: i32 -> i32) and to GM (CheckAcc2gm / CheckStaticAcc: i32, f32, f16, bf16)
ACC_REFUSED = [("a2a3", "TMOV", np.float32, np.float32), ("a5", "TMOV", np.float32, np.int8),
               ("a2a3", "TEXTRACT", np.float32, np.int8), ("a5", "TINSERT", np.int32, np.float16),
               ("a2a3", "TSTORE", np.float32, np.int8), ("a5", "TSTORE", np.int32, np.uint8)]


@pytest.mark.parametrize("platform,op,acc,dst", ACC_REFUSED)
def test_an_accumulator_conversion_pto_isa_does_not_compile_is_refused_at_its_line(platform, op, acc, dst):
    """Without a quantisation word the fixpipe converts an accumulator only to the dtypes pto-isa
    compiles: another destination dtype is a KernelError at the instruction (it was a numpy cast:
    an f32 accumulator stored as int8 wrapped), naming the quantising form where one converts."""
    a, b = operands(np.random.default_rng(2), np.int8 if acc == np.int32 else np.float16)

    def body(acc_t, fp, o):
        m = Tile(TileType.Mat, dst, 16, max(16, 32 // np.dtype(dst).itemsize), addr=8192,
                 valid_rows=16, valid_cols=16)
        if op == "TSTORE":
            TSTORE(o["out"], acc_t)                                   # STORE
        elif op == "TINSERT":
            TINSERT(m, acc_t, 0, 0)                                   # INSERT
        else:
            (TMOV(m, acc_t) if op == "TMOV" else TEXTRACT(m, acc_t, 0, 0))   # MOVE
    with pytest.raises(KernelError) as e:
        cube(platform, body, a, b, words(16), dict(out=np.zeros((16, 16), dst)))
    assert e.value.what.startswith(f"{op}: ") and "without a quantisation word" in e.value.what, e.value.what
    assert "pto-isa's static_assert" in e.value.what
    marker = {"TSTORE": "STORE", "TINSERT": "INSERT"}.get(op, "MOVE")
    assert e.value.where.endswith(f":{line_of(body, marker)}"), e.value.where
