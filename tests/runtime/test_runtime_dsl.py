"""The IR runtime: the DSL scenarios (S1, S4, S5) match numpy on A2A3 and A5, DSL kernels
run through ptopipe.run / the CLI, and runtime errors name the DSL source line."""
import importlib.util
import os

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.ir.opdefs import ForOp
from ptopipe import DeadlockError, PtoPipeError
from ptopipe.codegen import write_pto
from ptopipe.passes import compile_program
from ptopipe.runtime import kernels, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DSL = os.path.join(ROOT, "examples", "dsl")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"dsl_example_{name}", os.path.join(DSL, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


S1_VARIANTS = ["default", "f16_lr_d1_m32", "f32_ud_d1_m16", "f16_ud_d4_m64", "f32_lr_d4_m64"]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("variant", S1_VARIANTS)
def test_s1_matches_numpy(platform, variant):
    res = _load("s1_cv_split").SCENARIO.check(variant, platform=platform)
    assert res.summary.pipes[0]["pops"] == 2 * res.summary.pipes[0]["pushes"]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("variant", ["ud", "lr"])
def test_s4_matches_numpy(platform, variant):
    res = _load("s4_both_ways").SCENARIO.check(variant, platform=platform)
    assert {p["slot_num"] for p in res.summary.pipes} == {4}


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_s5_matches_numpy(platform):
    res = _load("s5_subtile_gm").SCENARIO.check(platform=platform)
    assert res.outputs["out"].shape == (3 * 128, 512)


def test_wrong_result_is_detected():
    """The golden comparison can fail: a kernel that adds instead of subtracting."""
    mod = _load("s4_both_ways")
    res, expected = mod.SCENARIO.run("ud")
    assert np.array_equal(res.outputs["out"], expected["out"])
    with pytest.raises(ptopipe.MismatchError):
        ptopipe.compare(res.outputs, {"out": expected["out"] + 1}, 1e-5, 1e-5)


def test_cli_runs_a_dsl_kernel(capsys):
    from ptopipe.cli import main as cli_main
    code = cli_main(["run", os.path.join(DSL, "s4_both_ways.py"), "--platform", "a5", "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "PASS dsl_s4_both_ways[default]" in out.out


# -- a loop-carried accumulator (K-tiled matmul) through the interpreter -----------------
TM, KT, N, NK = 16, 32, 32, 3
SLOT = TM * N * 4


@pl.aiv
def acc_vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=8 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    t = pl.TPOP(buf, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
    o = t * 2.0
    pl.TFREE(buf)
    pl.store(o, [pl.get_subblockid() * (TM // 2), 0], out)


@pl.aic
def acc_cube(a: pl.Tensor[[TM, NK * KT], pl.f32], b: pl.Tensor[[NK * KT, N], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    peer = pl.import_peer_buffer(name="ring", peer_func=acc_vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0)
    a0 = pl.move(pl.load(a, [0, 0], [TM, KT], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [KT, N], space=pl.Mat), space=pl.Right)
    acc = pl.matmul(a0, b0)
    for k in pl.range(1, NK):
        ak = pl.move(pl.load(a, [0, k * KT], [TM, KT], space=pl.Mat), space=pl.Left)
        bk = pl.move(pl.load(b, [k * KT, 0], [KT, N], space=pl.Mat), space=pl.Right)
        acc = pl.matmul_acc(acc, ak, bk)
    pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)


def test_loop_carried_accumulator_runs():
    prog = pl.program(acc_cube, acc_vec, name="kacc")
    loop = [o for o in prog.functions[0].body if o.is_a(ForOp)][0]
    assert [v.name for v in loop.body.args[1:]] == ["acc_1"] and loop.results[0].name == "acc_3"
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (TM, NK * KT)).astype(np.float32)
    b = rng.integers(-3, 4, (NK * KT, N)).astype(np.float32)
    for plat in ("a2a3", "a5"):
        res = run(prog, dict(a=a, b=b, out=np.zeros((TM, N), np.float32),
                             fifo=ptopipe.gm_buffer(8 * SLOT)), platform=plat)
        assert np.array_equal(res.outputs["out"], 2 * (a @ b))


# -- runtime errors name the DSL line -----------------------------------------------------
def _lines_of(fn, needle):
    import inspect
    src, start = inspect.getsourcelines(fn.pyfunc)
    return [start + i for i, ln in enumerate(src) if needle in ln]


@pl.aiv
def greedy_vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=8 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    for i in pl.range(3):
        t = pl.TPOP(buf, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # POP-LINE
        pl.TFREE(buf)


@pl.aic
def short_cube(a: pl.Tensor[[TM, KT], pl.f32], b: pl.Tensor[[KT, N], pl.f32],
               fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    peer = pl.import_peer_buffer(name="ring", peer_func=greedy_vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0)
    a0 = pl.move(pl.load(a, [0, 0], [TM, KT], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [KT, N], space=pl.Mat), space=pl.Right)
    for i in pl.range(2):
        acc = pl.matmul(a0, b0)
        pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)


def _args():
    return dict(a=np.ones((TM, KT), np.float32), b=np.ones((KT, N), np.float32),
                out=np.zeros((TM, N), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_deadlock_names_the_dsl_line(platform):
    """The Vector kernel pops 3 tiles but the Cube pushes 2: the third TPOP can never
    complete, and the report names that DSL line."""
    prog = pl.program(short_cube, greedy_vec, name="deadlock")
    with pytest.raises(DeadlockError) as ei:
        run(prog, _args(), platform=platform)
    (line,) = _lines_of(greedy_vec, "# POP-LINE")
    assert f"test_runtime_dsl.py:{line}:" in str(ei.value)


@pl.aiv
def leaky_vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=8 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    for i in pl.range(2):
        t = pl.TPOP(buf, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # LEAK-LINE
        pl.store(t, [pl.get_subblockid() * (TM // 2), 0], out)


@pl.aic
def short_cube2(a: pl.Tensor[[TM, KT], pl.f32], b: pl.Tensor[[KT, N], pl.f32],
                fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    peer = pl.import_peer_buffer(name="ring", peer_func=leaky_vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0)
    a0 = pl.move(pl.load(a, [0, 0], [TM, KT], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [KT, N], space=pl.Mat), space=pl.Right)
    for i in pl.range(2):
        acc = pl.matmul(a0, b0)
        pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_missing_tfree_names_the_dsl_tpop_line(platform):
    prog = pl.program(short_cube2, leaky_vec, name="leak")
    with pytest.raises(PtoPipeError) as ei:
        run(prog, _args(), platform=platform)
    (line,) = _lines_of(leaky_vec, "# LEAK-LINE")
    assert f"test_runtime_dsl.py:{line}:" in str(ei.value)
    assert "TFREE" in str(ei.value)


def test_bad_argument_shape_is_reported_at_the_kernel():
    prog = pl.program(short_cube, greedy_vec, name="args")
    args = _args()
    args["a"] = np.ones((TM, KT + 1), np.float32)
    with pytest.raises(ptopipe.ConfigError, match="declares pl.Tensor"):
        run(prog, args)


def test_a_missing_argument_says_to_give_it_in_args_or_make_args():
    args = _args()
    del args["a"]
    with pytest.raises(ptopipe.ConfigError) as ei:
        run(pl.program(short_cube, greedy_vec, name="args"), args)
    assert ei.value.what == "kernel short_cube needs argument 'a'"
    assert "to the run's args (a kernel file's Scenario: to the dict its make_args returns)" in ei.value.fix


def test_a_pl_kernel_on_several_blocks_is_refused_at_its_function():
    # no pl.get_block_idx: N blocks would each do block 0's work on one GM (the race checker's
    # fix - offset by get_block_idx() - is one the kernel cannot follow)
    @pl.aiv
    def copy(x: pl.Tensor[[16, 32], pl.f32], out: pl.Tensor[[16, 32], pl.f32]):
        pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], out)
    x = np.ones((16, 32), np.float32)
    with pytest.raises(ptopipe.ConfigError) as ei:
        run(pl.program(copy), dict(x=x, out=np.zeros_like(x)), blocks=2)
    assert ei.value.what.startswith("pl kernel 'copy' runs on 2 blocks, but a pl kernel reads no block index")
    assert ei.value.where == str(copy.ir.loc) and "--blocks 1" in ei.value.fix
    run(pl.program(copy), dict(x=x, out=np.zeros_like(x)), blocks=1)


SLOT16 = 16 * 16 * 4


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_run_names_a_reassigned_tile_by_its_source_name(platform):
    # the second `p = pl.TPOP(...)` is the SSA value p_1: the use after free says 'p'
    @pl.aiv
    def vec(out: pl.Tensor[[16, 16], pl.f32], fifo: pl.Tensor[[2 * SLOT16], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=2 * SLOT16, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT16, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        p = pl.TPOP(buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        pl.TFREE(buf)
        p = pl.TPOP(buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        pl.TFREE(buf)
        pl.store(pl.adds(p, 1.0), [sub * 8, 0], out)

    @pl.aic
    def cube(x: pl.Tensor[[16, 16], pl.f32], fifo: pl.Tensor[[2 * SLOT16], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT16, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=2)
        x1 = pl.load(x, [0, 0], [16, 16], space=pl.Mat)
        acc = pl.matmul(pl.move(x1, space=pl.Left), pl.move(x1, space=pl.Right))
        pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)
        pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)

    with pytest.raises(PtoPipeError) as ei:
        run(pl.program(cube, vec), dict(x=np.ones((16, 16), np.float32), out=np.zeros((16, 16), np.float32),
                                        fifo=ptopipe.gm_buffer(2 * SLOT16)), platform=platform)
    assert ei.value.what.startswith("use after free: Vec tile 'p' float32 8x16"), ei.value.what


def test_an_argument_of_the_wrong_kind_and_an_empty_program_say_what_to_pass():
    @pl.aiv
    def scale(x: pl.Tensor[[16, 32], pl.f32], s: pl.Scalar[pl.f32]):
        pl.store(pl.muls(pl.load(x, [0, 0], [16, 32]), s), [0, 0], x)
    x = np.ones((16, 32), np.float32)
    with pytest.raises(ptopipe.ConfigError) as ei:
        run(pl.program(scale), dict(x=x.tolist(), s=2.0))
    assert "must be a numpy array" in ei.value.what and ei.value.fix.startswith("pass a numpy array")
    with pytest.raises(ptopipe.ConfigError) as ei:
        run(pl.program(scale), dict(x=x, s=[2.0]))
    assert "must be a scalar" in ei.value.what and ei.value.fix.startswith("pass a Python or numpy number")
    @pl.aiv(split=pl.TILE_NO_SPLIT)
    def times(x: pl.Tensor[[16, 32], pl.f32], n: pl.Scalar[pl.i32]):
        for i in pl.range(n):
            pl.store(pl.adds(pl.load(x, [0, 0], [16, 32]), 1.0), [0, 0], x)
    with pytest.raises(ptopipe.ConfigError) as ei:          # pl.range(2.5) ran 2 iterations
        run(pl.program(times), dict(x=x, n=2.5))
    assert ei.value.what == "argument 'n' of times is the float 2.5 but the kernel declares pl.Scalar[pl.i32], " \
                            "an integer"
    assert run(pl.program(times), dict(x=x.copy(), n=np.int64(2))).outputs["x"][0, 0] == 3.0
    with pytest.raises(ptopipe.CompileError) as ei:
        pl.program()
    assert ei.value.fix == "pass the @pl kernels: pl.program(cube, vector)" and ei.value.where


def test_a_pl_kernel_given_as_a_cores_function_is_refused_where_it_is_given():
    """A @pl kernel is compiled from its source, not called: given to a Scenario or ptopipe.run
    as a core's function it is a ConfigError at that line naming the KernelSet to use, not a
    "called from plain Python" error with no place when the run calls it."""
    x = np.ones((16, 32), np.float32)
    with pytest.raises(ptopipe.ConfigError) as ei:
        ptopipe.Scenario("k", None, _lone_add, lambda rng: dict(x=x, y=x), lambda args: {})  # <- scenario
    assert ei.value.what == ("scenario 'k': aiv is the @pl.aiv kernel '_lone_add', which ptopipe compiles from "
                             "its source: a run takes the program's kernels from a KernelSet")
    assert "KernelSet(pl.program(_lone_add, ...))" in ei.value.fix
    from markers import line_of
    assert ei.value.where == f"{__file__}:{line_of(test_a_pl_kernel_given_as_a_cores_function_is_refused_where_it_is_given, '<- scenario')}"
    for aic, aiv in ((_lone_add, None), (None, (_lone_add, None))):
        with pytest.raises(ptopipe.ConfigError) as ei:
            ptopipe.run(aic=aic, aiv=aiv, args=dict(x=x, y=x))
        assert "the @pl.aiv kernel '_lone_add', which ptopipe compiles from its source" in ei.value.what


def test_kernels_returns_callables_for_ptopipe_run():
    prog = pl.program(short_cube, greedy_vec, name="k")
    aic, aiv = kernels(prog)
    with pytest.raises(DeadlockError):
        ptopipe.run(aic=aic, aiv=aiv, args=_args())


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cast_f16_to_i8_wraps_as_pto_isa_default(platform):
    """pl.cast is TCVT without a SaturationMode: f16 -> i8 is one of pto-isa's default-OFF
    pairs, so a value past int8 keeps its low bits (200.0 -> -56), as the device's does."""
    @pl.aiv
    def cast_vec(x: pl.Tensor[[1, 32], pl.f16], q: pl.Tensor[[1, 32], pl.i8]):
        t = pl.load(x, [0, 0], [1, 32])
        pl.store(pl.cast(t, pl.i8), [0, 0], q)

    x = np.array([200, -200, 300, 127.5, 128, -129, 1000, 3] * 4, np.float16).reshape(1, 32)
    res = run(pl.program(cast_vec, name="cast"), dict(x=x, q=np.zeros((1, 32), np.int8)), platform=platform)
    np.testing.assert_array_equal(res.outputs["q"], np.rint(x.astype(np.float64)).astype(np.int64).astype(np.int8))
    assert res.outputs["q"][0, 0] == -56


def _refusing_builder(n):
    """A kernel builder that refuses its parameters (its own Python exception)."""
    if n > 2:
        raise ValueError(f"n={n} is more than this kernel's ring holds")

    @pl.aiv
    def vector(out: pl.Tensor[[8, 8], pl.f32]):
        pl.store(pl.full([8, 8], pl.f32, 1.0), [0, 0], out)

    return pl.program(vector, name="refusing")


def test_an_exception_of_the_kernel_builder_is_told_as_the_builders_not_a_cores(tmp_path, capsys):
    """The builder of a KernelSet runs inside the first kernel that needs its program: its own
    exception keeps its type and is said to come from the builder with its arguments, not
    from the kernel ``dsl_aic`` on a core (a name the user never wrote)."""
    import sys
    from ptopipe.cli import main as cli_main
    from ptopipe.runtime import KernelSet
    ks = KernelSet(_refusing_builder)
    with pytest.raises(ValueError) as ei:
        ptopipe.run(ks.aic, ks.aiv, dict(out=np.zeros((8, 8), np.float32), n=3))
    said = "the kernel builder _refusing_builder(n=3), which makes the pl program of these arguments"
    assert ei.value.ptopipe_raised_by == said
    if sys.version_info >= (3, 11):
        assert ei.value.__notes__ == [f"(raised by {said} in a ptopipe run)"]
    res = ptopipe.run(ks.aic, ks.aiv, dict(out=np.zeros((8, 8), np.float32), n=2))     # accepted: runs
    np.testing.assert_array_equal(res.outputs["out"], np.ones((8, 8), np.float32))
    k = tmp_path / "k_builder.py"
    k.write_text("import numpy as np\nimport ptopipe\nimport ptopipe.language as pl\n"
                 "from ptopipe.runtime import KernelSet\n\n\ndef build(n):\n"
                 "    raise ValueError('no kernel for n=%d' % n)\n\n\n"
                 "KS = KernelSet(build)\nSCENARIO = ptopipe.Scenario('k', KS.aic, KS.aiv, "
                 "lambda rng: dict(n=5), lambda a, **_: {})\n")
    assert cli_main(["run", str(k)]) == 1
    err = capsys.readouterr().err
    assert "error: ValueError: no kernel for n=5" in err and f"at {k}:8" in err, err
    assert "raised by the kernel builder build(n=5)" in err and "dsl_aic" not in err, err


@pl.aiv
def _lone_add(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f32]):
    pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], y, atomic=pl.ATOMIC_ADD)


@pl.aiv
def _lone_halves(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f32]):
    r = pl.get_subblockid() * 8
    pl.store(pl.load(x, [r, 0], [8, 32]), [r, 0], y, atomic=pl.ATOMIC_ADD)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_lone_vector_kernel_runs_on_aiv0_unless_it_reads_its_subblock(platform):
    """A hand-written @pl.aiv kernel with no Cube kernel beside it is a Vector-only launch: it
    runs on AIV0 alone (isa.launch.lone_vector_lanes), as its .pto and C++ run - both Vector
    cores running it added x into y twice - unless it reads pl.get_subblockid() (each core
    then takes its half)."""
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    for kernel, aiv1 in ((_lone_add, 0), (_lone_halves, 2)):
        prog = pl.program(kernel, name="lone")
        res = run(prog, dict(x=x, y=np.ones_like(x)), platform=platform)
        np.testing.assert_array_equal(res.outputs["y"], x + 1)
        assert res.summary.cores["AIV1"]["instructions"] == aiv1
        text = write_pto(compile_program(prog, platform), platform)
        got = ptopipe.run_pto(text=text, inputs=dict(x=x, y=np.ones_like(x)), platform=platform)
        np.testing.assert_array_equal(got.outputs["y"], x + 1)
