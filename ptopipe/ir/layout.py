"""AllocateMemoryAddr for DSL kernels: an address for every tile a function produces, the
resolution of ``pl.AUTO`` reserve_buffer bases, and of ``import_peer_buffer`` (the peer's
resolved base).

Tiles share memory when their lifetimes do not overlap (:mod:`.liveness`): storage is
placed first-fit, in order of first definition, at the lowest aligned address free of
every storage live at the same time and of every literal reserve_buffer region; a
statement whose older value is still read when it runs again gets several buffers, used
in turn.  AUTO buffers go after the peak of the tiles of their space.  A function that orders its
pipes with events (``pl.record_event`` / ``wait_event`` / ``barrier``: manual
synchronisation) gets no sharing: a reuse the user cannot see would need an event the user
cannot write.  An op whose pto-isa form takes a scratch tile (``pl.row_sum``: ``TROWSUM(dst,
src, tmp)``) gets one the size of its source, live while it runs (``scratch``).  Tiles popped by
TPOP need no storage (they bind to a ring slot or the staging area inside the reserved
buffer); loop-carried and branch values alias the storage of the value they carry.
Two literal reserve_buffer regions that overlap are a CompileError naming both.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..errors import CompileError
from .nodes import Function, ImportPeerBuffer, Program, ReserveBuffer, calls, stmt_exprs, walk
from .vocab import AUTO
from ..arch.vocab import ALIGNMENT as ALIGN
from .liveness import analyse
from .opdefs import EVENT_OPS, call_names

_EVENT_OPS = call_names(EVENT_OPS)


def _align(x: int) -> int:
    return (x + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class FunctionLayout:
    tiles: dict = field(default_factory=dict)      # tile var name -> (memory, addr)
    temps: dict = field(default_factory=dict)      # id(nested Call) -> (memory, addr)
    # the var an op with a scratch tile assigns (or id() of a nested such op) -> (memory, addr)
    scratch: dict = field(default_factory=dict)
    buffers: dict = field(default_factory=dict)    # buffer var name -> (base, size)
    by_name: dict = field(default_factory=dict)    # reserve_buffer name -> (base, size)
    # var name (or id() of a nested op) -> the addresses of its buffers when its statement
    # needs several (used in turn); the first is ``tiles[name][1]`` (``temps[id]``)
    rotations: dict = field(default_factory=dict)
    peak: dict = field(default_factory=dict)       # memory -> bytes up to the highest tile end


def _first_fit(start: int, size: int, taken) -> int:
    addr = _align(start)
    moved = True
    while moved:
        moved = False
        for lo, hi in taken:
            if addr < hi and lo < addr + size:
                addr = _align(hi)
                moved = True
    return addr


def _fixed_regions(reserves) -> dict:
    """memory -> [(lo, hi)] of the literal-base reserve_buffers; overlapping ones raise."""
    fixed, owner = {}, {}
    for r in reserves:
        if r.base is AUTO or not r.memory_space:
            continue
        lo, hi = r.base, r.base + r.size
        for (a, b), other in zip(fixed.get(r.memory_space, []), owner.get(r.memory_space, [])):
            if lo < b and a < hi:
                raise CompileError(
                    f"reserve_buffer {r.name!r} [{lo:#x}, {hi:#x}) overlaps reserve_buffer "
                    f"{other.name!r} [{a:#x}, {b:#x}) in {r.memory_space}",
                    where=str(r.loc) if r.loc else None,
                    details=f"{other.name!r} is reserved at {other.loc}",
                    fix="give one of them a base outside the other, or base=pl.AUTO")
        fixed.setdefault(r.memory_space, []).append((lo, hi))
        owner.setdefault(r.memory_space, []).append(r)
    return fixed


def plan_function(fn: Function) -> FunctionLayout:
    lay = FunctionLayout()
    reserves = [s for s in fn.body if isinstance(s, ReserveBuffer)]
    fixed = _fixed_regions(reserves)
    live = []             # (end, memory, lo, hi) of placed storage still live
    manual = any(c.op in _EVENT_OPS for s in walk(fn.body) for e in stmt_exprs(s) for c in calls(e))
    footprints = {}       # tile type -> its footprint: a function has few distinct tile types
    for st in sorted(analyse(fn.body).values(), key=lambda st: st.start):
        mem = st.type.space.mem_space.value
        if not manual:                  # manual sync: no sharing (see the module docstring)
            live = [x for x in live if x[0] >= st.start]
        size = footprints.get(st.type)
        if size is None:                # pto-isa's static shape (a padded row) - see cpp_types
            size = footprints[st.type] = st.type.footprint
        addrs = []
        taken = fixed.get(mem, []) + [(lo, hi) for _e, m, lo, hi in live if m == mem]
        for _ in range(st.copies):
            addr = _first_fit(0, size, taken)
            live.append((st.end, mem, addr, addr + size))
            taken.append((addr, addr + size))   # = what rebuilding taken from live would add
            addrs.append(addr)
            lay.peak[mem] = max(lay.peak.get(mem, 0), addr + size)
        if isinstance(st.key, tuple) and st.key[0] == "scratch":
            lay.scratch[st.key[1]] = (mem, addrs[0])        # live only while its op runs
            continue
        key = st.key[1] if isinstance(st.key, tuple) else st.key
        (lay.temps if isinstance(st.key, tuple) else lay.tiles)[key] = (mem, addrs[0])
        if len(addrs) > 1:              # a var, or a nested op whose older result a loop keeps
            lay.rotations[key] = tuple(addrs)
    for r in reserves:
        base = r.base
        if base is AUTO:
            mem = r.memory_space
            taken = fixed.setdefault(mem, [])
            base = _first_fit(lay.peak.get(mem, 0), r.size, taken)
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


# -- seed 003's rules on a reserved ring (one wording for the runtime's and Validate's checks) --
def ring_size_problem(name: str, size: int, slot_num: int, slot_size: int,
                      staged: int | None = None) -> tuple | None:
    """``(what, fix)`` when reserve_buffer ``name`` of ``size`` bytes is not the
    SLOT_NUM * SLOT_SIZE its pipe needs, else None.  ``staged``: the LocalSlotNum an init
    gives explicitly to a ring that lives in GM (A2A3): the consumer's buffer then holds only
    the staging slots, and
    any size from LOCAL_SLOT_NUM * SLOT_SIZE up to SLOT_NUM * SLOT_SIZE is enough (pto-isa's
    ``TPipe<..., SlotNum, LocalSlotNum>``, the ``.pto`` PTOAS writes)."""
    need = slot_num * slot_size
    if size == need or (staged is not None and staged * slot_size <= size <= need):
        return None
    what = (f"reserve_buffer {name!r} has {size} bytes but the pipe that uses it needs "
            f"SLOT_NUM * SLOT_SIZE = {slot_num} * {slot_size} = {need}")
    if staged is not None:
        low = staged * slot_size
        what += (f" (its ring being in GM, at least LOCAL_SLOT_NUM * SLOT_SIZE = {staged} * {slot_size} = "
                 f"{low} staging bytes, at most {need})")
        fix = (f"reserve_buffer(name={name!r}, size=LOCAL_SLOT_NUM * SLOT_SIZE, ...): {low} bytes for "
               f"LocalSlotNum {staged}")
        if size % slot_size == 0 and 0 < size // slot_size < slot_num:
            fix += f", or give the init local_slot_num={size // slot_size}"
        return what, fix
    fix = f"reserve_buffer(name={name!r}, size=SLOT_NUM * SLOT_SIZE, ...)"
    if size % slot_size == 0 and size // slot_size > 0:
        fix += f", or give the pipe slot_num={size // slot_size}"
    return what, fix


def reserve_fit_problem(name: str, base: int, size: int, owner: str, space: str,
                        have: int) -> tuple | None:
    """``(what, fix)`` when reserve_buffer ``name`` at ``base`` overruns ``owner``'s
    ``space`` of ``have`` bytes, else None."""
    if base + size <= have:
        return None
    what = (f"reserve_buffer {name!r} of {size} bytes at {base:#x} does not fit {owner}'s "
            f"{space} ({have} bytes)")
    if size <= have:            # the size fits: the base is too high
        return (what, f"lower its base: {size} bytes fit at a base up to {have - size:#x} (or "
                      "base=pl.AUTO)")
    return (what, "reserve SLOT_NUM * SLOT_SIZE bytes (smaller slots or fewer of them)")


def tiles_fit_problem(fn_name: str, space: str, peak: int, owner: str,
                      have: int) -> tuple | None:
    """``(what, details, fix)`` when the tiles of ``fn_name`` live at one time (the
    allocator's ``peak`` in ``space``) overrun ``owner``'s ``have`` bytes, else None."""
    if peak <= have:
        return None
    return (f"the tiles of {fn_name} need {peak} bytes of {space} at their peak but {owner} has "
            f"{have} bytes",
            f"tiles live at the same time cannot share memory (overflow by {peak - have} bytes)",
            "use smaller tiles, or keep fewer of them live at once (a tile's memory is reused "
            "after its last read)")
