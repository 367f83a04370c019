"""The ISA's forms of pto-isa's overloads every front end reaches: a TSTORE of a valid region
smaller than its GlobalTensor writes that region (pto-isa's TSTORE moves the source's valid
rows x cols; its CPU model asserts only numel * C0 >= valid), a run warning where the NPU's
store writes other elements, and what pto-isa refuses is refused; TFILLPAD fills with the destination's PadValue; TCVT's SaturationMode; the tmp and
scalar-first forms.  Checked against numpy."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import KernelError
from ptopipe.isa import *  # noqa: F403

X = np.arange(64, dtype=np.float32).reshape(8, 8)


def _run(body, **args):
    res = ptopipe.run(None, (body, None), dict(x=X, **args), platform="a2a3")
    return res.outputs


def _part(vr, vc):
    a = Tile(TileType.Vec, float32, 8, 8, addr=0, valid_rows=vr, valid_cols=vc)
    return a


def test_a_smaller_valid_region_stores_its_window_nd_and_dn():
    def vec(x, out, dn):
        TLOAD(Tile(TileType.Vec, float32, 8, 8, addr=0), x)
        TSTORE(out, _part(3, 5))
        # a DN tensor: d3 rows x d4 columns, column-major; the tile's 3 x 5 in its corner
        g = GlobalTensor(dn.data(), (1, 1, 1, 8, 8), (64, 64, 64, 1, 8), layout=TileLayout.DN)
        TSTORE(g, Tile(TileType.Vec, float32, 8, 8, BLayout.ColMajor, 3, 5, addr=0x100))
    out = _run(vec, out=np.full((8, 32), -1, np.float32), dn=np.full((8, 8), -1, np.float32))
    want = np.full((8, 32), -1, np.float32)
    want[:3, :5] = X[:3, :5]
    np.testing.assert_array_equal(out["out"], want)
    written = out["dn"] != -1           # element (r, c) of a DN tensor is at r + 8 c: dn[c, r]
    assert written.T[:3, :5].all() and written.sum() == 15


@pytest.mark.parametrize("platform, valid, device", [
    ("a2a3", (8, 4), "the A2A3 device writes 8 rows (Shape3) of 4 elements, 4 elements apart"),
    ("a5", (3, 8), "the A5 device writes 8 rows (Shape3) of 8 elements, 8 elements apart - rows 3.. from the "
                   "tile's memory past its valid rows"),
    ("a5", (8, 4), None),               # A5 writes the rows at the stride: these bytes
    ("a2a3", (8, 8), None),             # the tensor's shape: no window
])
def test_a_store_window_the_device_writes_otherwise_is_a_warning_at_its_line(platform, valid, device):
    """pto-isa's NPU TSTORE asserts a Vec tile's valid region is the ND GlobalTensor's shape and,
    built without the check, moves the tensor's Shape3 rows - A2A3's validCol + Stride3 - Shape4
    elements apart (pto-isa's tcmp / tcmps / tgather tests store so and expect packed rows): where
    that differs from the valid region at the strides ptopipe writes (the CPU model's), each
    such line is a run warning, once; the stored numbers stay the CPU model's."""
    def vec(x, out):
        TLOAD(Tile(TileType.Vec, float32, 8, 8, addr=0), x)
        for _ in range(2):
            TSTORE(out, _part(*valid))
    res = ptopipe.run(None, (vec, None), dict(x=X, out=np.zeros((8, 8), np.float32)), platform=platform)
    want = np.zeros((8, 8), np.float32)
    want[:valid[0], :valid[1]] = X[:valid[0], :valid[1]]
    np.testing.assert_array_equal(res.outputs["out"], want)
    line = vec.__code__.co_firstlineno + 3
    warned = [(what, str(where)) for what, where in res.summary.leaks if "NPU TSTORE" in what]
    if device is None:
        assert warned == [], warned
        return
    (what, where), = warned
    assert where.endswith(f"test_store_window_and_forms.py:{line}")
    assert what == (f"TSTORE of the tile's valid region {valid[0]}x{valid[1]} into GlobalTensor 'out' float32 shape=(1, 1, "
                    "1, 8, 8) stride=(64, 64, 64, 8, 1) @GM[0x1200] (8x8): pto-isa's NPU TSTORE asserts the valid "
                    "region is the GlobalTensor's shape (validCol == Shape4, validRow == Shape0*Shape1*Shape2*Shape3) "
                    f"and, built without the check, moves the tensor's rows: {device}, where ptopipe writes the "
                    "valid region at the strides, as pto-isa's CPU model does - the device's numbers differ from "
                    "these; give the GlobalTensor the valid region's shape"), what


def test_what_pto_isa_asserts_or_writes_past_the_tensor_is_refused():
    def small(x, out):
        TSTORE(GlobalTensor(out.data(), (1, 1, 1, 1, 4)), _part(8, 8))     # 4 * C0(8) < 64
    with pytest.raises(KernelError, match="numel \\* C0 >= valid"):
        _run(small, out=np.zeros((1, 4), np.float32))

    def outside(x, out):
        TSTORE(GlobalTensor(out.data(), (1, 1, 1, 2, 32)), _part(8, 8))    # rows past d3
    with pytest.raises(KernelError, match="reaches outside"):
        _run(outside, out=np.zeros((2, 32), np.float32))

    def load(x, out):
        TLOAD(_part(3, 5), x)                                               # TLOAD: the exact shape
    with pytest.raises(KernelError, match="asserts that the GM shape is the tile's valid shape"):
        _run(load, out=np.zeros((1, 4), np.float32))


@pytest.mark.parametrize("pad, fill", [(PadValue.Min, -np.inf), (PadValue.Max, np.inf), (PadValue.Zero, 0)])
def test_tfillpad_fills_with_the_destinations_padvalue(pad, fill):
    def vec(x, out):
        TLOAD(Tile(TileType.Vec, float32, 8, 8, addr=0), x)
        dst = Tile(TileType.Vec, float32, 8, 8, addr=0x100, pad=pad)
        TFILLPAD(dst, _part(3, 5))
        TSTORE(out, dst)
    want = np.full((8, 8), fill, np.float32)
    want[:3, :5] = X[:3, :5]
    np.testing.assert_array_equal(_run(vec, out=np.zeros((8, 8), np.float32))["out"], want)


def test_tcvt_saturation_modes_and_tmp():
    v = np.array([[70000, -70000, 40000, 5, 300, -300, 2.5, 3.5]], np.float32)

    def vec(x, w, s, n):
        a = Tile(TileType.Vec, float32, 1, 8, addr=0)
        i = Tile(TileType.Vec, int32, 1, 8, addr=0x40)
        h = Tile(TileType.Vec, int16, 1, 16, addr=0x80, valid_cols=8)
        b = Tile(TileType.Vec, int16, 1, 16, addr=0xc0, valid_cols=8)
        t = Tile(TileType.Vec, int32, 1, 8, addr=0x100)
        TLOAD(a, x)
        TCVT(h, a, t, RoundMode.CAST_RINT, SaturationMode.OFF)   # pto-isa's tmp form: wraps via int32
        TSTORE(w, h)
        TCVT(h, a, RoundMode.CAST_RINT, SaturationMode.ON)
        TSTORE(s, h)
        TCVT(i, a, RoundMode.CAST_RINT)
        TCVT(b, i, RoundMode.CAST_RINT, SaturationMode.ON)       # an integer narrowing clamps (A2A3 has
        TSTORE(n, b)                                             # i32 -> i16, not i32 -> i8)
    res = ptopipe.run(None, (vec, None), dict(x=v, w=np.zeros((1, 8), np.int16), s=np.zeros((1, 8), np.int16),
                                              n=np.zeros((1, 8), np.int16)), platform="a2a3").outputs
    r = np.rint(v.astype(np.float64))
    np.testing.assert_array_equal(res["w"], r.astype(np.int64).astype(np.int16))
    np.testing.assert_array_equal(res["s"], np.clip(r, -32768, 32767).astype(np.int16))
    np.testing.assert_array_equal(res["n"], np.clip(r, -32768, 32767).astype(np.int16))


def test_tmp_and_scalar_first_forms():
    def vec(x, rs, cs, rd):
        a = Tile(TileType.Vec, float32, 8, 8, addr=0)
        d = Tile(TileType.Vec, float32, 8, 8, addr=0x100)
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x200)
        c = Tile(TileType.Vec, float32, 1, 8, addr=0x300)
        e = TLOAD(a, x)
        TADDS(a, a, 1.0, e)
        TRSQRT(d, a, t)                 # TRSQRT(dst, src, tmp)
        TSTORE(rs, d)
        TCOLSUM(c, a, t, 0)             # TCOLSUM(dst, src, tmp, isBinary)
        TSTORE(cs, c)
        TDIVS(d, 3.0, a)                # TDIVS(dst, scalar, src): scalar / src
        TSTORE(rd, d)
    o = _run(vec, rs=np.zeros((8, 8), np.float32), cs=np.zeros((1, 8), np.float32), rd=np.zeros((8, 8), np.float32))
    a = X + 1
    np.testing.assert_allclose(o["rs"], 1 / np.sqrt(a), rtol=1e-6)
    np.testing.assert_allclose(o["cs"][0], a.sum(0))
    np.testing.assert_allclose(o["rd"], 3 / a, rtol=1e-6)

    def no_flag(x):
        t = Tile(TileType.Vec, float32, 8, 8, addr=0)
        TCOLSUM(Tile(TileType.Vec, float32, 1, 8, addr=0x300), t, t)
    with pytest.raises(KernelError, match="takes isBinary after tmp"):
        _run(no_flag)


def test_tscatter_takes_pto_isas_index_types_by_data_size():
    h = np.arange(16, dtype=np.float16).reshape(1, 16)
    perm = np.random.default_rng(3).permutation(16).astype(np.uint16).reshape(1, 16)

    def vec(x, idx, out):
        s = Tile(TileType.Vec, float16, 1, 16, addr=0)
        i = Tile(TileType.Vec, np.uint16, 1, 16, addr=0x40)     # 2-byte data: 2-byte indices
        d = Tile(TileType.Vec, float16, 1, 16, addr=0x80)
        TLOAD(s, x)
        TLOAD(i, idx)
        TEXPANDS(d, 0.0)
        TSCATTER(d, s, i)
        TSTORE(out, d)
    o = ptopipe.run(None, (vec, None), dict(x=h, idx=perm, out=np.zeros((1, 16), np.float16)), platform="a2a3")
    want = np.zeros((1, 16), np.float16)
    want[0, perm[0]] = h[0]
    np.testing.assert_array_equal(o.outputs["out"], want)

    def wide(x, out):
        s = Tile(TileType.Vec, float32, 1, 8, addr=0)
        TSCATTER(s, s, Tile(TileType.Vec, np.uint16, 1, 16, addr=0x40, valid_cols=8))
    with pytest.raises(KernelError, match="indices for float32 data are int32 or uint32"):
        _run(wide, out=np.zeros(1, np.float32))


def test_a_tile_past_an_instructions_operands_is_named_as_such():
    def vec(x):
        a = Tile(TileType.Vec, float32, 8, 8, addr=0)
        TABS(a, a, Tile(TileType.Vec, float32, 8, 8, addr=0x100))      # TABS has no tmp form
    with pytest.raises(KernelError, match="a Tile where a wait event goes"):
        _run(vec)


def test_a_move_between_element_types_of_one_size_copies_the_bits():
    """pto-isa's TLOAD / TSTORE of a Vec or Mat tile static_assert only that the element sizes
    match: the DMA moves bytes, so a float32 tensor loads into an int32 tile as its bits (a
    sign-bit mask) and an int32 tile stores into a float32 tensor as floats' bits; elements of
    another size stay an error at the instruction."""
    def vec(x, out, sign):
        bits = Tile(TileType.Vec, int32, 8, 8, addr=0)
        s = Tile(TileType.Vec, uint32, 8, 8, addr=0x100)
        TLOAD(bits, x)
        TSHRS(bits, bits, 31)
        TSTORE(sign, bits)
        TLOAD(s, x)
        TANDS(s, s, 0x7FFFFFFF)
        TSTORE(out, s)
    x = (X - 31.5).astype(np.float32)
    res = ptopipe.run(None, (vec, None), dict(x=x, out=np.zeros((8, 8), np.float32),
                                              sign=np.zeros((8, 8), np.int32)), platform="a5")
    np.testing.assert_array_equal(res.outputs["out"], np.abs(x))
    np.testing.assert_array_equal(res.outputs["sign"], np.where(x < 0, -1, 0))

    def other_size(x, out, sign):
        TLOAD(Tile(TileType.Vec, float16, 8, 16, addr=0, valid_cols=8), x)
    with pytest.raises(KernelError, match="moves bytes, between element types of one size only") as e:
        _run(other_size, out=np.zeros((8, 8), np.float32), sign=np.zeros((8, 8), np.int32))
    assert e.value.where.endswith(f":{other_size.__code__.co_firstlineno + 1}")
