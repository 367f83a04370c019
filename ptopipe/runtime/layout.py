"""The memory plan of manual kernels: a static address for every tile-producing
statement, and the resolution of ``pl.AUTO`` reserve_buffer bases and of
``import_peer_buffer`` (the peer's resolved base).

Deliberately minimal (the automatic passes own real allocation): tiles are placed
one after another per memory space, skipping literal reserve_buffer regions; AUTO
buffers go after the tiles of their space.  Tiles popped by TPOP need no storage (they
bind to a ring slot or the staging area inside the reserved buffer); loop-carried and
branch values alias the storage of the value they carry.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..errors import CompileError
from ..ir.nodes import (AUTO, Assign, Call, Function, ImportPeerBuffer, Program, ReserveBuffer,
                        calls, stmt_exprs, walk)
from ..arch.vocab import ALIGNMENT as ALIGN
from ..ir.types import TileValueType


def _align(x: int) -> int:
    return (x + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class FunctionLayout:
    tiles: dict = field(default_factory=dict)      # tile var name -> (memory, addr)
    temps: dict = field(default_factory=dict)      # id(nested Call) -> (memory, addr)
    buffers: dict = field(default_factory=dict)    # buffer var name -> (base, size)
    by_name: dict = field(default_factory=dict)    # reserve_buffer name -> (base, size)


def _first_fit(start: int, size: int, taken: list) -> int:
    addr = _align(start)
    moved = True
    while moved:
        moved = False
        for lo, hi in taken:
            if addr < hi and lo < addr + size:
                addr = _align(hi)
                moved = True
    return addr


def plan_function(fn: Function) -> FunctionLayout:
    lay = FunctionLayout()
    reserves = [s for s in fn.body if isinstance(s, ReserveBuffer)]
    fixed = {}     # memory -> [(lo, hi)]
    for r in reserves:
        if r.base is not AUTO and r.memory_space:
            fixed.setdefault(r.memory_space, []).append((r.base, r.base + r.size))
    top = {}

    def place(t: TileValueType):
        mem = t.space.mem_space.value
        addr = _first_fit(top.get(mem, 0), t.nbytes, fixed.get(mem, []))
        top[mem] = addr + t.nbytes
        return mem, addr

    for s in walk(fn.body):
        for e in stmt_exprs(s):
            for c in calls(e):
                if c is e and isinstance(s, Assign):
                    continue
                if isinstance(c.type, TileValueType) and c.op != "tpop":
                    lay.temps[id(c)] = place(c.type)     # a nested op's result
        if isinstance(s, Assign) and isinstance(s.var.type, TileValueType) and \
                isinstance(s.value, Call) and s.value.op != "tpop":
            lay.tiles[s.var.name] = place(s.var.type)
    for r in reserves:
        base = r.base
        if base is AUTO:
            mem = r.memory_space
            taken = fixed.setdefault(mem, [])
            base = _first_fit(top.get(mem, 0), r.size, taken)
            taken.append((base, base + r.size))
        lay.buffers[r.var.name] = (base, r.size)
        lay.by_name[r.name] = (base, r.size)
    return lay


def plan_program(program: Program) -> dict:
    """``{function name: FunctionLayout}`` with import_peer_buffer bases resolved."""
    lays = {fn.name: plan_function(fn) for fn in program.functions}
    for fn in program.functions:
        for s in fn.body:
            if isinstance(s, ImportPeerBuffer):
                peer = lays.get(s.peer_func)
                if peer is None or s.name not in peer.by_name:
                    raise CompileError(f"import_peer_buffer {s.name!r} of {s.peer_func!r} cannot be "
                                       "resolved", where=str(s.loc) if s.loc else None,
                                       fix="verify the program with pl.program(...) first")
                lays[fn.name].buffers[s.var.name] = peer.by_name[s.name]
    return lays


def resolve_program(program: Program) -> Program:
    """The program with every ``pl.AUTO`` base replaced by its resolved address (the
    value ImportPeerBuffer nodes resolve to), e.g. to print what will run."""
    lays = plan_program(program)
    fns = []
    for fn in program.functions:
        lay = lays[fn.name]
        body = tuple(dataclasses.replace(s, base=lay.buffers[s.var.name][0])
                     if isinstance(s, ReserveBuffer) else s for s in fn.body)
        fns.append(dataclasses.replace(fn, body=body))
    return dataclasses.replace(program, functions=tuple(fns))
