"""Optimization remarks (``ptopipe compile --remarks``): the Remark type and its collector,
and the exact remark each pass makes, at its line, on small kernels (FileCheck style: the
whole stderr of a compile is compared line for line)."""
import importlib.util
import pathlib
import textwrap

import pytest

import ptopipe.language as pl

from ptopipe.cli import main as cli_main
from ptopipe.ir.vocab import Loc
from ptopipe.passes import PassContext, Remark, RemarkKind, Remarks, compile_program
from ptopipe.passes.remarks import remarks_of

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(rel):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SOURCE = textwrap.dedent('''\
    import ptopipe.language as pl


    @pl.incore(split=pl.TILE_UP_DOWN)
    def one_trip(x: pl.Tensor[[16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
                 out: pl.Tensor[[16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        o0 = pl.full([16, 16], pl.f32, 0.0)
        for i, (o,) in pl.range(1, init_values=(o0,)):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
            pv = pl.move(pl.matmul(pl.move(pl.muls(s, 0.5), space=pl.Left), w_r), space=pl.Vec)
            o1 = pl.yield_(pl.add(o, pv))
        pl.store(o1, [0, 0], out)


    @pl.incore(split=pl.TILE_UP_DOWN)
    def held(x: pl.Tensor[[16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
             out: pl.Tensor[[16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        x_l = pl.move(pl.load(x, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        s = pl.move(pl.matmul(x_l, w_r), space=pl.Vec)
        o0 = pl.full([16, 16], pl.f32, 0.0)
        for i, (o,) in pl.range(2, init_values=(o0,)):
            t = pl.move(pl.matmul(x_l, w_r), space=pl.Vec)
            o1 = pl.yield_(pl.add(pl.add(o, t), s))
        pl.store(pl.add(o1, s), [0, 0], out)


    @pl.incore(split=pl.TILE_UP_DOWN)
    def inside(x: pl.Tensor[[16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
               out: pl.Tensor[[16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        x_l = pl.move(pl.load(x, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        s = pl.move(pl.matmul(x_l, w_r), space=pl.Vec)
        o0 = pl.full([16, 16], pl.f32, 0.0)
        for i, (o, q) in pl.range(3, init_values=(o0, o0)):
            o_new = pl.add(o, s)
            q_new = pl.add(q, pl.sub(o_new, o))
            o1, q1 = pl.yield_(o_new, q_new)
        pl.store(pl.add(o1, q1), [0, 0], out)


    ONE_TRIP = pl.program(one_trip)
    HELD = pl.program(held)
    INSIDE = pl.program(inside)
    ''')

MISSED = [
    "9:5: remark: [skew-push-ahead] missed: AIC loop not skewed: it has a pl.tpop before its "
    "last pl.tpush at line 12",
    "9:5: remark: [skew-push-ahead] missed: AIV loop not skewed: it has loop-carried values",
    "9:5: remark: [pipeline-cross-core-loops] missed: loop not pipelined: it runs 1 iteration, "
    "fewer than 2",
    "22:5: remark: [insert-tfree] missed: TFREE of %s not right after its last use: a later "
    "TPOP of its ring, at line 25, is freed first inside a loop / branch; the tile is copied "
    "(a Vec -> Vec pl.move) and its slot freed at once",
    "24:5: remark: [skew-push-ahead] missed: AIC loop not skewed: nothing is popped after its "
    "last pl.tpush (no round trip to overlap)",
    "24:5: remark: [skew-push-ahead] missed: AIV loop not skewed: it has loop-carried values",
    "24:5: remark: [pipeline-cross-core-loops] missed: loop not pipelined: no core waits for a "
    "round trip in an iteration (nothing to overlap)",
    "35:5: remark: [insert-tfree] missed: TFREE of %s not right after its last use: that use is "
    "inside the pl.for at line 37, so the slot is held until it ends",
]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("remarks") / "remark_kernels.py"
    path.write_text(SOURCE)
    return str(path)


def _remarks(capsys, *argv) -> list:
    capsys.readouterr()
    assert cli_main(["compile", *argv]) == 0
    return capsys.readouterr().err.splitlines()


def test_compile_remarks_say_what_each_pass_left_alone(kernels, capsys):
    assert _remarks(capsys, kernels, "--remarks") == [f"{kernels}:{line}" for line in MISSED]


@pytest.mark.parametrize("cwd, given, shown", [
    ("", "examples/dsl/s1_cv_split.py", "examples/dsl/s1_cv_split.py"),
    ("examples", "../examples/dsl/s1_cv_split.py", "dsl/s1_cv_split.py"),        # (as an error shows it)
])
def test_remarks_name_the_file_as_the_user_gave_it(cwd, given, shown, capsys, monkeypatch):
    # they printed the absolute path (/.../examples/../examples/dsl/...) where errors print it relative
    monkeypatch.chdir(ROOT / cwd)
    err = _remarks(capsys, given, "--remarks")
    assert err and all(e.startswith(f"{shown}:") for e in err), err


def test_no_remarks_unless_asked(kernels, capsys):
    assert _remarks(capsys, kernels) == []


def test_remarks_all_adds_what_the_passes_did(capsys):
    """The MLP chain: the K-loop in Acc with a peeled first block is pipelined, its first
    copies of stage 0 above the peeled round trip."""
    err = _remarks(capsys, "benchmarks/mlp_chain_kernel.py", "--remarks=all")
    applied = [e.split(": remark: ") for e in err if "] applied:" in e]
    assert [(where.rsplit(":", 2)[1], what) for where, what in applied] == [(
        "37", "[pipeline-cross-core-loops] applied: loop pipelined: stage 0 runs 2 iterations "
        "ahead (cut: AIC before line 40); its first stage 0 goes above the round trip before "
        "the loop")]
    assert any("] missed:" in e for e in err)


def test_remark_renders_and_filters():
    rs = Remarks()
    rs.missed("p", Loc("k.py", 3, 5), "left alone")
    rs.applied("p", None, "done")
    rs.missed("p", Loc("k.py", 3, 5), "left alone")            # said once
    assert [r.render() for r in rs] == ["k.py:3:5: remark: [p] missed: left alone",
                                        "<unknown>: remark: [p] applied: done"]
    assert [r.kind for r in rs.select("missed")] == [RemarkKind.MISSED]
    assert len(rs.select("all")) == 2
    assert Remark("p", RemarkKind.ANALYSIS, None, "x") in [Remark("p", RemarkKind.ANALYSIS, None, "x")]


def test_remarks_are_collected_per_compile(kernels):
    """compile_program hands its Remarks to the passes; a pass run without a context keeps
    none; two compiles do not share remarks."""
    from ptopipe.driver.loader import load_module
    mod = load_module(kernels)
    a, b = Remarks(), Remarks()
    compile_program(mod.ONE_TRIP, "a2a3", remarks=a)
    compile_program(mod.INSIDE, "a5", remarks=b)
    assert {r.loc.line for r in a} == {9} and {r.loc.line for r in b} == {35, 38}
    (rot,) = b.select("all")[1:]
    assert rot.render() == (f"{kernels}:38:9: remark: [allocate-memory] applied: pl.add result "
                            "o_new gets 2 buffers, used in turn: the loop still reads an older "
                            "one when the op runs again")
    assert isinstance(PassContext().remarks, Remarks)
    dropped = remarks_of(None)
    dropped.missed("p", None, "x")
    assert len(dropped) == 0


@pl.incore(split=pl.TILE_UP_DOWN)
def _odd(x: pl.Tensor[[3, 64], pl.f32], out: pl.Tensor[[3, 64], pl.f32]):
    pl.store(pl.muls(pl.load(x, [0, 0], [3, 64]), 2.0), [0, 0], out)


def test_notes_of_expand_mixed_verify_pipes_and_allocate_memory_are_remarks(monkeypatch):
    """A Vector-only function that does not halve (kept whole: not split); a kernel
    VerifyPipes cannot explore in its step budget; a kernel with manual events (no memory
    sharing) and a tile a loop keeps (several buffers)."""
    from ptopipe.passes import pipe_paths
    rs = Remarks()
    compile_program(pl.program(_odd, name="odd"), "a2a3", remarks=rs)
    (r,) = rs.select("all")
    here = pathlib.Path(__file__).read_text().splitlines()
    assert (r.pass_name, r.kind, r.loc.line) == ("expand-mixed", RemarkKind.MISSED,
                                                 here.index("def _odd(x: pl.Tensor[[3, 64], pl.f32], "
                                                            "out: pl.Tensor[[3, 64], pl.f32]):") + 1)
    assert r.message.startswith("_odd: Vector-only work kept whole on AIV0 (split TILE_UP_DOWN "
                                "does not apply")
    monkeypatch.setattr(pipe_paths, "MAX_STEPS", 1)
    s8 = _load("examples/dsl/s8_manual_sync.py")
    rs = Remarks()
    compile_program(s8.KERNELS.source(**s8.SCENARIO.variants["m16_d1"]), "a2a3", remarks=rs)
    got = sorted((r.pass_name, r.loc.line, r.message.split(":")[0]) for r in rs.select("missed")
                 if r.pass_name in ("allocate-memory", "verify-pipes"))
    src = pathlib.Path(s8.__file__).read_text().splitlines()
    vec = next(k for k, ln in enumerate(src, 1) if ln.lstrip().startswith("def vector("))
    cube = next(k for k, ln in enumerate(src, 1) if ln.lstrip().startswith("def cube("))
    assert got == [("allocate-memory", vec + 6, "the tiles of vector share no memory"),
                   ("allocate-memory", cube + 6, "the tiles of cube share no memory"),
                   ("verify-pipes", vec, "vector not fully verified (more than 1 op steps)"),
                   ("verify-pipes", cube, "cube not fully verified (more than 1 op steps)")], got


def test_a_tfree_inserted_into_the_users_own_kernel_is_an_applied_remark():
    """InsertTfree frees what a hand-written kernel pops and never frees (its source, run as
    written, leaks): the remark names the TPOP; a kernel that frees its ring gets none."""
    from pass_kernels import c2v_pair
    cube, vector = c2v_pair()                   # (frees its ring: pl.TFREE(buf))
    r = Remarks()
    compile_program(pl.program(cube, vector), "a2a3", remarks=r)
    assert not [x for x in r if x.pass_name == "insert-tfree" and x.kind is RemarkKind.APPLIED]

    @pl.aiv
    def vec(out: pl.Tensor[[32, 32], pl.f32], fifo: pl.Tensor[[4096], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(2):
            part = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.store(pl.adds(part, 1.0), [i * 16 + sub * 8, 0], out)

    @pl.aic
    def cub(a: pl.Tensor[[32, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32], fifo: pl.Tensor[[4096], pl.u8]):
        pbuf = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=pbuf.base, v2c_consumer_buf=0,
                               slot_num=2)
        b_l0 = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            a_l0 = pl.move(pl.load(a, [i * 16, 0], [16, 32], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(a_l0, b_l0), pbuf, split=pl.TILE_UP_DOWN)

    r = Remarks()
    compile_program(pl.program(cub, vec), "a2a3", remarks=r)
    (got,) = [x for x in r if x.pass_name == "insert-tfree" and x.kind is RemarkKind.APPLIED]
    at = pathlib.Path(__file__).read_text().splitlines()[got.loc.line - 1]
    assert at.strip().startswith("part = pl.TPOP(buf") and got.loc.file == __file__
    assert "vec frees none of its C2V ring's slots itself" in got.message


MIXED = sorted((ROOT / "examples" / "mixed").glob("*.py"))


@pytest.mark.parametrize("path", MIXED, ids=[p.stem for p in MIXED])
def test_compile_remarks_on_every_mixed_example_name_its_loops(path, capsys):
    """Each mixed example's cross-core loop gets what the loop passes did not do, at the
    ``pl.range`` of the loop, in the compiler's remark form."""
    lines = path.read_text().splitlines()
    err = _remarks(capsys, str(path), "--remarks")
    assert err, f"{path.name}: no remark"
    passes = set()
    for e in err:
        where, what = e.split(": remark: ")
        file, line, _col = where.rsplit(":", 2)
        assert pathlib.Path(file).samefile(path), e
        assert "pl.range(" in lines[int(line) - 1], e
        assert what.startswith("[") and "] missed: " in what, e
        passes.add(what[1:what.index("]")])
    assert "pipeline-cross-core-loops" in passes, err
