"""ExpandMixedKernel's SLOT_SIZE and the tiles it declares for crossing tiles whose shape is no
multiple of pto-isa's fractals / 32-byte rows (1x2 f16, 3x5 f32, 16x24 f32 ...): a slot holds the
static tile its consumer binds or reads (the Acc's whole 16x16 fractals, on an A5 Cube->Vector
ring one Vector core's part of them), rounded up to ``Platform.alignment``, and both kernels'
pipe initialisations agree; a crossing tile crosses intact through TPUSH / TPOP on both
platforms under the spec protocol and pto-isa's device protocol, against numpy, and under its CPU
simulator's (``pto-isa-cpusim``) either crosses too or - where the simulator lays the slot out
differently from the device, or stops at a pop its data does not fill - the run is a
ProtocolError at the move's line (``passes.tile_boxes`` declares what the device reads right).

Two kernel shapes carry an R x C tile across: V2C (the Vector side loads it, it crosses
into Mat, the Cube multiplies it by the identity and stores the accumulator) and C2V (the
Cube's R x K @ K x C accumulator crosses to Vec, which adds 1 and stores)."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, ProtocolError
from ptopipe.arch import get_platform
from ptopipe.ir import FunctionKind
from ptopipe.passes.util import init_ops
from ptopipe.ir.types import np_dtype
from ptopipe.passes import FRONT_END, compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

from markers import line_of

HERE = os.path.abspath(__file__)
PLATFORMS = ("a2a3", "a5")
PROTOCOLS = ("spec", "pto-isa", "pto-isa-cpusim")
PROPS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


def _v2c(R, C, dt):
    DT = getattr(pl, dt)

    @pl.incore(split=pl.TILE_NO_SPLIT)
    def v2c(x: pl.Tensor[[R, C], DT], eye: pl.Tensor[[C, C], DT], out: pl.Tensor[[R, C], pl.f32]):
        v = pl.load(x, [0, 0], [R, C])
        m = pl.move(v, space=pl.Mat)                # the V2C boundary  # V2C
        left = pl.move(m, space=pl.Left)
        right = pl.move(pl.load(eye, [0, 0], [C, C], space=pl.Mat), space=pl.Right)
        pl.store(pl.matmul(left, right), [0, 0], out)
    return pl.program(v2c, name=f"v2c_{R}x{C}_{dt}")


def _c2v(R, C, K, split):
    @pl.incore(split=split)
    def c2v(a: pl.Tensor[[R, K], pl.f16], b: pl.Tensor[[K, C], pl.f16], out: pl.Tensor[[R, C], pl.f32]):
        left = pl.move(pl.load(a, [0, 0], [R, K], space=pl.Mat), space=pl.Left)
        right = pl.move(pl.load(b, [0, 0], [K, C], space=pl.Mat), space=pl.Right)
        v = pl.move(pl.matmul(left, right), space=pl.Vec)      # the C2V boundary  # C2V
        pl.store(pl.adds(v, 1.0), [0, 0], out)
    return pl.program(c2v, name=f"c2v_{R}x{C}x{K}_{int(split)}")


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
@pytest.mark.parametrize("R,C,dt", [(16, 8, "f32"), (16, 16, "f16"), (32, 24, "f32")])
def test_a_v2c_slot_is_the_crossing_tile_rounded_to_the_alignment(platform, R, C, dt):
    nbytes = R * C * np.dtype(np_dtype(dt)).itemsize
    sizes = _slot_sizes(_v2c(R, C, dt), platform)
    assert sizes == [_rounded(nbytes, platform)] * 2, (nbytes, sizes)
    assert sizes[0] % get_platform(platform).alignment == 0 and sizes[0] >= nbytes


# (R, C, K, split, platform, SLOT_SIZE): the static tile the consumer reads - the Acc's whole
# 16x16 fractals (3x16 -> 16x16, 4x32 -> 16x32), on A5 one Vector core's part of them (16x24 -> 8x32)
STATIC_SLOTS = [(3, 16, 2, pl.TILE_NO_SPLIT, "a2a3", 16 * 16 * 4), (3, 16, 2, pl.TILE_NO_SPLIT, "a5", 16 * 16 * 4),
                (16, 24, 8, pl.TILE_UP_DOWN, "a5", 8 * 32 * 4), (4, 32, 8, pl.TILE_UP_DOWN, "a2a3", 16 * 32 * 4)]


@pytest.mark.parametrize("R,C,K,split,platform,slot", STATIC_SLOTS)
def test_a_c2v_slot_holds_the_static_tile_the_consumer_reads(R, C, K, split, platform, slot):
    assert _slot_sizes(_c2v(R, C, K, split), platform) == [slot] * 2


def _check_v2c(R, C, dt, platform, protocol):
    x = ((np.arange(R * C) * 5) % 11 - 5).reshape(R, C).astype(np_dtype(dt))
    args = dict(x=x, eye=np.eye(C, dtype=x.dtype), out=np.full((R, C), np.nan, np.float32),
                R=R, C=C, dt=dt)
    args = with_slot_buffer(V2C.source(**args), args)
    res = ptopipe.run(V2C.aic, (V2C.aiv, V2C.aiv), args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], x.astype(np.float32))


def _check_c2v(R, C, K, platform, protocol, split=pl.TILE_NO_SPLIT):
    a = ((np.arange(R * K) * 3) % 7 - 3).reshape(R, K).astype(np.float16)
    b = ((np.arange(K * C) * 2) % 5 - 2).reshape(K, C).astype(np.float16)
    args = with_slot_buffer(C2V.source(R=R, C=C, K=K, split=split),
                            dict(a=a, b=b, out=np.full((R, C), np.nan, np.float32), R=R, C=C, K=K, split=split))
    res = ptopipe.run(C2V.aic, (C2V.aiv, C2V.aiv), args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], a.astype(np.float32) @ b.astype(np.float32) + 1)


def _crossed(check, program, marker) -> list:
    """The platforms on which ``check(platform, protocol)`` passes under pto-isa's CPU simulator;
    it passes under the spec and the device's protocol on every platform, and on the others the
    CPU simulator's run is a ProtocolError at the boundary move's line."""
    crossed = []
    for platform in PLATFORMS:
        for protocol in ("spec", "pto-isa"):
            check(platform, protocol)
        try:
            check(platform, "pto-isa-cpusim")
        except ProtocolError as e:
            assert "CPU simulator" in e.render(), e.render()
            assert e.where.endswith(f"test_crossing_slots.py:{line_of(program, marker)}:9"), e.where
            continue
        crossed.append(platform)
    return crossed


@PROPS
@given(st.sampled_from([1, 3, 8, 16, 32]), st.sampled_from([2, 5, 8, 16, 24]), st.sampled_from(["f16", "f32"]))
def test_odd_v2c_tile_crosses_intact_or_is_reported_in_the_cpu_simulator(R, C, dt):
    # the Cube TMOVs the popped Mat tile into a Left tile of whole 16 x 32-byte fractals (one
    # row: no row fractal); the device pops the valid region, pto-isa's CPU simulator only a Mat
    # tile its data fills
    fills = (R == 1 or R % 16 == 0) and C * np.dtype(np_dtype(dt)).itemsize % 32 == 0
    assert _crossed(lambda p, q: _check_v2c(R, C, dt, p, q), _v2c, "V2C") == (list(PLATFORMS) if fills else [])


@PROPS
@given(st.sampled_from([1, 3, 8, 16, 24]), st.sampled_from([2, 5, 8, 16, 24, 32]), st.integers(1, 9))
def test_odd_c2v_tile_crosses_intact_or_is_reported_in_the_cpu_simulator(R, C, K):
    # TILE_NO_SPLIT: on A5 the device writes the rows the Acc's 16-column fractals apart and the
    # CPU simulator packs them (one row has no pitch); on A2A3 the CPU simulator TLOADs the Vec
    # tile's whole static shape (rows of 32 bytes)
    want = [p for p, ok in (("a2a3", C % 8 == 0), ("a5", C % 16 == 0 or R == 1)) if ok]
    assert _crossed(lambda p, q: _check_c2v(R, C, K, p, q), _c2v, "C2V") == want


# (R, C, platform, the CPU simulator reads it right): UP_DOWN hands each Vector core half of the
# rows - on A5 the device halves the valid rows and the CPU simulator the Acc's 16-row static
# ones, so only there an Acc its rows fill crosses in the simulator; its columns may be padded
# (the popped part is declared at the slot's 32-column pitch); on A2A3 the CPU simulator TLOADs
# each part's whole static shape, so the columns must fill the Acc's.  The device reads each.
SPLIT_CASES = [(16, 24, "a5", True), (24, 32, "a5", False), (8, 32, "a5", False), (32, 40, "a5", True),
               (16, 24, "a2a3", False), (24, 32, "a2a3", True), (8, 32, "a2a3", True)]


@pytest.mark.parametrize("R,C,platform,sim_reads", SPLIT_CASES)
def test_an_up_down_accumulator_crosses_intact_or_is_reported_in_the_cpu_simulator(R, C, platform, sim_reads):
    for protocol in ("spec", "pto-isa"):
        _check_c2v(R, C, 16, platform, protocol, pl.TILE_UP_DOWN)
    if sim_reads:
        _check_c2v(R, C, 16, platform, "pto-isa-cpusim", pl.TILE_UP_DOWN)
        return
    with pytest.raises(ProtocolError) as e:
        _check_c2v(R, C, 16, platform, "pto-isa-cpusim", pl.TILE_UP_DOWN)
    assert e.value.what.startswith("TPOP on AIV"), e.value.what
    assert e.value.where.endswith(f"test_crossing_slots.py:{line_of(_c2v, 'C2V')}:9"), e.value.where
    assert "in the CPU simulator" in e.value.details, e.value.render()
    assert e.value.fix.startswith("the device (--protocol pto-isa) reads this slot right"), e.value.fix


@pytest.mark.xfail(strict=True, raises=CompileError,
                   reason="a one-column Vec tile is a DN column, the Cube's side of the compiled "
                          "pipe moves ND: VerifyPipes refuses the compiled program's layouts")
@pytest.mark.parametrize("direction,platform", [("v2c", "a5"), ("c2v", "a2a3"), ("c2v", "a5")])
def test_one_column_tile_crosses_intact(direction, platform):
    if direction == "v2c":
        _check_v2c(1, 1, "f16", platform, "spec")
    else:
        _check_c2v(3, 1, 2, platform, "spec")


UD24_SOURCE = '''\
import ptopipe.language as pl


@pl.incore(split=pl.{split}, slot_num=4)
def ud(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 24], pl.f32], out: pl.Tensor[[16, 24], pl.f32]):
    br = pl.move(pl.load(b, [0, 0], [32, 24], space=pl.Mat), space=pl.Right)
    al = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    y = pl.move(pl.matmul(al, br), space=pl.Vec)
    pl.store(y, [0, 0], out)

program = pl.program(ud, name="ud")
'''
UD24_MOVE_LINE = 8


@pytest.mark.parametrize("split,platform", [("TILE_UP_DOWN", "a2a3"), ("TILE_NO_SPLIT", "a5")])
def test_a_crossing_only_the_cpu_simulator_misreads_compiles_and_passes_check_static(split, platform, tmp_path,
                                                                                    capsys):
    """A 16x24 accumulator (a 16x32 Acc tile): on A2A3 split TILE_UP_DOWN pto-isa's CPU simulator
    TLOADs each core's part whole at the Acc's 32-column pitch, on A5 without a split the device
    writes the rows 32 apart and the CPU simulator packs them - the device reads both right, so
    ``check --static`` and compile accept the program; a run under ``pto-isa-cpusim`` reports the
    simulator's misread at the move."""
    from ptopipe.cli import main as cli_main
    from ptopipe.driver.loader import load_module
    path = tmp_path / "ud.py"
    path.write_text(UD24_SOURCE.format(split=split))
    for cmd in (["check", "--static"], ["compile", "--emit", "cpp", "-o", str(tmp_path / "k.cpp")]):
        rc = cli_main([*cmd, str(path), "--platform", platform])
        out, err = capsys.readouterr()
        assert rc == 0 and "error" not in err, (cmd, out, err)
    program = load_module(str(path)).program
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (16, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (32, 24)).astype(np.float32)
    from ptopipe.runtime import kernels
    aic, aiv = kernels(program)

    def run(protocol):
        args = with_slot_buffer(program, dict(a=a, b=b, out=np.zeros((16, 24), np.float32)))
        return ptopipe.run(aic, aiv, args, platform=platform, protocol=protocol)
    for protocol in ("spec", "pto-isa"):
        np.testing.assert_array_equal(run(protocol).outputs["out"], a @ b)
    with pytest.raises(ProtocolError) as e:
        run("pto-isa-cpusim")
    assert e.value.what.startswith("TPOP on AIV0") and "the slot layout differs" in e.value.what, e.value.what
    assert f"ud.py:{UD24_MOVE_LINE}:" in e.value.where, e.value.where
    assert "in the CPU simulator" in e.value.details, e.value.render()
