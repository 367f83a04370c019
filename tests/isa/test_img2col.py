"""TIMG2COL and its register writes (SETFMATRIX, SET_IMG2COL_PADDING, SET_IMG2COL_RPT) on an
NC1HWC0 ConvTile, against numpy on both platforms: the im2col block at (posM, posK) for strides,
dilations, pads and pad values; the register banks (A, B; A2A3's one padding register) and the
AUTO modes; what pto-isa's sources leave open refused at the line (an unwritten register, rows
past one image, columns past the channels, an unaligned posK, more than one repeat, transpose),
the operand rules (a Left tile of the platform's layout and the ConvTile's dtype, the Cube only,
a TLOAD of the ConvTile's own shape), and the ConvTile's bytes in the race checker."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import DataRaceError, KernelError
from ptopipe.isa import *  # noqa: F403

from markers import line_of

pytestmark = pytest.mark.usefixtures("no_hang")
B, C1, H, W = 1, 2, 4, 8


def im2col(x, filt, stride, dil, pads, pad):
    """The im2col matrix of one image ``x`` (C1, H, W, C0), written out as its definition: one
    row per output position, the columns (c1, kh, kw, c0)."""
    c1n, h, w, c0 = x.shape
    (fh, fw), (sh, sw), (dh, dw), (pl, pr, pt, pb) = filt, stride, dil, pads
    oh = (h + pt + pb - dh * (fh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (fw - 1) - 1) // sw + 1
    out = np.full((oh * ow, c1n * fh * fw * c0), pad, x.dtype)
    for m in range(oh * ow):
        ho, wo = divmod(m, ow)
        for c1 in range(c1n):
            for kh in range(fh):
                for kw in range(fw):
                    y, xx = ho * sh + kh * dh - pt, wo * sw + kw * dw - pl
                    if 0 <= y < h and 0 <= xx < w:
                        k = ((c1 * fh + kh) * fw + kw) * c0
                        out[m, k:k + c0] = x[c1, y, xx]
    return out


def left(platform, dtype, rows, cols, **kw):
    return Tile(TileType.Left, dtype, rows, cols, layout=TileLayout.ZZ if platform == "a2a3" else TileLayout.NZ,
                **kw)


def conv_tile(dtype, x, filt=(3, 3), stride=(1, 1), dil=(1, 1), pads=(1, 1, 1, 1), pad=0):
    ct = ConvTile(TileType.Mat, dtype, x.shape, addr=0)
    TLOAD(ct, x)
    ct.SetFmapH(x.GetShape(2))
    ct.SetFmapW(x.GetShape(3))
    ct.SetPadListArray(pads)
    ct.SetFilterH(filt[0])
    ct.SetFilterW(filt[1])
    ct.SetStrideH(stride[0])
    ct.SetStrideW(stride[1])
    ct.SetDilationH(dil[0])
    ct.SetDilationW(dil[1])
    ct.SetChannelSize(x.GetShape(1) * x.GetShape(4))
    ct.SetPadValue(pad)
    return ct


def run(kernel, platform, **args):
    return ptopipe.run(aic=kernel, args=args, platform=platform)


def fmap(dtype, seed=0):
    c0 = 32 // np.dtype(dtype).itemsize
    return np.random.default_rng(seed).integers(-9, 10, (B, C1, H, W, c0)).astype(dtype)


# (dtype, filter, stride, dilation, pads (left, right, top, bottom), pad value, posM, posK, rows, cols)
CASES = [(np.float16, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 0, 0, 0, 32, 288),
         (np.float32, (2, 3), (2, 1), (1, 2), (0, 2, 1, 0), -1, 4, 48, 8, 20),
         (np.int8, (3, 2), (1, 2), (1, 1), (1, 0, 0, 1), 7, 3, 64, 7, 40)]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("dtype,filt,stride,dil,pads,pad,pm,pk,rows,cols", CASES)
def test_the_im2col_block_is_numpys(platform, dtype, filt, stride, dil, pads, pad, pm, pk, rows, cols):
    """SETFMATRIX / SET_IMG2COL_PADDING then TIMG2COL (the A bank, pto-isa's default mode): the
    block at (posM, posK), times a matrix; the Left tile's columns past its valid ones up to a
    whole C0 block are written too (the device's stepK), and the matmul reads them."""
    x = fmap(dtype)
    c0 = 32 // np.dtype(dtype).itemsize
    acc_t = np.int32 if dtype == np.int8 else np.float32
    kp = -(-cols // c0) * c0

    def k(x, w, out):
        ct = conv_tile(dtype, x, filt, stride, dil, pads, pad)
        SETFMATRIX(ct)
        SET_IMG2COL_PADDING(ct)
        a = left(platform, dtype, 32, kp, valid_rows=rows, valid_cols=cols, addr=0)
        TIMG2COL(a, ct, pm, pk)
        wm = Tile(TileType.Mat, dtype, kp, 32, addr=0x8000)
        TLOAD(wm, w)
        b = Tile(TileType.Right, dtype, kp, 32, addr=0)
        TMOV(b, wm)
        a.SetValid(rows, kp)
        c = Tile(TileType.Acc, acc_t, 32, 32, valid_rows=rows, addr=0)
        TMATMUL(c, a, b)
        TSTORE(out, c)
    w = np.random.default_rng(5).integers(-2, 3, (kp, 32)).astype(dtype)
    r = run(k, platform, x=x, w=w, out=np.zeros((rows, 32), acc_t))
    block = im2col(x[0], filt, stride, dil, pads, np.array(pad).astype(dtype))[pm:pm + rows, pk:pk + kp]
    np.testing.assert_array_equal(r.outputs["out"], block.astype(acc_t) @ w.astype(acc_t))


def conv_kernel(platform, mode, setters, pad_at_timg2col=None):
    """A whole 3x3 convolution (f16, pads 1, pad value 0): the registers of ``mode``'s bank
    written by the SET_* instructions of ``setters``, then TIMG2COL and a matmul with ``w``."""
    K = C1 * 9 * 16

    def k(x, w, out):
        ct = conv_tile(np.float16, x)
        for setter in setters:
            setter(ct, fmatrix_mode=mode)
        if pad_at_timg2col is not None:
            ct.SetPadValue(pad_at_timg2col)
        a = left(platform, np.float16, 32, K, addr=0)
        TIMG2COL(a, ct, 0, 0, fmatrix_mode=mode)  # TIMG2COL
        wm = Tile(TileType.Mat, np.float16, K, 16, addr=0x8000)
        TLOAD(wm, w)
        b = Tile(TileType.Right, np.float16, K, 16, addr=0)
        TMOV(b, wm)
        c = Tile(TileType.Acc, np.float32, 32, 16, addr=0)
        TMATMUL(c, a, b)
        TSTORE(out, c)
    return k


def conv_args():
    x = fmap(np.float16, 1)
    w = np.random.default_rng(2).integers(-3, 4, (C1 * 9 * 16, 16)).astype(np.float16)
    return dict(x=x, w=w, out=np.zeros((32, 16), np.float32))


def conv_want(a, pad=0):
    return im2col(a["x"][0], (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), pad).astype(np.float32) @ a["w"].astype(np.float32)


M = SetFmatrixMode


@pytest.mark.parametrize("platform,mode,pad_then", [
    ("a2a3", M.FMATRIX_B_MANUAL, None), ("a5", M.FMATRIX_B_MANUAL, None),
    # AUTO: the TIMG2COL writes the registers from the ConvTile as it is then (pad value 5)
    ("a5", M.FMATRIX_A_AUTO, 5), ("a2a3", M.FMATRIX_B_AUTO, 5)])
def test_each_bank_and_the_auto_modes_convolve_as_numpy(platform, mode, pad_then):
    a = conv_args()
    setters = () if mode.auto else (SETFMATRIX, SET_IMG2COL_PADDING, SET_IMG2COL_RPT)
    r = run(conv_kernel(platform, mode, setters, pad_then), platform, **a)
    np.testing.assert_array_equal(r.outputs["out"], conv_want(a, pad_then or 0))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_the_manual_mode_reads_the_registers_not_the_convtile(platform):
    """The pad value the padding register holds is the one SET_IMG2COL_PADDING wrote (3), not the
    ConvTile's at the TIMG2COL (-2); on A2A3 the B mode's padding write is the one padding
    register the A mode reads."""
    a = conv_args()

    def k(x, w, out):
        ct = conv_tile(np.float16, x, pad=3)
        SETFMATRIX(ct)
        if platform == "a2a3":
            SET_IMG2COL_PADDING(ct, fmatrix_mode=M.FMATRIX_B_MANUAL)
        else:
            SET_IMG2COL_PADDING(ct)
        ct.SetPadValue(-2)
        a_ = left(platform, np.float16, 32, C1 * 144, addr=0)
        TIMG2COL(a_, ct, 0, 0)
        wm = Tile(TileType.Mat, np.float16, C1 * 144, 16, addr=0x8000)
        TLOAD(wm, w)
        b = Tile(TileType.Right, np.float16, C1 * 144, 16, addr=0)
        TMOV(b, wm)
        c = Tile(TileType.Acc, np.float32, 32, 16, addr=0)
        TMATMUL(c, a_, b)
        TSTORE(out, c)
    r = run(k, platform, **a)
    np.testing.assert_array_equal(r.outputs["out"], conv_want(a, 3))


def _setfm(ct, **kw):
    SETFMATRIX(ct, **kw)


def _setpad(ct, **kw):
    SET_IMG2COL_PADDING(ct, **kw)


@pytest.mark.parametrize("platform,mode,setters,says", [
    ("a5", M.FMATRIX_A_MANUAL, (_setpad,), "reads the FMATRIX register (bank A), which no SETFMATRIX"),
    ("a5", M.FMATRIX_B_MANUAL, (_setfm,), "reads the PADDING register (bank B), which no SET_IMG2COL_PADDING"),
    # A5's padding register of bank A is not bank B's
    ("a5", M.FMATRIX_B_MANUAL, (_setfm, lambda ct, **kw: SET_IMG2COL_PADDING(ct)), "PADDING register (bank B)")])
def test_a_register_no_instruction_wrote_is_an_error_at_the_timg2col(platform, mode, setters, says):
    k = conv_kernel(platform, mode, setters)
    with pytest.raises(KernelError) as ei:
        run(k, platform, **conv_args())
    assert says in ei.value.what, ei.value.what
    assert ei.value.where.endswith(f":{line_of(conv_kernel, 'TIMG2COL')}"), ei.value.where


def refused_kernel(platform, change, rows=32, pos=(0, 0), dst=None):
    def k(x):
        ct = conv_tile(np.float16, x)
        change(ct)
        SETFMATRIX(ct)
        SET_IMG2COL_PADDING(ct)
        SET_IMG2COL_RPT(ct)
        a = dst() if dst else left(platform, np.float16, 32, 64, valid_rows=rows, addr=0)
        TIMG2COL(a, ct, *pos)  # REFUSED
    return k


def _none(ct):
    pass


@pytest.mark.parametrize("change,rows,pos,dst,says", [
    (_none, 32, (1, 0), None, "rows 1..32 of ConvTile NC1HWC0 1x2x4x8x16 float16 @AIC.L1[0x0]: the map has 32 output "
                              "positions"),
    (_none, 32, (0, 8), None, "posK 8 is not a whole C0 block (16 float16 elements)"),
    (_none, 32, (0, 256), None, "its 32 channels and 3 x 3 filter make 288 columns"),
    (lambda ct: ct.SetChannelSize(24), 32, (0, 0), None, "channelSize 24"),
    (lambda ct: ct.SetRepeatTime(2), 32, (0, 0), None, "repeatTime 2"),
    (lambda ct: ct.SetTranspose(True), 32, (0, 0), None, "with transpose set"),
    (lambda ct: ct.SetStrideW(0), 32, (0, 0), None, "stride 1 x 0"),
    (lambda ct: ct.SetFmapH(9), 32, (0, 0), None, "the ConvTile holds 1024"),
    (_none, 32, (0, 0), lambda: Tile(TileType.Mat, np.float16, 32, 64, addr=0x8000), "writes a Left tile"),
    (_none, 32, (0, 0), lambda: Tile(TileType.Left, np.float32, 32, 64, layout=TileLayout.NZ, addr=0),
     "is float16 but"),
    (_none, 32, (0, 0), lambda: Tile(TileType.Left, np.float16, 32, 64, layout=TileLayout.ZZ, addr=0),
     "on a5 pto-isa's TIMG2COL writes a NZ Left tile")])
def test_what_the_sources_leave_open_or_pto_isa_refuses_is_an_error_at_the_line(change, rows, pos, dst, says):
    with pytest.raises(KernelError) as ei:
        run(refused_kernel("a5", change, rows, pos, dst), "a5", x=fmap(np.float16))
    assert says in ei.value.what, ei.value.what
    assert ei.value.where.endswith(f":{line_of(refused_kernel, 'REFUSED')}"), ei.value.where


def test_each_platforms_dtypes_and_the_cube_only():
    """A2A3's TIMG2COL takes no uint8 (A5's does); the registers are the Cube's; TLOAD fills a
    ConvTile from a tensor of its own shape; another instruction does not take a ConvTile."""
    x = np.zeros((1, 1, 2, 4, 32), np.uint8)

    def u8(platform):
        def k(x):
            ct = conv_tile(np.uint8, x, filt=(1, 1), pads=(0, 0, 0, 0))
            a = left(platform, np.uint8, 16, 32, valid_rows=8, addr=0)
            TIMG2COL(a, ct, fmatrix_mode=M.FMATRIX_A_AUTO)
        return k
    with pytest.raises(KernelError, match="TIMG2COL takes bf16, f16, f32, i8 tiles on A2A3, not uint8"):
        run(u8("a2a3"), "a2a3", x=x)
    run(u8("a5"), "a5", x=x)

    def vec(x):
        ct = ConvTile(TileType.Mat, np.uint8, (1, 1, 2, 4, 32))
        SETFMATRIX(ct)
    with pytest.raises(KernelError, match="SETFMATRIX on AIV0: the img2col registers and load3d are the Cube's"):
        ptopipe.run(aiv=vec, args=dict(x=x), platform="a5")

    def shape(x):
        ct = ConvTile(TileType.Mat, np.uint8, (1, 1, 4, 2, 32), addr=0)
        TLOAD(ct, x)
    with pytest.raises(KernelError, match=r"of its own shape \[1, 1, 4, 2, 32\]"):
        run(shape, "a5", x=x)

    def other(x):
        ct = conv_tile(np.uint8, x)
        m = Tile(TileType.Left, np.uint8, 16, 32, addr=0)
        TMOV(m, ct)
    with pytest.raises(KernelError, match="TMOV source must be a Tile, got ConvTile"):
        run(other, "a5", x=x)


def test_the_convtile_bytes_race_with_a_load_into_them():
    """TIMG2COL reads the ConvTile's storage on MTE1: a TLOAD (MTE2) into it after the TIMG2COL
    with no event between, under manual sync, is a race on L1 at the TLOAD."""
    def k(x, y):
        ct = conv_tile(np.float16, x)
        set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
        SETFMATRIX(ct)
        SET_IMG2COL_PADDING(ct)
        a = left("a5", np.float16, 32, 288, addr=0)
        TIMG2COL(a, ct)
        TLOAD(ct, y)  # RACE
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(aic=k, args=dict(x=fmap(np.float16), y=fmap(np.float16, 1)), platform="a5", sync="manual")
    assert "L1" in ei.value.what, ei.value.what
    assert f":{line_of(k, 'RACE')}" in str(ei.value), str(ei.value)


_MAT = ("!pto.tile_buf<loc=mat, dtype=f32, rows=32, cols=32, v_row=32, v_col=32, blayout=col_major, "
        "slayout=row_major, fractal=512, pad=0>")
_LEFT = ("!pto.tile_buf<loc=left, dtype=f32, rows=32, cols=32, v_row=32, v_col=32, blayout=row_major, "
         "slayout=row_major, fractal=512, pad=0>")
PTO = f"""module {{
  func.func @conv(%a: !pto.ptr<f32>) {{
    %m = pto.alloc_tile : {_MAT}
    %l = pto.alloc_tile : {_LEFT}
    pto.timg2col ins(%m : {_MAT}) outs(%l : {_LEFT})
    return
  }}
}}
"""


def test_a_pto_file_has_no_convtile_to_give_it():
    """ptoas 0.27 has no img2col op and PTO-AS no ConvTile: a .pto spelling the op is an error at its
    line saying so, not a Python error."""
    with pytest.raises(KernelError) as ei:
        ptopipe.run_pto(text=PTO, inputs=dict(a=np.zeros(4, np.float32)), platform="a2a3")
    assert "TIMG2COL takes a ConvTile" in ei.value.what and "PTO-AS has no ConvTile" in ei.value.fix, ei.value
    assert ei.value.where.endswith(":5:5"), ei.value.where
