"""The generic textual printer of the op IR (MLIR's generic form).  One op per line::

    %acc = pl.matmul(%a_l0, %b_l0) : (tile<16x32xf32,Left>, tile<32x32xf32,Right>) -> tile<16x32xf32,Acc>
    pl.tpush(%acc, %peer_buf) {split = #split.TILE_UP_DOWN, direction = #dir.DIR_C2V} : (...) -> ()
    %s = pl.for(%c0, %n, %c1, %init) ({
    ^bb0(%i: index, %x: tile<16x32xf32,Vec>):
      ...
      pl.yield(%x2) : (tile<16x32xf32,Vec>) -> ()
    }) : (index, index, index, tile<16x32xf32,Vec>) -> tile<16x32xf32,Vec>

Values print as ``%<name hint>`` (made unique within a function by a ``_N`` suffix) or
``%<number>`` when they have no hint; a function's values are named independently of the
others.  With ``locs=True`` each op ends with ``loc("file":line:col)`` (``loc(unknown)``
when it has none).  The parser
(:mod:`.asm_parser`) reads this back into a structurally equal IR.
"""
from __future__ import annotations

import json

from .opdefs import FuncOp
from .text import attr_str, type_str

_IND = "  "


class _Printer:
    __slots__ = ("out", "names", "used", "n", "locs")

    def __init__(self, locs: bool):
        self.out = []
        self.names = {}
        self.used = set()
        self.n = 0
        self.locs = locs

    def name(self, v) -> str:
        hint = v.name
        if hint is None:
            s = f"%{self.n}"
            self.n += 1
        else:
            s = f"%{hint}"
            if s in self.used:
                k = 1
                while f"%{hint}_{k}" in self.used:
                    k += 1
                s = f"%{hint}_{k}"
            self.used.add(s)
        self.names[v] = s
        return s

    def op(self, op, ind: str) -> None:
        out = self.out
        names = self.names
        if op.is_a(FuncOp):             # a function names its values afresh
            saved = (self.names, self.used, self.n)
            self.names, self.used, self.n = {}, set(), 0
            names = self.names
        head = ind
        if op.results:
            head += ", ".join([self.name(r) for r in op.results]) + " = "
        try:
            ops = ", ".join([names[v] for v in op.operands])
        except KeyError:
            bad = next(v for v in op.operands if v not in names)
            raise ValueError(f"{op.name} at {op.loc} uses %{bad.name or '?'}, which is not "
                             "defined before it (verify the IR first)") from None
        head += f"{op.name}({ops})"
        if op.attributes:
            head += " {" + ", ".join([f"{k} = {attr_str(v)}" for k, v in op.attributes.items()]) + "}"
        sig = "(" + ", ".join([type_str(v.type) for v in op.operands]) + ") -> "
        rs = op.results
        if len(rs) == 1:
            sig += type_str(rs[0].type)
        else:
            sig += "(" + ", ".join([type_str(r.type) for r in rs]) + ")"
        tail = f" : {sig}"
        if self.locs:
            loc = op.loc
            tail += " loc(unknown)" if loc is None else \
                f" loc({json.dumps(loc.file)}:{loc.line}:{loc.col})"
        if not op.regions:
            out.append(head + tail)
        else:
            out.append(head + " ({")
            inner = ind + _IND
            for ri, r in enumerate(op.regions):
                if ri:
                    out.append(ind + "}, {")
                for bi, b in enumerate(r.blocks):
                    if b.args or bi:
                        args = ", ".join([f"{self.name(a)}: {type_str(a.type)}" for a in b.args])
                        out.append(f"{ind}^bb{bi}({args}):" if b.args else f"{ind}^bb{bi}:")
                    o = b.first
                    while o is not None:
                        self.op(o, inner)
                        o = o.next
            out.append(ind + "})" + tail)
        if op.is_a(FuncOp):
            self.names, self.used, self.n = saved


def print_ir(op, locs: bool = False) -> str:
    """The text of ``op`` (usually a ``pl.program``) and everything nested in it."""
    p = _Printer(locs)
    p.op(op, "")
    return "\n".join(p.out) + "\n"
