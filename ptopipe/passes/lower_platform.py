"""LowerPlatform: the pipes of a program for one platform (``ctx.platform``).

The ``pl.program`` gets ``platform = "<name>"``; every pipe init an explicit ``slot_num``
and ``ring = "gm" | "local"``.

* A2A3 (rings in GM), and a ``*_GM`` direction on any platform: the ring is in
  GM_SLOT_BUFFER, ``SLOT_NUM * SLOT_SIZE`` bytes per direction (``2 * SLOT_NUM *
  SLOT_SIZE`` when bidirectional, recorded as ``ring_bytes``).  An init whose
  ``gm_slot_buffer`` is ``None`` gets a new ``gm_slot_buffer`` tensor parameter of that
  size on its function (one it declares but does not use - a ``.pto`` kernel - is taken and
  retyped; a Group's GM parameter then takes the type of the kernel parameters it is passed
  to), and so does every Group function of the program, whose calls of a kernel that grew the
  parameter pass it its own; for a function
  that did not declare one (ExpandMixedKernel's functions do) a warning (``ctx.warnings``)
  says the kernel's signature grew and what to pass.  The reserve_buffer /
  import_peer_buffer no longer hold the ring - seed 003's A2A3 behaviour, the same
  program being right for A5, so no warning - but stay in the IR because TPUSH / TPOP /
  TFREE name them as the pipe's handle, and the consumer's reserved region stays the
  staging area a GM-ring TPOP lands in (its base is the init's resolved consumer-buffer
  argument).
* A5 (consumer-local rings): each ring lives in its consumer's reserved buffer; the
  resolved CONSUMER_BUFFER_BASE is the init's constant argument (ResolvePeerBuffers)
  and its size ``SLOT_NUM * SLOT_SIZE`` is explicit through ``slot_num``.

Errors: none of its own (a ring that does not fit is Validate's).
"""
from __future__ import annotations

from ..ir.vocab import FunctionKind
from ..ir.opdefs import CallOp, ConstOp
from ..ir.ops import GM_SLOT_PARAM
from ..ir.types import TensorType
from ._rewrite import set_operands
from .util import entry, functions, init_ops, platform_of, ring_in_gm, slot_num, ways
from .properties import IRProperty

NAME = "lower-platform"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED, IRProperty.PEERS_RESOLVED,
                      IRProperty.FLAGS_ALLOCATED})
PRODUCED = frozenset({IRProperty.PLATFORM_LOWERED})
INVALIDATED = frozenset()

GM_PARAM = GM_SLOT_PARAM          # the GM slot-buffer parameter added on A2A3


def _is_null(v) -> bool:
    d = getattr(v, "op", None)
    return isinstance(d, ConstOp) and d.value in (None, 0)


def _add_param(f, nbytes: int):
    block = entry(f)
    for a in block.args:
        if a.name == GM_PARAM and not a.uses:     # declared, unused (a .pto kernel): take it
            a.type = TensorType((nbytes,), "u8")
            return a
    names = {a.name for a in block.args}
    name, k = GM_PARAM, 1
    while name in names:
        name, k = f"{GM_PARAM}_{k}", k + 1
    return block.add_arg(TensorType((nbytes,), "u8"), name)


def run(program, ctx):
    plat = platform_of(ctx)
    program.platform = plat.name
    gm_bytes = 0
    grown = set()             # kernels given a new trailing GM parameter (their calls pass one)
    for f in functions(program):
        for init in init_ops(f):
            n = slot_num(init, plat)
            size = init.slot_size
            in_gm = ring_in_gm(init, plat)
            init.slot_num = n
            init.ring = "gm" if in_gm else "local"
            if not in_gm:
                continue
            need = n * size * len(ways(init))
            init.ring_bytes = need
            gm_bytes = max(gm_bytes, need)
            if _is_null(init.gm_slot_buffer):
                old = init.gm_slot_buffer.op
                nargs = len(entry(f).args)
                param = _add_param(f, need)
                if len(entry(f).args) > nargs:
                    grown.add(f.sym_name)
                init.gm_slot_buffer = param
                if not old.results[0].uses:
                    old.erase()
                how = (f"give the init a gm_slot_buffer operand (a !pto.ptr parameter of {need} bytes), "
                       "or run the file with --platform a5" if ctx.as_ptoas else
                       f"the kernel now takes a parameter {param.name!r} of {need} bytes - pass "
                       f"{param.name}=ptopipe.gm_buffer({need}) when running it")
                ctx.warnings.append(
                    f"{init.loc}: {plat.name}: {f.sym_name!r} initialises its pipe "
                    f"with no GM_SLOT_BUFFER, but {plat.name} rings live in GM: {how}")
    if gm_bytes:
        kernels = {f.sym_name: f for f in functions(program)}
        for f in functions(program):
            if f.kind is not FunctionKind.Group:
                continue
            gm = [a for a in entry(f).args if a.name and a.name.startswith(GM_PARAM)]
            if not gm:
                gm = [_add_param(f, gm_bytes)]
            for call in [op for op in f.walk() if op.is_a(CallOp)]:
                if call.callee in grown:       # pass the entry's slot buffer
                    set_operands(call, list(call.operands) + [gm[0]])
            for a in gm:
                _as_passed(a, kernels)
    return program


def _as_passed(a, kernels) -> None:
    """A Group's GM parameter takes the type of the kernel parameters it is passed to (one
    that was declared unused has just been given the ring's)."""
    if not a.uses or any(not u.owner.is_a(CallOp) for u in a.uses):
        return
    ts = {entry(kernels[u.owner.callee]).args[u.index].type for u in a.uses}
    if len(ts) == 1:
        a.type = ts.pop()
