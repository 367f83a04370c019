"""The pto-isa C++ writer: a compiled op program (``compile_program(tree, platform)``) as
one C++ translation unit for the pto-isa headers.

* each AIC / AIV kernel is one ``AICORE`` function (``__global__`` unless a Group calls it);
  a Group is a ``__global__ AICORE`` entry calling its Cube kernel under ``__DAV_CUBE__`` and
  its Vector kernel under ``__DAV_VEC__``;
* the pipe: ``using Pipe = TPipe<FlagBase, Direction::D, SlotSize, SlotNum, LocalSlotNum,
  NoSplit>; Pipe pipe(gm, c2v_buf, v2c_buf);`` - FlagBase, direction, sizes and the ring
  come from the ``*_initialize_pipe`` attributes the passes wrote (``flag_id``, ``dir_mask``,
  ``slot_size``, ``slot_num``, ``ring``, ``lanes``); LocalSlotNum is the init's ``local_slot_num``
  (``ir.pipe_config.local_slot_num``: for compiled mixed kernels the most popped tiles the
  consumer holds at once, which VerifyPipes proves and its reserve_buffer holds); the GM slot buffer is passed for a ``ring = "gm"`` pipe (A2A3, A5 GM
  directions), ``nullptr`` for consumer-local rings (A5); NoSplit is true when every
  cross-core op of the kernel is TILE_NO_SPLIT.  A pipe with ``lanes = 1`` (an A5 no-split pipe)
  runs its Vector body under ``if (get_subblockid() == 0)``.
* tiles: one ``Tile<...>`` variable per stored tile value, ``TASSIGN``ed at the address of
  the address AllocateMemoryAddr wrote on its op (``addr``, read by
  :func:`ptopipe.ir.layout.read_layout` - the placement the runtime uses); a value with several
  buffers (``rotation``) is re-assigned in turn at its definition; popped tiles get no
  address (TPOP binds them to the slot); loop-carried / branch tiles are handles re-bound
  with ``=``.
* body: TLOAD / TSTORE through ``GlobalTensor`` windows, TMOV / TEXTRACT / TMATMUL[_ACC] /
  the element-wise ops (their pto-isa names from the op catalogue, :mod:`ptopipe.arch.catalogue`),
  TPUSH / TPOP / TFREE / TALLOC, ``set_flag`` / ``wait_flag`` / ``pipe_barrier``, ``for`` / ``if``
  and scalar index math (``//`` and ``%`` with Python's floor semantics).

An op the writer cannot express raises a CompileError naming the op and its DSL line.
One kernel function is written by :mod:`.cpp_kernel`; spelling (types, template arguments)
lives in :mod:`.cpp_types`; docs/cpp.md has the table.
"""
from __future__ import annotations

import re

from ..arch.vocab import Protocol
from ..errors import CompileError
from ..ir.vocab import FunctionKind
from ..ir.opdefs import INITIALIZE_PIPE, CallOp, ProgramOp, ReturnOp
from . import cpp_types as T
from .cpp_kernel import KernelWriter, err, params
from ..errors import with_article

#: the first line of the C++ ptopipe writes: the platform and protocol the program was compiled
#: for, which a run of the file takes unless told others (:func:`written_for`)
HEADER = ("// pto-isa C++ of program {name!r} for {platform} under the {protocol} protocol, "
          "written by ptopipe (ptopipe compile --emit cpp)")
_HEADER = re.compile(r"// pto-isa C\+\+ of program .* for (\S+) under the (\S+) protocol, written by ptopipe ")


def written_for(first_line: str) -> tuple | None:
    """``(platform, protocol)`` a C++ file ptopipe wrote was compiled for, read from its first
    line (:data:`HEADER`); None for any other C++."""
    m = _HEADER.match(first_line)
    return (m.group(1), m.group(2)) if m else None


PRELUDE = """#include <pto/pto-inst.hpp>

using namespace pto;

#ifndef PTOPIPE_INDEX_HELPERS
#define PTOPIPE_INDEX_HELPERS
// Python's floor division and modulo on index values (C++ truncates towards zero)
AICORE inline int64_t ptopipe_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

AICORE inline int64_t ptopipe_mod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
#endif
"""


def _funcs(program_op) -> list:
    if not program_op.is_a(ProgramOp):
        raise CompileError(f"write_cpp takes a compiled pl.program op, got {program_op.name}")
    return list(program_op.body)


def write_cpp(program_op, platform=None, protocol: str | None = None) -> str:
    """The pto-isa C++ source of a compiled program (see the module doc).  ``platform`` (a
    name or a Platform; default: the program's ``platform`` attribute) must be the one the
    program was compiled for; ``protocol`` is the one its runs follow (default pto-isa: the C++
    is pto-isa's) - a one-lane pipe (``lanes=1``) is written only where that protocol gives a
    TILE_NO_SPLIT pipe one lane."""
    want = getattr(platform, "name", platform)
    have = program_op.platform
    if have is None:
        raise CompileError("write_cpp needs a compiled program (no platform attribute: "
                           "LowerPlatform has not run)",
                           fix="compile it first: compile_program(tree, platform)")
    if want is not None and want != have:
        raise CompileError(f"the program was compiled for {have}, not {want}",
                           fix=f"compile it with platform={want!r}, or write it for {have}")
    fns = _funcs(program_op)
    _check_one_lane_pipes(fns, have, protocol)
    kinds = {f.sym_name: f.kind for f in fns}
    called = {op.callee for f in fns if kinds[f.sym_name] is FunctionKind.Group
              for op in f.walk() if op.is_a(CallOp)}
    out = [HEADER.format(name=program_op.sym_name, platform=have, protocol=protocol or Protocol.PTO_ISA.value),
           PRELUDE]
    # the kernels first: a Group entry calls them (a .pto file may define its entry first)
    for f in sorted(fns, key=lambda f: f.kind is FunctionKind.Group):
        kind = f.kind
        if kind in (FunctionKind.AIC, FunctionKind.AIV):
            out.append(KernelWriter(f, f.sym_name in called, have).write())
        elif kind is FunctionKind.Group:
            out.append(_group(f, kinds))
        else:
            raise err(f"function {f.sym_name!r} is {with_article(kind.value)} function: only "
                      "AIC, AIV and Group functions have pto-isa C++", f,
                      "compile the program (ExpandMixedKernel splits mixed functions)")
    return "\n".join(out)


def _check_one_lane_pipes(fns, platform: str, protocol: str | None) -> None:
    """A pipe with ``lanes=1`` (AIV0 its only Vector peer) is a TPipe whose runs take one lane
    only where the protocol model says so (``nosplit_lane0``: A5); elsewhere the
    C++ TPipe has both lanes, AIV1 runs nothing and the first handshake waits for it forever -
    a CompileError at the init instead."""
    from ..arch import get_platform
    from ..protocol.model import compile_model, platform_kind
    model = compile_model(protocol or Protocol.PTO_ISA.value, platform_kind(get_platform(platform)))
    proto = model.protocol
    if model.nosplit_lane0:
        return
    for f in fns:
        for op in f.walk():
            if op.is_a(*INITIALIZE_PIPE) and op.lanes == 1:
                raise err(f"{op.call_name} with lanes=1 has no pto-isa C++ form on {platform} under "
                          f"{proto.value}: the TPipe takes both Vector lanes in every handshake there "
                          "(one lane only for TILE_NO_SPLIT on A5), and AIV1 runs nothing", op,
                          "drop lanes=1 (AIV1 then replays the handshakes of a no-split kernel with empty "
                          "tiles), or compile for a5")


def _group(f, kinds) -> str:
    args, names = params(f)
    env = dict(zip(args, names))
    lines = [f'extern "C" __global__ AICORE void {T.ident(f.sym_name)}('
             + ", ".join(T.param_decl(n, a.type) for a, n in zip(args, names)) + ")", "{"]
    for op in f.body:
        if op.is_a(ReturnOp) and not op.operands:
            continue
        if not op.is_a(CallOp):
            raise err(f"{op.name} in Group {f.sym_name!r}: a Group only calls its "
                      "kernels", op)
        callee = op.callee
        guard = {FunctionKind.AIC: "__DAV_CUBE__", FunctionKind.AIV: "__DAV_VEC__"}.get(kinds.get(callee))
        if guard is None or any(v not in env for v in op.operands):
            raise err(f"call of {callee!r} in Group {f.sym_name!r} cannot be written "
                      "(the callee is not an AIC / AIV kernel, or an argument is not a parameter)", op)
        lines += [f"#if defined({guard})",
                  f"    {T.ident(callee)}({', '.join(env[v] for v in op.operands)});", "#endif"]
    return "\n".join(lines + ["}", ""])
