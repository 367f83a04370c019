"""The data plane's errors are found when an instruction is issued
(dtype and scalar rules of the op catalogue, at the kernel or DSL line, naming the op, the
dtype and the fix); anything that still fails while the queued numpy work is applied is
a located KernelError that never replaces an error already propagating; the IR and the
ISA share one matmul accumulator rule."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, DeadlockError, KernelError
from ptopipe.arch import catalogue
from ptopipe.arch import dtypes as dt
from ptopipe.arch.dtypes import as_dtype, short_name
from ptopipe.ir.types import accum_dtype as ir_accum_dtype
from ptopipe.isa import *  # noqa: F403
from ptopipe.runtime import run as run_dsl
from markers import line_of

HERE = os.path.basename(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLATFORMS = ["a2a3", "a5"]


def assert_at(err, fn, marker):
    want = f"{HERE}:{line_of(fn, marker)}"
    assert err.where is not None and err.where.endswith(want), (err.where, str(err))


def run_aiv(fn, platform, **args):
    return ptopipe.run(aiv=(fn, None), args=args, platform=platform)


# -- float-only ops on integer tiles, at issue ---------------------------------------------------
FLOAT_ONLY = [op for op in catalogue.OPS.values() if op.float_only and not op.scratch
              and op.form in ("unary", "scalar", "binary", "row_expand")]


def _float_only_kernel(op):
    fn = getattr(ptopipe.isa, op.name)

    def k():
        a = Tile(TileType.Vec, int32, 16, 16, addr=0x0)
        b = Tile(TileType.Vec, int32, 16, 16, addr=0x400)
        TEXPANDS(a, 4)
        if op.form == "unary":
            fn(b, a)  # bad unary
        elif op.form == "scalar":
            fn(b, a, 2)  # bad scalar
        else:
            fn(b, a, a)  # bad binary
    return k


def test_the_catalogue_has_float_only_ops():
    names = {op.name for op in FLOAT_ONLY}
    assert {"TEXP", "TLOG", "TSQRT", "TRSQRT"} <= names
    # pto-isa divides integers too (A2A3: TDIVS / TRECIP; A5: TDIV as well): test_int_division.py


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("op", FLOAT_ONLY, ids=lambda op: op.name)
def test_float_only_op_on_an_integer_tile_is_reported_at_the_line(op, platform):
    k = _float_only_kernel(op)
    with pytest.raises(KernelError) as ei:
        run_aiv(k, platform)
    e = ei.value
    floats = ", ".join(sorted(short_name(d) for d in op.dtypes.on(catalogue.PlatformID[f"PLATFORM_{platform.upper()}"])))
    assert e.what.startswith(f"{op.name} takes {floats} tiles on {platform.upper()}, not int32"), e.what
    assert "TCVT" in e.fix
    assert_at(e, k, "bad " + ("binary" if op.form == "row_expand" else op.form))


# the narrowest integer TADDS takes per platform (pto-isa: A2A3 int16, A5 int8)
_NARROW = {"a2a3": (int16, 40000, -32769), "a5": (int8, 300, -129)}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("scalar,why", [("high", "out of range"), ("low", "out of range"),
                                        (2.5, "not an integer"), ("3", "not a number")])
def test_int_scalar_that_the_tile_cannot_hold_is_reported_at_the_line(scalar, why, platform):
    d, high, low = _NARROW[platform]
    scalar = {"high": high, "low": low}.get(scalar, scalar)

    def k():
        a = Tile(TileType.Vec, d, 16, 32, addr=0x0)
        TEXPANDS(a, 1)
        TADDS(a, a, scalar)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k, platform)
    assert "TADDS" in ei.value.what and why in ei.value.what and d.name in ei.value.what
    assert_at(ei.value, k, "bad")


def test_fill_that_overflows_f16_is_reported_at_the_line():
    def k():
        a = Tile(TileType.Vec, float16, 16, 16, addr=0x0)
        TEXPANDS(a, 1e6)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k, "a2a3")
    assert "TEXPANDS" in ei.value.what and "float16" in ei.value.what
    assert_at(ei.value, k, "bad")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scalars_a_tile_can_hold_still_compute(platform):
    def k(out):
        a = Tile(TileType.Vec, int16, 16, 32, addr=0x0)
        f = Tile(TileType.Vec, float16, 16, 32, addr=0x400)
        TEXPANDS(a, -32768)
        TADDS(a, a, 32767)
        TADDS(a, a, np.int16(1))
        TMULS(a, a, 3.0)                     # an integral float is an int16 value
        TEXPANDS(f, 0.1)                     # rounding to f16 is fine
        TMULS(f, f, float("nan"))            # so are NaN ...
        TSTORE(GlobalTensor(out.data(), (16, 32)), a)
    res = run_aiv(k, platform, out=np.zeros((16, 32), np.int16))
    assert (res["out"] == 0).all()


def test_float_overflow_is_inf_whatever_numpy_error_state_the_caller_has():
    """The data plane runs under one fixed error state (it used to raise FloatingPointError
    at the end of the run, with no location, only when the caller had set one)."""
    def k(out):
        a = Tile(TileType.Vec, float16, 16, 16, addr=0x0)
        TEXPANDS(a, 100.0)
        TEXP(a, a)                           # e^100 overflows f16: inf, as on the device
        TSTORE(GlobalTensor(out.data(), (16, 16)), a)
    with np.errstate(all="raise"):
        res = run_aiv(k, "a2a3", out=np.zeros((16, 16), np.float16))
    assert np.isinf(res["out"]).all()


# -- an error while applying queued work --------------------------------------------------------
def _explode(what):
    raise ValueError(what)


def _queues_failing_work():
    a = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
    TEXPANDS(a, 2.0)
    current_core().pending.append((_explode, "boom"))   # queued work that fails
    TEXPANDS(a, 1.0)  # next instruction
    TADDS(a, a, 1.0)


def test_failing_queued_work_is_a_kernel_error_naming_the_core():
    """Applied at the end of the run: the kernel has returned, so the error names its core
    and the kernel function (the hot path records no location per operation)."""
    with pytest.raises(KernelError) as ei:
        run_aiv(_queues_failing_work, "a2a3")
    e = ei.value
    assert "AIV0" in e.what and "ValueError: boom" in e.what and "_explode" in e.what
    assert e.where.endswith(f"{HERE}:{_queues_failing_work.__code__.co_firstlineno}")
    assert "PTOPIPE_SYNC_EVERY=1" in e.details


def test_failing_queued_work_names_the_exact_line_when_applied_per_instruction(monkeypatch):
    monkeypatch.setattr(ptopipe.sim.core, "SYNC_EVERY", 1)
    with pytest.raises(KernelError) as ei:
        run_aiv(_queues_failing_work, "a5")
    assert "ValueError: boom" in ei.value.what
    assert_at(ei.value, _queues_failing_work, "next instruction")


def test_bad_sync_every_setting_is_a_config_error(monkeypatch, capsys):
    """A PTOPIPE_SYNC_EVERY that is no positive integer is a ConfigError where a run starts and
    before a command runs - not a traceback at import, which would break every command."""
    monkeypatch.setenv("PTOPIPE_SYNC_EVERY", "often")
    with pytest.raises(ptopipe.ConfigError, match="PTOPIPE_SYNC_EVERY='often' is not a positive integer"):
        ptopipe.run(aiv=(lambda: None, None))
    from ptopipe.cli import main
    assert main(["run", "examples/scenarios/s1_cv_split.py"]) == 1
    assert "error: ConfigError: PTOPIPE_SYNC_EVERY='often'" in capsys.readouterr().err


def test_failing_queued_work_does_not_replace_a_deadlock():
    def cube():
        pass                                   # never pushes

    def vec():
        pipe = TPipe(0, DIR_C2V, 16 * 32 * 4, 2)(None, 0x10000, 0)
        t = Tile(TileType.Vec, float32, 16, 32)
        current_core().pending.append((_explode, "late"))   # queued, never applied in time
        TPOP(pipe, t)  # blocked
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(aic=cube, aiv=(vec, None), platform="a5")
    assert_at(ei.value, vec, "blocked")
    # in the error's own text (the CLI prints it; Python 3.10 has no exception notes)
    assert "applying the queued data work failed" in ei.value.details and "late" in str(ei.value)


def test_check_reports_a_bad_op_instead_of_aborting(tmp_path, capsys):
    from ptopipe.cli import main as cli_main
    src = tmp_path / "bad_exp.py"
    src.write_text(
        "import numpy as np\n"
        "import ptopipe\n"
        "from ptopipe.isa import *\n"
        "def vec(out):\n"
        "    a = Tile(TileType.Vec, int32, 16, 16, addr=0x0)\n"
        "    TEXPANDS(a, 2)\n"
        "    TEXP(a, a)\n"
        "    TSTORE(GlobalTensor(out.data(), (16, 16)), a)\n"
        "SCENARIO = ptopipe.Scenario('bad_exp', None, (vec, None),\n"
        "    lambda rng: dict(out=np.zeros((16, 16), np.int32)),\n"
        "    lambda args: {'out': np.exp(np.full((16, 16), 2.0))})\n")
    code = cli_main(["check", str(src)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code != 0
    assert "Traceback" not in text
    assert "TEXP takes f16, f32 tiles on A2A3, not int32" in text and "bad_exp.py:7" in text


# -- DSL: the same rules at the DSL line --------------------------------------------------------
def _dsl_error(src: str, tmp_path) -> CompileError:
    path = tmp_path / "k.py"
    path.write_text("import ptopipe.language as pl\n\n" + src)
    ns = {}
    with pytest.raises(CompileError) as ei:
        exec(compile(path.read_text(), str(path), "exec"), ns)
        pl.program(*[v for v in ns.values() if isinstance(v, pl.DSLFunction)])
    return ei.value


def _line(src: str, needle: str) -> int:
    return 2 + next(i for i, ln in enumerate(src.splitlines(), 1) if needle in ln)


@pytest.mark.parametrize("call,what", [("pl.exp(t)", "TEXP takes f16, f32 tiles, not int32"),
                                       ("pl.subrelu(t, t)", "TSUBRELU takes f16, f32 tiles, not int32"),
                                       ("pl.adds(t, 2.5)", "not an integer")])
def test_dsl_rejects_what_the_isa_would_at_the_dsl_line(call, what, tmp_path):
    src = ("@pl.aiv\n"
           "def k(x: pl.Tensor[[16, 32], pl.i32], y: pl.Tensor[[16, 32], pl.i32]):\n"
           "    t = pl.load(x, [0, 0], [16, 32])\n"
           f"    u = {call}\n"
           "    pl.store(u, [0, 0], y)\n")
    e = _dsl_error(src, tmp_path)
    assert what in e.what
    assert f"k.py:{_line(src, call)}" in str(e.where)


# -- one accumulator rule ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "i8", "u8", "i16", "i32", "u32", "i64",
                                  "fp8_e4m3", "fp8_e5m2"])
def test_ir_and_isa_share_the_accumulator_rule(name):
    acc = catalogue.accum_dtype(as_dtype(name))
    assert ir_accum_dtype(name) == (None if acc is None else short_name(acc))


MM_SRC = '''
@pl.aic
def mm(a: pl.Tensor[[16, 32], pl.{dt}], b: pl.Tensor[[32, 16], pl.{dt}],
       c: pl.Tensor[[16, 16], pl.{acc}]):
    x = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    y = pl.move(pl.load(b, [0, 0], [32, 16], space=pl.Mat), space=pl.Right)
    z = pl.matmul(x, y)
    pl.store(z, [0, 0], c)


@pl.aiv
def idle(c: pl.Tensor[[16, 16], pl.{acc}]):
    pass
'''


def test_i32_matmul_is_rejected_at_the_dsl_line(tmp_path):
    src = MM_SRC.format(dt="i32", acc="i32")
    e = _dsl_error(src, tmp_path)
    assert "Cube does not take i32" in e.what and "int8" in e.fix
    assert f"k.py:{_line(src, 'pl.matmul(x, y)')}" in str(e.where)


def test_i32_tmatmul_is_rejected_at_the_kernel_line():
    def k():
        a = Tile(TileType.Left, int32, 16, 32, addr=0x0)
        b = Tile(TileType.Right, int32, 32, 16, addr=0x0)
        c = Tile(TileType.Acc, int32, 16, 16, addr=0x0)
        TMATMUL(c, a, b)  # bad
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=k, platform="a2a3")
    assert "Cube does not take int32" in ei.value.what
    assert_at(ei.value, k, "bad")


#: operand pairs pto-isa's Cube refuses on a platform (a2a3 / a5 TMatmul.hpp static_asserts) and
#: one only A5's takes: (platform, a, b, refused)
MM_PAIRS = [("a2a3", "uint8", "uint8", True), ("a5", "uint8", "uint8", True),
            ("a2a3", "float8_e4m3", "float8_e4m3", True), ("a5", "float8_e4m3", "float8_e5m2", False)]


@pytest.mark.parametrize("platform,a_dt,b_dt,refused", MM_PAIRS)
def test_tmatmul_takes_the_operand_pairs_of_its_platform(platform, a_dt, b_dt, refused):
    """uint8 is no Cube input and float8 is A5's; A5 multiplies e4m3 by e5m2 (any float8
    pairing): a pair pto-isa does not compile is refused at the line, a pair it does runs."""
    A = np.arange(16 * 32).reshape(16, 32) % 5 - 2
    B = np.arange(32 * 16).reshape(32, 16) % 3 - 1

    def k(c_out):
        a = Tile(TileType.Left, getattr(dt, a_dt), 16, 32, addr=0x0)
        b = Tile(TileType.Right, getattr(dt, b_dt), 32, 16, addr=0x0)
        a.array[...] = A
        b.array[...] = B
        c = Tile(TileType.Acc, int32 if a_dt == "uint8" else float32, 16, 16, addr=0x0)
        TMATMUL(c, a, b)  # bad
        TSTORE(c_out, c)
    out = np.zeros((16, 16), np.float32)
    if refused:
        with pytest.raises(KernelError) as ei:
            ptopipe.run(aic=k, args=dict(c_out=out), platform=platform)
        assert "pto-isa's static_assert" in ei.value.what, ei.value.what
        assert_at(ei.value, k, "bad")
    else:
        np.testing.assert_array_equal(ptopipe.run(aic=k, args=dict(c_out=out), platform=platform)
                                      .outputs["c_out"], A @ B)


@pytest.mark.parametrize("loc,bias_dt", [(TileType.Mat, "float32"), (TileType.Bias, "int32")])
def test_a_matmul_bias_that_is_not_a_bias_tile_of_the_accumulators_dtype_is_refused(loc, bias_dt):
    """pto-isa's TMATMUL_BIAS / TGEMV_BIAS take a one-row Bias tile of the accumulator's dtype:
    an L1 row, or an int32 table for a float accumulator, is refused at the line, not added."""
    def k():
        a = Tile(TileType.Left, float16, 16, 32, addr=0x0)
        b = Tile(TileType.Right, float16, 32, 16, addr=0x0)
        bias = Tile(loc, getattr(dt, bias_dt), 1, 16, addr=0x0)
        for t in (a, b, bias):
            t.array[...] = 1
        TMATMUL_BIAS(Tile(TileType.Acc, float32, 16, 16, addr=0x0), a, b, bias)  # bad
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=k, platform="a2a3")
    assert "one-row Bias tile of the accumulator's dtype, float32" in ei.value.what, ei.value.what
    assert_at(ei.value, k, "bad")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_i8_matmul_runs_end_to_end_with_an_i32_accumulator(platform, tmp_path):
    path = tmp_path / "mm.py"
    path.write_text("import ptopipe.language as pl\n" + MM_SRC.format(dt="i8", acc="i32"))
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    prog = pl.program(ns["mm"], ns["idle"], name="mm_i8")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    res = run_dsl(prog, dict(a=a, b=b, c=np.zeros((16, 16), np.int32)), platform=platform)
    np.testing.assert_array_equal(res.outputs["c"], a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_applying_work_per_instruction_changes_nothing_but_when(platform, monkeypatch):
    from ptopipe.driver.loader import load_scenarios
    sc = load_scenarios(os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py"))[0]
    ref, _ = sc.run("default", platform=platform)
    monkeypatch.setattr(ptopipe.sim.core, "SYNC_EVERY", 1)
    got, _ = sc.run("default", platform=platform)
    assert got.summary.cycles == ref.summary.cycles
    assert {n: c["instructions"] for n, c in got.summary.cores.items()} == \
        {n: c["instructions"] for n, c in ref.summary.cores.items()}
    np.testing.assert_array_equal(got["out"], ref["out"])


# -- pto-isa's implicit UB scratch on A2A3 ------------------------------------------------------
def _row_expand_near_the_top(row_major: bool):
    def k():
        x = Tile(TileType.Vec, float32, 64, 128, addr=0x0)
        # (a row-major per-row operand is a 32-byte block per row: pto-isa's mode 2)
        m = Tile(TileType.Vec, float32, 64, 8 if row_major else 1, addr=0x8000,
                 blayout=BLayout.RowMajor if row_major else BLayout.ColMajor)
        y = Tile(TileType.Vec, float32, 64, 128, addr=0x28000)     # [0x28000, 0x30000)
        TEXPANDS(x, 1.0)
        TEXPANDS(m, 0.5)
        TROWEXPANDSUB(y, x, m)  # scratch
    return k


def _per_row(blayout, cols, valid_cols):
    def k():
        x = Tile(TileType.Vec, float32, 8, 32, addr=0x0)
        m = Tile(TileType.Vec, float32, 8, cols, valid_cols=valid_cols, addr=0x1000, blayout=blayout)
        y = Tile(TileType.Vec, float32, 8, 32, addr=0x2000)
        TEXPANDS(x, 1.0)
        TEXPANDS(m, 0.5)
        TROWEXPANDSUB(y, x, m)  # per-row
    return k


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_row_expands_per_row_operand_has_the_columns_its_layout_reads(platform):
    """pto-isa reads a RowMajor per-row operand as a 32-byte block per row and a column-major
    one as one value per row, and asserts the valid columns fit (TRowExpand*: "invalid src1
    shape"): a RowMajor [8, 8] tile of one valid column is refused at the op, not read as a
    column; a DN column and a whole RowMajor block run."""
    k = _per_row(BLayout.RowMajor, 8, 1)
    with pytest.raises(KernelError) as ei:
        run_aiv(k, platform)
    assert "has 1 valid column, but pto-isa reads a RowMajor one as a 32-byte block" in ei.value.what, ei.value.what
    assert_at(ei.value, k, "per-row")
    run_aiv(_per_row(BLayout.ColMajor, 1, 1), platform)
    run_aiv(_per_row(BLayout.RowMajor, 8, 8), platform)


def test_row_expand_through_the_a2a3_ub_scratch_is_reported_at_the_op():
    """pto-isa's A2A3 TROWEXPAND* with a column-major [M, 1] operand computes through
    UB[TMP_UB_OFFSET = 184 KiB, 192 KiB): a tile there would be overwritten."""
    k = _row_expand_near_the_top(row_major=False)
    with pytest.raises(KernelError) as ei:
        run_aiv(k, "a2a3")
    e = ei.value
    assert e.what == ("TROWEXPANDSUB with a column-major per-row operand computes through UB[0x2e000, "
                      "0x30000) on A2A3 (pto-isa's TMP_UB_OFFSET scratch), which Vec tile float32 "
                      "64x128 @AIV0.UB[0x28000] overlaps: its bytes there are overwritten"), e.what
    assert "below 0x2e000" in e.fix
    assert_at(e, k, "scratch")
    run_aiv(k, "a5")                                           # A5 has no such scratch
    run_aiv(_row_expand_near_the_top(row_major=True), "a2a3")  # nor a row-major operand
