"""The lower-level pipe forms of the ``.pto`` reader: ``%p = pto.initialize_l2g2l_pipe
{dir_mask, slot_size, ...} (%gm : !pto.ptr<..>, %local : i32[, %local2 : i32]) -> !pto.pipe``
(``initialize_l2l_pipe``: no GM address), ``pto.tpush(%t, %p)``, ``pto.declare_tile`` +
``pto.tpop(%t, %p)`` (destination passing) and ``pto.tfree(%p)``, or the slot-id form
``%sid = pto.tpop(%p) -> index`` / ``%t = pto.get_fifo_tile(%p, %sid) -> T`` (the TPOP of the
IR, at this position) / ``pto.tfree(%p, %sid)`` - one tile view and one free per slot, in the
block of its pop.  They become the same
seed-003 init / TPUSH / TPOP / TFREE ops as the ``aic_/aiv_initialize_pipe`` forms; the
direction of a push / pop follows from the kernel's core (the Cube pushes C2V and pops V2C).
"""
from __future__ import annotations

from ..protocol.rings import L2G2L, L2L, ptoas_local_slot_num
from ..ir.vocab import FunctionKind
from ..ir.ops import C2V, V2C
from ..ir.types import TileValueType
from ..ir.opdefs import TPop, TPush
from .pto_ops import _check_results, _check_type, emit, lookup, read, write
from .pto_pipe_ops import _free, _id_attrs, _init_attrs, _make_init, _ring, _split, _trailing


class Pipe:
    """A lower-level ``!pto.pipe`` handle: its directions and the pipe id of its rings."""
    __slots__ = ("dirs", "pid")

    def __init__(self, dirs, pid=0):
        self.dirs, self.pid = dirs, pid


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
    attrs["local_slot_num"] = ptoas_local_slot_num(L2G2L if gm is not None else L2L, attrs["dir_mask"],
                                                   r.platform, attrs["slot_num"], attrs["local_slot_num"])
    named = _trailing(r, attrs, opt)
    if named is not None:
        if gm is not None:
            raise c.error("ptopipe.gm_slot_buffer on an initialize_l2g2l_pipe, which takes its GM "
                          "address as an operand", opt)
        gm = named
    c.expect("->")
    c.type_()
    locals_ = [t for t, _ in toks]
    if d == 1:
        c2v, v2c = locals_[0], None
    elif d == 2:
        c2v, v2c = None, locals_[0]
    else:
        c2v, v2c = locals_
    pid = _make_init(r, fs, opt, loc, attrs, gm, c2v, v2c, nosplit, handle=True)
    rt, name = results[0]
    r.define(fs, rt, name, Pipe(d, pid))


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
    pid = _handle(r, fs, c.kind("value", "the pipe")).pid
    c.expect(":")
    pt = c.type_()
    c.expect(",")
    c.type_()
    c.expect(")")
    split = _split(r, fs, c.attr_dict() if c.at("{") else {}, opt)
    d = C2V if fs.kind is FunctionKind.AIC else V2C
    v = read(r, fs, t)
    _check_type(r, t, v, pt)
    emit(r, fs, TPush.name, [v, _ring(r, fs, d, "producer", opt, pid)], [],
         _id_attrs({"split": split, "direction": d}, pid), loc)


class Slot:
    """``%sid = pto.tpop(%pipe) -> index``: a borrowed slot; its TPOP is the IR op that
    ``pto.get_fifo_tile(%pipe, %sid)`` makes (the tile's type is known there)."""
    __slots__ = ("tok", "split", "tiled", "freed", "scope", "pid")

    def __init__(self, tok, split, scope, pid=0):
        self.tok, self.split, self.scope, self.pid = tok, split, scope, pid
        self.tiled = self.freed = False


def h_low_pop(r, fs, opt, results, loc):
    c = r.c
    c.expect("(")
    if c.peek(1).text == ":":                   # the slot-id form: %sid = pto.tpop(%pipe : ...) -> index
        _check_results(r, opt, results, 1)
        pid = _handle(r, fs, c.kind("value", "the pipe")).pid
        c.expect(":")
        c.type_()
        c.expect(")")
        split = _split(r, fs, c.attr_dict() if c.at("{") else {}, opt, required=False)
        c.expect("->")
        c.type_()
        rt, name = results[0]
        r.define(fs, rt, name, Slot(rt, split, fs.scopes[-1], pid))
        return
    _check_results(r, opt, results, 0)
    t = c.kind("value", "the destination tile")
    c.expect(",")
    pid = _handle(r, fs, c.kind("value", "the pipe")).pid
    c.expect(":")
    c.type_()
    c.expect(",")
    c.type_()
    c.expect(")")
    split = _split(r, fs, c.attr_dict() if c.at("{") else {}, opt)
    d = V2C if fs.kind is FunctionKind.AIC else C2V
    _, b = lookup(r, fs, t)
    ty = b.type
    if not isinstance(ty, TileValueType):
        raise c.error(f"{t.text} is not a tile buffer", t)
    op = emit(r, fs, TPop.name, [_ring(r, fs, d, "consumer", opt, pid)], [ty],
              _id_attrs({"type": ty, "split": split, "direction": d}, pid), loc, [t.text[1:]])
    write(r, fs, t, op.results[0])


def _slot(r, fs, tok, opt, scope_check=True):
    _, b = lookup(r, fs, tok)
    if not isinstance(b, Slot):
        raise r.c.error(f"{tok.text} is not a slot id of pto.tpop(%pipe)", tok)
    if scope_check and b.scope is not fs.scopes[-1]:
        raise r.c.error(f"{opt.text} of {tok.text} outside the block of its pto.tpop", opt,
                        "keep pto.tpop, pto.get_fifo_tile and pto.tfree of a slot in one block")
    return b


def h_fifo_tile(r, fs, opt, results, loc):
    """``%t = pto.get_fifo_tile(%pipe, %sid : !pto.pipe, index) -> T``: the slot's tile."""
    c = r.c
    _check_results(r, opt, results, 1)
    c.expect("(")
    _handle(r, fs, c.kind("value", "the pipe"))
    c.expect(",")
    st = c.kind("value", "the slot id")
    c.expect(":")
    c.type_()
    c.expect(",")
    c.type_()
    c.expect(")")
    c.expect("->")
    tt = c.peek()
    pt = c.type_()
    if pt.kind != "tile":
        raise c.error("pto.get_fifo_tile gives a !pto.tile_buf", tt)
    slot = _slot(r, fs, st, opt)
    if slot.tiled:
        raise c.error(f"a second pto.get_fifo_tile of slot {st.text}", opt, "one tile view per pto.tpop")
    slot.tiled = True
    d = V2C if fs.kind is FunctionKind.AIC else C2V
    from ..arch.vocab import TileSplitAxis
    split = slot.split if slot.split is not None else TileSplitAxis.TILE_NO_SPLIT
    rt, name = results[0]
    op = emit(r, fs, TPop.name, [_ring(r, fs, d, "consumer", opt, slot.pid)], [pt.ir],
              _id_attrs({"type": pt.ir, "split": split, "direction": d}, slot.pid), loc, [name[1:]])
    r.define(fs, rt, name, op.results[0])


def h_low_free(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    c.expect("(")
    pid = _handle(r, fs, c.kind("value", "the pipe")).pid
    slot = None
    if c.accept(","):                           # the slot-id form: pto.tfree(%pipe, %sid : ...)
        st = c.kind("value", "the slot id")
        slot = _slot(r, fs, st, opt)
        if not slot.tiled:
            raise c.error(f"pto.tfree of slot {st.text} before its pto.get_fifo_tile", opt)
        if slot.freed:
            raise c.error(f"slot {st.text} freed twice", opt)
        slot.freed = True
    c.expect(":")
    c.type_()
    if slot is not None:
        c.expect(",")
        c.type_()
    c.expect(")")
    attrs = c.attr_dict() if c.at("{") else {}
    d = V2C if fs.kind is FunctionKind.AIC else C2V
    _free(r, fs, d, _split(r, fs, attrs, opt, required=False), opt, loc, pid=pid)


HANDLE_HANDLERS = {
    "pto.initialize_l2g2l_pipe": h_low_init, "pto.initialize_l2l_pipe": h_low_init,
    "pto.tpush": h_low_push, "pto.tpop": h_low_pop, "pto.tfree": h_low_free,
    "pto.get_fifo_tile": h_fifo_tile,
}
