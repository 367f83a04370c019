"""TQUANT's MX forms (A5 MXFP8): ND and DN grouping, OCP and NV scales, float32 / bfloat16 /
float16 sources and DN's interleaved exponents against a numpy reference written as pto-isa's A5
test goldens state the device's numbers (tests/npu/a5/.../tquant_dn/gen_data.py); what is not
modelled or not determined refused at the line (A2A3, MXFP4, HiFloat4, a partial group, interleave
without 64-aligned rows, a wrong exponent tile)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403

from markers import line_of

pytestmark = pytest.mark.usefixtures("no_hang")


def reference(x, axis, nv, interleave=False):
    """(e4m3 bytes, e8m0 exponents) of ``x`` grouped by 32 along ``axis`` (1: a row, 0: a column)."""
    v = x.astype(np.float32)
    g = np.moveaxis(v.reshape(v.shape[0] // 32, 32, -1), 1, 2) if axis == 0 else v.reshape(v.shape[0], -1, 32)
    gmax = np.abs(g).max(axis=2)                         # (groups along the other axis, ...)
    if nv:
        scaled = (gmax * np.float32(1 / 448)).astype(np.float32)
        bits = scaled.view(np.uint32)
        ex, man = (bits >> 23) & 0xFF, bits & 0x7FFFFF
        e = ex.astype(np.int64) + (((man != 0) & (ex > 0) & (ex < 0xFE)) | ((ex == 0) & (man > 0x400000)))
    else:
        e = np.clip(((gmax.view(np.uint32) >> 23) & 0xFF).astype(np.int64) - 8, 0, 254)
    scaling = ((254 - e).astype(np.uint32) << 23).view(np.float32)
    q = np.clip(g * scaling[..., None], -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    q = q.reshape(v.shape) if axis == 1 else np.moveaxis(q, 2, 1).reshape(v.shape)
    e = e.astype(np.uint8)
    if interleave:
        e = e.reshape(e.shape[0] // 2, 2, -1).transpose(0, 2, 1).reshape(e.shape[0] // 2, -1)
    return q, e


def mx_kernel(dtype, axis, alg, rows, cols, e_shape, interleave=False):
    def k(x, q, e):
        if get_subblockid():
            return
        s = Tile(TileType.Vec, dtype, rows, cols, addr=0)
        d = Tile(TileType.Vec, np.int8, rows, cols, addr=0x8000)
        ex = Tile(TileType.Vec, np.uint8, *e_shape, addr=0x10000)
        m = Tile(TileType.Vec, np.float32, 8, 64, addr=0x11000)
        sc = Tile(TileType.Vec, np.float32, 8, 64, addr=0x12000)
        TLOAD(s, x)
        TQUANT(d, s, ex, m, sc, grp_axis=axis, mx_alg=alg, interleave=interleave)  # MX
        TSTORE(q, d)
        TSTORE(e, ex)
    return k


def data(dtype, rows, cols, seed=0):
    rng = np.random.default_rng(seed)
    # magnitudes over several binades per group, a zero and a negative value in each
    x = rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-6, 7, (rows, 1)))
    x[0, 0], x[-1, -1] = 0.0, -3.0
    return x.astype(dtype)


@pytest.mark.parametrize("dtype,axis,alg,interleave", [
    (np.float32, 1, MxQuantAlg.OcpMxFp8E4M3, False), (ml_dtypes.bfloat16, 1, MxQuantAlg.NvMxFp8E4M3, False),
    (np.float16, 0, MxQuantAlg.OcpMxFp8E4M3, False), (np.float32, 0, MxQuantAlg.NvMxFp8E4M3, False),
    (ml_dtypes.bfloat16, 0, MxQuantAlg.OcpMxFp8E4M3, True)])
def test_the_codes_and_exponents_are_the_devices(dtype, axis, alg, interleave):
    rows, cols = 64, 64
    groups = (rows, cols // 32) if axis == 1 else (rows // 32, cols)
    e_shape = (groups[0] // 2, 2 * groups[1]) if interleave else groups
    e_tile = (e_shape[0], 32) if e_shape[1] < 32 else e_shape
    x = data(dtype, rows, cols)
    r = ptopipe.run(aiv=mx_kernel(dtype, axis, alg, rows, cols, e_tile, interleave),
                    args=dict(x=x, q=np.zeros((rows, cols), np.int8), e=np.zeros(e_tile, np.uint8)), platform="a5")
    q, e = reference(x, axis, alg.scale_alg is QuantScaleAlg.NV, interleave)
    np.testing.assert_array_equal(r.outputs["q"].view(np.uint8), q)
    np.testing.assert_array_equal(r.outputs["e"][:, :e_shape[1]], e)


def test_the_older_spelling_is_nd_ocp_and_a_one_row_exponent_tile_takes_them_flat():
    """``TQUANT<QuantType::MXFP8>(dst, src, &exp, &max, &scaling)``: ND, OCP; the device's flat exponent
    buffer when exp has one row (r * groups + g)."""
    def k(x, e):
        if get_subblockid():
            return
        s = Tile(TileType.Vec, np.float32, 16, 64, addr=0)
        d = Tile(TileType.Vec, np.int8, 16, 64, addr=0x8000)
        ex = Tile(TileType.Vec, np.uint8, 1, 32, addr=0x10000)
        m = Tile(TileType.Vec, np.float32, 1, 32, addr=0x11000)
        TLOAD(s, x)
        TQUANT(d, s, ex, m, m, quant_type=QuantType.MXFP8)
        TSTORE(e, ex)
    x = data(np.float32, 16, 64, 1)
    r = ptopipe.run(aiv=k, args=dict(x=x, e=np.zeros((1, 32), np.uint8)), platform="a5")
    np.testing.assert_array_equal(r.outputs["e"][0], reference(x, 1, False)[1].reshape(-1))


def refused(platform, change):
    def k(x):
        if get_subblockid():
            return
        kw = dict(grp_axis=1, mx_alg=MxQuantAlg.OcpMxFp8E4M3)
        rows, cols = 64, 64
        kw, rows, cols = change(kw, rows, cols)
        s = Tile(TileType.Vec, np.float32, 64, 64, valid_rows=rows, valid_cols=cols, addr=0)
        d = Tile(TileType.Vec, np.int8, 64, 64, valid_rows=rows, valid_cols=cols, addr=0x8000)
        ex = Tile(TileType.Vec, np.uint8, 2, 32, addr=0x10000)
        m = Tile(TileType.Vec, np.float32, 8, 64, addr=0x11000)
        TQUANT(d, s, ex, m, m, **kw)  # REFUSED
    return k


@pytest.mark.parametrize("platform,change,says", [
    ("a2a3", lambda kw, r, c: (kw, r, c), "TQUANT's MX forms are pto-isa's A5 ones"),
    ("a5", lambda kw, r, c: ({**kw, "mx_alg": MxQuantAlg.OcpMxFp4E2M1}, r, c), "float4_e2m1x2_t"),
    ("a5", lambda kw, r, c: ({**kw, "mx_alg": MxQuantAlg.Hif4}, r, c), "HiFloat4 quantisation is pto-isa's A6"),
    ("a5", lambda kw, r, c: (kw, r, 48), "its columns (ND) are not whole groups of 32"),
    ("a5", lambda kw, r, c: ({**kw, "grp_axis": 0, "interleave": True}, 32, c), "pto-isa pairs row groups"),
    ("a5", lambda kw, r, c: ({**kw, "grp_axis": 0}, r, c), "is smaller than the 2x64 exponents")])
def test_what_is_not_modelled_or_not_determined_is_an_error_at_the_line(platform, change, says):
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=refused(platform, change), args=dict(x=np.zeros(4, np.float32)), platform=platform)
    assert says in ei.value.what, ei.value.what
    assert ei.value.where.endswith(f":{line_of(refused, 'REFUSED')}"), ei.value.where
