"""ExpandMixedKernel + InsertTfree: the mixed examples (examples/mixed) compile and run on
both platforms and protocols with the checkers on and match numpy; the pipes they get
(DIR_MASK, SLOT_SIZE, SLOT_NUM); the compile errors at their DSL line; TFREE placement on
the printed IR; the compiled S1's cycles against the hand-written pair."""
import importlib.util
import pathlib

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet
from ptopipe import CompileError
from ptopipe.errors import MismatchError
from ptopipe.ir import FunctionKind, parse_ir, print_ir, print_program, structural_equal
from ptopipe.ir.opdefs import CallOp
from ptopipe.passes import compile_program as _compile

from ptopipe.passes import FRONT_END as FRONT                # the platform-independent half


def compile_ops(program):
    return _compile(program, "a2a3", FRONT)


def compile_program(program):
    return _compile(program, "a2a3", FRONT)

from configs import rotated
from markers import line_of
from op_build import dsl_form, same

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(rel):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MIXED = {n: _load(f"examples/mixed/{n}.py") for n in
         ("s1_cv_split", "s2_cv_nosplit", "s4_both_ways", "s3_vc_dequant", "fa_forward",
          "s6_stream_both")}
RUNS = rotated([(n, v) for n, m in MIXED.items() for v in m.SCENARIO.variants])


@pytest.mark.parametrize("name,variant,platform,protocol", RUNS)
def test_mixed_example_matches_numpy(name, variant, platform, protocol, no_hang):
    res = MIXED[name].SCENARIO.check(variant, platform, protocol)     # checkers on by default
    assert res.summary.cycles > 0


def test_a_wrong_golden_is_caught():
    """The runs above compare against numpy: a golden off by one element fails."""
    m = MIXED["s1_cv_split"]
    sc = m.SCENARIO

    def bad(args, **kw):
        out = m.golden(args, **kw)["out"].copy()
        out[5, 3] += 1
        return {"out": out}
    sc2 = type(sc)(sc.name, sc.aic, sc.aiv, sc.make_args, bad, sc.variants)
    with pytest.raises(MismatchError):
        sc2.check("default")


def _fn(prog, kind):
    return [f for f in prog.functions if f.kind is kind]


def _init(fn):
    from ptopipe.passes.util import init_ops
    return init_ops(fn)[0]


@pytest.mark.parametrize("name,params,mask,slot_size,slot_num", [
    ("s1_cv_split", dict(M=64, split=pl.TILE_UP_DOWN, slot_num=None), pl.DIR_C2V, 16 * 32 * 4, 8),
    ("s1_cv_split", dict(M=64, split=pl.TILE_UP_DOWN, slot_num=2), pl.DIR_C2V, 16 * 32 * 4, 2),
    ("s3_vc_dequant", dict(K=128, N=32, qtype="i8", split=pl.TILE_UP_DOWN), pl.DIR_V2C,
     64 * 32 * 4, 4),
    ("s4_both_ways", dict(split=pl.TILE_UP_DOWN), pl.DIR_BOTH, 16 * 128 * 4, 4),
    ("fa_forward", dict(SQ=32, SK=64), pl.DIR_BOTH, 16 * 32 * 4, 4),
])
def test_pipe_parameters(name, params, mask, slot_size, slot_num):
    """DIR_MASK from the boundaries, SLOT_SIZE = the largest crossing tile, SLOT_NUM 8 one
    way / 4 both ways (seed 003) or the decorator's; both kernels agree."""
    prog = MIXED[name].KERNELS.program(**params)
    aic, = _fn(prog, FunctionKind.AIC)
    aiv, = _fn(prog, FunctionKind.AIV)
    group, = _fn(prog, FunctionKind.Group)
    for f in (aic, aiv):
        c = _init(f)
        assert (c.dir_mask, c.slot_size, c.slot_num) == (mask, slot_size, slot_num), f.sym_name
    assert [(c.name, c.callee) for c in group.body] == [(CallOp.name, aic.sym_name), (CallOp.name, aiv.sym_name)]


@pytest.mark.parametrize("name,params,whole", [
    ("s1_cv_split", dict(M=64, split=pl.TILE_UP_DOWN, slot_num=None), 16 * 32 * 4),
    ("s1_cv_split", dict(M=64, split=pl.TILE_LEFT_RIGHT, slot_num=None), 16 * 32 * 4),
    ("s4_both_ways", dict(split=pl.TILE_UP_DOWN), 16 * 128 * 4),
])
def test_a5_c2v_slot_is_sized_for_one_vector_cores_part(name, params, whole):
    """On A5 the C2V ring is in each Vector core's UB and a slot receives that core's part
    (pto-isa's pushAcc2VecFiFo): SLOT_SIZE and the UB ring are half of A2A3's, whose GM slot
    holds the whole tile; the GM slot-buffer parameter stays the same on both."""
    progs = {p: MIXED[name].KERNELS.program(platform=p, **params) for p in ("a2a3", "a5")}
    sizes = {p: {_init(f).slot_size for f in prog.functions if f.kind in (FunctionKind.AIC, FunctionKind.AIV)}
             for p, prog in progs.items()}
    assert sizes == {"a2a3": {whole}, "a5": {whole // 2}}
    aiv, = _fn(progs["a5"], FunctionKind.AIV)
    ring, = [op for op in aiv.body if getattr(op, "buffer_name", None) == "c2v_slot_buffer"]
    assert ring.size == _init(aiv).slot_num * whole // 2
    gm = {p: [a.type for f in prog.functions for a in f.regions[0].blocks[0].args
              if a.name and a.name.startswith("gm_slot")] for p, prog in progs.items()}
    assert gm["a2a3"] == gm["a5"] and gm["a5"]


def test_compiled_program_round_trips():
    """The compiled program prints as DSL source and as IR text and reads back equal."""
    prog = MIXED["s4_both_ways"].KERNELS.program(split=pl.TILE_LEFT_RIGHT)
    text = print_program(prog)             # the DSL source (no platform, no addresses)
    assert print_program(pl.parse(text)) == text
    ops = prog.clone()
    assert structural_equal(parse_ir(print_ir(ops)), ops)


BENCH = _load("benchmarks/mixed_vs_hand.py")


@pytest.mark.parametrize("pair", BENCH.PAIRS, ids=lambda p: f"{p[0].split('/')[-2]}-{p[1]}")
def test_compiled_cycles_within_10_percent_of_hand_written(pair, capsys):
    """Schedule quality: the compiled kernel's simulated cycles are within 10% of the
    hand-written kernel of the same scenario and shape (S1 the DSL pair, S4 needs
    SkewPushAhead, FA PipelineCrossCoreLoops), printed side by side."""
    hand, hv, mixed, mv = pair
    h_sc, m_sc = _load(hand).SCENARIO, MIXED[mixed.split("/")[-1][:-3]].SCENARIO
    for platform in ("a2a3", "a5"):
        for protocol in ("spec", "pto-isa"):
            h = h_sc.check(hv, platform, protocol).summary.cycles
            c = m_sc.check(mv, platform, protocol).summary.cycles
            with capsys.disabled():
                print(f"\n{hand} [{hv}] {platform}/{protocol}: hand-written {h} cycles, "
                      f"compiled {c} cycles ({c / h:.3f}x)")
            assert abs(c - h) <= 0.1 * h


def test_push_ahead_skews_only_push_then_pop_loops():
    """S4's Vector loop runs 2 tiles ahead with its pushes; S1's (pops only) is untouched;
    with one slot per ring there is no room to run ahead."""
    s4 = print_program(MIXED["s4_both_ways"].KERNELS.program(split=pl.TILE_UP_DOWN))
    _in_order(s4, "def s4_aiv", "for i in pl.range(", "if i < ", "pl.TPUSH(", "i_lag = i - 2",
              "if i_lag >= 0:", "pl.TPOP(", "pl.TFREE(", "pl.store(")
    s1 = print_program(MIXED["s1_cv_split"].KERNELS.program(M=64, split=pl.TILE_UP_DOWN,
                                                             slot_num=4))
    assert "_lag" not in s1

    def round_trip(slots):
        @pl.incore(slot_num=slots)
        def k(a: pl.Tensor[[64, 16], pl.f32], d: pl.Tensor[[16, 16], pl.f32],
              out: pl.Tensor[[64, 16], pl.f32]):
            d_l0 = pl.move(pl.load(d, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
            for i in pl.range(4):
                x = pl.move(pl.load(a, [i * 16, 0], [16, 16]), space=pl.Left)
                r = pl.move(pl.matmul(x, d_l0), space=pl.Vec)
                pl.store(r, [i * 16, 0], out)
        return print_program(compile_program(pl.program(k)))
    assert "i_lag = i - 1" in round_trip(2)
    assert "_lag" not in round_trip(1)


def test_incore_options_round_trip():
    src = ("import ptopipe.language as pl\n\n@pl.incore(split=pl.TILE_LEFT_RIGHT, slot_num=2)\n"
           "def k(a: pl.Tensor[[16, 16], pl.f32]):\n    x = pl.load(a, [0, 0], [16, 16])\n"
           "    pl.store(x, [0, 0], a)\n\nprogram = pl.program(k, name='p')\n")
    prog = pl.parse(src)
    f = prog.functions[0]
    assert (f.split, f.slot_num) == (pl.TILE_LEFT_RIGHT, 2)
    assert print_program(prog) == src
    ops = prog.clone()
    assert "split = #split.TILE_LEFT_RIGHT, slot_num = 2" in print_ir(ops)
    assert structural_equal(parse_ir(print_ir(ops)), ops)


def test_bad_incore_options():
    with pytest.raises(CompileError, match="slot_num=0.*positive"):
        pl.incore(slot_num=0)
    with pytest.raises(CompileError, match="not a split mode"):
        pl.incore(split=7)


def test_pure_vector_function_becomes_aiv_unsplit():
    @pl.incore(split=pl.TILE_LEFT_RIGHT)
    def only_vec(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f32]):
        pl.store(pl.adds(pl.load(x, [0, 0], [16, 32]), 1.0), [0, 0], y)

    prog = compile_program(pl.program(only_vec))
    f, = prog.functions
    assert (f.kind, f.split, f.sym_name) == (FunctionKind.AIV, None, "only_vec")
    assert "[16, 32]" in print_program(prog)           # not halved


# -- errors -------------------------------------------------------------------------------
def _where(fn, marker):
    return f"{fn.pyfunc.__code__.co_filename}:{line_of(fn.pyfunc, marker)}:"


def test_cross_core_move_only_in_a_mixed_function():
    with pytest.raises(CompileError, match="move from Acc to Vec is not a local path") as e:
        @pl.aic
        def cube(a: pl.Tensor[[16, 16], pl.f32]):
            t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
            acc = pl.matmul(t, pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right))
            v = pl.move(acc, space=pl.Vec)  # HERE
    assert f":{line_of(test_cross_core_move_only_in_a_mixed_function, 'HERE')}:" in e.value.where


def test_bad_boundary_move():
    """Vec -> Acc is no boundary: across cores only Acc -> Vec and Vec -> Mat/Left/Right."""
    with pytest.raises(CompileError, match="move from Vec to Acc is not a local path") as e:
        @pl.incore
        def mixed(a: pl.Tensor[[16, 16], pl.f32]):
            x = pl.load(a, [0, 0], [16, 16])
            y = pl.move(x, space=pl.Acc)  # BAD
    assert "Acc->Vec (C2V)" in e.value.fix
    assert f":{line_of(test_bad_boundary_move, 'BAD')}:" in e.value.where


def _cube_vec_loop():
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        n = pl.get_subblockid() + 1
        for i in pl.range(n):  # LOOP
            t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
            r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
            v = pl.move(pl.matmul(t, r), space=pl.Vec)
            pl.store(v, [0, 0], out)
    return k


def test_loop_bound_computed_on_one_side_only():
    k = _cube_vec_loop()
    with pytest.raises(CompileError, match="the loop bound 'n' is computed on the Vector side "
                                           "only .*pl.get_subblockid.*Cube work") as e:
        compile_program(pl.program(k))
    assert e.value.where.startswith(_where(k, "LOOP"))
    # an unnamed bound is shown as the expression that made it
    src = ('''import ptopipe.language as pl

@pl.incore
def k(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    for i in pl.range(pl.get_subblockid() + 1):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        v = pl.move(pl.matmul(t, pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)),
                    space=pl.Vec)
        pl.store(v, [0, 0], out)
''')
    with pytest.raises(CompileError, match=r"the loop bound 'pl.get_subblockid\(\) \+ 1'"):
        compile_program(pl.parse(src))


def _softmaxish(split):
    @pl.incore(split=split)
    def k(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        s = pl.move(pl.matmul(t, r), space=pl.Vec)
        m = pl.row_max(s)  # REDUCE
        pl.store(pl.row_expand_sub(s, m), [0, 0], out)
    return k


def test_reduction_across_the_split_axis():
    k = _softmaxish(pl.TILE_LEFT_RIGHT)
    with pytest.raises(CompileError, match="pl.row_max mixes data across the split axis: its "
                                           "result combines values from different columns of "
                                           "'s', but each Vector core holds only half of the "
                                           r"columns \(split TILE_LEFT_RIGHT\)") as e:
        compile_program(pl.program(k))
    assert e.value.where.startswith(_where(k, "REDUCE"))
    compile_program(pl.program(_softmaxish(pl.TILE_UP_DOWN)))      # fine when split by rows


def test_odd_extent_cannot_be_split():
    @pl.incore(split=pl.TILE_LEFT_RIGHT)
    def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32]):
        x = pl.load(b, [0, 0], [16, 15])  # ODD
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        s = pl.move(pl.matmul(t, r), space=pl.Vec)
        pl.store(s, [0, 0], out)
        pl.store(x, [0, 0], out)

    with pytest.raises(CompileError, match="'x' .*16x15.* cannot be split TILE_LEFT_RIGHT: its 15 "
                                           "columns do not halve") as e:
        compile_program(pl.program(k))
    assert e.value.where.startswith(_where(k, "ODD"))


def test_an_odd_tile_reassigned_to_a_name_is_told_by_that_name():
    # the second `x = ...` is the SSA value x_1: the message says 'x', the kernel's name
    @pl.incore(split=pl.TILE_UP_DOWN)
    def k(a: pl.Tensor[[16, 16], pl.f32], c: pl.Tensor[[15, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        x = pl.move(pl.matmul(t, r), space=pl.Vec)
        pl.store(x, [0, 0], out)
        x = pl.load(c, [0, 0], [15, 16])  # ODD
        pl.store(pl.adds(x, 1.0), [0, 0], out)

    with pytest.raises(CompileError, match="^'x' \\(15x16 f32\\) cannot be split TILE_UP_DOWN") as e:
        compile_program(pl.program(k))
    assert e.value.where.startswith(_where(k, "ODD"))


def test_popped_tile_carried_to_next_iteration():
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        z = pl.full([16, 16], pl.f32, 0.0)
        for i, (prev,) in pl.range(2, init_values=(z,)):
            t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
            r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
            s = pl.move(pl.matmul(t, r), space=pl.Vec)  # POP
            pl.store(pl.add(prev, s), [0, 0], out)
            last = pl.yield_(s)

    with pytest.raises(CompileError, match="the tile received from the other core here is assigned to "
                                           "'last' in the loop at line .* and read after it") as e:
        compile_program(pl.program(k))
    assert e.value.where.startswith(_where(k, "POP"))


# -- TFREE placement ----------------------------------------------------------------------
def _func_text(ops, kind):
    text = print_ir(ops)
    start = text.index(f"kind = #kind.{kind}")
    end = text.find("pl.func()", start)
    return text[start:end if end > 0 else len(text)]


def _in_order(text, *needles):
    pos = 0
    for n in needles:
        i = text.find(n, pos)
        assert i >= 0, f"{n!r} not found after offset {pos} in:\n{text}"
        pos = i + len(n)


def test_tfree_after_last_use_through_aliases():
    """The popped tile flows through a copy and an if-result; the TFREE follows the last
    use of the if-result, not the first use of the tile."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32], flag: pl.Scalar[pl.index]):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        s = pl.move(pl.matmul(t, r), space=pl.Vec)
        first = pl.adds(s, 1.0)
        alias = s
        if flag > 0:
            sel = pl.yield_(alias)
        else:
            sel = pl.yield_(first)
        bv = pl.load(b, [0, 0], [16, 16])
        marker = pl.muls(bv, 2.0)
        o = pl.sub(sel, marker)
        pl.store(o, [0, 0], out)

    text = _func_text(compile_ops(pl.program(k)), "AIV")
    _in_order(text, "pl.tpop", "pl.adds", "pl.copy", "pl.if", "pl.muls", "%o = pl.sub",
              "pl.tfree", "pl.store")
    assert text.count("pl.tfree") == 1


def test_tfree_before_the_yield_and_in_pop_order():
    """In a loop body the TFREE goes after the last use and before the body's yield; two
    pops of one ring are freed in pop order even when the first is used longer."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            s1 = pl.move(pl.matmul(t, r), space=pl.Vec)
            s2 = pl.move(pl.matmul(t, r), space=pl.Vec)
            u2 = pl.adds(s2, 1.0)
            u1 = pl.add(s1, u2)
            pl.store(u1, [0, 0], out)

    text = _func_text(compile_ops(pl.program(k)), "AIV")
    body = text[text.index("pl.for"):]
    _in_order(body, "%s1 = pl.tpop", "%s2 = pl.tpop", "%u2 = pl.adds", "%u1 = pl.add",
              "pl.tfree", "pl.tfree", "pl.store", "pl.yield")
    assert body.count("pl.tfree") == 2


def test_tfree_after_a_loop_using_the_tile():
    """A popped tile passed into a loop as its init is used by the whole loop."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        s = pl.move(pl.matmul(t, r), space=pl.Vec)
        for i, (acc,) in pl.range(3, init_values=(s,)):
            nxt = pl.adds(acc, 1.0)
            res = pl.yield_(nxt)
        done = pl.muls(res, 2.0)
        pl.store(done, [0, 0], out)

    text = _func_text(compile_ops(pl.program(k)), "AIV")
    _in_order(text, "pl.tpop", "pl.for", "pl.adds", "pl.yield", "%done = pl.muls", "pl.tfree",
              "pl.store")


def _run_compiled(prog, args, platform, protocol):
    from ptopipe import run
    from ptopipe.passes.slot_buffer import with_slot_buffer
    from ptopipe.runtime import kernels
    aic, aiv = kernels(prog)
    return run(aic, aiv, with_slot_buffer(prog, args), platform=platform, protocol=protocol)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_converting_c2v_move_pops_then_casts(platform, protocol, no_hang):
    """pl.move(acc, space=pl.Vec, dtype=pl.f16): the f32 accumulator crosses, the Vector
    side casts its half."""
    @pl.incore(split=pl.TILE_LEFT_RIGHT)
    def k(a: pl.Tensor[[16, 16], pl.f16], b: pl.Tensor[[16, 32], pl.f16],
          out: pl.Tensor[[16, 32], pl.f16]):
        x = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        y = pl.move(pl.load(b, [0, 0], [16, 32], space=pl.Mat), space=pl.Right)
        h = pl.move(pl.matmul(x, y), space=pl.Vec, dtype=pl.f16)
        pl.store(pl.adds(h, 1.0), [0, 0], out)

    prog = compile_program(pl.program(k))
    src = print_program(prog)
    _in_order(src, "def k_aiv", "h = pl.cast(pl.TPOP(c2v_buf, pl.Tile[[16, 16], pl.f32, pl.Vec]",
              "pl.f16)", "pl.TFREE(")
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 32)).astype(np.float16)
    res = _run_compiled(prog, dict(a=a, b=b, out=np.zeros((16, 32), np.float16)), platform,
                        protocol)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16) + np.float16(1)
    np.testing.assert_array_equal(res["out"], want)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_branches_and_results_on_both_sides(platform, protocol, no_hang):
    """A branch on a scalar parameter holds Cube and Vector work and yields a tile of each
    side; each kernel keeps its own branch results, both evaluate the condition."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32], out2: pl.Tensor[[16, 16], pl.f32],
          flag: pl.Scalar[pl.index]):
        x = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        y = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        if flag > 0:
            acc1 = pl.matmul(x, y)
            v1 = pl.adds(pl.load(b, [0, 0], [16, 16]), 1.0)
            acc, v = pl.yield_(acc1, v1)
        else:
            acc2 = pl.matmul(x, pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right))
            v2 = pl.muls(pl.load(b, [0, 0], [16, 16]), 2.0)
            acc, v = pl.yield_(acc2, v2)
        pl.store(acc, [0, 0], out2)
        r = pl.move(acc, space=pl.Vec)
        pl.store(pl.add(r, v), [0, 0], out)

    prog = compile_program(pl.program(k))
    rng = np.random.default_rng(2)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    for flag in (0, 1):
        res = _run_compiled(prog, dict(a=a, b=b, out=np.zeros((16, 16), np.float32),
                                       out2=np.zeros((16, 16), np.float32), flag=flag),
                            platform, protocol)
        v, mm = (b + 1, a @ b) if flag else (b * 2, a @ a)
        np.testing.assert_array_equal(res["out2"], mm)
        np.testing.assert_array_equal(res["out"], mm + v)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_mixed_function_without_boundary(platform, no_hang):
    """Cube and Vector work that never cross: an AIC and an AIV function without a pipe,
    the Vector work still split between the two Vector cores."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
          mm: pl.Tensor[[16, 16], pl.f32], plus: pl.Tensor[[16, 16], pl.f32]):
        x = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        y = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        pl.store(pl.matmul(x, y), [0, 0], mm)
        pl.store(pl.adds(pl.load(b, [0, 0], [16, 16]), 1.0), [0, 0], plus)

    prog = compile_program(pl.program(k))
    src = print_program(prog)
    assert "initialize_pipe" not in src and "gm_slot_buffer" not in src
    assert "[8, 16]" in src
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    res = _run_compiled(prog, dict(a=a, b=b, mm=np.zeros((16, 16), np.float32),
                                   plus=np.zeros((16, 16), np.float32)), platform, "spec")
    np.testing.assert_array_equal(res["mm"], a @ b)
    np.testing.assert_array_equal(res["plus"], b + 1)


def _strip_tfrees(prog):
    """A copy of ``prog`` without its TFREEs (a TFREE has no result: nothing reads it) and
    the constants only they read (a TFREE statement's own operands)."""
    from ptopipe.ir.opdefs import ConstOp, TFree
    out = prog.clone()
    for o in [o for o in out.walk() if o.is_a(TFree)]:
        consts = [v.owner for v in o.operands if isinstance(v.owner, ConstOp)]
        o.erase()
        for c in consts:
            if not c.results[0].uses:
                c.erase()
    return out


def _consts_at_users(prog):
    """``prog`` with each constant right before its one user (where the DSL parser puts it):
    a TFREE put between a statement's constants and the statement is the same statement
    order as the source's TFREE before the statement."""
    from ptopipe.ir.opdefs import ConstOp
    for o in [o for o in prog.walk() if o.is_a(ConstOp)]:
        uses = o.results[0].uses
        if len(uses) == 1 and uses[0].owner.parent is o.parent:
            o.move_before(uses[0].owner)
    return prog


@pytest.mark.parametrize("rel,params", [
    ("examples/dsl/s1_cv_split.py", dict(M=64, depth=4, split=pl.TILE_UP_DOWN, dtype="f32")),
    ("examples/dsl/s4_both_ways.py", dict(split=pl.TILE_LEFT_RIGHT)),
])
def test_insert_tfree_puts_back_the_hand_written_tfrees(rel, params):
    """Strip the TFREEs of a hand-written pair: InsertTfree puts each back where the
    programmer wrote it (noting on each the pipes that read the slot before it, ``read_on``:
    what LowerPlatform orders, tests/passes/test_free_order_events.py)."""
    from ptopipe.ir.opdefs import TFree
    from ptopipe.passes import insert_tfree
    prog = dsl_form(_load(rel).KERNELS.program(**params))
    stripped = _strip_tfrees(prog)
    assert same(stripped, prog) is not None
    back = _consts_at_users(insert_tfree.run(stripped))
    for o in back.walk():
        if o.is_a(TFree):
            assert o.read_on is not None
            del o.read_on
    assert same(back, prog) is None, same(back, prog)


RM, RK, RT = 16, 16, 4


@pl.incore(split=pl.TILE_UP_DOWN)
def gm_readback(a: pl.Tensor[[RT * RM, RK], pl.f32], w: pl.Tensor[[RK, RK], pl.f32],
                out: pl.Tensor[[RM, RK], pl.f32]):
    wl = pl.move(pl.load(w, [0, 0], [RK, RK], space=pl.Mat), space=pl.Right)
    for i in pl.range(RT):
        prev = pl.load(out, [0, 0], [RM, RK])          # what the previous iteration stored
        x = pl.add(prev, pl.load(a, [i * RM, 0], [RM, RK]))
        r = pl.move(pl.matmul(pl.move(x, space=pl.Left), wl), space=pl.Vec)
        pl.store(r, [0, 0], out)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_loop_reading_back_what_it_stored_is_not_pushed_ahead(platform, protocol):
    """SkewPushAhead leaves a loop alone when its push part loads a GM tensor its pop part
    stores: skewed, iteration i's load would run before iteration i-2's store."""
    from ptopipe.passes.slot_buffer import with_slot_buffer
    prog = pl.program(gm_readback, name="readback")
    ks = KernelSet(prog)
    rng = np.random.default_rng(5)
    a = rng.integers(-2, 3, (RT * RM, RK)).astype(np.float32)
    w = rng.integers(-1, 2, (RK, RK)).astype(np.float32)
    args = with_slot_buffer(prog, dict(a=a, w=w, out=np.zeros((RM, RK), np.float32)))
    res = ptopipe.run(ks.aic, ks.aiv, args, platform=platform, protocol=protocol)
    s = np.zeros((RM, RK), np.float32)
    for i in range(RT):
        s = (s + a[i * RM:(i + 1) * RM]) @ w
    np.testing.assert_array_equal(res.outputs["out"], s)


PM, PN = 32, 64


@pl.incore(split=pl.TILE_UP_DOWN)
def vec_only(x: pl.Tensor[[PM, PN], pl.f32], out: pl.Tensor[[PM, PN], pl.f32]):
    for i in pl.range(2):
        t = pl.load(x, [i * 16, 0], [16, PN])
        pl.store(pl.row_expand_sub(t, pl.row_max(t)), [i * 16, 0], out)


@pl.incore
def cube_only(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
              out: pl.Tensor[[16, 32], pl.f32]):
    acc = pl.matmul(pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left),
                    pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right))
    pl.store(acc, [0, 0], out)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_pure_vector_and_pure_cube_functions_run(platform):
    """A mixed function with work on one side only runs on that core: a Vector one is split
    between the two Vector cores (no duplicate GM writes), a Cube one leaves them idle."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((PM, PN)).astype(np.float32)
    ks = KernelSet(pl.program(vec_only, name="v"))
    res = ptopipe.run(ks.aic, ks.aiv, dict(x=x, out=np.zeros_like(x)), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], x - x.max(1, keepdims=True))
    a = rng.integers(-3, 4, (16, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (32, 32)).astype(np.float32)
    ks = KernelSet(pl.program(cube_only, name="c"))
    res = ptopipe.run(ks.aic, ks.aiv, dict(a=a, b=b, out=np.zeros((16, 32), np.float32)),
                      platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], a @ b)


def _odd_rows(rows, by_hand=False):
    @pl.incore(split=pl.TILE_UP_DOWN)
    def odd(x: pl.Tensor[[3 * rows, 64], pl.f32], out: pl.Tensor[[3 * rows, 64], pl.f32]):
        for i in pl.range(3):
            a = pl.load(x, [i * rows, 0], [rows, 64])                        # ODD-LOAD
            if by_hand:
                a = pl.adds(a, pl.get_subblockid() * 0.0)
            pl.store(pl.relu(pl.muls(a, 2.0)), [i * rows, 0], out)
    return odd


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("rows", [1, 3])
def test_a_vector_only_function_whose_tiles_do_not_halve_runs_whole_on_aiv0(platform, rows):
    """pypto clears the split of a pure AIV function (pypto #841 / PR #842): a 3-row or
    1-row tile under UP_DOWN was a CompileError; nothing crosses cores, so
    it now runs whole on AIV0 (AIV1 replays empty), with a note."""
    warnings = []
    op = _compile(pl.program(_odd_rows(rows), name="odd"), platform, warnings=warnings)
    (f,) = [g for g in op.regions[0].blocks[0]]
    assert f.attributes["kind"] is FunctionKind.AIV and f.attributes["split"] is pl.TILE_NO_SPLIT
    assert any("odd: Vector-only work kept whole on AIV0 (split TILE_UP_DOWN does not apply" in w
               for w in warnings), warnings
    x = np.arange(3 * rows * 64, dtype=np.float32).reshape(3 * rows, 64) - 50
    ks = KernelSet(pl.program(_odd_rows(rows), name="odd"))
    res = ptopipe.run(ks.aic, ks.aiv, dict(x=x, out=np.zeros_like(x)), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], np.maximum(x * 2, 0))
    with pytest.raises(CompileError, match="do not halve") as ei:     # split by hand: stands
        _compile(pl.program(_odd_rows(3, by_hand=True), name="odd"), platform)
    assert ei.value.where.endswith(f":{line_of(_odd_rows, 'ODD-LOAD')}:13")


@pl.incore
def returns_a_tile(x: pl.Tensor[[16, 32], pl.f32]):
    t = pl.load(x, [0, 0], [16, 32])
    return t                                                  # <- return


def test_a_mixed_function_returning_a_value_is_told_to_store_it():
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(returns_a_tile, name="r"))
    e = ei.value
    assert "a kernel returns no value" in e.what and "pl.store the tile" in e.fix
    assert e.where.endswith(f":{line_of(returns_a_tile.pyfunc, '<- return')}:5")


TWO_V2C = '''
import ptopipe.language as pl

@pl.incore(split=pl.TILE_UP_DOWN, slot_num=1)
def k(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    for i in pl.range(2):
        a = pl.move(pl.load(x, [0, 0], [16, 16]), space=pl.Mat)
        b = pl.move(pl.muls(pl.load(x, [0, 0], [16, 16]), 2.0), space=pl.Mat)
        pl.store(pl.matmul(pl.move(a, space=pl.Left), pl.move(b, space=pl.Right)), [0, 0], out)

program = pl.program(k, name="two")
'''


def test_check_static_verifies_what_a_mixed_function_becomes(tmp_path, capsys):
    """--static on a file of mixed functions verifies the compiled kernels: two Cube tiles
    held at once with slot_num=1 (Mat tiles: InsertTfree cannot copy one out) can never
    both arrive (found without running)."""
    from ptopipe.cli import main as cli_main
    path = tmp_path / "two.py"
    path.write_text(TWO_V2C)
    rc = cli_main(["check", "--static", str(path)])
    out, err = capsys.readouterr()
    assert rc == 1 and "FAIL two on a2a3" in out, (out, err)
    assert "holds 2 slots of the V2C ring at once, more than its SLOT_NUM 1" in err
    assert "slot_num= of the *_initialize_pipe calls, or of @pl.incore" in err


FM, FK, FN = 128, 64, 160


@pl.incore(split=pl.TILE_UP_DOWN, slot_num=2)
def fits_a5_only(a: pl.Tensor[[FM, FK], pl.f32], b: pl.Tensor[[FK, FN], pl.f32],
                 out: pl.Tensor[[FM, FN], pl.f32]):
    # two 80 KiB tiles held at once: A5's ring (2 slots) and A2A3's staging (LocalSlotNum 2,
    # the hold bound) are the same size, and only A5's UB has room for them and the sum
    al = pl.move(pl.load(a, [0, 0], [FM, FK], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [FK, FN], space=pl.Mat), space=pl.Right)
    v = pl.move(pl.matmul(al, bl), space=pl.Vec)
    w = pl.move(pl.matmul(al, bl), space=pl.Vec)
    pl.store(pl.add(v, pl.adds(w, 1.0)), [0, 0], out)


def test_slot_buffer_sizing_does_not_compile_for_another_platform():
    """with_slot_buffer sizes the GM ring from the expanded kernels only: a program whose
    rings fit A5's UB but not A2A3's runs on A5 (and A2A3's own compile reports it)."""
    from ptopipe.passes.slot_buffer import with_slot_buffer
    prog = pl.program(fits_a5_only, name="a5only")
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (FM, FK)).astype(np.float32)
    b = rng.integers(-3, 4, (FK, FN)).astype(np.float32)
    args = with_slot_buffer(prog, dict(a=a, b=b, out=np.zeros((FM, FN), np.float32)))
    ks = KernelSet(prog)
    res = ptopipe.run(ks.aic, ks.aiv, args, platform="a5")
    np.testing.assert_array_equal(res.outputs["out"], 2 * (a @ b) + 1)
    with pytest.raises(CompileError, match="does not fit the Vector core's UB on a2a3"):
        compile_program_for(prog, "a2a3")


def compile_program_for(program, platform):
    return _compile(program, platform)


def test_a_run_without_the_slot_buffer_is_told_how_to_add_it():
    from ptopipe import ConfigError
    prog = pl.program(fits_a5_only, name="noslot")
    ks = KernelSet(prog)
    z = np.zeros((FM, FK), np.float32)
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(ks.aic, ks.aiv, dict(a=z, b=np.zeros((FK, FN), np.float32),
                                         out=np.zeros((FM, FN), np.float32)), platform="a5")
    assert "needs argument 'gm_slot_buffer'" in ei.value.what
    assert "with_slot_buffer(program, args)" in ei.value.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_compiled_mixed_function_refuses_the_manual_sync_mode(platform, no_hang):
    """The compiler inserts no set_flag / wait_flag: under sync='manual' the compiled S1
    would report races the kernel as written does not have - a ConfigError at the mixed
    function instead."""
    from ptopipe.errors import ConfigError
    m = MIXED["s1_cv_split"]
    with pytest.raises(ConfigError, match="compiled from a mixed @pl.incore function.*manual "
                                          "synchronisation mode") as e:
        m.SCENARIO.run("default" if "default" in m.SCENARIO.variants else next(iter(m.SCENARIO.variants)),
                       platform, "spec", sync="manual")
    assert e.value.where.startswith(f"{ROOT / 'examples/mixed/s1_cv_split.py'}:21:")
    assert "--sync auto" in e.value.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("name", ["s1_cv_split", "s4_both_ways", "fa_forward"])
def test_the_printed_compiled_program_compiles_again_and_runs(name, platform, tmp_path, no_hang):
    """``ptopipe compile --emit dsl`` prints valid pl source: read back, it compiles again
    (the rings' literal base addresses are matched to their buffers) and matches numpy."""
    from ptopipe.passes import compile_program as full
    from ptopipe.runtime import kernels
    m = MIXED[name]
    variant = next(iter(m.SCENARIO.variants))
    params = m.SCENARIO.variants[variant]
    args = m.make_args(np.random.default_rng(5), **params)
    src = m.KERNELS.source(**args)
    text = print_program(full(src, platform))
    path = tmp_path / f"emitted_{name}_{platform}.py"
    path.write_text(text)
    again = _load_path(path).program
    _op = full(again, platform)
    aic, aiv = kernels(_op)
    res = ptopipe.run(aic, aiv, dict(args), platform=platform)
    for k, want in m.golden(args, **params).items():
        np.testing.assert_allclose(res.outputs[k], want, rtol=1e-4, atol=1e-4, err_msg=k)


def _load_path(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HM, HK, HN = 16, 32, 32


def held_over_inner_pops(split=pl.TILE_UP_DOWN, inner="loop"):
    """A popped tile r is still used after an inner loop / branch pops (and frees) more
    tiles of the same ring; a ring frees its slots oldest first."""
    if inner == "loop":
        @pl.incore(split=split, slot_num=2)
        def held(a: pl.Tensor[[HM, HK], pl.f32], b: pl.Tensor[[HK, HN], pl.f32],
                 out: pl.Tensor[[HM, HN], pl.f32], n: pl.Scalar[pl.index]):
            bl = pl.move(pl.load(b, [0, 0], [HK, HN], space=pl.Mat), space=pl.Right)
            al = pl.move(pl.load(a, [0, 0], [HM, HK], space=pl.Mat), space=pl.Left)
            r = pl.move(pl.matmul(al, bl), space=pl.Vec)
            s0 = pl.full([HM, HN], pl.f32, 0.0)
            for j, (s,) in pl.range(n, init_values=(s0,)):
                t = pl.move(pl.matmul(al, bl), space=pl.Vec)
                s1 = pl.yield_(pl.add(s, t))
            pl.store(pl.add(s1, r), [0, 0], out)
    else:
        @pl.incore(split=split, slot_num=2)
        def held(a: pl.Tensor[[HM, HK], pl.f32], b: pl.Tensor[[HK, HN], pl.f32],
                 out: pl.Tensor[[HM, HN], pl.f32], n: pl.Scalar[pl.index]):
            bl = pl.move(pl.load(b, [0, 0], [HK, HN], space=pl.Mat), space=pl.Right)
            al = pl.move(pl.load(a, [0, 0], [HM, HK], space=pl.Mat), space=pl.Left)
            r = pl.move(pl.matmul(al, bl), space=pl.Vec)
            s0 = pl.full([HM, HN], pl.f32, 0.0)
            if n > 0:
                t = pl.move(pl.matmul(al, bl), space=pl.Vec)
                s1 = pl.yield_(pl.add(s0, t))
            else:
                s1 = pl.yield_(s0)
            pl.store(pl.add(s1, r), [0, 0], out)
    return pl.program(held)


@pytest.mark.parametrize("inner,n,split,platform,protocol", rotated(
    [(i, n, s) for i, n in [("loop", 3), ("loop", 0), ("if", 1), ("if", 0)]
     for s in (pl.TILE_UP_DOWN, pl.TILE_NO_SPLIT)]))
def test_a_tile_held_over_inner_pops_of_its_ring_is_copied_out(inner, n, split, platform,
                                                              protocol, no_hang):
    from ptopipe.passes import compile_program as full
    from ptopipe.runtime import kernels
    rng = np.random.default_rng(7)
    args = dict(a=rng.integers(-3, 4, (HM, HK)).astype(np.float32),
                b=rng.integers(-3, 4, (HK, HN)).astype(np.float32),
                out=np.zeros((HM, HN), np.float32), n=n)
    _op = full(held_over_inner_pops(split, inner), platform, protocol=protocol)
    aic, aiv = kernels(_op)
    from ptopipe.passes.slot_buffer import with_slot_buffer
    res = ptopipe.run(aic, aiv, with_slot_buffer(_op, args), platform=platform, protocol=protocol)
    k = n if inner == "loop" else min(n, 1)
    np.testing.assert_array_equal(res.outputs["out"], (k + 1) * (args["a"] @ args["b"]))


def test_the_held_tile_is_copied_right_after_its_pop_and_its_slot_freed():
    text = print_program(compile_program(held_over_inner_pops()))
    aiv = text.split("@pl.aiv")[1].split("\n@")[0]
    pop = aiv.index("r = pl.TPOP(")
    assert aiv.index("r_held = pl.move(r, pl.Vec)", pop) < aiv.index("pl.TFREE(", pop) < aiv.index("pl.range(", pop)
    assert "pl.add(s1, r_held)" in aiv


def test_a_cube_tile_held_over_inner_pops_of_its_ring_is_an_error_at_its_pop():
    @pl.incore
    def v2c_held(x: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
                 out: pl.Tensor[[16, 16], pl.f32]):
        bl = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        r = pl.move(pl.muls(pl.load(x, [0, 0], [16, 16]), 2.0), space=pl.Mat)  # HELD
        for j in pl.range(2):
            t = pl.move(pl.load(x, [0, 0], [16, 16]), space=pl.Mat)
            pl.store(pl.matmul(pl.move(t, space=pl.Left), bl), [0, 0], out)
        pl.store(pl.matmul(pl.move(r, space=pl.Left), bl), [0, 0], out)

    with pytest.raises(CompileError, match="the tile popped here \\('r'\\) is still used after a "
                                           "later TPOP of the same ring .* is freed inside its "
                                           "loop / branch") as e:
        compile_program(pl.program(v2c_held))
    f = v2c_held.pyfunc.__code__.co_filename
    assert e.value.where.startswith(f"{f}:{line_of(v2c_held.pyfunc, 'HELD')}:")
    assert "pl.move(..., space=pl.Left)" in e.value.fix


def test_explored_schedules_build_and_compile_a_mixed_program_once(monkeypatch):
    """``check`` runs a scenario once per explored schedule: its builder runs once per
    parameter set, the front end that sizes the slot buffer once per program, and the
    pipeline once per platform and protocol - not once per run and kernel."""
    from ptopipe.isa.explore import explore
    from ptopipe.passes import manager, slot_buffer
    from ptopipe.runtime.kernels import default_compiler
    builds, compiles, pipelines = [], [], []

    def build(SQ):
        builds.append(SQ)
        return pl.program(fits_a5_only, name=f"once{SQ}")

    real = manager.compile_program
    monkeypatch.setattr(manager, "compile_program",
                        lambda *a, **k: compiles.append(a[1:]) or real(*a, **k))
    ks = KernelSet(build, compiler=lambda *a: pipelines.append(a[1:]) or default_compiler(*a))
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (FM, FK)).astype(np.float32)
    b = rng.integers(-3, 4, (FK, FN)).astype(np.float32)

    def make_args(_rng, SQ=1):
        args = dict(a=a, b=b, out=np.zeros((FM, FN), np.float32), SQ=SQ)
        return slot_buffer.with_slot_buffer(ks.source(**args), args)

    scen = ptopipe.Scenario("once", ks.aic, ks.aiv, make_args, lambda args, **_: {"out": 2 * (a @ b) + 1},
                            {"default": dict(SQ=1)})
    res = explore(scen, schedules=6, platform="a5")
    assert res.ok, res
    assert builds == [1]
    assert compiles == [("a2a3", manager.FRONT_END)]     # sizing the slot buffer
    assert len(pipelines) == 1 and pipelines[0][1] == "spec", pipelines


def _two_row_program(M, N, split):
    @pl.incore(split=split)
    def thin(a: pl.Tensor[[M, 16], pl.f32], b: pl.Tensor[[16, N], pl.f32],
             out: pl.Tensor[[M, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, 16], space=pl.Mat), space=pl.Left)
        bl = pl.move(pl.load(b, [0, 0], [16, N], space=pl.Mat), space=pl.Right)
        r = pl.move(pl.matmul(al, bl), space=pl.Vec)      # CROSS
        pl.store(pl.adds(r, 1.0), [0, 0], out)
    return pl.program(thin, name="thin")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("M,N,split", [(2, 32, pl.TILE_UP_DOWN), (16, 2, pl.TILE_LEFT_RIGHT)])
def test_a_split_giving_each_core_one_row_or_column(M, N, split, platform, no_hang):
    """Two rows under TILE_UP_DOWN (two columns under TILE_LEFT_RIGHT) give each Vector core
    a half of extent 1: a split tile, stored by each core - not a per-row tile kept whole,
    which was a false CompileError.  On A5 the Cube's LEFT_RIGHT push of an Acc into the Vector
    cores' UB takes a multiple of 32 columns (pto-isa's dual-mode TMOV: refused at the push).
    The accumulator is declared in whole 16x16 fractals, which its 2 rows (columns) do not fill:
    the device reads the split right; pto-isa's CPU simulator reads the A2A3 UP_DOWN one right
    (its one-row parts have no row pitch) but not the others (on A5 it hands each core half of the
    16 static rows, on A2A3 it TLOADs each core's two-column part whole from the Acc's 16 static
    columns) - reported at the move under ``pto-isa-cpusim``."""
    from ptopipe import ProtocolError
    rng = np.random.default_rng(M + N)
    a = rng.integers(-3, 4, (M, 16)).astype(np.float32)
    b = rng.integers(-3, 4, (16, N)).astype(np.float32)

    def run(protocol):
        return _run_compiled(_two_row_program(M, N, split), dict(a=a, b=b, out=np.zeros((M, N), np.float32)),
                             platform, protocol)
    if (platform, split) == ("a5", pl.TILE_LEFT_RIGHT):
        with pytest.raises(CompileError, match="a multiple of 32 columns"):
            run("spec")
        return
    if (platform, split) == ("a2a3", pl.TILE_UP_DOWN):     # one-row parts: no pitch to differ
        for protocol in ("spec", "pto-isa", "pto-isa-cpusim"):
            np.testing.assert_array_equal(run(protocol).outputs["out"], a @ b + 1)
        return
    for protocol in ("spec", "pto-isa"):
        np.testing.assert_array_equal(run(protocol).outputs["out"], a @ b + 1)
    with pytest.raises(ProtocolError) as e:
        run("pto-isa-cpusim")
    assert e.value.where.endswith(f":{line_of(_two_row_program, 'CROSS')}:9"), e.value.where
    assert "CPU simulator" in e.value.render(), e.value.render()


def _carried_slot_program(T, slot_num):
    M = T * 16

    @pl.incore(split=pl.TILE_UP_DOWN, slot_num=slot_num)
    def cs(a: pl.Tensor[[M, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32], out: pl.Tensor[[M, 32], pl.f32]):
        bl = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        a0 = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
        r0 = pl.move(pl.matmul(a0, bl), space=pl.Vec)
        for i, (prev,) in pl.range(1, T, init_values=(r0,)):
            ai = pl.move(pl.load(a, [i * 16, 0], [16, 32], space=pl.Mat), space=pl.Left)
            cur = pl.move(pl.matmul(ai, bl), space=pl.Vec)
            pl.store(pl.add(prev, cur), [(i - 1) * 16, 0], out)
            last = pl.yield_(cur)
        pl.store(pl.muls(last, 2.0), [(T - 1) * 16, 0], out)
    return pl.program(cs, name="carried")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_carried_slot_beyond_the_hold_limit_carries_copies(platform, protocol, no_hang):
    """A tile popped in one iteration and used in the next (a carried slot) is held while the
    body pops the next one: two slots, more than pto-isa's held-slot limit on A5 with
    SLOT_NUM 2 (SLOT_NUM - SyncPeriod + 1 = 1).  InsertTfree then copies each popped tile out
    and frees its slot at once, and the loop carries the copies (the program the compiler
    emits passes its own VerifyPipes)."""
    T = 5
    prog = _carried_slot_program(T, 2)
    rng = np.random.default_rng(12)
    a = rng.integers(-3, 4, (T * 16, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (32, 32)).astype(np.float32)
    res = _run_compiled(prog, dict(a=a, b=b, out=np.zeros((T * 16, 32), np.float32)), platform, protocol)
    r = a @ b
    want = np.vstack([r[:-16] + r[16:], 2 * r[-16:]])
    np.testing.assert_array_equal(res.outputs["out"], want)
    text = print_program(_compile(prog, platform, protocol=protocol))
    copies = text.count("_held = pl.move(")
    assert copies == (2 if (platform, protocol) == ("a5", "pto-isa") else 0), text


@pl.incore(split=pl.TILE_UP_DOWN)
def manual_lane_offset(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
                       c: pl.Tensor[[64, 32], pl.f32], out: pl.Tensor[[16, 32], pl.f32]):
    bl = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
    al = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    r = pl.move(pl.matmul(al, bl), space=pl.Vec)
    cv = pl.load(c, [pl.get_subblockid() * 8, 0], [16, 32])                  # LANE
    pl.store(pl.add(r, cv), [0, 0], out)


def test_a_manual_lane_offset_in_a_split_mixed_function_is_a_compile_error():
    """A hand-written kernel's habit - adding get_subblockid() * half to a Vec offset - in a
    split mixed function shifted AIV1's load twice, silently."""
    with pytest.raises(CompileError) as e:
        _compile(pl.program(manual_lane_offset, name="lane"), "a2a3")
    assert "its offset uses pl.get_subblockid()" in e.value.what and "shifted twice" in e.value.what
    assert e.value.where.split(":")[-2] == str(line_of(manual_lane_offset.pyfunc, "LANE"))
