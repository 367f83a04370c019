"""AllocateMemoryAddr's allocator for the op IR: an address for every tile a ``pl.func`` op
produces, the resolution of ``pl.AUTO`` reserve_buffer bases, and of ``import_peer_buffer``
(the peer's resolved base).

Tiles share memory when their lifetimes do not overlap (:mod:`.liveness`): storage is
placed first-fit, in order of first definition, at the lowest aligned address free of
every storage live at the same time and of every literal reserve_buffer region; an op whose
older result is still read when it runs again gets several buffers, used in turn (its
rotation).  AUTO buffers go after the peak of the tiles of their space.  A function that
orders its pipes with events (``pl.record_event`` / ``wait_event`` / ``barrier``: manual
synchronisation) gets no sharing: a reuse the user cannot see would need an event the user
cannot write.  An op whose pto-isa form takes a scratch tile (``pl.row_sum``: ``TROWSUM(dst,
src, tmp)``) gets one the size of its source, live while it runs (``scratch``).  Tiles popped
by TPOP need no storage (they bind to a ring slot or the staging area inside the reserved
buffer); loop-carried and branch values alias the storage of the value they carry.
Two literal reserve_buffer regions that overlap are a CompileError naming both.

:func:`plan_function` computes the placement; :func:`allocate_function` writes it into the
IR as the tile ops' ``addr`` / ``rotation`` / ``scratch_addr`` annotations (and the AUTO
bases), and :func:`read_layout` reads it back from there - what the runtime, the C++ writer
and the property verifier use instead of placing the tiles again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CompileError
from .vocab import AUTO
from ..arch.vocab import ALIGNMENT as ALIGN, PTOAS_SLOT_NUMS, TileSplitAxis
from .instances import owns_storage
from .liveness import analyse, has_scratch
from .opdefs import FuncOp, ImportPeerBufferOp, ReserveBufferOp, own_events


def _align(x: int) -> int:
    return (x + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class FunctionLayout:
    """The placement of one function's tiles and ring buffers (keys are ops)."""
    tiles: dict = field(default_factory=dict)      # tile op -> (memory, addr) of its result
    scratch: dict = field(default_factory=dict)    # op with a scratch tile -> (memory, addr)
    # tile op -> the addresses of its buffers when it needs several (used in turn); the
    # first is ``tiles[op][1]``
    rotations: dict = field(default_factory=dict)
    buffers: dict = field(default_factory=dict)    # reserve / import result value -> (base, size)
    by_name: dict = field(default_factory=dict)    # reserve_buffer name -> (base, size)
    peak: dict = field(default_factory=dict)       # memory -> bytes up to the highest tile end

    def named(self, table: dict) -> dict:
        """``table`` (``tiles``, ``scratch``, ``rotations``) keyed by the name hint of each
        op's result where it has one (for reading a layout by DSL variable)."""
        return {(k.results[0].name or k) if k.results else k: v for k, v in table.items()}


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
        base, mem = r.base, r.memory_space
        if base is AUTO or not mem:
            continue
        lo, hi = base, base + r.size
        for (a, b), other in zip(fixed.get(mem, []), owner.get(mem, [])):
            if lo < b and a < hi:
                raise CompileError(
                    f"reserve_buffer {r.buffer_name!r} [{lo:#x}, {hi:#x}) overlaps reserve_buffer "
                    f"{other.buffer_name!r} [{a:#x}, {b:#x}) in {mem}",
                    where=str(r.loc) if r.loc else None,
                    details=f"{other.buffer_name!r} is reserved at {other.loc}",
                    fix="give one of them a base outside the other, or base=pl.AUTO")
        fixed.setdefault(mem, []).append((lo, hi))
        owner.setdefault(mem, []).append(r)
    return fixed


def _reserves(func) -> list:
    return [op for op in func.body if op.is_a(ReserveBufferOp)]


def plan_function(func) -> FunctionLayout:
    """The placement of the tiles and AUTO rings of ``pl.func`` op ``func`` (the IR is not
    changed: :func:`allocate_function` writes it)."""
    lay = FunctionLayout()
    reserves = _reserves(func)
    fixed = _fixed_regions(reserves)
    live = []             # (end, memory, lo, hi) of placed storage still live
    manual = bool(own_events(func))
    footprints = {}       # tile type -> its footprint: a function has few distinct tile types
    for st in sorted(analyse(func).values(), key=lambda st: st.start):
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
        if isinstance(st.key, tuple):
            lay.scratch[st.key[1]] = (mem, addrs[0])        # live only while its op runs
            continue
        lay.tiles[st.key] = (mem, addrs[0])
        if len(addrs) > 1:              # an op whose older result a loop keeps
            lay.rotations[st.key] = tuple(addrs)
    for r in reserves:
        base = r.base
        if base is AUTO:
            mem = r.memory_space
            taken = fixed.setdefault(mem, [])
            base = _first_fit(lay.peak.get(mem, 0), r.size, taken)
            taken.append((base, base + r.size))
        lay.buffers[r.buf] = (base, r.size)
        lay.by_name[r.buffer_name] = (base, r.size)
    return lay


def allocate_function(func) -> FunctionLayout:
    """Place ``func``'s tiles and write the placement into the IR: every tile op gets its
    result's ``addr`` (and ``rotation`` when it needs several buffers, ``scratch_addr`` when
    it takes a scratch tile), every AUTO reserve_buffer its base."""
    lay = plan_function(func)
    for op in func.walk():
        if not owns_storage(op):
            continue
        op.addr = lay.tiles[op][1]
        rot = lay.rotations.get(op)
        if rot is not None:
            op.rotation = rot
        else:
            del op.rotation
        if op in lay.scratch:
            op.scratch_addr = lay.scratch[op][1]
        else:
            del op.scratch_addr
    for r in _reserves(func):
        if r.base is AUTO:
            r.base = lay.buffers[r.buf][0]
    return lay


def unallocated(func) -> list:
    """The tile ops of ``func`` the allocator's annotations are missing on (an op whose
    ``scratch_addr`` is missing counts)."""
    return [op for op in func.walk() if owns_storage(op)
            and (not isinstance(op.addr, int) or (has_scratch(op) and not isinstance(op.scratch_addr, int)))]


def is_allocated(func) -> bool:
    return not unallocated(func) and all(r.base is not AUTO for r in _reserves(func))


def read_layout(func) -> FunctionLayout:
    """The placement written into ``func`` by :func:`allocate_function` (tile ops without
    an ``addr`` are left out: :func:`unallocated` names them)."""
    lay = FunctionLayout()
    peak = lay.peak
    for op in func.walk():
        if not owns_storage(op):
            continue
        addr = op.addr
        if not isinstance(addr, int):
            continue
        t = op.results[0].type
        mem = t.space.mem_space.value
        size = t.footprint
        lay.tiles[op] = (mem, addr)
        rot = op.rotation
        for a in (tuple(rot) if rot else (addr,)):
            peak[mem] = max(peak.get(mem, 0), a + size)
        if rot:
            lay.rotations[op] = tuple(rot)
        s = op.scratch_addr
        if isinstance(s, int):
            st = op.operands[0].type
            smem = st.space.mem_space.value
            lay.scratch[op] = (smem, s)
            peak[smem] = max(peak.get(smem, 0), s + st.footprint)
    for r in _reserves(func):
        lay.buffers[r.buf] = (r.base, r.size)
        lay.by_name[r.buffer_name] = (r.base, r.size)
    return lay


def _functions(program) -> list:
    return [f for f in program.body if f.is_a(FuncOp)]


def _resolve_imports(program, lays: dict) -> dict:
    for f in _functions(program):
        for imp in f.body:
            if not imp.is_a(ImportPeerBufferOp):
                continue
            peer = lays.get(imp.peer_func)
            if peer is None or imp.buffer_name not in peer.by_name:
                raise CompileError(f"import_peer_buffer {imp.buffer_name!r} of {imp.peer_func!r} "
                                   "cannot be resolved", where=str(imp.loc) if imp.loc else None,
                                   fix="verify the program with pl.program(...) first")
            lays[f.sym_name].buffers[imp.buf] = peer.by_name[imp.buffer_name]
    return lays


def plan_program(program) -> dict:
    """``{function name: FunctionLayout}`` of a ``pl.program`` op, with import_peer_buffer
    bases resolved (the IR is not changed)."""
    return _resolve_imports(program, {f.sym_name: plan_function(f) for f in _functions(program)})


def resolve_program(program):
    """A copy of ``pl.program`` op ``program`` with every ``pl.AUTO`` reserve_buffer base
    replaced by its resolved address (e.g. to print what will run)."""
    out = program.clone()
    lays = plan_program(out)
    for f in _functions(out):
        for r in _reserves(f):
            r.base = lays[f.sym_name].buffers[r.buf][0]
    return out


def allocate_program(program) -> dict:
    """:func:`allocate_function` on every function of a ``pl.program`` op (a function
    already allocated is read, not placed again); ``{function name: FunctionLayout}`` with
    import_peer_buffer bases resolved."""
    lays = {}
    for f in _functions(program):
        lays[f.sym_name] = read_layout(f) if is_allocated(f) else allocate_function(f)
    return _resolve_imports(program, lays)


# -- seed 003's rules on a reserved ring (one wording for the runtime's and Validate's checks) --
def ptoas_slot_num(most: int) -> int | None:
    """The deepest ring ptoas builds (:data:`~ptopipe.arch.vocab.PTOAS_SLOT_NUMS`) of at most
    ``most`` slots; None when even its smallest is more."""
    fit = [n for n in PTOAS_SLOT_NUMS if n <= most]
    return max(fit) if fit else None


def no_ptoas_ring_fits(slot_size: int, free: int, way: str, where: str, part: bool = False) -> str:
    """What to shrink when no ring ptoas builds fits: ``free`` bytes of ``where`` (the
    consumer's memory above its tiles) hold fewer than the smallest SlotNum ptoas takes of
    ``slot_size``-byte slots (each the largest tile crossing ``way``; ``part``: each one Vector
    core's split part of it, a C2V ring in the Vector cores' UB,
    :func:`~ptopipe.protocol.geometry.slot_shape`)."""
    k = min(PTOAS_SLOT_NUMS)
    most = free // k // ALIGN * ALIGN
    tiles = (f"tiles whose Vector core parts are at most {most} bytes over {way} (a slot in each Vector "
             "core's UB holds its part of the largest crossing tile" if part else
             f"tiles of at most {most} bytes over {way} (a slot holds the largest crossing tile")
    return (f"no ring ptoas builds fits (it takes SLOT_NUM {' or '.join(map(str, PTOAS_SLOT_NUMS))}; "
            f"{k} slots of {slot_size} bytes need {k * slot_size}, {where} has {free} free): cross "
            f"{tiles}: compute and cross it in smaller blocks), or leave "
            f"{k * slot_size - free} more bytes free (fewer or smaller tiles live beside the ring)")


def ring_size_problem(name: str, size: int, slot_num: int, slot_size: int,
                      staged: int | None = None, spare_ok: bool = False,
                      slot_nums: tuple | None = None) -> tuple | None:
    """``(what, fix)`` when reserve_buffer ``name`` of ``size`` bytes is not the
    SLOT_NUM * SLOT_SIZE its pipe needs, else None.  ``staged``: the LocalSlotNum an init
    gives explicitly to a ring that lives in GM (A2A3): the consumer's buffer then holds only
    the staging slots, and
    any size from LOCAL_SLOT_NUM * SLOT_SIZE up to SLOT_NUM * SLOT_SIZE is enough (pto-isa's
    ``TPipe<..., SlotNum, LocalSlotNum>``, the ``.pto`` PTOAS writes).  ``spare_ok``: a
    reserve larger than that is no problem either (a ``.pto`` as ptoas reads it: ptoas plans
    the size the file gives and the TPipe uses the first SLOT_NUM * SLOT_SIZE bytes, so the
    rest is only unused memory, where seed 003's rule asks for the exact size).  ``slot_nums``:
    given for a ``.pto`` (ptoas's SlotNums), whose fix spells which init takes ``slot_num``;
    either way the fix suggests a ``slot_num`` only when ptoas builds a ring of it."""
    need = slot_num * slot_size
    if size == need or (staged is not None and staged * slot_size <= size <= need) or \
            (spare_ok and size > need):
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
    fits = size // slot_size if size % slot_size == 0 else 0
    if fits in PTOAS_SLOT_NUMS and slot_nums is None:
        fix += f", or give the pipe slot_num={fits}"
    elif fits in PTOAS_SLOT_NUMS:
        fix += (f", or give the pipe slot_num={fits} (on a pto.initialize_l2l_pipe / "
                "initialize_l2g2l_pipe: a pto.aic_/aiv_initialize_pipe takes no slot_num and builds "
                "8 slots one way, 4 both ways)")
    return what, fix


def gm_window_problem(name: str, shape, offs: list, window: list, lane_split=None,
                      lane: int | None = None) -> tuple | None:
    """``(what, details, fix)`` when the GM window ``offs`` + ``window`` of a load / store
    leaves tensor ``name`` of ``shape``, else None.  ``lane_split`` (``Loc.lane_split`` of
    an op a split mode sliced for one Vector core, that core ``lane``): worded in the
    coordinates of the statement as written, naming the lane and its slice (the run and
    VerifyPipes say the same)."""
    if len(offs) == len(shape) == len(window) and \
            all(0 <= o and o + w <= n for o, w, n in zip(offs, window, shape)):
        return None
    fix = f"keep every offset + window within {name}'s shape"
    if lane_split is None or lane is None or len(offs) < 2:
        return (f"access out of bounds: offsets {list(offs)} + window {list(window)} exceed {name!r} of "
                f"shape {list(shape)}", None, fix)
    mode, half = lane_split
    axis = len(offs) - 2 + (0 if mode is TileSplitAxis.TILE_UP_DOWN else 1)
    user_offs, user_win = list(offs), list(window)
    user_offs[axis] -= lane * half
    user_win[axis] = 2 * half
    word = "rows" if mode is TileSplitAxis.TILE_UP_DOWN else "columns"
    return (f"access out of bounds: offsets {user_offs} + window {user_win} exceed {name!r} of shape "
            f"{list(shape)}",
            f"split {mode.name}: Vector core AIV{lane} moves its half, {word} "
            f"[{offs[axis]}, {offs[axis] + half}) (offsets {list(offs)} + window {list(window)})", fix)


def reserve_fit_problem(name: str, base: int, size: int, owner: str, space: str,
                        have: int, placed: bool = False) -> tuple | None:
    """``(what, fix)`` when reserve_buffer ``name`` at ``base`` overruns ``owner``'s
    ``space`` of ``have`` bytes, else None.  ``placed``: the allocator chose ``base`` (an AUTO
    reserve, after the function's tiles), so the fix is fewer bytes, not another base."""
    if base + size <= have:
        return None
    what = (f"reserve_buffer {name!r} of {size} bytes at {base:#x} does not fit {owner}'s "
            f"{space} ({have} bytes)")
    if placed:
        return (what + f": its base was chosen after the function's tiles ({base} bytes)",
                f"reserve at most {have - base} bytes (SLOT_NUM * SLOT_SIZE: smaller slots or fewer of "
                "them), or let the function's tiles take less")
    if size <= have:            # the size fits: the base is too high
        return (what, f"lower its base: {size} bytes fit at a base up to {have - size:#x} (or "
                      "base=pl.AUTO)")
    return (what, "reserve SLOT_NUM * SLOT_SIZE bytes (smaller slots or fewer of them)")


def tiles_past(lay: "FunctionLayout", space: str, have: int) -> list:
    """``[(tile op, addr)]`` of the tiles ``lay`` places (partly) past the ``have`` bytes of
    memory ``space``, by address: the ones that do not fit, each where the kernel defines it."""
    return sorted(((op, addr) for op, (mem, addr) in lay.tiles.items()
                   if mem == space and addr + op.results[0].type.footprint > have),
                  key=lambda t: t[1])


def tiles_past_details(over: list, details: str, where=lambda op: op.loc) -> str:
    """``details`` of a :func:`tiles_fit_problem` with the tiles that do not fit (``over``,
    :func:`tiles_past`) listed: name, bytes, address and the line defining each (``where(op)``,
    as the error's own place is written)."""
    return details + ("; the tiles that do not fit:" if over else "") + "".join(
        f"\n  {op.results[0].name or op.name}: {op.results[0].type.footprint} bytes at "
        f"{addr:#x}, defined at {where(op)}" for op, addr in over)


def tiles_fit_problem(fn_name: str, space: str, peak: int, owner: str,
                      have: int, usable: int | None = None) -> tuple | None:
    """``(what, details, fix)`` when the tiles of ``fn_name`` live at one time (the
    allocator's ``peak`` in ``space``) overrun ``owner``'s ``have`` bytes - or the ``usable``
    bytes below pto-isa's implicit UB scratch (``Platform.tile_space``) - else None."""
    limit = have if usable is None else min(have, usable)
    if peak <= limit:
        return None
    fix = ("use smaller tiles, or keep fewer of them live at once (a tile's memory is reused "
           "after its last read)")
    if limit < have:
        return (f"the tiles of {fn_name} need {peak} bytes of {space} at their peak but {owner} keeps "
                f"Vec tiles below {limit:#x} ({limit} of its {have} bytes)",
                f"pto-isa uses {space}[{limit:#x}, {have:#x}) as the scratch of TROWEXPAND* with a "
                f"column-major [M, 1] operand and of TEXTRACT (TMP_UB_OFFSET); a tile there is "
                f"silently corrupted (overflow by {peak - limit} bytes)", fix)
    return (f"the tiles of {fn_name} need {peak} bytes of {space} at their peak but {owner} has "
            f"{have} bytes",
            f"tiles live at the same time cannot share memory (overflow by {peak - have} bytes)", fix)
