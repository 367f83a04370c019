"""IR: printer/parser round trip of every DSL example, structural equality ignoring
locations, the op verifier on IR converted from hand-built trees, and AUTO / import_peer_buffer resolution."""
import dataclasses
import importlib.util
import os

import pytest

import ptopipe.language as pl
from ptopipe.ir.convert import to_ops, to_tree
from ptopipe.ir.op_verifier import verify_program
from ptopipe import CompileError
from ptopipe.ir import (AUTO, Assign, BufferType, Call, Const, ExprStmt, For, Function,
                        FunctionKind, ImportPeerBuffer, Loc, MemorySpace, Program, ReserveBuffer,
                        TensorType, TileValueType, Var, first_difference, print_program)
from ptopipe.runtime import resolve_program
from plans import plan as plan_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DSL = os.path.join(ROOT, "examples", "dsl")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"ir_example_{name}", os.path.join(DSL, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _example_programs():
    s1, s4, s5 = _load("s1_cv_split"), _load("s4_both_ways"), _load("s5_subtile_gm")
    progs = [s5.PROGRAM, s4.build(pl.TILE_UP_DOWN), s4.build(pl.TILE_LEFT_RIGHT)]
    for v in s1.VARIANTS.values():
        progs.append(s1.build(**v))
    return [to_tree(p) for p in progs]                  # the statement-tree form


def test_every_example_round_trips():
    progs = _example_programs()
    assert len(progs) > 20
    for prog in progs:
        text = print_program(prog)
        again = to_tree(pl.parse(text, filename="<printed>"))
        assert again == prog, first_difference(prog, again)
        assert print_program(again) == text


def test_structural_equality_ignores_locations_but_not_names():
    prog = _example_programs()[0]
    again = to_tree(pl.parse(print_program(prog)))
    f0, f1 = prog.functions[0], again.functions[0]
    assert f0.loc != f1.loc and f0 == f1
    renamed = dataclasses.replace(f1, name="other")
    assert renamed != f0 and first_difference(f0, renamed) == ".name: 'cube' != 'other'"


def test_natural_python_loops_become_explicit_loop_carried_values():
    src = '''
import ptopipe.language as pl

@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32], n: pl.Scalar[pl.i32]):
    t = pl.load(x, [0, 0], [16, 32])
    for i in pl.range(n):
        t = t + 1.0
        if i > 2:
            t = pl.exp(t)
    pl.store(t, [0, 0], x)
'''
    prog = to_tree(pl.parse(src))
    loop = prog.functions[0].body[1]
    assert isinstance(loop, For) and [v.name for v in loop.iter_args] == ["t_1"]
    branch = loop.body[1]
    assert [r.name for r in branch.results] == ["t_4"] and branch.else_yields[0].name == "t_2"
    assert loop.yields[0].name == "t_4" and loop.results[0].name == "t_5"
    text = print_program(prog)
    assert "init_values=(t,)" in text and "t_5 = pl.yield_(t_4)" in text
    assert to_tree(pl.parse(text)) == prog


def _bufs():
    rb = Var("buf", BufferType("reserve"))
    return rb, ReserveBuffer(rb, "ring", 4096, AUTO, "UB", Loc("k.py", 3, 5))


def test_verifier_rejects_redefinition_and_use_before_def():
    t = TileValueType((16, 32), "f32", MemorySpace.Vec)
    x = Var("x", TensorType((16, 32), "f32"))
    load = Call("load", (x, _offsets()), (("shape", (16, 32)), ("space", MemorySpace.Vec)), t)
    a = Var("a", t)
    body = (Assign(a, load, Loc("k.py", 4, 5)), Assign(Var("a2", t), load, Loc("k.py", 5, 5)))
    ops = to_ops(Program("p", (Function("k", FunctionKind.AIV, (x,), body),)))
    second = [o for o in ops.walk() if o.name == "pl.load"][1]
    second.results[0] = [o for o in ops.walk() if o.name == "pl.load"][0].results[0]   # %a again
    with pytest.raises(CompileError, match="defined twice") as ei:
        verify_program(ops)
    assert ei.value.where == "k.py:5:5"
    store = Call("store", (Var("b", t), _offsets(), x), (), _none())
    with pytest.raises(CompileError, match="used before it is defined"):
        verify_program(to_ops(Program("p", (Function("k", FunctionKind.AIV, (x,),
                                                     (ExprStmt(store, Loc("k.py", 6, 5)),)),))))


def test_verifier_rejects_wrong_result_type_and_space():
    x = Var("x", TensorType((16, 32), "f32"))
    wrong = TileValueType((16, 32), "f16", MemorySpace.Vec)
    load = Call("load", (x, _offsets()), (("shape", (16, 32)), ("space", MemorySpace.Vec)), wrong)
    with pytest.raises(CompileError, match="produces"):
        verify_program(to_ops(Program("p", (Function("k", FunctionKind.AIV, (x,),
                                                     (Assign(Var("a", wrong), load),)),))))
    mat = TileValueType((16, 32), "f32", MemorySpace.Mat)
    load = Call("load", (x, _offsets()), (("shape", (16, 32)), ("space", MemorySpace.Mat)), mat)
    with pytest.raises(CompileError, match="Vector core has only UB"):
        verify_program(to_ops(Program("p", (Function("k", FunctionKind.AIV, (x,),
                                                     (Assign(Var("a", mat), load),)),))))


def test_verifier_checks_reserve_buffer_placement_and_peers():
    rb, decl = _bufs()       # a reserve no TPOP reads: a region the kernel keeps
    verify_program(to_ops(Program("p", (Function("v", FunctionKind.AIV, (), (decl,)),))))
    ib = Var("peer", BufferType("import"))
    imp = ImportPeerBuffer(ib, "ring", "nobody", Loc("k.py", 9, 5))
    tp = Call("talloc", (ib,), (("type", TensorType((4, 8), "f32")), ("split", 0), ("direction", 1)),
              TensorType((4, 8), "f32"))
    g = Var("g", TensorType((64,), "u8"))
    init = Call("aic_initialize_pipe", (g, Const(0, _index()), Const(0, _index())),
                (("dir_mask", 1), ("slot_size", 128), ("slot_num", None), ("lanes", None),
                 ("flag_id", None), ("local_slot_num", None)), _none())
    cube = Function("c", FunctionKind.AIC, (g,), (imp, ExprStmt(init), Assign(Var("s", tp.type), tp)))
    with pytest.raises(CompileError, match="not in program") as ei:
        verify_program(to_ops(Program("p", (cube,))))
    assert ei.value.where == "k.py:9:5"


def test_auto_bases_resolve_without_overlap_and_imports_follow():
    s4 = _load("s4_both_ways")
    prog = to_tree(s4.build(pl.TILE_UP_DOWN))
    lays = plan_program(prog)
    vec = lays["vector"]
    base, size = vec.buffers["c2v_buf"]
    ub_tiles = [(a, a + _nbytes(prog, "vector", n)) for n, (m, a) in vec.tiles.items() if m == "UB"]
    assert all(hi <= base or lo >= base + size for lo, hi in ub_tiles)
    assert lays["cube"].buffers["c2v_buf"] == (base, size)          # import -> the peer's base
    assert lays["vector"].buffers["v2c_buf"] == lays["cube"].buffers["v2c_buf"]
    resolved = to_tree(resolve_program(to_ops(prog)))
    rb = [s for s in resolved.function("vector").body if isinstance(s, ReserveBuffer)][0]
    assert rb.base == base
    assert "base=pl.AUTO" not in print_program(resolved).split("def vector")[1].split("\n")[1]
    assert to_tree(pl.parse(print_program(resolved))) == resolved


def test_literal_base_is_kept_and_tiles_avoid_it():
    src = '''
import ptopipe.language as pl

@pl.aiv
def v(x: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[16384], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4096, base=0x0)
    pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0)
    t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Vec])
    u = pl.exp(t)
    pl.TFREE(buf)
    pl.store(u, [0, 0], x)
'''
    lay = plan_program(to_tree(pl.parse(src)))["v"]
    assert lay.buffers["buf"] == (0, 4096)
    assert lay.tiles["u"] == ("UB", 4096)


def _nbytes(prog, fn, var):
    from ptopipe.ir import walk
    for s in walk(prog.function(fn).body):
        if isinstance(s, Assign) and s.var.name == var:
            return s.var.type.nbytes
    raise KeyError(var)


def _offsets():
    from ptopipe.ir import ExprList
    return ExprList((Const(0, _index()), Const(0, _index())))


def _index():
    from ptopipe.ir import INDEX
    return INDEX


def _none():
    from ptopipe.ir import NONE
    return NONE
