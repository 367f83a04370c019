"""Liveness of DSL tile storage (ptopipe/ir/liveness.py), through its own API
(:func:`~ptopipe.ir.liveness.analyse`) and the allocator that reads it
(:func:`~ptopipe.ir.layout.plan_function`): a tile defined before a loop and read in the
body stays live to the loop's end (the next iteration reads it again), so nothing the body
defines after that read shares its memory; a tile carried by a loop is live through the
whole loop."""
import ptopipe.language as pl
from ptopipe.ir.layout import plan_function
from ptopipe.ir.liveness import analyse
from ptopipe.ir.opdefs import ForOp


@pl.aic
def idle():
    return


@pl.aiv
def read_in_loop(x: pl.Tensor[[64, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(4):
        b = a + 1.0                          # the first read of a in the body
        c = pl.load(x, [i * 16, 0], [16, 16])
        pl.store(c + b, [i * 16, 0], out)


@pl.aiv
def carried(x: pl.Tensor[[64, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
    acc = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(4):
        t = pl.load(x, [i * 16, 0], [16, 16])
        acc = acc + t
    pl.store(acc, [0, 0], out)


def _function(kernel):
    prog = pl.program(idle, kernel, name=kernel.__name__).clone()
    return next(f for f in prog.body if f.sym_name == kernel.__name__)


def _by_name(storages):
    """The storages keyed by the DSL variable their op assigns (unnamed ones by the op)."""
    return {(k.results[0].name or k) if not isinstance(k, tuple) else k: st
            for k, st in storages.items()}


def _layout(fn):
    """(tiles by DSL variable, the unnamed tiles) of the allocator's plan for ``fn``."""
    lay = plan_function(fn)
    tiles = lay.named(lay.tiles)
    return tiles, {k: v for k, v in tiles.items() if not isinstance(k, str)}


def _loop_span(storages, body):
    """(first, last) position of the function's only loop: the position of the For
    statement and the last position of anything defined in its body."""
    loop = next(s for s in body if s.is_a(ForOp))
    inside = [st for st in storages.values() if st.loop is loop]
    return min(st.start for st in inside) - 1, max(st.end for st in inside)


def _overlap(a, b, size):
    return a < b + size and b < a + size


def test_tile_defined_before_a_loop_is_live_to_the_loop_end():
    fn = _function(read_in_loop)
    storages = _by_name(analyse(fn))
    first, last = _loop_span(storages, fn.body)
    a = storages["a"]
    assert a.start < first and a.end >= last, (a.start, a.end, first, last)
    # every storage the body defines is live while a is: none may share its memory
    tiles, temps = _layout(fn)
    size = a.type.footprint
    for key in ("b", "c"):
        assert storages[key].start <= a.end
        assert not _overlap(tiles["a"][1], tiles[key][1], size), (key, tiles)
    for addr in temps.values():
        assert not _overlap(tiles["a"][1], addr[1], size), temps


def test_loop_carried_tile_is_live_through_the_loop():
    fn = _function(carried)
    storages = _by_name(analyse(fn))
    loop = next(s for s in fn.body if s.is_a(ForOp))
    acc_keys = [k for k, st in storages.items() if st.loop is loop and k != "t"]
    assert acc_keys, storages
    body = [st for k, st in storages.items() if st.loop is loop and k not in acc_keys]
    for k in acc_keys:                 # the body's sum is the next iteration's acc: live from
        st = storages[k]               # the loop's head, before anything the body makes,
        assert st.start < min(b.start for b in body), (k, st)      # to the back edge
        assert st.end >= max(b.end for b in body), (k, st)
    tiles, _temps = _layout(fn)
    t_addr = tiles["t"][1]
    for k in acc_keys:
        assert not _overlap(tiles[k][1], t_addr, storages["t"].type.footprint)
