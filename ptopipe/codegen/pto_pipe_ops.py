"""Cross-core ops of the ``.pto`` reader (seed-003 forms): ``pto.reserve_buffer`` /
``pto.import_reserved_buffer``, ``pto.aic_/aiv_initialize_pipe`` (both consumer-buffer
operands; ``gm_slot_buffer`` optional), ``tpush_to_aiv|aic``, ``tpop_from_aic|aiv`` (with
optional dynamic valid shape ``(%vr, %vc)``: read, not modelled - the whole tile is popped),
``tfree_from_aic|aiv``, ptopipe's ``talloc_to_aiv|aic`` (address flow) and ``pto.addptr`` of a
GM slot buffer parameter (an init's ring further into the buffer: ``gm_offset``).  Each becomes
the seed-003 op of ptopipe's IR; the direction follows from the op name.  The lower-level
forms on a ``!pto.pipe`` handle are in :mod:`.pto_pipe_handle`.
"""
from __future__ import annotations

from ..arch.vocab import Direction, TileSplitAxis
from ..ir.vocab import AUTO, FunctionKind
from ..ir.ops import C2V, V2C, Ring
from ..ir.types import INDEX, NONE, BufferType, TensorType, itemsize
from ..ir.opdefs import AicInitializePipe, AivInitializePipe, BufferAttrOp, ConstOp, ImportPeerBufferOp, ReserveBufferOp, TAlloc, TFree, TPop, TPush
from .pto_lexer import Token
from .pto_ops import _check_results, _check_type, _hint, emit, lookup, read
from ..protocol.rings import FRONTEND, ptoas_local_slot_num
from .pto_syntax import MEM_OF_ADDRESS_SPACE, PTOPIPE_BASE, SPLIT_CODES, SPLIT_OF, nosplit_conflict, split_mix_conflict

_INIT_KEYS = ("dir_mask", "slot_size", "slot_num", "local_slot_num", "id", "nosplit", "flag_base",
              "ptopipe.lanes")
#: what ptopipe's writer adds after an init's operands (ptoas keeps and ignores it): facts of
#: the IR no ptoas spelling carries (pto_writer.ring_spelling)
_TRAILING_KEYS = ("ptopipe.lanes", "ptopipe.local_slot_num", "ptopipe.default_local_slot_num",
                  "ptopipe.gm_slot_buffer")


def _need(r, attrs, key, opt, kind=int):
    if key not in attrs:
        raise r.c.error(f"{opt.text} needs the attribute {key}", opt)
    v, t = attrs[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise r.c.error(f"bad attribute {key} = {v!r}: expected an integer", t)
    if kind is str and not isinstance(v, str):
        raise r.c.error(f"bad attribute {key} = {v!r}: expected a string", t)
    return v


def _unknown(r, attrs, allowed, opt):
    for k, (_, t) in attrs.items():
        if k not in allowed:
            raise r.c.error(f"unknown attribute {k!r} of {opt.text}", t,
                            f"{opt.text} takes {', '.join(allowed)}")


def _result(r, fs, results, op):
    rt, name = results[0]
    r.define(fs, rt, name, op.results[0])


def h_reserve(r, fs, opt, results, loc):
    _check_results(r, opt, results, 1)
    attrs = r.c.attr_dict()
    _unknown(r, attrs, ("name", "size", "location", "auto", "base"), opt)
    name = _need(r, attrs, "name", opt, str)
    size = _need(r, attrs, "size", opt)
    sp, lt = r.c.enum_attr(attrs, "location", "#pto.address_space",
                           ("vec" if fs.kind is FunctionKind.AIV else "mat", opt))
    mem = MEM_OF_ADDRESS_SPACE.get(sp)
    if mem is None:
        raise r.c.error(f"unknown address space {sp!r} for a reserve_buffer", lt,
                        "use #pto.address_space<vec> (Vector) or <mat> (Cube)")
    auto = attrs.get("auto", (True, None))[0]
    if not isinstance(auto, bool):
        raise r.c.error(f"bad attribute auto = {auto!r}: expected true or false", attrs["auto"][1])
    if auto is True and "base" in attrs:
        raise r.c.error("reserve_buffer with auto = true takes no base", attrs["base"][1],
                        "drop base, or say auto = false")
    if auto is False and "base" not in attrs:
        raise r.c.error("reserve_buffer with auto = false needs a base", attrs["auto"][1])
    base = AUTO if auto is True else _need(r, attrs, "base", opt)
    if r.c.at("{"):                         # ptopipe's writer: where ptopipe placed it
        extra = r.c.attr_dict()
        _unknown(r, extra, (PTOPIPE_BASE,), opt)
        if auto is not True:
            raise r.c.error(f"{PTOPIPE_BASE} on a reserve_buffer with auto = false",
                            extra[PTOPIPE_BASE][1], "give the base once: base = N")
        base = _need(r, extra, PTOPIPE_BASE, opt)
    if fs.kind is FunctionKind.Group:
        raise r.c.error("pto.reserve_buffer in the entry function", opt, "reserve in a kernel")
    r.c.expect("->")
    r.c.type_()
    op = emit(r, fs, ReserveBufferOp.name, [], [BufferType("reserve")],
              {"name": name, "size": size, "base": base, "memory_space": mem}, loc, [_hint(results[0][1])])
    _result(r, fs, results, op)


def h_import(r, fs, opt, results, loc):
    _check_results(r, opt, results, 1)
    attrs = r.c.attr_dict()
    _unknown(r, attrs, ("name", "peer_func"), opt)
    name = _need(r, attrs, "name", opt, str)
    peer = _need(r, attrs, "peer_func", opt, None)
    if not (isinstance(peer, tuple) and peer[0] == "@"):
        raise r.c.error("peer_func must be a function symbol @name", attrs["peer_func"][1])
    r.c.expect("->")
    r.c.type_()
    op = emit(r, fs, ImportPeerBufferOp.name, [], [BufferType("import")],
              {"name": name, "peer_func": peer[1]}, loc, [_hint(results[0][1])])
    _result(r, fs, results, op)


def _consumer_operand(r, fs, tok, way, loc):
    """An init's consumer-buffer operand: ``buf.base`` of a reserve / import, or 0."""
    v = read(r, fs, tok)
    if isinstance(v.type, BufferType):
        op = emit(r, fs, BufferAttrOp.name, [v], [INDEX], {"attr": "base"}, loc)
        return op.results[0], v
    if fs.const_values.get(v) == 0 and not isinstance(fs.const_values.get(v), bool):
        op = emit(r, fs, ConstOp.name, [], [INDEX], {"value": 0}, loc)
        return op.results[0], None
    raise r.c.error(f"{way}_consumer_buf {tok.text} is neither a reserve / import buffer nor 0", tok,
                    "pass the pto.reserve_buffer / import_reserved_buffer result, or "
                    "arith.constant 0 : i32 for an unused direction")


def _init_attrs(r, attrs, opt, frontend=False):
    """An init's attributes.  The pipe's first flag is ``flag_base`` (a lower-level init's
    ``id`` too); a frontend init's ``id`` is its pipe's name (pypto's frontend pipe id), which
    ptoas gives flags of their own (:func:`~ptopipe.protocol.rings.ptoas_flag_bases`)."""
    _unknown(r, attrs, _INIT_KEYS, opt)
    d = _need(r, attrs, "dir_mask", opt)
    if isinstance(d, bool) or d not in (1, 2, 3, 5, 6, 7):
        raise r.c.error(f"bad dir_mask {d}: expected 1 (C2V), 2 (V2C) or 3 (both); "
                        "ptopipe also reads 5 / 6 / 7 (the same, ring in GM)",
                        attrs["dir_mask"][1])
    out = {"dir_mask": Direction(d), "slot_size": _need(r, attrs, "slot_size", opt),
           "slot_num": _need(r, attrs, "slot_num", opt) if "slot_num" in attrs else None,
           "lanes": _need(r, attrs, "ptopipe.lanes", opt) if "ptopipe.lanes" in attrs else None,
           "flag_id": (_need(r, attrs, "id", opt) if "id" in attrs and not frontend else
                       _need(r, attrs, "flag_base", opt) if "flag_base" in attrs else None),
           "local_slot_num": (_need(r, attrs, "local_slot_num", opt) if "local_slot_num" in attrs
                              else None)}
    nosplit = attrs.get("nosplit", (False, None))
    if not isinstance(nosplit[0], bool):
        raise r.c.error(f"bad attribute nosplit = {nosplit[0]!r}: expected true or false", nosplit[1])
    return out, nosplit[0]


def _trailing(r, attrs: dict, opt):
    """The optional ``{ptopipe.* ...}`` after an init's operands, applied to ``attrs``;
    returns the GM parameter token ``ptopipe.gm_slot_buffer`` names (else None)."""
    c = r.c
    if not c.at("{"):
        return None
    extra = c.attr_dict()
    _unknown(r, extra, _TRAILING_KEYS, opt)
    if "ptopipe.lanes" in extra:
        attrs["lanes"] = _need(r, extra, "ptopipe.lanes", opt)
    if "ptopipe.local_slot_num" in extra and "ptopipe.default_local_slot_num" in extra:
        raise c.error("ptopipe.local_slot_num and ptopipe.default_local_slot_num together",
                      extra["ptopipe.default_local_slot_num"][1], "keep one of them")
    if "ptopipe.local_slot_num" in extra:
        attrs["local_slot_num"] = _need(r, extra, "ptopipe.local_slot_num", opt)
    if "ptopipe.default_local_slot_num" in extra:
        v, t = extra["ptopipe.default_local_slot_num"]
        if v is not True:
            raise c.error("ptopipe.default_local_slot_num takes no value", t)
        attrs["local_slot_num"] = None
    if "ptopipe.gm_slot_buffer" not in extra:
        return None
    name = _need(r, extra, "ptopipe.gm_slot_buffer", opt, str)
    t = extra["ptopipe.gm_slot_buffer"][1]
    return Token("value", "%" + name, t.line, t.col)


class GmAt:
    """``%q = pto.addptr %p, %n``: pointer parameter ``%p`` (its name token) ``n`` elements
    on - read only as a pipe init's GM slot buffer (pypto's layout of several pipes' GM rings in
    one buffer, pipe k's at an addptr of it): the init's ring starts ``n`` elements into ``%p``."""
    __slots__ = ("base", "elems")

    def __init__(self, base, elems):
        self.base, self.elems = base, elems


def _ptr_short(c) -> None:
    """A pointer type in either spelling: ``!pto.ptr<f32>`` or ptoas's short ``<f32>``."""
    if c.at("<"):
        c.next()
        c.next()
        c.expect(">", "closing the pointer type")
    else:
        c.type_()


def h_addptr(r, fs, opt, results, loc):
    """``%q = pto.addptr %p, %n : <T> -> <T>`` of a pointer parameter (or of another such
    addptr) by a constant element count (:class:`GmAt`)."""
    c = r.c
    _check_results(r, opt, results, 1)
    pt = c.kind("value", "the pointer")
    c.expect(",")
    nt = c.kind("value", "the element offset")
    c.expect(":")
    _ptr_short(c)
    c.expect("->")
    _ptr_short(c)
    _, p = lookup(r, fs, pt)
    if isinstance(p, GmAt):
        base, elems = p.base, p.elems
    elif isinstance(getattr(p, "type", None), TensorType) and p in fs.block.args:
        base, elems = pt, 0
    else:
        raise c.error(f"pto.addptr of {pt.text}: the static reader takes an addptr of a !pto.ptr parameter "
                      "only (a pipe init's GM slot buffer)", pt)
    n = fs.const_values.get(read(r, fs, nt))
    if n is None or isinstance(n, bool):
        raise c.error(f"pto.addptr by {nt.text}: the static reader takes a constant offset only", nt,
                      "offset the GM slot buffer by an arith.constant")
    rt, name = results[0]
    r.define(fs, rt, name, GmAt(base, elems + n))


def _make_init(r, fs, opt, loc, attrs, gm_tok, c2v_tok, v2c_tok, nosplit=False, handle=False,
               frontend_id=0):
    """An init op of the function: ``gm`` (a pointer parameter, else a null constant) and each
    direction's consumer buffer (``buf.base``, or 0 for a None token: an absent direction).
    Returns its pipe id: a lower-level init (``handle``: its ``!pto.pipe`` names the ring of
    each push / pop) of a direction the function already set up is the next ring of that
    direction, id 1, 2, ... in init order (both kernels number their rings the same way); a
    frontend init's is its ``id`` (``frontend_id``: pypto's name of the pipe, which its
    pushes / pops / frees name; 0 when absent)."""
    mask = int(attrs["dir_mask"]) & 3
    taken = {rg.id for rg in fs.rings if rg.direction & mask}
    if handle:
        pid = max(taken) + 1 if taken else 0
    else:                                   # a frontend pipe's id names its ring
        pid = frontend_id
        if pid in taken:
            raise r.c.error(f"a second pipe initialisation of a direction with id = {pid} in this "
                            "kernel", opt, "give each frontend pipe of a direction its own id = N (its tpush / tpop / "
                            "tfree name it), or one init with dir_mask = 3 for both ways")
    if fs.kind is FunctionKind.Group:
        raise r.c.error("pipe initialisation in the entry function", opt)
    if gm_tok is not None:
        _, g = lookup(r, fs, gm_tok)
        elems = 0
        if isinstance(g, GmAt):             # a ring further into the buffer
            gm_tok, elems = g.base, g.elems
            _, g = lookup(r, fs, gm_tok)
        if g in fs.untyped or g in r.gm_sized:   # sized by the rings laid out in it
            need = r.gm_slot_type(g.type.dtype, attrs).shape[0] + elems
            if g in fs.untyped or g.type.shape[0] < need:
                g.type = TensorType((need,), g.type.dtype)
            r.gm_sized.add(g)
            fs.untyped.pop(g, None)
        gm = read(r, fs, gm_tok)
        if not isinstance(gm.type, TensorType):
            raise r.c.error(f"gm_slot_buffer {gm_tok.text} is not a !pto.ptr parameter", gm_tok)
        if elems:
            attrs = dict(attrs, gm_offset=elems * itemsize(gm.type.dtype))
    else:
        gm = emit(r, fs, ConstOp.name, [], [NONE], {"value": None}, loc).results[0]
    ops, bufs = [], []
    for tok, way in ((c2v_tok, "c2v"), (v2c_tok, "v2c")):
        if tok is None:
            ops.append(emit(r, fs, ConstOp.name, [], [INDEX], {"value": 0}, loc).results[0])
            bufs.append(None)
        else:
            v, b = _consumer_operand(r, fs, tok, way, loc)
            ops.append(v)
            bufs.append(b)
    name = AicInitializePipe.name if fs.kind is FunctionKind.AIC else AivInitializePipe.name
    if pid:
        attrs = dict(attrs, id=pid)
    fs.init = emit(r, fs, name, [gm] + ops, [], attrs, loc)
    if nosplit:
        fs.nosplit = opt
    if nosplit and fs.kind is FunctionKind.AIV:     # whole tiles on AIV0 (ptopipe's NO_SPLIT kernel)
        if fs.op.split is None:
            fs.op.split = TileSplitAxis.TILE_NO_SPLIT
    for d, b in ((C2V, bufs[0]), (V2C, bufs[1])):
        if mask & d:
            fs.rings[Ring(d, pid)] = b
    return pid


def h_init(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    want = "pto.aic_initialize_pipe" if fs.kind is FunctionKind.AIC else "pto.aiv_initialize_pipe"
    if opt.text != want:
        raise c.error(f"{opt.text} in a {'cube' if fs.kind is FunctionKind.AIC else 'vector'} kernel",
                      opt, f"use {want}")
    raw = c.attr_dict()
    fid = _need(r, raw, "id", opt) if "id" in raw else 0
    attrs, nosplit = _init_attrs(r, raw, opt, frontend=True)
    c.expect("(", "opening the init's operands")
    got = {}
    while not c.accept(")"):
        k = c.next()
        if k.text not in ("gm_slot_buffer", "c2v_consumer_buf", "v2c_consumer_buf", "gm_slot_tensor"):
            raise c.error(f"unknown operand {k.text!r} of {opt.text}", k,
                          "operands: gm_slot_buffer, c2v_consumer_buf, v2c_consumer_buf")
        c.expect("=")
        vt = c.kind("value", f"the {k.text} value")
        c.expect(":")
        c.type_()
        got[k.text] = vt
        if not c.at(")"):
            c.expect(",")
    for k in ("c2v_consumer_buf", "v2c_consumer_buf"):
        if k not in got:
            raise c.error(f"{opt.text} needs {k} (an arith.constant 0 : i32 for an unused direction)", opt)
    # ptoas's spelling: the ring its frontend builds (SlotNum left to lower-platform's
    # default, which is the same number)
    attrs["local_slot_num"] = ptoas_local_slot_num(FRONTEND, attrs["dir_mask"], r.platform, attrs["slot_num"],
                                                   attrs["local_slot_num"], attrs["flag_id"])
    if _trailing(r, attrs, opt) is not None:
        raise c.error("ptopipe.gm_slot_buffer on an init that names its gm_slot_buffer operand", opt)
    _make_init(r, fs, opt, loc, attrs, got.get("gm_slot_buffer"), got["c2v_consumer_buf"],
               got["v2c_consumer_buf"], nosplit, frontend_id=fid)


def _split(r, fs, attrs, opt, required=True):
    if "split" not in attrs:
        if required:
            raise r.c.error(f"{opt.text} needs {{split = 0|1|2}}", opt)
        return None
    v, t = attrs["split"]
    if isinstance(v, bool) or not isinstance(v, int) or v not in SPLIT_OF:
        raise r.c.error(f"bad split value {v!r}: {SPLIT_CODES}", t)
    if v and fs.nosplit is not None:
        what, fix = nosplit_conflict(opt.text, v, fs.nosplit.line)
        raise r.c.error(what, t, fix)
    if opt.text.startswith(("pto.tpush_to_", "pto.tpop_from_")):
        first = fs.split_kind
        if first is None:
            fs.split_kind = (opt.text, v, opt.line)
        elif (v == 0) != (first[1] == 0):
            what, fix = split_mix_conflict(fs.name, opt.text, v, *first)
            raise r.c.error(what, t, fix)
    return SPLIT_OF[v]


def _pipe_id(r, attrs, opt) -> int:
    """The frontend pipe a push / pop / free names: its ``{id = N}`` (0 when absent)."""
    return _need(r, attrs, "id", opt) if "id" in attrs else 0


def _id_attrs(attrs: dict, pid: int) -> dict:
    """A pipe op's attributes, with the ring's ``id`` when it is not ring 0."""
    if pid:
        attrs["id"] = pid
    return attrs


def _ring(r, fs, d, role, opt, pid=0):
    if fs.init is None:
        raise r.c.error(f"{opt.text} before the pipe is initialised", opt,
                        "initialise the pipe at the top of the kernel")
    if Ring(d, pid) not in fs.rings and any(rg.direction is d for rg in fs.rings):
        raise r.c.error(f"{opt.text} names pipe id = {pid}, which no {d.name[4:]} pipe init of this "
                        "kernel has", opt, "name the id = N of a pipe init of this direction")
    buf = fs.rings.get(Ring(d, pid))
    kind = "import" if role == "producer" else "reserve"
    if buf is None or buf.type.kind != kind:
        what = "pto.import_reserved_buffer" if kind == "import" else "pto.reserve_buffer"
        raise r.c.error(f"{opt.text}: the pipe's {d.name[4:]} consumer buffer is not a {what}", opt,
                        f"pass the {what} result as {d.name[4:].lower()}_consumer_buf of the init")
    return buf


_DIR = {"aiv": C2V, "aic": V2C}         # tpush_to_X / talloc_to_X: the direction to X
_POP = {"aic": C2V, "aiv": V2C}         # tpop_from_X / tfree_from_X


def _core_check(r, fs, d, role, opt):
    prod = FunctionKind.AIC if d is C2V else FunctionKind.AIV
    me = prod if role == "producer" else (FunctionKind.AIV if prod is FunctionKind.AIC else FunctionKind.AIC)
    if fs.kind is not me:
        raise r.c.error(f"{opt.text} in a {'cube' if fs.kind is FunctionKind.AIC else 'vector'} kernel",
                        opt, f"it belongs in the {'cube' if me is FunctionKind.AIC else 'vector'} kernel")


def h_tpush(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    d = _DIR[opt.text.rsplit("_", 1)[1]]
    _core_check(r, fs, d, "producer", opt)
    c.expect("(")
    t = c.kind("value", "the pushed tile")
    c.expect(":")
    pt = c.type_()
    c.expect(")")
    v = read(r, fs, t)
    _check_type(r, t, v, pt)
    attrs = c.attr_dict() if c.at("{") else {}
    split, pid = _split(r, fs, attrs, opt), _pipe_id(r, attrs, opt)
    emit(r, fs, TPush.name, [v, _ring(r, fs, d, "producer", opt, pid)], [],
         _id_attrs({"split": split, "direction": d}, pid), loc)


def _pop_type(r, pt, tok):
    if pt.kind == "tile":
        return pt.ir
    if pt.kind == "view" and None not in pt.shape:
        return TensorType(tuple(pt.shape), pt.dtype)
    raise r.c.error("a popped value is a !pto.tile_buf (or a static !pto.tensor_view)", tok)


def h_tpop(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    d = _POP[opt.text.rsplit("_", 1)[1]]
    _core_check(r, fs, d, "consumer", opt)
    if c.accept("("):                       # dynamic valid shape: read, not modelled
        read(r, fs, c.kind("value", "the valid rows"))
        c.expect(",")
        read(r, fs, c.kind("value", "the valid columns"))
        c.expect(")")
    attrs = c.attr_dict() if c.at("{") else {}
    split, pid = _split(r, fs, attrs, opt), _pipe_id(r, attrs, opt)
    c.expect("->", "before the popped tile's type")
    tt = c.peek()
    ty = _pop_type(r, c.type_(), tt)
    op = emit(r, fs, TPop.name, [_ring(r, fs, d, "consumer", opt, pid)], [ty],
              _id_attrs({"type": ty, "split": split, "direction": d}, pid), loc, [_hint(results[0][1])])
    _result(r, fs, results, op)


def _free(r, fs, d, split, opt, loc, obj=None, pid=0):
    if obj is None:
        obj = emit(r, fs, ConstOp.name, [], [NONE], {"value": None}, loc).results[0]
    attrs = {"direction": d, "split": split}
    if pid:
        attrs["id"] = pid
    emit(r, fs, TFree.name, [_ring(r, fs, d, "consumer", opt, pid), obj], [], attrs, loc)


def h_tfree(r, fs, opt, results, loc):
    _check_results(r, opt, results, 0)
    d = _POP[opt.text.rsplit("_", 1)[1]]
    _core_check(r, fs, d, "consumer", opt)
    obj = None
    if r.c.accept("("):                     # ptopipe: TFREE naming the popped value it frees
        t = r.c.kind("value", "the freed tile")
        r.c.expect(":")
        pt = r.c.type_()
        r.c.expect(")")
        obj = read(r, fs, t)
        _check_type(r, t, obj, pt)
    attrs = r.c.attr_dict() if r.c.at("{") else {}
    _free(r, fs, d, _split(r, fs, attrs, opt, required=False), opt, loc, obj, _pipe_id(r, attrs, opt))


def h_talloc(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    d = _DIR[opt.text.rsplit("_", 1)[1]]
    _core_check(r, fs, d, "producer", opt)
    attrs = c.attr_dict() if c.at("{") else {}
    split, pid = _split(r, fs, attrs, opt), _pipe_id(r, attrs, opt)
    c.expect("->")
    tt = c.peek()
    ty = _pop_type(r, c.type_(), tt)
    if not isinstance(ty, TensorType):
        raise c.error("talloc gives a !pto.tensor_view<...> (the slot in GM)", tt)
    op = emit(r, fs, TAlloc.name, [_ring(r, fs, d, "producer", opt, pid)], [ty],
              _id_attrs({"type": ty, "split": split, "direction": d}, pid), loc, [_hint(results[0][1])])
    _result(r, fs, results, op)


PIPE_HANDLERS = {
    "pto.addptr": h_addptr, "pto.reserve_buffer": h_reserve, "pto.import_reserved_buffer": h_import,
    "pto.aic_initialize_pipe": h_init, "pto.aiv_initialize_pipe": h_init,
    "pto.tpush_to_aiv": h_tpush, "pto.tpush_to_aic": h_tpush,
    "pto.tpop_from_aic": h_tpop, "pto.tpop_from_aiv": h_tpop,
    "pto.tfree_from_aic": h_tfree, "pto.tfree_from_aiv": h_tfree,
    "pto.talloc_to_aiv": h_talloc, "pto.talloc_to_aic": h_talloc,
}
