"""AllocateMemoryAddr writes each tile's address into the IR (``addr``, ``rotation``,
``scratch_addr`` on the tile ops, docs/passes/allocate-memory.md): the annotations survive the
text form, the C++ writer emits what they say, the memory-allocated verifier reports an op
without one, and the placement does not depend on whether a value is named."""
import ptopipe.language as pl
from ptopipe.codegen import write_cpp
from ptopipe.ir import parse_ir, print_ir
from ptopipe.ir.instances import owns_storage
from ptopipe.ir.layout import plan_function, read_layout
from ptopipe.passes import PassContext, compile_program
from ptopipe.passes.properties import IRProperty, verify_property
from ptopipe.passes.util import functions


@pl.aic
def idle():
    return


@pl.aiv
def lagged(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32],
           sums: pl.Tensor[[64, 1], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    for i, (cur, prev) in pl.range(0, 4, 1, init_values=(a, a)):
        pl.store(pl.add(prev, pl.exp(cur)), [i * 16, 0], out)
        pl.store(pl.row_sum(cur), [i * 16, 0], sums)
        cur2, prev2 = pl.yield_(pl.adds(cur, 1.0), cur)


def _aiv(op):
    return next(f for f in functions(op) if f.sym_name == "lagged")


def _tile_ops(f):
    return [o for o in f.walk() if owns_storage(o)]


def _compiled():
    return compile_program(pl.program(idle, lagged, name="lag"), "a5")


def test_every_tile_op_carries_its_address_and_the_text_form_keeps_it():
    op = _compiled()
    f = _aiv(op)
    tiles = _tile_ops(f)
    assert tiles and all(isinstance(t.addr, int) for t in tiles)
    assert any(t.rotation for t in tiles)              # pl.adds: prev reads the older result
    assert any(isinstance(t.scratch_addr, int) for t in tiles)      # pl.row_sum's scratch
    back = _aiv(parse_ir(print_ir(op), "k.ir"))
    assert [(t.addr, t.rotation, t.scratch_addr) for t in _tile_ops(back)] == \
        [(t.addr, t.rotation, t.scratch_addr) for t in tiles]


def test_the_cpp_writer_emits_the_address_written_in_the_ir():
    op = _compiled()
    t = next(t for t in _tile_ops(_aiv(op)) if not t.rotation)
    t.addr = 0x7e00                                    # nobody places the tiles again
    assert "0x7e00);" in write_cpp(op, "a5")


def test_memory_allocated_names_a_tile_op_without_an_address():
    op = _compiled()
    ctx = PassContext("a5")
    assert verify_property(IRProperty.MEMORY_ALLOCATED, op, ctx) == []
    t = _tile_ops(_aiv(op))[0]
    del t.addr
    problems = verify_property(IRProperty.MEMORY_ALLOCATED, op, ctx)
    assert problems and f"{t.name} in 'lagged'" in problems[0] and "has no address" in problems[0]


def test_placement_does_not_depend_on_value_names():
    f = _aiv(pl.program(idle, lagged, name="lag").clone())
    before = read_layout(f) if read_layout(f).tiles else plan_function(f)
    places = [(before.tiles[t], before.rotations.get(t)) for t in _tile_ops(f)]
    for k, o in enumerate(f.walk()):                    # every nested temporary named
        for r in o.results:
            r.name = r.name or f"named{k}"
    after = plan_function(f)
    assert [(after.tiles[t], after.rotations.get(t)) for t in _tile_ops(f)] == places


@pl.aiv
def pair_sum(x: pl.Tensor[[32, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    b = pl.load(x, [16, 0], [16, 16])
    pl.store(pl.add(a, b), [0, 0], out)


def test_the_runtime_makes_each_tile_at_the_address_written_in_the_ir():
    import numpy as np
    import ptopipe
    from ptopipe.runtime import kernels
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)

    def run(op):
        aic, aiv = kernels(op)
        return ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros((16, 16), np.float32)),
                           platform="a5").outputs["out"]
    op = compile_program(pl.program(idle, pair_sum, name="ps"), "a5")
    np.testing.assert_array_equal(run(op), x[:16] + x[16:])
    op = compile_program(pl.program(idle, pair_sum, name="ps"), "a5")
    a, b = [t for t in _tile_ops(next(f for f in functions(op) if f.sym_name == "pair_sum"))][:2]
    b.addr = a.addr                                     # b now overwrites a before the add
    np.testing.assert_array_equal(run(op), 2 * x[16:])
