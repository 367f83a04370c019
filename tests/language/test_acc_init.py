"""A zero-initialised accumulator, as pypto spells it: ``acc = pl.create(shape, dtype,
space=pl.Acc)`` (pypto's tile.create: storage no instruction has written) and
``pl.matmul_acc(acc, a, b, init_cond=(k == 0))``, which overwrites the accumulator where the
condition holds (TMATMUL) and accumulates elsewhere (TMATMUL_ACC) - the branch pypto's code
generator writes.  A K-loop GEMM with no peeled first block matches numpy on both platforms
and protocols, and is written as that branch in C++ and PTO-AS (which ptoas takes and
ptopipe's .pto runner runs); reading a created accumulator before a step overwrites it, a
move into Acc, a Vec accumulator and a created Vec tile are errors at their operand whose
fix names the spelling above."""
import os
import subprocess

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError
from ptopipe.codegen import write_cpp, write_pto
from ptopipe.codegen.cpp_origin import strip_origins
from ptopipe.driver.pto import static_verdict
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run

M, KT, NK, N = 16, 16, 4, 32


@pl.incore(split=pl.TILE_UP_DOWN)
def gemm(a: pl.Tensor[[M, KT * NK], pl.f32], b: pl.Tensor[[KT * NK, N], pl.f32],
         out: pl.Tensor[[M, N], pl.f32]):
    acc = pl.create([M, N], pl.f32, space=pl.Acc)
    for k in pl.range(NK):
        ak = pl.move(pl.load(a, [0, k * KT], [M, KT], space=pl.Mat), space=pl.Left)
        bk = pl.move(pl.load(b, [k * KT, 0], [KT, N], space=pl.Mat), space=pl.Right)
        acc = pl.matmul_acc(acc, ak, bk, init_cond=(k == 0))
    pl.store(pl.move(acc, space=pl.Vec), [0, 0], out)


PROG = pl.program(gemm, name="gemm_zero_acc")


def _args(rng):
    return dict(a=rng.integers(-3, 4, (M, KT * NK)).astype(np.float32),
                b=rng.integers(-3, 4, (KT * NK, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32))


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_k_loop_gemm_from_a_zero_accumulator_matches_numpy(platform, protocol):
    args = _args(np.random.default_rng(5))
    res = run(PROG, with_slot_buffer(PROG, args), platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"])


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_the_first_step_is_tmatmul_in_cpp_and_pto(platform, tmp_path):
    op = compile_program(PROG, platform)
    cube = next(k for k in strip_origins(write_cpp(op, platform)).split("AICORE") if "TMATMUL" in k)
    lines = [ln.strip() for ln in cube.splitlines()]
    k = lines.index("if ((k == 0)) {")
    assert lines[k + 1].startswith("TMATMUL(") and lines[k + 3] == "} else {"
    assert lines[k + 4].startswith("TMATMUL_ACC(")
    assert sum(ln.startswith("TMATMUL") for ln in lines) == 2        # nothing peeled
    pto = write_pto(op, platform)
    body = pto.split("scf.if")[1]
    assert "pto.tmatmul ins(" in body and "pto.tmatmul.acc ins(" in body
    assert "pto.tmov ins(%acc" not in pto          # no Acc -> Acc copy (ptoas has no such path)
    path = tmp_path / "g.pto"
    path.write_text(pto)
    args = _args(np.random.default_rng(6))
    res = ptopipe.run_pto(str(path), inputs=dict(args), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"])
    # the static verifier reads the accumulator nothing wrote before the loop as pl.create's
    # storage and proves the first step overwrites it - and refuses a condition false there
    verdict = static_verdict(str(path), platform, "spec")
    assert verdict["status"] == "verified", verdict
    cond = next(ln for ln in pto.splitlines() if "arith.cmpi eq, %k" in ln).split(", ")[-1].split(" ")[0]
    zero = next(ln for ln in pto.splitlines() if ln.strip().startswith(f"{cond} = arith.constant 0"))
    bad = tmp_path / "g_bad.pto"
    bad.write_text(pto.replace(zero, zero.replace("constant 0", "constant 1")))
    verdict = static_verdict(str(bad), platform, "spec")
    step = next(i for i, ln in enumerate(pto.splitlines(), 1) if "pto.tmatmul.acc ins(" in ln)
    assert verdict["status"] == "failed" and [e.where for e in verdict["found"]] == [f"{bad}:{step}:9"], verdict
    assert verdict["found"][0].what.startswith("init_cond is false for the pto.tmatmul.acc at")
    ptoas = os.environ.get("PTOAS")
    if ptoas:                                      # the real assembler takes it
        arch = {"a2a3": "a3", "a5": "a5"}[platform]
        r = subprocess.run([ptoas, f"--pto-arch={arch}", str(path), "-o", str(tmp_path / "g.cpp")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "TMATMUL_ACC(" in (tmp_path / "g.cpp").read_text(), r.stderr


HEAD = "import ptopipe.language as pl\n\n"
LOOP = HEAD + '''
@pl.aic
def k(a: pl.Tensor[[16, 64], pl.f32], b: pl.Tensor[[64, 32], pl.f32]):
    acc = pl.create([16, 32], pl.f32, space=pl.Acc)
    for k in pl.range(4):
        ak = pl.move(pl.load(a, [0, k * 16], [16, 16], space=pl.Mat), space=pl.Left)
        bk = pl.move(pl.load(b, [k * 16, 0], [16, 32], space=pl.Mat), space=pl.Right)
        {step}
'''


def _ops(src):
    return [o.name for o in pl.parse(src).walk() if o.name.startswith("pl.matmul")
            or o.name == "pl.if"]


def test_a_constant_init_cond_picks_one_instruction_and_an_explicit_branch_is_accepted():
    assert _ops(LOOP.format(step="acc = pl.matmul_acc(pl.matmul(ak, bk), ak, bk, init_cond=True)")) \
        == ["pl.matmul", "pl.matmul"]
    assert _ops(LOOP.format(step="acc = pl.matmul_acc(pl.matmul(ak, bk), ak, bk, init_cond=False)")) \
        == ["pl.matmul", "pl.matmul_acc"]
    both = "if k == 0:\n            acc = pl.matmul(ak, bk)\n        else:\n            " \
           "acc = pl.matmul_acc(acc, ak, bk)"
    assert _ops(LOOP.format(step=both)) == ["pl.if", "pl.matmul", "pl.matmul_acc"]


def _error(src) -> CompileError:
    with pytest.raises(CompileError) as ei:
        pl.parse(src)
    return ei.value


def test_reading_a_created_accumulator_before_it_is_written_is_an_error():
    e = _error(LOOP.format(step="acc = pl.matmul_acc(acc, ak, bk)"))
    assert e.what == ("'acc' is read before anything writes it: pl.create at line 6 makes an "
                      "accumulator no instruction has written (its first step must overwrite it)")
    assert "init_cond=(k == 0)" in e.fix
    assert e.where.endswith(":10:29")              # the accumulator operand
    e = _error(HEAD + '''
@pl.incore
def k(x: pl.Tensor[[16, 32], pl.f32]):
    acc = pl.create([16, 32], pl.f32, space=pl.Acc)
    pl.store(pl.move(acc, space=pl.Vec), [0, 0], x)
''')
    assert e.what.startswith("'acc' is read before anything writes it") and e.where.endswith(":7:22")


@pytest.mark.parametrize("bounds, error", [("0", True), ("2, 2", True), ("3, 1", True), ("1", False),
                                           ("0, 2", False)])
def test_an_accumulator_only_a_loop_of_no_iteration_writes_is_read_unwritten(bounds, error):
    """A K loop whose constant bounds give no iteration leaves the created accumulator as it
    was (and has no first step to judge): the read after it is the error at its operand,
    naming the loop."""
    after = ("    acc = pl.matmul_acc(acc, pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left), "
             "pl.move(pl.load(b, [0, 0], [16, 32], space=pl.Mat), space=pl.Right))\n")
    src = LOOP.format(step="acc = pl.matmul_acc(acc, ak, bk, init_cond=(k == 0))").replace(
        "pl.range(4)", f"pl.range({bounds})") + after
    if not error:
        pl.parse(src)
        return
    e = _error(src)
    assert e.what.endswith("; the loop at line 7 that would write it runs no iteration")
    assert e.where.endswith(f":11:{after.index('(acc') + 2}")


@pytest.mark.parametrize("body, where, what", [
    # the fix this error gave (pl.move(x, space=pl.Acc)) is no path: it names pl.create now
    ("z = pl.full([16, 32], pl.f32, 0.0)\n    acc = pl.matmul_acc(z, ak, bk)", ":9:25",
     "pl.matmul_acc: 'acc' is a Vec tile 16x32 f32; this op needs an Acc tile"),
    ("acc = pl.move(pl.load(x, [0, 0], [16, 32], space=pl.Mat), space=pl.Acc)", ":8:69",
     "pl.move: move from Mat to Acc is not a local path"),
])
def test_an_accumulator_from_elsewhere_is_told_where_acc_tiles_come_from(body, where, what):
    e = _error(HEAD + f'''
@pl.incore
def k(x: pl.Tensor[[16, 32], pl.f32], a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 32], pl.f32]):
    ak = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    bk = pl.move(pl.load(b, [0, 0], [16, 32], space=pl.Mat), space=pl.Right)
    {body}
''')
    assert e.what == what and e.where.endswith(where)
    assert "pl.create(shape, dtype, space=pl.Acc)" in e.fix and "init_cond=(k == 0)" in e.fix
    assert "pl.move(x, space=pl.Acc)" not in e.fix


def test_create_makes_only_accumulators():
    e = _error(HEAD + '''
@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.create([16, 32], pl.f32, space=pl.Vec)
''')
    assert e.what.startswith("pl.create: create makes an Acc accumulator, not a Vec tile")
    assert "pl.full(shape, dtype, value)" in e.fix and e.where.endswith(":6:43")


NESTED = HEAD + '''
@pl.aic
def k(a: pl.Tensor[[16, 64], pl.f32], b: pl.Tensor[[64, 32], pl.f32], n: pl.Scalar[pl.index]):
    {outer}
    for i in pl.range(2):
        {inner}
        for j in pl.range({rng}):
            ak = pl.move(pl.load(a, [0, j * 16], [16, 16], space=pl.Mat), space=pl.Left)
            bk = pl.move(pl.load(b, [j * 16, 0], [16, 32], space=pl.Mat), space=pl.Right)
            acc = pl.matmul_acc(acc, ak, bk, init_cond={cond})
'''
CREATE = "acc = pl.create([16, 32], pl.f32, space=pl.Acc)"


def _nested(cond, rng="4", outer=CREATE, inner="pass"):
    return NESTED.format(cond=cond, rng=rng, outer=outer, inner=inner)


I0 = "i = 0 (the first iteration of the loop at line 7) and "


@pytest.mark.parametrize("cond, rng, first", [
    ("(j == 1)", "4", I0 + "j = 0 (the first iteration of the loop at line 9)"),
    ("(j == 0)", "1, 4", I0 + "j = 1 (the first iteration of the loop at line 9)"),
    ("False", "4", I0 + "j = 0 (the first iteration of the loop at line 9)"),
    ("(j == 0 and i == 1)", "4", I0 + "j = 0 (the first iteration of the loop at line 9)"),
])
def test_an_init_cond_false_on_the_first_step_is_an_error_at_the_step(cond, rng, first):
    """The first step into the accumulator pl.create made before both loops is the one of
    their first iterations: the condition must hold there."""
    e = _error(_nested(cond, rng))
    assert e.what == (f"init_cond={cond if cond.startswith('(') else f'({cond})'} is false at {first}, "
                      "the first step into 'acc': that step accumulates onto the accumulator "
                      "pl.create made at line 6, which nothing has written")
    assert e.where.endswith(":12:19")              # the pl.matmul_acc
    j = first.rsplit(" and ", 1)[1].split(" (")[0].replace(" = ", " == ")
    assert e.fix.startswith(f"make init_cond hold on the first step, e.g. init_cond=({j})")


def test_the_first_step_of_an_accumulator_made_in_the_outer_loop_is_the_inner_loops_first():
    e = _error(_nested("(j == 1)", outer="pass", inner=CREATE))
    assert "is false at j = 0 (the first iteration of the loop at line 9), the first step" in e.what


@pytest.mark.parametrize("cond, rng, outer, inner", [
    ("(j == 0)", "4", CREATE, "pass"),
    ("(j == 0)", "0, 8, 2", CREATE, "pass"),        # a step > 1 from 0
    ("(j < 1)", "4", CREATE, "pass"),
    ("(j == 2)", "2, 4", CREATE, "pass"),            # a loop from 2
    ("(j == 0)", "4", "pass", CREATE),               # a fresh accumulator per outer iteration
    ("(i == 0 and j == 0)", "4", CREATE, "pass"),   # one over both loops
    ("(j == n)", "n, 4", CREATE, "pass"),            # from a run-time start
])
def test_an_init_cond_that_holds_on_the_first_step_compiles(cond, rng, outer, inner):
    assert len(_ops(_nested(cond, rng, outer, inner))) == 3       # pl.if, pl.matmul, pl.matmul_acc


def _verify(src, known=None):
    from ptopipe.passes.verify_pipes import NOT_PROVEN, verify
    warnings = []
    found = verify(pl.parse(src), "a5", warnings, known=known)
    return found, [w for w in warnings if w.startswith(NOT_PROVEN)]


def test_an_init_cond_on_a_run_time_value_is_not_proven_and_checked_with_its_value():
    src = _nested("(j == n)")                        # holds only when n is 0
    found, unproven = _verify(src)
    assert found == [] and len(unproven) == 1
    assert "init_cond of the pl.matmul_acc at" in unproven[0] and ":12:19 on its first step into " \
        "the accumulator created at line 6 depends on values known only at run time" in unproven[0]
    found, unproven = _verify(src, {"n": 1})
    assert unproven == [] and [e.where.endswith(":12:19") for e in found] == [True]
    assert found[0].what.startswith("init_cond is false for the pl.matmul_acc at") and "(with n=1)" in found[0].what
    assert _verify(src, {"n": 0}) == ([], [])
    assert _verify(_nested("(i == 0)", inner=CREATE, outer="pass"))[1]   # the outer variable is free
    assert _verify(_nested("(j == 0)")) == ([], [])
    assert _verify(_nested("(j == n)", "n, 4")) == ([], [])          # the start itself: proven


SCENARIO_FILE = '''
import numpy as np
import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet


def build():
    @pl.incore(split=pl.TILE_UP_DOWN)
    def k_loop(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32], out: pl.Tensor[[16, 32], pl.f32]):
        acc = pl.create([16, 32], pl.f32, space=pl.Acc)
        for k in pl.range(2):
            ak = pl.move(pl.load(a, [0, k * 16], [16, 16], space=pl.Mat), space=pl.Left)
            bk = pl.move(pl.load(b, [k * 16, 0], [16, 32], space=pl.Mat), space=pl.Right)
            acc = pl.matmul_acc(acc, ak, bk, init_cond=(k == 1))
        pl.store(pl.move(acc, space=pl.Vec), [0, 0], out)
    return pl.program(k_loop, name="k_loop")


KERNELS = KernelSet(build)


def make_args(rng):
    args = dict(a=np.ones((16, 32), np.float32), b=np.ones((32, 32), np.float32), out=np.zeros((16, 32), np.float32))
    return with_slot_buffer(KERNELS.source(**args), args)


SCENARIO = ptopipe.Scenario("k_loop", KERNELS.aic, KERNELS.aiv, make_args, lambda args, **_: {"out": args["a"] @ args["b"]})
'''


def test_check_of_a_kernel_the_compiler_refuses_says_it_never_ran(tmp_path, capsys):
    from ptopipe.cli import main
    f = tmp_path / "k.py"
    f.write_text(SCENARIO_FILE)
    assert main(["check", str(f), "--schedules", "2"]) == 1
    out, err = capsys.readouterr()
    assert ": CompileError before it ran: the compiler refuses it" in out, out
    assert "no schedule ran: the kernel does not compile" in err and "every run reproduces it" not in err
    assert err.count("\n  at ") == 1 and err.count("\n  fix: ") == 1, err     # said once
