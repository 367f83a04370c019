"""The PassManager (registry, requirements, verification after every pass, textual
pipelines, print-after-all, round trip), ``ptopipe compile``, and run/check compiling a
file with mixed @pl.incore functions first."""
import io
import os
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.cli import main as cli_main
from ptopipe.errors import CompileError
from ptopipe.ir import FunctionKind, TileValueType, parse_ir, structural_equal
from ptopipe.passes import (REGISTRY, IRProperty, PassContext, PassInfo, PassManager, compile_program,
                            default_pipeline, manager, register)
from ptopipe.passes.util import functions
from ptopipe.runtime import KernelSet

import pass_kernels
from pass_kernels import TM, N, c2v_args, c2v_golden, c2v_pair, unverified

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dsl")


@pytest.fixture
def registry():
    """Restore the pass registry after a test that registers passes."""
    saved = dict(REGISTRY)
    yield REGISTRY
    REGISTRY.clear()
    REGISTRY.update(saved)


def _prog():
    cube, vector = c2v_pair()
    return cube, vector, pl.program(cube, vector, name="pair")


def test_default_pipeline_is_the_registered_passes_in_order():
    assert default_pipeline() == ("expand-mixed", "insert-tfree", "skew-push-ahead",
                                  "pipeline-cross-core-loops", "verify-pipes",
                                  "allocate-memory", "resolve-peers", "allocate-flags",
                                  "lower-platform", "validate")


def test_a_pass_registered_later_runs_by_name(registry):
    seen = []

    def run(program, ctx):
        seen.append(ctx.platform)
        for f in functions(program):
            f.attributes["tagged"] = True
        return program
    register(SimpleNamespace(NAME="expand-mixed", REQUIRED=frozenset(),
                             PRODUCED=frozenset({IRProperty.MIXED_KERNELS_EXPANDED}), run=run))
    assert default_pipeline()[0] == "expand-mixed"
    _c, _v, prog = _prog()
    op = PassManager("expand-mixed,validate", round_trip=True).run(prog.clone(), PassContext("a5"))
    assert seen == ["a5"] and all(f.attributes["tagged"] for f in functions(op))


def test_a_pass_object_given_to_a_pipeline_is_not_registered(registry):
    """Running a pass object leaves the registry as it was: a later pipeline naming it
    does not find it (a pipeline is decided by its caller, not by what ran before)."""
    seen = []
    mine = SimpleNamespace(NAME="tag-functions", REQUIRED=frozenset(), PRODUCED=frozenset(),
                           run=lambda program, ctx: seen.append(ctx.platform) or program)
    before = dict(REGISTRY)
    _c, _v, prog = _prog()
    PassManager([mine, "validate"]).run(prog.clone(), PassContext("a5"))
    assert seen == ["a5"] and REGISTRY == before
    with pytest.raises(CompileError, match="unknown pass 'tag-functions'"):
        PassManager("tag-functions")


def test_register_refuses_what_is_not_a_pass(registry):
    with pytest.raises(CompileError) as ei:
        register(SimpleNamespace(NAME="x"))
    assert "is not a pass" in ei.value.what and "run(program, ctx)" in ei.value.fix


def test_unknown_pass_lists_the_known_ones():
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers,allocate-flag")
    e = ei.value
    assert e.what == "unknown pass 'allocate-flag'"
    assert e.fix == ("did you mean 'allocate-flags'? (the registered passes: allocate-flags, allocate-memory, "
                     "expand-mixed, insert-tfree, "
                     "lower-platform, pipeline-cross-core-loops, resolve-peers, skew-push-ahead, validate, "
                     "verify-pipes)")
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers,nope")
    assert ei.value.fix.startswith("use one of the registered passes: allocate-flags, "), ei.value.fix
    with pytest.raises(CompileError, match="empty pass name"):
        PassManager("resolve-peers,,validate")


def test_requirement_not_produced_earlier():
    with pytest.raises(CompileError) as ei:
        PassManager("lower-platform,resolve-peers,allocate-flags")
    e = ei.value
    assert e.what == ("pass 'lower-platform' requires 'peers-resolved', which no earlier pass of "
                      "the pipeline produces")
    assert e.fix == "run 'resolve-peers' before 'lower-platform'"
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers,lower-platform")
    assert "'flags-allocated'" in ei.value.what and ei.value.fix == \
        "add 'allocate-flags' before 'lower-platform'"
    PassManager("lower-platform", available=("peers-resolved", "flags-allocated"))


def _break_a_tile(program, ctx):
    """Changes the type of the first pl.adds result: the op's typing rule no longer holds."""
    for f in functions(program):
        for op in f.walk():
            if op.name == "pl.adds":
                op.results[0].type = TileValueType((TM, N), "f32", op.results[0].type.space)
                return program
    return program


@pytest.mark.parametrize("each", [True, False], ids=["verify-each", "at-the-end"])
def test_verification_after_each_pass_names_the_pass(registry, each):
    """With verify-each every pass's result is verified; by default the pipeline's result
    is, and when it fails the pipeline runs again verifying after each pass: the same error."""
    register(PassInfo("breaker", _break_a_tile))
    cube, vector, prog = _prog()
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers,breaker,validate", verify_properties=each).run(prog.clone(), PassContext())
    e = ei.value
    assert e.what.startswith("the IR after pass 'breaker' does not verify: adds produces Vec tile 8x32 f32 but the IR says Vec tile 16x32 f32")
    adds = [i for i, ln in enumerate(open(pass_kernels.__file__)
                                      .read().splitlines(), 1) if "pl.adds(" in ln]
    assert e.where.split(":")[1] == str(adds[0])
    assert "this is a bug of pass 'breaker'" in e.fix
    PassManager("resolve-peers,breaker", verify=False).run(prog.clone(), PassContext())


def test_a_clean_pipeline_verifies_its_input_and_its_result_only(monkeypatch):
    seen = []
    monkeypatch.setattr(manager, "verify_ops", lambda program: seen.append(program))
    program = PassManager(verify_properties=False).run(_prog()[2].clone(), PassContext())
    assert len(seen) == 2 and seen[-1] is program
    seen.clear()
    PassManager(verify_properties=True).run(_prog()[2].clone(), PassContext())
    assert len(seen) == 1 + len(PassManager().passes)


def test_a_pass_crashing_on_ir_an_earlier_pass_broke_names_the_earlier_pass(registry):
    def crash(program, ctx):
        raise AttributeError("the IR is not what this pass expects")
    register(PassInfo("breaker", _break_a_tile))
    register(PassInfo("crash", crash))
    with pytest.raises(CompileError) as ei:
        PassManager("breaker,crash", verify_properties=False).run(_prog()[2].clone(), PassContext())
    assert ei.value.what.startswith("the IR after pass 'breaker' does not verify: ")
    with pytest.raises(AttributeError):
        PassManager("crash", verify_properties=False).run(_prog()[2].clone(), PassContext())


def test_the_input_is_verified_first():
    cube, vector, prog = _prog()
    op = prog.clone()
    _break_a_tile(op, None)
    with pytest.raises(CompileError) as ei:
        PassManager().run(op, PassContext())
    assert ei.value.what.startswith("the input program does not verify: adds produces Vec tile 8x32 f32 but the IR says Vec tile 16x32 f32")


def test_a_pass_must_return_the_program(registry):
    register(PassInfo("lost", lambda program, ctx: None))
    with pytest.raises(CompileError, match="pass 'lost' returned None, not a pl.program op"):
        PassManager("lost").run(_prog()[2].clone(), PassContext())


def test_round_trip_mode_catches_what_the_text_cannot_spell(registry):
    def run(program, ctx):
        functions(program)[0].attributes["ids"] = [1, 2]        # parses back as a tuple
        return program
    register(PassInfo("listy", run))
    PassManager("listy").run(_prog()[2].clone(), PassContext())
    with pytest.raises(CompileError) as ei:
        PassManager("listy", round_trip=True).run(_prog()[2].clone(), PassContext())
    assert ei.value.what.startswith("the IR after pass 'listy' does not survive print -> parse: ")
    assert "attribute ids = [1, 2] != (1, 2)" in ei.value.what


def test_print_after_all():
    out = io.StringIO()
    op = PassManager(print_after_all=True, stream=out).run(_prog()[2].clone(), PassContext("a5"))
    text = out.getvalue()
    heads = [ln for ln in text.splitlines() if ln.startswith("// -----//")]
    assert heads == [f"// -----// IR Dump After {n} //----- //" for n in default_pipeline()]
    dumps = text.split("// -----// IR Dump After ")[1:]
    assert structural_equal(parse_ir(dumps[-1].split("\n", 1)[1]), op)
    k = default_pipeline().index("allocate-flags")
    assert "flag_id = 0" not in dumps[k - 1] and "flag_id = 0" in dumps[k]


# -- ptopipe compile --------------------------------------------------------------------------------
def _cli(capsys, *argv):
    rc = cli_main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_compile_prints_the_compiled_ir(capsys):
    path = os.path.join(EXAMPLES, "s4_both_ways.py")
    rc, out, err = _cli(capsys, "compile", path, "--platform", "a5")
    assert rc == 0 and err == ""
    from ptopipe.driver.programs import programs_of
    from ptopipe.driver.loader import load_module
    prog, = programs_of(load_module(path))
    op = compile_program(prog, "a5")
    assert structural_equal(parse_ir(out), op)
    rc, out, err = _cli(capsys, "compile", path, "--emit", "dsl", "--platform", "a2a3")
    assert rc == 0 and err == ""                  # it passes its GM slot buffer: no warning
    again = pl.parse(out)                         # valid pl source, verified
    assert [f.sym_name for f in again.functions] == ["cube", "vector"]


def test_cli_compile_prints_warnings(capsys, tmp_path):
    """A pair that passes no GM slot buffer: on A2A3 both kernels take a new parameter,
    and ``ptopipe compile`` says so on stderr (once per kernel, at its init's line)."""
    src = tmp_path / "nogm.py"
    src.write_text(
        "import ptopipe.language as pl\n"
        "SLOT = 16 * 32 * 4\n"
        "@pl.aiv\n"
        "def vector(out: pl.Tensor[[16, 32], pl.f32]):\n"
        "    buf = pl.reserve_buffer(name='ring', size=2 * SLOT, base=pl.AUTO)\n"
        "    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, 0, c2v_consumer_buf=buf.base, slot_num=2)\n"
        "    t = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)\n"
        "    pl.TFREE(buf)\n"
        "@pl.aic\n"
        "def cube(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32]):\n"
        "    peer = pl.import_peer_buffer(name='ring', peer_func=vector)\n"
        "    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, 0, c2v_consumer_buf=peer.base, slot_num=2)\n"
        "    x = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)\n"
        "    y = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)\n"
        "    pl.TPUSH(pl.matmul(x, y), peer, split=pl.TILE_UP_DOWN)\n"
        "PROGRAM = pl.program(cube, vector, name='nogm')\n")
    rc, _out, err = _cli(capsys, "compile", str(src), "--platform", "a2a3")
    assert rc == 0
    lines = err.splitlines()
    assert lines == [f"warning: {src}:{ln}:5: a2a3: {name!r} initialises its pipe with no "
                     "GM_SLOT_BUFFER, but a2a3 rings live in GM: the kernel now takes a parameter "
                     "'gm_slot_buffer' of 4096 bytes - pass gm_slot_buffer=ptopipe.gm_buffer(4096) "
                     "when running it" for name, ln in (("cube", 12), ("vector", 6))], lines
    rc, _out, err = _cli(capsys, "compile", str(src), "--platform", "a5")
    assert rc == 0 and err == ""


def test_cli_compile_passes_and_print_after_all(capsys):
    path = os.path.join(EXAMPLES, "s1_cv_split.py")
    rc, out, err = _cli(capsys, "compile", path, "--passes", "resolve-peers,allocate-flags",
                        "--print-after-all")
    assert rc == 0
    assert out.count("IR Dump After") == 2 and " ring = " not in out and "flag_id = 0" in out
    rc, out, err = _cli(capsys, "compile", path, "--passes", "resolve-peers,nope")
    assert rc == 1 and out == "" and "Traceback" not in err
    assert "error: CompileError: unknown pass 'nope'\n  at option --passes\n" in err and "fix: use one of" in err
    rc, out, err = _cli(capsys, "compile", path, "--passes", "insert-tfre", "--no-verify")
    assert rc == 1 and "at option --passes\n  fix: did you mean 'insert-tfree'? (the registered passes: " in err, err


MIXED = textwrap.dedent('''
    import numpy as np
    import ptopipe
    import ptopipe.language as pl
    from ptopipe.runtime import KernelSet

    TM, N, SLOT = 16, 32, 2048

    @pl.incore
    def vector(out: pl.Tensor[[2 * TM, N], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):  # mixed
        buf = pl.reserve_buffer(name="ring", size=2 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base,
                               v2c_consumer_buf=0, slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(2):
            part = pl.TPOP(buf, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN,
                           direction=pl.DIR_C2V)
            o = pl.adds(part, 1.0)
            pl.TFREE(buf, direction=pl.DIR_C2V)
            pl.store(o, [i * TM + sub * (TM // 2), 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[2 * TM, N], pl.f32], b: pl.Tensor[[N, N], pl.f32],
             fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        pbuf = pl.import_peer_buffer(name="ring", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=pbuf.base,
                               v2c_consumer_buf=0, slot_num=2)
        b_l0 = pl.move(pl.load(b, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            a_l0 = pl.move(pl.load(a, [i * TM, 0], [TM, N], space=pl.Mat), space=pl.Left)
            acc = pl.matmul(a_l0, b_l0)
            pl.TPUSH(acc, pbuf, split=pl.TILE_UP_DOWN)

    KERNELS = KernelSet(pl.program(cube, vector, name="mixed"))

    def make_args(rng):
        return {"a": rng.integers(-3, 4, (2 * TM, N)).astype(np.float32),
                "b": rng.integers(-3, 4, (N, N)).astype(np.float32),
                "out": np.zeros((2 * TM, N), np.float32), "fifo": ptopipe.gm_buffer(2 * SLOT)}

    SCENARIO = ptopipe.Scenario("mixed", KERNELS.aic, KERNELS.aiv, make_args,
                                lambda args: {"out": args["a"] @ args["b"] + 1})
''')


def test_run_of_a_mixed_file_compiles_first(tmp_path, capsys, registry):
    """run / check / compile a file whose Vector kernel is a pure-Vector @pl.incore function:
    ExpandMixedKernel makes it the AIV kernel, for each platform."""
    path = tmp_path / "mixed.py"
    path.write_text(MIXED)
    for platform in ("a2a3", "a5"):
        rc, out, err = _cli(capsys, "run", str(path), "--platform", platform, "--quiet")
        assert rc == 0 and "PASS mixed[default]" in out, err
        rc, out, err = _cli(capsys, "check", str(path), "--platform", platform, "--schedules", "2")
        assert rc == 0 and "mixed[default]" in out and "FAIL" not in out, (out, err)
    rc, out, err = _cli(capsys, "compile", str(path), "--platform", "a5")
    assert rc == 0 and "kind = #kind.AIV" in out and "#kind.InCore" not in out


def test_kernelset_compiles_mixed_programs_per_platform(registry):
    cube, vector = c2v_pair()
    mixed = unverified(cube, vector, name="m")
    mixed.functions[1].kind = FunctionKind.InCore
    ks = KernelSet(mixed)
    assert ks.source() is mixed
    for platform in ("a2a3", "a5"):
        for protocol in ("spec", "pto-isa"):
            args = c2v_args(np.random.default_rng(3))
            res = ptopipe.run(ks.aic, ks.aiv, args, platform=platform, protocol=protocol)
            np.testing.assert_allclose(res.outputs["out"], c2v_golden(args)["out"])
    assert ks.compiled({}, "a5").ops.functions[1].kind is FunctionKind.AIV


def test_cli_compile_variant(capsys):
    path = os.path.join(EXAMPLES, "s1_cv_split.py")
    rc, out, err = _cli(capsys, "compile", path, "--variant", "f16_lr_d1_m16", "--emit", "dsl")
    assert rc == 0 and "pl.Tensor[[16, 32], pl.f16]" in out and "slot_num=1" in out
    rc, out, err = _cli(capsys, "compile", path, "--variant", "nope")
    assert rc == 1 and "has no variant 'nope'" in err


def test_cli_compile_of_a_file_without_dsl(capsys):
    path = os.path.join(EXAMPLES, "..", "scenarios", "s1_cv_split.py")
    rc, out, err = _cli(capsys, "compile", path)
    assert rc == 1 and "Traceback" not in err
    assert "defines no DSL program" in err


FROM_KERNELS = """
import numpy as np
import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import kernels


def build(M):
    @pl.aiv
    def k(x: pl.Tensor[[M, 16], pl.f32], out: pl.Tensor[[M, 16], pl.f32]):
        pl.store(pl.adds(pl.load(x, [0, 0], [M, 16]), 1.0), [0, 0], out)
    return pl.program(k, name="from_kernels")


AIC, AIV = kernels(build)
SCENARIO = ptopipe.Scenario("fk", AIC, AIV, lambda rng, M=16: dict(x=np.ones((M, 16), np.float32),
                            out=np.zeros((M, 16), np.float32), M=M), lambda a, **_: {"out": a["x"] + 1},
                            {"default": dict(M=16), "m32": dict(M=32)})
"""


def test_cli_compile_and_static_check_find_the_program_behind_a_scenarios_kernels(capsys, tmp_path):
    # `AIC, AIV = kernels(build)` (ptopipe.runtime.kernels) names no KernelSet at module level:
    # the Scenario's kernels lead to it, as `run` finds it
    path = tmp_path / "fk.py"
    path.write_text(FROM_KERNELS)
    rc, out, err = _cli(capsys, "compile", str(path), "--variant", "m32", "--emit", "dsl")
    assert rc == 0, err
    assert "pl.Tensor[[32, 16], pl.f32]" in out
    rc, out, err = _cli(capsys, "check", "--static", str(path))
    assert rc == 0 and "PASS fk[default]" in out, out + err
