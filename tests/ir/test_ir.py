"""IR: printer/parser round trip of every DSL example, structural equality ignoring
locations, the op verifier on hand-built op programs, and AUTO / import_peer_buffer resolution."""
import importlib.util
import os

import pytest

import ptopipe.language as pl
from ptopipe.ir.op_verifier import verify_program
from ptopipe import CompileError
from ptopipe.ir import (AUTO, BufferType, FunctionKind, Loc, MemorySpace, TensorType, TileValueType,
                        first_difference, print_program)
from ptopipe.ir.opdefs import (AicInitializePipe, ForOp, IfOp, ImportPeerBufferOp, LoadOp,
                               ReserveBufferOp, StoreOp, TAlloc)
from ptopipe.runtime import resolve_program
from op_build import Function, program, same
from plans import plan as plan_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DSL = os.path.join(ROOT, "examples", "dsl")


def _load(name):
    spec = importlib.util.spec_from_file_location(f"ir_example_{name}", os.path.join(DSL, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _s5_program():
    # s5's PROGRAM has run (kernels() at import placed its tiles: addresses on its ops, which
    # DSL source does not spell): the same kernels in a program of their own
    s5 = _load("s5_subtile_gm")
    return pl.program(s5.cube, s5.vector, name="s5_subtile_gm")


def _example_programs():
    s1, s4 = _load("s1_cv_split"), _load("s4_both_ways")
    progs = [_s5_program(), s4.build(pl.TILE_UP_DOWN), s4.build(pl.TILE_LEFT_RIGHT)]
    for v in s1.VARIANTS.values():
        progs.append(s1.build(**v))
    return progs


def test_every_example_round_trips():
    progs = _example_programs()
    assert len(progs) > 20
    for prog in progs:
        text = print_program(prog)
        again = pl.parse(text, filename="<printed>")
        assert same(again, prog) is None, same(prog, again)
        assert print_program(again) == text


def test_structural_equality_ignores_locations_but_not_names():
    prog = _s5_program()
    again = pl.parse(print_program(prog))
    f0, f1 = prog.functions[0], again.functions[0]
    assert f0.loc != f1.loc and same(f0, f1) is None
    f1.attributes["sym_name"] = "other"
    assert same(f1, f0) is not None
    assert first_difference(f0, f1) == f"pl.func @cube at {f0.loc}: attribute sym_name = 'cube' != 'other'"
    f1.attributes["sym_name"] = "cube"
    f1.params[0].name = "renamed"
    assert first_difference(f0, f1) is None and "value names differ" in same(f0, f1)


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
    prog = pl.parse(src)
    loop = next(o for o in prog.functions[0].body if o.is_a(ForOp))
    assert [v.name for v in loop.body.args[1:]] == ["t_1"]
    branch = next(o for o in loop.body if o.is_a(IfOp))
    assert [r.name for r in branch.results] == ["t_4"]
    assert branch.else_block.terminator.operands[0].name == "t_2"
    assert loop.body.terminator.operands[0].name == "t_4" and loop.results[0].name == "t_5"
    text = print_program(prog)
    assert "init_values=(t,)" in text and "t_5 = pl.yield_(t_4)" in text
    assert same(pl.parse(text), prog) is None


T16 = TileValueType((16, 32), "f32", MemorySpace.Vec)
X16 = TensorType((16, 32), "f32")


def _load_op(f, result_type, space, name, loc=None):
    return f.op(LoadOp, result_types=[result_type], name=name, loc=loc, tensor=f["x"],
                offsets=[f.const(0), f.const(0)], shape=(16, 32), space=space)


def test_verifier_rejects_redefinition_and_use_before_def():
    f = Function("k", FunctionKind.AIV, x=X16)
    first = _load_op(f, T16, MemorySpace.Vec, "a", Loc("k.py", 4, 5))
    second = _load_op(f, T16, MemorySpace.Vec, "a2", Loc("k.py", 5, 5))
    second.results[0] = first.results[0]                                  # %a again
    with pytest.raises(CompileError, match="defined twice") as ei:
        verify_program(program(f.func))
    assert ei.value.where == "k.py:5:5"
    f = Function("k", FunctionKind.AIV, x=X16)
    elsewhere = Function("other", FunctionKind.AIV, x=X16)
    b = _load_op(elsewhere, T16, MemorySpace.Vec, "b").results[0]          # defined in no block of k
    f.op(StoreOp, loc=Loc("k.py", 6, 5), tile=b, offsets=[f.const(0), f.const(0)], tensor=f["x"])
    with pytest.raises(CompileError, match="uses %b .* before it is defined") as ei:
        verify_program(program(f.func))
    assert ei.value.where == "k.py:6:5"


def test_verifier_rejects_wrong_result_type_and_space():
    wrong = TileValueType((16, 32), "f16", MemorySpace.Vec)
    f = Function("k", FunctionKind.AIV, x=X16)
    _load_op(f, wrong, MemorySpace.Vec, "a")
    with pytest.raises(CompileError, match="produces"):
        verify_program(program(f.func))
    mat = TileValueType((16, 32), "f32", MemorySpace.Mat)
    f = Function("k", FunctionKind.AIV, x=X16)
    _load_op(f, mat, MemorySpace.Mat, "a")
    with pytest.raises(CompileError, match="Vector core has only UB"):
        verify_program(program(f.func))


def test_verifier_checks_reserve_buffer_placement_and_peers():
    v = Function("v", FunctionKind.AIV)
    v.op(ReserveBufferOp, result_types=[BufferType("reserve")], name="buf", loc=Loc("k.py", 3, 5),
         buffer_name="ring", size=4096, base=AUTO, memory_space="UB")
    verify_program(program(v.func))      # a reserve no TPOP reads: a region the kernel keeps
    c = Function("c", FunctionKind.AIC, g=TensorType((64,), "u8"))
    peer = c.op(ImportPeerBufferOp, result_types=[BufferType("import")], name="peer",
                loc=Loc("k.py", 9, 5), buffer_name="ring", peer_func="nobody").results[0]
    c.op(AicInitializePipe, gm_slot_buffer=c["g"], c2v_consumer_buf=c.const(0),
         v2c_consumer_buf=c.const(0), dir_mask=1, slot_size=128, slot_num=None, lanes=None,
         flag_id=None, local_slot_num=None)
    c.op(TAlloc, result_types=[TensorType((4, 8), "f32")], name="s", buf=peer,
         result_type=TensorType((4, 8), "f32"), split=0, direction=1)
    with pytest.raises(CompileError, match="not in program") as ei:
        verify_program(program(c.func))
    assert ei.value.where == "k.py:9:5"


def test_auto_bases_resolve_without_overlap_and_imports_follow():
    s4 = _load("s4_both_ways")
    prog = s4.build(pl.TILE_UP_DOWN)
    lays = plan_program(prog)
    vec = lays["vector"]
    base, size = vec.buffers["c2v_buf"]
    ub_tiles = [(a, a + _nbytes(prog, "vector", n)) for n, (m, a) in vec.tiles.items() if m == "UB"]
    assert all(hi <= base or lo >= base + size for lo, hi in ub_tiles)
    assert lays["cube"].buffers["c2v_buf"] == (base, size)          # import -> the peer's base
    assert lays["vector"].buffers["v2c_buf"] == lays["cube"].buffers["v2c_buf"]
    resolved = resolve_program(prog.clone())
    rb = next(o for o in resolved.function("vector").body if o.is_a(ReserveBufferOp))
    assert rb.base == base
    assert "base=pl.AUTO" not in print_program(resolved).split("def vector")[1].split("\n")[1]
    assert same(pl.parse(print_program(resolved)), resolved) is None


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
    lay = plan_program(pl.parse(src))["v"]
    assert lay.buffers["buf"] == (0, 4096)
    assert lay.tiles["u"] == ("UB", 4096)


def _nbytes(prog, fn, var):
    for o in prog.function(fn).walk():
        for r in o.results:
            if r.name == var:
                return r.type.nbytes
    raise KeyError(var)
