"""The lower-level pipe forms of the ``.pto`` reader: ``%p = pto.initialize_l2g2l_pipe
{dir_mask, slot_size, ...} (%gm : !pto.ptr<..>, %local : i32[, %local2 : i32]) -> !pto.pipe``
(``initialize_l2l_pipe``: no GM address), ``pto.tpush(%t, %p)``, ``pto.declare_tile`` +
``pto.tpop(%t, %p)`` (destination passing) and ``pto.tfree(%p)``.  They become the same
seed-003 init / TPUSH / TPOP / TFREE ops as the ``aic_/aiv_initialize_pipe`` forms; the
direction of a push / pop follows from the kernel's core (the Cube pushes C2V and pops V2C).
"""
from __future__ import annotations

from ..ir.nodes import FunctionKind
from ..ir.ops import C2V, V2C
from ..ir.types import TileValueType
from .pto_ops import _check_results, _check_type, emit, lookup, read, write
from .pto_pipe_ops import _free, _init_attrs, _make_init, _ring, _split


class Pipe:
    """A lower-level ``!pto.pipe`` handle."""
    __slots__ = ("dirs",)

    def __init__(self, dirs):
        self.dirs = dirs


def h_low_init(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    attrs, nosplit = _init_attrs(r, c.attr_dict(), opt)
    c.expect("(", "opening the pipe's operands")
    toks = []
    while not c.accept(")"):
        t = c.kind("value", "an operand")
        c.expect(":")
        toks.append((t, c.type_()))
        if not c.at(")"):
            c.expect(",")
    gm = None
    if opt.text == "pto.initialize_l2g2l_pipe":
        if not toks or toks[0][1].kind != "ptr":
            raise c.error("initialize_l2g2l_pipe takes the GM address (!pto.ptr) first", opt)
        gm, toks = toks[0][0], toks[1:]
    d = int(attrs["dir_mask"]) & 3
    need = 2 if d == 3 else 1
    if len(toks) != need:
        raise c.error(f"{opt.text} with dir_mask = {d} takes {need} local buffer operand(s), got {len(toks)}", opt)
    c.expect("->")
    c.type_()
    locals_ = [t for t, _ in toks]
    if d == 1:
        c2v, v2c = locals_[0], None
    elif d == 2:
        c2v, v2c = None, locals_[0]
    else:
        c2v, v2c = locals_
    _make_init(r, fs, opt, loc, attrs, gm, c2v, v2c, nosplit)
    rt, name = results[0]
    r.define(fs, rt, name, Pipe(d))


def _handle(r, fs, tok):
    _, p = lookup(r, fs, tok)
    if not isinstance(p, Pipe):
        raise r.c.error(f"{tok.text} is not a !pto.pipe handle", tok)
    return p


def h_low_push(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    c.expect("(")
    t = c.kind("value", "the tile")
    c.expect(",")
    _handle(r, fs, c.kind("value", "the pipe"))
    c.expect(":")
    pt = c.type_()
    c.expect(",")
    c.type_()
    c.expect(")")
    split = _split(r, c.attr_dict() if c.at("{") else {}, opt)
    d = C2V if fs.kind is FunctionKind.AIC else V2C
    v = read(r, fs, t)
    _check_type(r, t, v, pt)
    emit(r, fs, "pl.tpush", [v, _ring(r, fs, d, "producer", opt)], [], {"split": split, "direction": d}, loc)


def h_low_pop(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    c.expect("(")
    t = c.kind("value", "the destination tile")
    c.expect(",")
    _handle(r, fs, c.kind("value", "the pipe"))
    c.expect(":")
    c.type_()
    c.expect(",")
    c.type_()
    c.expect(")")
    split = _split(r, c.attr_dict() if c.at("{") else {}, opt)
    d = V2C if fs.kind is FunctionKind.AIC else C2V
    _, b = lookup(r, fs, t)
    ty = b.type
    if not isinstance(ty, TileValueType):
        raise c.error(f"{t.text} is not a tile buffer", t)
    op = emit(r, fs, "pl.tpop", [_ring(r, fs, d, "consumer", opt)], [ty],
              {"type": ty, "split": split, "direction": d}, loc, [t.text[1:]])
    write(r, fs, t, op.results[0])


def h_low_free(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    c.expect("(")
    _handle(r, fs, c.kind("value", "the pipe"))
    c.expect(":")
    c.type_()
    c.expect(")")
    attrs = c.attr_dict() if c.at("{") else {}
    d = V2C if fs.kind is FunctionKind.AIC else C2V
    _free(r, fs, d, _split(r, attrs, opt, required=False), opt, loc)


HANDLE_HANDLERS = {
    "pto.initialize_l2g2l_pipe": h_low_init, "pto.initialize_l2l_pipe": h_low_init,
    "pto.tpush": h_low_push, "pto.tpop": h_low_pop, "pto.tfree": h_low_free,
}
