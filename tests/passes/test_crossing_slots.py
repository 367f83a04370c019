"""ExpandMixedKernel's SLOT_SIZE for crossing tiles whose size is no multiple of the
platform's alignment (1x2 f16, 3x5 f32, ...): the slot is the largest crossing tile rounded
up to ``Platform.alignment``, both kernels' pipe initialisations agree, and the data cross
intact through TPUSH / TPOP on both platforms and both protocols (against numpy).

Two kernel shapes carry an R x C tile across: V2C (the Vector side loads it, it crosses
into Mat, the Cube multiplies it by the identity and stores the accumulator) and C2V (the
Cube's R x K @ K x C accumulator crosses to Vec, which adds 1 and stores)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError
from ptopipe.arch import get_platform
from ptopipe.ir import FunctionKind
from ptopipe.passes.util import init_ops
from ptopipe.ir.types import np_dtype
from ptopipe.passes import FRONT_END, compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

PLATFORMS = ("a2a3", "a5")
PROTOCOLS = ("spec", "pto-isa")
PROPS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


def _v2c(R, C, dt):
    DT = getattr(pl, dt)

    @pl.incore(split=pl.TILE_NO_SPLIT)
    def v2c(x: pl.Tensor[[R, C], DT], eye: pl.Tensor[[C, C], DT], out: pl.Tensor[[R, C], pl.f32]):
        v = pl.load(x, [0, 0], [R, C])
        m = pl.move(v, space=pl.Mat)                # the V2C boundary
        left = pl.move(m, space=pl.Left)
        right = pl.move(pl.load(eye, [0, 0], [C, C], space=pl.Mat), space=pl.Right)
        pl.store(pl.matmul(left, right), [0, 0], out)
    return pl.program(v2c, name=f"v2c_{R}x{C}_{dt}")


def _c2v(R, C, K):
    @pl.incore(split=pl.TILE_NO_SPLIT)
    def c2v(a: pl.Tensor[[R, K], pl.f16], b: pl.Tensor[[K, C], pl.f16], out: pl.Tensor[[R, C], pl.f32]):
        left = pl.move(pl.load(a, [0, 0], [R, K], space=pl.Mat), space=pl.Left)
        right = pl.move(pl.load(b, [0, 0], [K, C], space=pl.Mat), space=pl.Right)
        v = pl.move(pl.matmul(left, right), space=pl.Vec)      # the C2V boundary
        pl.store(pl.adds(v, 1.0), [0, 0], out)
    return pl.program(c2v, name=f"c2v_{R}x{C}x{K}")


V2C, C2V = KernelSet(_v2c), KernelSet(_c2v)


def _slot_sizes(program, platform):
    """SLOT_SIZE of each compiled kernel's pipe initialisation."""
    prog = compile_program(program, platform, FRONT_END)
    out = []
    for f in prog.functions:
        if f.kind in (FunctionKind.AIC, FunctionKind.AIV):
            out += [i.slot_size for i in init_ops(f)]
    return out


def _rounded(nbytes, platform):
    align = get_platform(platform).alignment
    return -(-nbytes // align) * align


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("R,C,dt", [(1, 2, "f16"), (3, 5, "f32"), (3, 5, "f16"), (2, 3, "f32"),
                                    (5, 7, "f16"), (16, 16, "f32")])
def test_slot_size_is_the_crossing_tile_rounded_to_the_alignment(platform, R, C, dt):
    nbytes = R * C * np.dtype(np_dtype(dt)).itemsize
    sizes = _slot_sizes(_v2c(R, C, dt), platform)
    assert sizes == [_rounded(nbytes, platform)] * 2, (nbytes, sizes)
    assert sizes[0] % get_platform(platform).alignment == 0 and sizes[0] >= nbytes


def _check_v2c(R, C, dt, platform, protocol):
    x = ((np.arange(R * C) * 5) % 11 - 5).reshape(R, C).astype(np_dtype(dt))
    args = dict(x=x, eye=np.eye(C, dtype=x.dtype), out=np.full((R, C), np.nan, np.float32),
                R=R, C=C, dt=dt)
    args = with_slot_buffer(V2C.source(**args), args)
    res = ptopipe.run(V2C.aic, (V2C.aiv, V2C.aiv), args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], x.astype(np.float32))


def _check_c2v(R, C, K, platform, protocol):
    a = ((np.arange(R * K) * 3) % 7 - 3).reshape(R, K).astype(np.float16)
    b = ((np.arange(K * C) * 2) % 5 - 2).reshape(K, C).astype(np.float16)
    args = with_slot_buffer(C2V.source(R=R, C=C, K=K),
                            dict(a=a, b=b, out=np.full((R, C), np.nan, np.float32), R=R, C=C, K=K))
    res = ptopipe.run(C2V.aic, (C2V.aiv, C2V.aiv), args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], a.astype(np.float32) @ b.astype(np.float32) + 1)


@PROPS
@given(st.integers(1, 9), st.integers(2, 9), st.sampled_from(["f16", "f32"]))
def test_odd_v2c_tile_crosses_intact(R, C, dt):
    for platform in PLATFORMS:
        for protocol in PROTOCOLS:
            _check_v2c(R, C, dt, platform, protocol)


@PROPS
@given(st.integers(1, 9), st.integers(2, 9), st.integers(1, 9))
def test_odd_c2v_tile_crosses_intact(R, C, K):
    for platform in PLATFORMS:
        for protocol in PROTOCOLS:
            _check_c2v(R, C, K, platform, protocol)


@pytest.mark.xfail(strict=True, raises=CompileError,
                   reason="a one-column Vec tile is a DN column, the Cube's side of the compiled "
                          "pipe moves ND: VerifyPipes refuses the compiled program's layouts")
@pytest.mark.parametrize("direction,platform", [("v2c", "a5"), ("c2v", "a2a3"), ("c2v", "a5")])
def test_one_column_tile_crosses_intact(direction, platform):
    if direction == "v2c":
        _check_v2c(1, 1, "f16", platform, "spec")
    else:
        _check_c2v(3, 1, 2, platform, "spec")
