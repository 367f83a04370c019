"""PipelineCrossCoreLoops: the loop pairs it software-pipelines (FA and kernels of other
shapes: carried values on either core, a handed-over stage-0 value, scalar trip counts
incl. 0 and 1, one- and two-sided skews, UP_DOWN / LEFT_RIGHT / NO_SPLIT) still match numpy
on both platforms and protocols with the checkers on; the loops it must not touch stay
structurally unchanged; the cut / FIFO / deadlock analysis on event lists."""
import importlib.util
import pathlib

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.ir import print_ir, structural_equal
from ptopipe.passes import FRONT_END, PassContext, PassManager, compile_program
from ptopipe.passes import loop_stages as ls, pipeline_loops
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.isa.explore import explore
from ptopipe.runtime import KernelSet, kernels

from configs import rotated

ROOT = pathlib.Path(__file__).resolve().parents[2]
COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
WITHOUT = tuple(n for n in FRONT_END if n != "pipeline-cross-core-loops")


def _load(rel):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fires(program) -> bool:
    """Whether the pass changed ``program`` (front end with it vs without it)."""
    a = compile_program(program, "a2a3", WITHOUT)
    b = compile_program(program, "a2a3", FRONT_END)
    return not structural_equal(a, b)


def _func_text(op, kind):
    text = print_ir(op)
    start = text.index(f"kind = #kind.{kind}")
    end = text.find("pl.func()", start)
    return text[start:end if end > 0 else len(text)]


def _run(program, args, platform, protocol):
    compiled = compile_program(program, platform, protocol=protocol)   # default pipeline
    aic, aiv = kernels(compiled)
    return ptopipe.run(aic, aiv, with_slot_buffer(compiled, args), platform=platform,
                       protocol=protocol)                               # checkers on


# -- kernels ------------------------------------------------------------------------------
def cube_carried(split=pl.TILE_LEFT_RIGHT, n=4):
    """A top-level loop; the Cube carries an Acc (stage 0: matmul_acc, push); the Vector
    carries O (stage 1).  The Acc is 16 x W: 32 columns under TILE_LEFT_RIGHT (A5's split
    push of an Acc into the Vector cores' UB takes a multiple of 32), else 16."""
    W = 32 if split == pl.TILE_LEFT_RIGHT else 16

    @pl.incore(split=split)
    def k(x: pl.Tensor[[16 * n, 16], pl.f32], w: pl.Tensor[[16, W], pl.f32],
          v: pl.Tensor[[W, W], pl.f32], out: pl.Tensor[[16, W], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, W], space=pl.Mat), space=pl.Right)
        v_r = pl.move(pl.load(v, [0, 0], [W, W], space=pl.Mat), space=pl.Right)
        x0 = pl.move(pl.load(x, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        acc0 = pl.matmul(x0, w_r)
        o0 = pl.full([16, W], pl.f32, 0.0)
        for i, (acc, o) in pl.range(n, init_values=(acc0, o0)):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            acc_new = pl.matmul_acc(acc, xi, w_r)
            s = pl.move(acc_new, space=pl.Vec)
            p = pl.muls(s, 0.5)
            pv = pl.move(pl.matmul(pl.move(p, space=pl.Left), v_r), space=pl.Vec)
            o_new = pl.add(o, pv)
            acc1, o1 = pl.yield_(acc_new, o_new)
        pl.store(o1, [0, 0], out)
    return pl.program(k)


def cube_carried_golden(a, n=4):
    acc = a["x"][:16] @ a["w"]
    o = np.zeros_like(acc)
    for i in range(n):
        acc = acc + a["x"][16 * i:16 * (i + 1)] @ a["w"]
        o = o + (0.5 * acc) @ a["v"]
    return o


def vector_round_trip(split=pl.TILE_NO_SPLIT):
    """The Vector pushes, the Cube answers, the Vector sums the answers (a carried value:
    SkewPushAhead leaves it alone): only the Vector's loop is skewed."""
    @pl.incore(split=split)
    def k(x: pl.Tensor[[48, 16], pl.f32], a: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32]):
        a_l0 = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        z = pl.full([16, 16], pl.f32, 0.0)
        for i, (acc,) in pl.range(3, init_values=(z,)):
            b = pl.move(pl.adds(pl.load(x, [i * 16, 0], [16, 16]), 1.0), space=pl.Right)
            r = pl.move(pl.matmul(a_l0, b), space=pl.Vec)
            acc1 = pl.yield_(pl.add(acc, r))
        pl.store(acc1, [0, 0], out)
    return pl.program(k)


def scalar_trip():
    """Trip count a scalar parameter (0, 1, 3 at run time: guarded); stage 1 uses a
    stage-0 value (g) and the stage-0 view of an early carried value (c)."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def k(x: pl.Tensor[[48, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          v: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32],
          n: pl.Scalar[pl.index]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        v_r = pl.move(pl.load(v, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        o0 = pl.full([16, 16], pl.f32, 0.0)
        c0 = pl.full([16, 16], pl.f32, 1.0)
        for i, (o, c) in pl.range(n, init_values=(o0, c0)):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
            g = pl.muls(s, 0.25)
            c_new = pl.add(c, g)
            pv = pl.move(pl.matmul(pl.move(g, space=pl.Left), v_r), space=pl.Vec)
            o_new = pl.add(pl.add(o, pv), pl.mul(c, g))
            o1, c1 = pl.yield_(o_new, c_new)
        pl.store(pl.add(o1, c1), [0, 0], out)
    return pl.program(k)


def scalar_trip_golden(a):
    o, c = np.zeros((16, 16)), np.ones((16, 16))
    for i in range(a["n"]):
        g = 0.25 * (a["x"][16 * i:16 * (i + 1)] @ a["w"])
        o, c = o + g @ a["v"] + c * g, c + g
    return o + c


def vector_led(trips=5):
    """The Vector starts the round trip (one tile each way an iteration: stage 0 may run
    up to SLOT_NUM - 1 iterations ahead) with an early carried value c and a stage-0 value
    g that stage 1 uses: both handed over, one copy per iteration ahead."""
    @pl.incore(split=pl.TILE_NO_SPLIT)
    def k(x: pl.Tensor[[16 * trips, 16], pl.f32], a: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32]):
        a_l0 = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        o0 = pl.full([16, 16], pl.f32, 0.0)
        c0 = pl.full([16, 16], pl.f32, 1.0)
        for i, (o, c) in pl.range(trips, init_values=(o0, c0)):
            g = pl.muls(pl.load(x, [i * 16, 0], [16, 16]), 0.5)
            c_new = pl.add(c, g)
            r = pl.move(pl.matmul(a_l0, pl.move(g, space=pl.Right)), space=pl.Vec)
            o_new = pl.add(pl.add(o, r), pl.mul(c, g))
            o1, c1 = pl.yield_(o_new, c_new)
        pl.store(pl.add(o1, c1), [0, 0], out)
    return pl.program(k)


def vector_led_golden(a, trips=5):
    o, c = np.zeros((16, 16)), np.ones((16, 16))
    for i in range(trips):
        g = 0.5 * a["x"][16 * i:16 * (i + 1)]
        o, c = o + a["a"] @ g + c * g, c + g
    return o + c


def two_pushes(split=pl.TILE_UP_DOWN):
    """No carried values, start 1, two C2V pushes in the Cube's stage 0, a GM store in the
    Vector's stage 1 (rows of its own iteration)."""
    @pl.incore(split=split)
    def k(x: pl.Tensor[[64, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          w2: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        w2_r = pl.move(pl.load(w2, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(1, 4):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s1 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
            s2 = pl.move(pl.matmul(xi, w2_r), space=pl.Vec)
            p = pl.muls(pl.add(s1, s2), 0.5)
            pv = pl.move(pl.matmul(pl.move(p, space=pl.Left), w_r), space=pl.Vec)
            pl.store(pl.adds(pv, 1.0), [i * 16, 0], out)
    return pl.program(k)


def causal():
    """A nested loop whose trip count is the outer loop variable + 1 (1, 2, 3 at run time:
    guarded, the guard inside the outer loop); each outer iteration stores its rows."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def k(x: pl.Tensor[[48, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[48, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for q in pl.range(3):
            o0 = pl.full([16, 16], pl.f32, 0.0)
            for j, (o,) in pl.range(q + 1, init_values=(o0,)):
                xj = pl.move(pl.load(x, [j * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
                s = pl.move(pl.matmul(xj, w_r), space=pl.Vec)
                pv = pl.move(pl.matmul(pl.move(pl.muls(s, 0.5), space=pl.Left), w_r),
                             space=pl.Vec)
                o1 = pl.yield_(pl.add(o, pv))
            pl.store(o1, [q * 16, 0], out)
    return pl.program(k)


def causal_golden(a):
    w = a["w"].astype(np.float64)
    blocks = [(0.5 * (a["x"][16 * j:16 * (j + 1)] @ w)) @ w for j in range(3)]
    return np.concatenate([sum(blocks[:q + 1]) for q in range(3)])


def _rand(rng, *shape):
    return rng.integers(-3, 4, shape).astype(np.float32) / 4


CASES = {
    "cube_carried_lr": (cube_carried, dict(x=(64, 16), w=(16, 32), v=(32, 32)),
                        lambda a: {"out": cube_carried_golden(a)}),
    "cube_carried_ud": (lambda: cube_carried(pl.TILE_UP_DOWN, 3), dict(x=(48, 16), w=(16, 16),
                                                                       v=(16, 16)),
                        lambda a: {"out": cube_carried_golden(a, 3)}),
    "cube_carried_nosplit": (lambda: cube_carried(pl.TILE_NO_SPLIT, 2),
                             dict(x=(32, 16), w=(16, 16), v=(16, 16)),
                             lambda a: {"out": cube_carried_golden(a, 2)}),
    "causal": (causal, dict(x=(48, 16), w=(16, 16)), lambda a: {"out": causal_golden(a)}),
    "vector_round_trip": (vector_round_trip, dict(x=(48, 16), a=(16, 16)),
                          lambda a: {"out": sum(a["a"] @ (a["x"][16 * i:16 * (i + 1)] + 1)
                                                for i in range(3))}),
    "vector_led": (vector_led, dict(x=(80, 16), a=(16, 16)),
                   lambda a: {"out": vector_led_golden(a)}),
    "two_pushes": (two_pushes, dict(x=(64, 16), w=(16, 16), w2=(16, 16)),
                   lambda a: {"out": np.concatenate(
                       [np.zeros((16, 16))] +
                       [(0.5 * (a["x"][16 * i:16 * (i + 1)] @ (a["w"] + a["w2"]))) @ a["w"] + 1
                        for i in range(1, 4)])}),
}
OUT_SHAPE = {"two_pushes": (64, 16), "causal": (48, 16), "cube_carried_lr": (16, 32)}


@pytest.mark.parametrize("name", list(CASES))
def test_the_pass_fires(name):
    assert _fires(CASES[name][0]())


#: the kernels added for stage 0 several iterations ahead run on two of the combinations
_TWO = {"vector_led": [("a2a3", "pto-isa"), ("a5", "spec")]}


@pytest.mark.parametrize("name,platform,protocol", [(n, p, q) for n in CASES for p, q in COMBOS
                                                    if (p, q) in _TWO.get(n, COMBOS)])
def test_pipelined_kernels_match_numpy(name, platform, protocol, no_hang):
    build, shapes, golden = CASES[name]
    rng = np.random.default_rng(7)
    args = {k: _rand(rng, *s) for k, s in shapes.items()}
    args["out"] = np.zeros(OUT_SHAPE.get(name, (16, 16)), np.float32)
    want = golden(args)["out"]
    r = _run(build(), args, platform, protocol)
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("every_schedule")
@pytest.mark.parametrize("name", ["causal", "cube_carried_lr"])
def test_pipelined_kernels_under_explored_schedules(name, no_hang):
    """Other interleavings of the cores (ptopipe check's exploration) give the same result
    and no checker report."""
    build, shapes, golden = CASES[name]
    ks = KernelSet(lambda: build())

    def make_args(rng):
        a = {k: _rand(rng, *s) for k, s in shapes.items()}
        a["out"] = np.zeros(OUT_SHAPE.get(name, (16, 16)), np.float32)
        return with_slot_buffer(ks.source(), a)
    sc = ptopipe.Scenario(f"pipelined_{name}", ks.aic, ks.aiv, make_args, golden,
                          {"default": {}}, rtol=1e-5, atol=1e-5)
    for platform, protocol in (("a2a3", "spec"), ("a5", "pto-isa")):
        r = explore(sc, schedules=6, platform=platform, protocol=protocol)
        assert (r.passed, r.runs, r.failures) == (7, 7, [])


# each trip count on one combination, rotated (configs.rotated; PTOPIPE_FULL=1: on every one)
@pytest.mark.parametrize("n,platform,protocol", rotated([(0,), (1,), (3,)]))
def test_scalar_trip_count_guarded(n, platform, protocol, no_hang):
    rng = np.random.default_rng(11)
    args = dict(x=_rand(rng, 48, 16), w=_rand(rng, 16, 16), v=_rand(rng, 16, 16),
                out=np.zeros((16, 16), np.float32), n=n)
    r = _run(scalar_trip(), args, platform, protocol)
    np.testing.assert_allclose(r.outputs["out"], scalar_trip_golden(args), rtol=1e-5, atol=1e-5)


def test_scalar_trip_count_ir():
    """Guarded by ``start < stop`` on both cores; the stage-0 value g and the stage-0 view
    of c are handed over as loop-carried values."""
    op = compile_program(scalar_trip(), "a2a3", FRONT_END)
    for kind in ("AIC", "AIV"):
        text = _func_text(op, kind)
        assert "arith.lt" in text and "pl.if" in text, kind
    aiv = _func_text(op, "AIV")
    assert "%g_ahead" in aiv and "%c_ahead" in aiv


def test_stage_zero_runs_several_iterations_ahead():
    """One tile each way an iteration, SLOT_NUM 4, five trips: stage 0 runs three
    iterations ahead (prologue: three copies of stage 0; epilogue: three of stage 1), the
    stage-0 values stage 1 uses are handed over once per iteration ahead."""
    op = compile_program(vector_led(), "a2a3", FRONT_END)
    aiv = _func_text(op, "AIV")
    assert "%g_ahead3" in aiv and "%c_ahead3" in aiv and "%g_ahead4" not in aiv
    assert aiv.count("pl.tpush") == 4 and aiv.count("pl.tpop") == 4
    body = aiv[aiv.index("pl.for"):]
    assert body.index("pl.tpush") < body.index("pl.tpop")
    three = _func_text(compile_program(vector_led(3), "a2a3", FRONT_END), "AIV")
    assert "%g_ahead2" in three and "%g_ahead3" not in three       # fewer than the trips


def test_mlp_chain_prologue_goes_above_the_peeled_round_trip():
    """The K-loop carried in Acc with a peeled first block: pipelined, and the Cube pushes
    H_1 (and H_2) before it waits for A_0 (the peeled block's round trip)."""
    m = _load("benchmarks/mlp_chain_kernel.py")
    prog = m.KERNELS.source(**m.SCENARIO.variants["default"])
    assert _fires(prog)
    aic = _func_text(compile_program(prog, "a2a3", FRONT_END), "AIC")
    head = aic[:aic.index("pl.for")]
    assert head.count("pl.tpush") == 3 and head.index("pl.tpop") > head.rindex("pl.tpush")


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
def test_mlp_chain_matches_numpy(platform, protocol, no_hang):
    """The chain with the K-loop in Acc and a peeled block, pipelined (the benchmark runs
    every combination of both forms at a larger shape)."""
    r = _load("benchmarks/mlp_chain_kernel.py").SCENARIO.check("default", platform, protocol)
    core, pipe, busy = _load("benchmarks/mlp_chain.py").busiest(r)     # what the benchmark reads
    from ptopipe.arch import PipeUnit
    assert busy == max(max(c.busy) for c in r.cluster.cores)
    assert {c.name: c for c in r.cluster.cores}[core].busy[PipeUnit[pipe]] == busy


def test_fa_forward_pipelined_ir():
    """FA: the Cube pushes S(t+1) before it pops P(t); the Vector pushes P(t+1) before it
    pops P(t) V and carries alpha for it; prologue and epilogue around each loop."""
    fa = _load("examples/mixed/fa_forward.py")
    op = compile_program(fa.KERNELS.source(SQ=32, SK=64), "a2a3", FRONT_END)
    aic, aiv = _func_text(op, "AIC"), _func_text(op, "AIV")
    inner = aic[aic.index("^bb0(%j"):]
    assert inner.index("pl.tpush") < inner.index("pl.tpop")
    assert aic.count("pl.tpush") == 4 and aic.count("pl.tpop") == 2
    body = aiv[aiv.index("^bb0(%j"):]
    assert "%alpha_ahead" in body
    assert body.index("direction = #dir.DIR_V2C") < body.index("%pv = pl.tpop")
    assert aiv.count("pl.tpop") == 4


@pytest.mark.parametrize("which", ["fa", "scalar_trip", "cube_carried"])
def test_pipelined_ir_round_trips_through_the_text_form(which):
    """print -> parse -> structurally equal after every pass, VerifyPipes on the result."""
    prog = {"fa": lambda: _load("examples/mixed/fa_forward.py").KERNELS.source(SQ=64, SK=128),
            "scalar_trip": scalar_trip, "cube_carried": cube_carried}[which]()
    PassManager(list(FRONT_END) + ["verify-pipes"], round_trip=True).run(
        prog.clone(), PassContext("a5"))


@pytest.mark.parametrize("name,variant", [("s4_both_ways", "ud"), ("s4_both_ways", "lr"),
                                          ("s6_stream_both", "default")])
def test_push_ahead_kernels_untouched(name, variant):
    """S4 / S6 are SkewPushAhead's: this pass leaves them as they are."""
    m = _load(f"examples/mixed/{name}.py")
    assert not _fires(m.KERNELS.source(**m.SCENARIO.variants[variant]))


# -- loops it must leave alone ---------------------------------------------------------------
_FA_LIKE = """import ptopipe.language as pl


@pl.incore(split=pl.TILE_UP_DOWN)
def k(x: pl.Tensor[[64, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
      buf: pl.Tensor[[80, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    o0 = pl.full([16, 16], pl.f32, 0.0)
    BEFORE
    for i, (o,) in pl.range(TRIPS, init_values=(o0,)):
        xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
        s = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
        s2 = pl.add(pl.muls(s, 0.5), EXTRA)
        pv = pl.move(pl.matmul(pl.move(s2, space=pl.Left), w_r), space=pl.Vec)
        o_new = pl.add(pl.add(o, pv), LATE)
        STORE
        o1 = pl.yield_(o_new)
    pl.store(pl.add(o1, AFTER), [0, 0], out)

program = pl.program(k)
"""
_ZERO = "pl.full([16, 16], pl.f32, 0.0)"
_SUBST = {"TRIPS": "4", "EXTRA": _ZERO, "LATE": _ZERO, "STORE": "pass", "AFTER": _ZERO,
          "BEFORE": "pass"}
_VARIANTS = {
    "plain": {},
    "gm_raw": {"EXTRA": "pl.load(buf, [i * 16, 0], [16, 16])",
               "STORE": "pl.store(o_new, [i * 16 + 16, 0], buf)"},
    "uses_late": {"EXTRA": "o"},
    "popped_late": {"LATE": "s"},
    "one_trip": {"TRIPS": "1"},
    "pipe_after": {"AFTER": "pl.move(pl.matmul(pl.move(pl.load(x, [48, 0], [16, 16], "
                             "space=pl.Mat), space=pl.Left), w_r), space=pl.Vec)"},
    "pipe_around": {"BEFORE": "o0 = pl.move(pl.matmul(pl.move(pl.load(x, [48, 0], [16, 16], "
                              "space=pl.Mat), space=pl.Left), w_r), space=pl.Vec)",
                    "AFTER": "pl.move(pl.matmul(pl.move(pl.load(x, [32, 0], [16, 16], "
                             "space=pl.Mat), space=pl.Left), w_r), space=pl.Vec)"},
    "pipe_nested": {"AFTER": "p1",
                    "BEFORE": "p0 = pl.full([16, 16], pl.f32, 0.0)\n"
                              "    for r, (p,) in pl.range(2, init_values=(p0,)):\n"
                              "        xr = pl.move(pl.load(x, [r * 16, 0], [16, 16], "
                              "space=pl.Mat), space=pl.Left)\n"
                              "        p1 = pl.yield_(pl.add(p, pl.move(pl.matmul(xr, w_r), "
                              "space=pl.Vec)))"},
}


def _fa_like(variant):
    src = _FA_LIKE
    for k, v in {**_SUBST, **_VARIANTS[variant]}.items():
        src = src.replace(k, v)
    src = src.replace("        pass\n", "").replace("    pass\n", "")
    return pl.parse(src)


def fa_like_golden(a, variant):
    o, buf = np.zeros((16, 16)), a["buf"].astype(np.float64).copy()
    for i in range(1 if variant == "one_trip" else 4):
        s = a["x"][16 * i:16 * (i + 1)] @ a["w"]
        s2 = 0.5 * s + (buf[16 * i:16 * (i + 1)] if variant == "gm_raw" else
                        o if variant == "uses_late" else 0)
        o = o + s2 @ a["w"] + (s if variant == "popped_late" else 0)
        if variant == "gm_raw":
            buf[16 * i + 16:16 * i + 32] = o
    if variant == "pipe_after":
        o = o + a["x"][48:64] @ a["w"]
    if variant == "pipe_around":
        o = o + a["x"][48:64] @ a["w"] + a["x"][32:48] @ a["w"]
    if variant == "pipe_nested":
        o = o + a["x"][:16] @ a["w"] + a["x"][16:32] @ a["w"]
    return o


UNSAFE = ["gm_raw", "uses_late", "popped_late", "one_trip", "pipe_nested"]   # numerics: not the last
#: the ring is used before / after the loop in the loop's block: pipelined all the same
AROUND = ["pipe_after", "pipe_around"]


def test_fa_like_control_fires():
    """The kernel the unsafe variants start from is pipelined (so the ones below are
    untouched for their own reason)."""
    assert _fires(_fa_like("plain"))


@pytest.mark.parametrize("variant", AROUND)
def test_ring_used_around_the_loop_pipelined(variant):
    """A push / pop of the loop's rings before or after the loop, in its block, leaves the
    loop pipelinable (the events around it are part of the deadlock proof)."""
    assert _fires(_fa_like(variant)) and _pair_pipelines(_fa_like(variant))


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a5", "spec"),
                                               ("a2a3", "spec"), ("a5", "pto-isa")])
def test_ring_used_around_the_loop_matches_numpy(platform, protocol, no_hang):
    rng = np.random.default_rng(3)
    args = dict(x=_rand(rng, 64, 16), w=_rand(rng, 16, 16), buf=_rand(rng, 80, 16),
                out=np.zeros((16, 16), np.float32))
    want = fa_like_golden(args, "pipe_around")
    r = _run(_fa_like("pipe_around"), args, platform, protocol)
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", UNSAFE)
def test_unsafe_loops_untouched(variant):
    """A GM tensor stored in stage 1 and loaded in stage 0; stage 0 using a value stage 1
    carries; a popped tile used by stage 1 (its TFREE would move); one iteration; the
    pipe used outside the loop in another loop."""
    assert not _fires(_fa_like(variant))


def _pair_pipelines(program) -> bool:
    """pipeline_pair itself (without run's fallback of undoing a rewrite that does not fit
    memory) on the last loop pair of a compiled kernel."""
    op = compile_program(program, "a2a3", WITHOUT)
    fns = {f.attributes["sym_name"]: f for f in op.regions[0].blocks[0]}
    aic, aiv = fns["k_aic"], fns["k_aiv"]
    key, lc = list(pipeline_loops._candidates(aic).items())[-1]      # the last loop
    return pipeline_loops.pipeline_pair(aic, aiv, lc, pipeline_loops._candidates(aiv)[key], 4)


@pytest.mark.parametrize("variant", UNSAFE)
def test_unsafe_pairs_refused_by_the_analysis(variant):
    assert not _pair_pipelines(_fa_like(variant))
    assert _pair_pipelines(_fa_like("plain"))


def test_a_rewrite_that_does_not_fit_is_undone(monkeypatch):
    """When the allocator cannot place the handed-over tiles the loops stay as they were."""
    fa = _load("examples/mixed/fa_forward.py")
    prog = fa.KERNELS.source(SQ=32, SK=64)
    assert _fires(prog)
    monkeypatch.setattr(pipeline_loops, "fits", lambda fn, plat: False)
    assert not _fires(prog)
    op = compile_program(prog, "a2a3")                 # the whole pipeline still verifies
    assert "alpha_ahead" not in print_ir(op)


def test_fits_asks_the_allocator():
    from types import SimpleNamespace
    from ptopipe.arch import get_platform
    op = compile_program(_load("examples/mixed/fa_forward.py").KERNELS.source(SQ=32, SK=64),
                         "a2a3", FRONT_END)
    fns = [f for f in op.regions[0].blocks[0] if f.attributes["sym_name"] != "fa"]
    assert all(pipeline_loops.fits(f, get_platform("a2a3")) for f in fns)
    # tiles fit (peak <= 5280)
    rings_out = SimpleNamespace(mem_size=lambda space: 6144, tile_space=lambda space: 6144)
    assert not any(pipeline_loops.fits(f, rings_out) for f in fns)
    # AIV tiles: 5280, ring after
    tiles_out = SimpleNamespace(mem_size=lambda space: 5000, tile_space=lambda space: 5000)
    assert not pipeline_loops.fits(fns[1], tiles_out)


# each variant on one combination, rotated (configs.rotated; PTOPIPE_FULL=1: on every one)
@pytest.mark.parametrize("variant,platform,protocol", rotated([(v,) for v in ["plain"] + UNSAFE[:-1] + AROUND[:1]]))
def test_fa_like_variants_match_numpy(variant, platform, protocol, no_hang):
    rng = np.random.default_rng(3)
    args = dict(x=_rand(rng, 64, 16), w=_rand(rng, 16, 16), buf=_rand(rng, 80, 16),
                out=np.zeros((16, 16), np.float32))
    want = fa_like_golden(args, variant)
    r = _run(_fa_like(variant), args, platform, protocol)
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-5, atol=1e-5)


def two_round_trips():
    """Two round trips per iteration: the Cube waits for P (cut 1), the Vector for P W
    (cut 2) - with those cuts the Vector would push P(t+1) before Q(t) while the Cube pops
    P(t), Q(t), P(t+1): the V2C FIFO order breaks, so the pair stays as it is."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def k(x: pl.Tensor[[64, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        o0 = pl.full([16, 16], pl.f32, 0.0)
        for i, (o,) in pl.range(4, init_values=(o0,)):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
            pw = pl.move(pl.matmul(pl.move(pl.muls(s, 0.5), space=pl.Left), w_r), space=pl.Vec)
            qw = pl.move(pl.matmul(pl.move(pl.adds(pw, 1.0), space=pl.Left), w_r), space=pl.Vec)
            o1 = pl.yield_(pl.add(o, qw))
        pl.store(o1, [0, 0], out)
    return pl.program(k)


def test_fifo_order_refusal_on_a_kernel():
    assert not _pair_pipelines(two_round_trips()) and not _fires(two_round_trips())


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_two_round_trips_match_numpy(platform, protocol, no_hang):
    rng = np.random.default_rng(9)
    args = dict(x=_rand(rng, 64, 16), w=_rand(rng, 16, 16), out=np.zeros((16, 16), np.float32))
    w = args["w"].astype(np.float64)
    want = sum(((0.5 * (args["x"][16 * i:16 * (i + 1)] @ w)) @ w + 1) @ w for i in range(4))
    r = _run(two_round_trips(), args, platform, protocol)
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-5, atol=1e-5)


# -- the event analysis ------------------------------------------------------------------------
C2V, V2C = "c2v", "v2c"
CUBE_FA = [(0, "push", C2V), (1, "pop", V2C), (2, "free", V2C), (3, "push", C2V)]
VEC_FA = [(0, "pop", C2V), (1, "free", C2V), (2, "push", V2C), (3, "pop", C2V), (4, "free", C2V)]


def test_round_trip_cuts_of_fa():
    prod = ls.matched(CUBE_FA, VEC_FA)
    assert prod == {C2V: 0, V2C: 1}
    pair = (CUBE_FA, VEC_FA)
    assert [ls.round_trip_cut(s, pair, prod) for s in (0, 1)] == [1, 3]
    assert ls.fifo_consistent(pair, [1, 3], prod)
    assert ls.runs_to_completion(pair, [1, 3], 2)


def test_fifo_order_broken_by_a_one_sided_skew():
    """Skewing only the Cube would let S(t+1) overtake P(t) V in the C2V ring."""
    prod = ls.matched(CUBE_FA, VEC_FA)
    assert not ls.fifo_consistent((CUBE_FA, VEC_FA), [1, None], prod)
    assert ls.skewed(CUBE_FA, 1, 2) == [(0, "push", C2V), (1, "push", C2V), (0, "pop", V2C),
                                        (0, "free", V2C), (0, "push", C2V), (1, "pop", V2C),
                                        (1, "free", V2C), (1, "push", C2V)]


def test_deadlock_on_too_few_slots():
    """A Vector that frees S(t) only after P(t) V: run ahead, the Cube's S(t+1) holds the
    second C2V slot, P(t) V needs a third - two slots run the take-turns pair but stall
    the skewed one."""
    vec = [(0, "pop", C2V), (1, "push", V2C), (2, "pop", C2V), (3, "free", C2V),
           (4, "free", C2V)]
    prod = ls.matched(CUBE_FA, vec)
    cuts = [ls.round_trip_cut(s, (CUBE_FA, vec), prod) for s in (0, 1)]
    assert cuts == [1, 2] and ls.fifo_consistent((CUBE_FA, vec), cuts, prod)
    assert ls.runs_to_completion((CUBE_FA, vec), [None, None], 2)
    assert not ls.runs_to_completion((CUBE_FA, vec), cuts, 2)
    assert ls.runs_to_completion((CUBE_FA, vec), cuts, 3)


def test_no_round_trip_no_cut():
    """A one-way stream (S1): nothing waits for a round trip."""
    cube = [(0, "push", C2V)]
    vec = [(0, "pop", C2V), (1, "free", C2V)]
    prod = ls.matched(cube, vec)
    assert [ls.round_trip_cut(s, (cube, vec), prod) for s in (0, 1)] == [None, None]
    assert ls.matched(cube, vec + [(2, "pop", C2V)]) is None      # 1 push, 2 pops


# a peeled first iteration: the Cube pushes H0 and pops two answers, the Vector holds H0
# until it has pushed both
CUBE_PEEL = [(0, "push", C2V), (1, "pop", V2C), (2, "free", V2C), (3, "pop", V2C),
             (4, "free", V2C)]
VEC_PEEL = [(0, "pop", C2V), (1, "push", V2C), (2, "push", V2C), (3, "free", C2V)]
CUBE_K = [(0, "push", C2V), (1, "pop", V2C), (2, "free", V2C)]
VEC_K = [(0, "pop", C2V), (1, "free", C2V), (2, "push", V2C)]


def test_stage_zero_distance_order():
    assert ls.skewed(CUBE_K, 1, 3, 2) == [
        (0, "push", C2V), (1, "push", C2V), (2, "push", C2V), (0, "pop", V2C), (0, "free", V2C),
        (1, "pop", V2C), (1, "free", V2C), (2, "pop", V2C), (2, "free", V2C)]


def test_events_around_the_loop_in_the_deadlock_proof():
    """Moving the prologue's push above the peeled block's pops deadlocks on one slot (the
    Vector holds H0 until the Cube took both answers, the Cube waits for H0's slot); two
    slots, or the prologue left in place, run through."""
    evs, around = (CUBE_K, VEC_K), ((CUBE_PEEL, []), (VEC_PEEL, []))
    prod = ls.matched(*evs)
    cuts = [ls.round_trip_cut(s, evs, prod) for s in (0, 1)]
    assert cuts == [1, None]
    assert ls.runs_to_completion(evs, cuts, 1, around)
    assert not ls.runs_to_completion(evs, cuts, 1, around, (4, 0))
    assert ls.runs_to_completion(evs, cuts, 2, around, (4, 0))
    assert ls.balanced_before((CUBE_PEEL, VEC_PEEL), prod)
    assert not ls.balanced_before((CUBE_PEEL[:1], []), prod)


def test_mlp_benchmark_verdict(capsys):
    """benchmarks/mlp_chain.py exits 1 when a row of the Acc form runs more than 1.6x its
    busiest pipe (the other forms are context), 0 otherwise."""
    bench = _load("benchmarks/mlp_chain.py")
    row = ("acc (target)", "a2a3", "spec", 1600, "AIC", "M", 1000)
    assert bench.verdict([row]) == 0
    assert bench.verdict([row[:3] + (1601,) + row[4:]]) == 1
    assert bench.verdict([row, ("vec_acc", "a5", "spec", 9000, "AIC", "FIX", 1000)]) == 0
    assert "worst 1.60x" in capsys.readouterr().out
