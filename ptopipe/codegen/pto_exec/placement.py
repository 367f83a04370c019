"""Where tiles without an address go (``pto.alloc_tile`` with no ``addr``, ``memref.alloc``):
reserve buffers first (an explicit ``base`` kept), then first fit by liveness, one arena per
function (ptoas's PlanMemory does this job for the device).  Also the warning for tiles
placed at explicit addresses that overlap while both are live."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ...arch.vocab import TILE_SPACE, TileType
from ...errors import CompileError, MemoryConflictError, ParseError
from ...ir.core import gc_paused
from .program import Func, Program, int_attr, int_constants, space_attr, str_attr
from ...errors import with_article


TILE_ALIGN = 32          # bytes: placed tiles start on a 32-byte boundary (UB / L1 block)


@dataclass
class Layout:
    """Addresses the executor gives: reserve buffers by (function, name) and tiles placed
    per allocation site (one address per ``alloc_tile`` statement without ``addr``)."""
    reserves: dict = field(default_factory=dict)       # (func, name) -> (addr, size, loc)
    sites: dict = field(default_factory=dict)          # id(stmt) -> addr
    tops: dict = field(default_factory=dict)           # (core kind, TileType) -> next free byte
    active: dict = field(default_factory=dict)         # (core kind, TileType) -> [(lo, hi, last use, name)]
    #: id(stmt) of a site the first fit put past the end of its memory -> (the memory's size,
    #: [(name, lo, hi)] of the tiles and reserves below it): :func:`crowded_error`
    crowded: dict = field(default_factory=dict)


def _align(n: int, a: int = TILE_ALIGN) -> int:
    return (n + a - 1) // a * a


def plan_layout(prog: Program, platform) -> Layout:
    """Place every reserve buffer (an explicit ``base`` kept, else packed from 0) and every
    alloc site without an address, first fit by liveness (PlanMemory's job in ptoas): a
    site's tile lives from its statement to its last use, to the end of every loop that
    uses it without defining it.  Each function's tiles get their own arena, above the
    reserves and the explicitly placed tiles of its memory, so a callee never lands on its
    caller's tiles."""
    with gc_paused():          # (the program's statements stay alive: collections would only rescan them)
        return _plan_layout(prog, platform)


def _reserve_on_its_core(prog: Program, f: Func, s, name: str, loc) -> None:
    """A ``pto.reserve_buffer`` is the ring its function consumes, in that core's memory: L1 on
    the Cube (``location = #pto.address_space<mat>``), UB on a Vector core (``<vec>``).  Another
    location (ptoas takes it and plans the buffer there) is a CompileError at the reserve: the
    run would otherwise lay the ring over the core's own tiles."""
    if f.kind not in ("cube", "vector") or (loc == TileType.Vec) == (f.kind == "vector"):
        return
    want = "vec" if f.kind == "vector" else "mat"
    raise CompileError(f"pto.reserve_buffer {name!r} of the {f.kind} function @{f.name} is in {loc.name}: the ring a "
                       f"{f.kind} function consumes lives in its own core's "
                       f"{'UB' if f.kind == 'vector' else 'L1'}, a memory this core does not address as {loc.name}",
                       where=f"{prog.path}:{s.tok.line}:{s.tok.col}",
                       fix=f"write location = #pto.address_space<{want}>")


def _plan_layout(prog: Program, platform) -> Layout:
    lay = Layout()
    fixed = {}                                   # (kind, loc) -> [(lo, hi)] never reused
    for f in prog.funcs.values():
        kind = f.kind or "?"
        for s in f.statements():
            if s.name == "pto.reserve_buffer":
                name = str_attr(s, "name", prog)
                size = int_attr(s, "size", prog)
                loc = space_attr(s, "location")
                written = s.attr("location")
                if written and loc not in (TileType.Vec, TileType.Mat):
                    raise ParseError(f"pto.reserve_buffer {name!r} in {''.join(t.text for t in written)}: ptoas refuses "
                                     "it ('pto.reserve_buffer' op expects 'location' to be #pto.address_space<vec> or "
                                     "#pto.address_space<mat>)", where=f"{prog.path}:{written[0].line}:{written[0].col}",
                                     fix="a ring lives in its consumer's memory: location = #pto.address_space<vec> in "
                                         "a vector function, <mat> in a cube one")
                loc = loc or (TileType.Vec if f.kind != "cube" else TileType.Mat)
                _reserve_on_its_core(prog, f, s, name, loc)
                base = s.attr("base")
                auto = s.attr("auto")
                key = (kind, loc)
                if base is not None and not (auto and auto[0].text == "true"):
                    addr = int(base[0].text)
                else:
                    addr = lay.tops.get(key, 0)
                lay.reserves[(f.name, name)] = (addr, size, loc)
                fixed.setdefault(key, []).append((addr, addr + size))
                lay.tops[key] = max(lay.tops.get(key, 0), _align(addr + size))
    reserve_names = {}
    for (_, name), (addr, size, loc) in lay.reserves.items():
        reserve_names[(addr, addr + size)] = f"pto.reserve_buffer {name!r}"
    for f in prog.funcs.values():
        kind = f.kind or "?"
        order, ranges = live_ranges(f, prog)
        names = None
        arena = {}                                   # (kind, loc) -> the top of this function's tiles
        active = lay.active
        for s, (lo, hi) in sorted(ranges.items(), key=lambda kv: kv[1][0]):
            spec = order[s]
            key = (kind, spec.loc)
            nbytes = spec.nbytes
            # sites come in order of their first statement: a tile dead before this one
            # starts is dead for every later one too, and leaves the list for good
            live = active.get(key)
            live = active[key] = [x for x in live if x[2] >= lo] if live else []
            taken = [(a, b) for a, b, _, _ in live]
            taken += fixed.get(key, ())
            taken.sort()
            addr = lay.tops.get(key, 0)
            for a, b in taken:
                if addr + nbytes <= a or addr >= b:
                    continue
                addr = max(addr, _align(b))
            lay.sites[s] = addr
            if names is None:
                names = {id(x): x.results[0] for x in f.statements() if x.name in ALLOCS and x.results}
            size = platform.mem_sizes.get(TILE_SPACE[spec.loc]) if spec.loc in TILE_SPACE else None
            if size and addr + nbytes > size and addr > 0:
                below = [(n, a, b) for a, b, _, n in live] + \
                        [(reserve_names.get((a, b), "a reserve_buffer"), a, b) for a, b in fixed.get(key, ())]
                lay.crowded[s] = (size, sorted(below, key=lambda x: x[1]), lay.tops.get(key, 0))
            live.append((addr, addr + nbytes, hi, names.get(s, "?")))
            arena[key] = max(arena.get(key, 0), addr + nbytes)
        for key, top in arena.items():               # the next function's arena starts above
            lay.tops[key] = max(lay.tops.get(key, 0), _align(top))
        lay.active.clear()
    return lay


def crowded_error(lay: Layout, s, spec, where: str, platform) -> MemoryConflictError | None:
    """The error of alloc site ``s`` (a ``spec`` tile without ``addr``) when the first fit put
    it past the end of its memory: the tiles live with it (and the reserves) leave no room -
    named with the bytes each takes, where the run would otherwise name only the address it
    could not give (ptoas's PlanMemory places the file for the device; its own limit for some
    memories, a scaling buffer's, is larger than the buffer the core has)."""
    got = lay.crowded.get(id(s))
    if got is None:
        return None
    size, below, base = got
    space = TILE_SPACE[spec.loc].value
    held = sum(b - a for _, a, b in below)
    listed = ", ".join(f"{n} ({b - a:,} bytes at {a:#x})" for n, a, b in below)
    earlier = f"; this function's tiles start at {base:#x}, above the functions placed before it" if base else ""
    return MemoryConflictError(
        f"{s.results[0] if s.results else s.name}: {with_article(spec.loc.value)} tile of {spec.nbytes:,} bytes has no room in "
        f"{space} ({size:,} bytes on {platform.name}): the buffers live at the same time take {held:,} "
        f"bytes - {listed}{earlier} (the run places tiles without addr first fit by liveness, as ptoas's "
        "PlanMemory does)",
        where=where,
        fix="use smaller tiles, or keep fewer of them live at once (a tile's memory is reused after its "
            "last use)")


def tiles_larger_than_memory(prog: Program, platform) -> list:
    """CompileErrors of the alloc sites whose static tile alone is larger than its memory on
    ``platform`` (a Platform): where a run would stop with a MemoryConflictError, found
    without running."""
    out = []
    for f in prog.funcs.values():
        for s in f.statements():
            if s.name not in ALLOCS or not s.results:
                continue
            spec = prog.types.spec_of(s)
            size = platform.mem_sizes.get(TILE_SPACE[spec.loc]) if spec is not None else None
            if size and spec.nbytes > size:
                space = TILE_SPACE[spec.loc].value
                out.append(CompileError(
                    f"{s.results[0]}: {with_article(spec.loc.value)} tile of {spec.nbytes:,} bytes does not fit "
                    f"{space} ({size:,} bytes on {platform.name})",
                    where=f"{prog.path}:{s.tok.line}:{s.tok.col}",
                    fix=f"make the tile smaller (or split the work into tiles of at most {size:,} bytes)"))
    return out


#: the ops that allocate a buffer the placement gives an address
ALLOCS = ("pto.alloc_tile", "memref.alloc", "pto.alloc_multi_tile")
#: ops whose result is a view of their first operand's bytes: a use of the view uses the buffer
VIEWS = ("pto.subset", "pto.subview", "pto.multi_tile_get", "pto.treshape", "pto.bind_tile")


def live_ranges(f: Func, prog: Program, placed: bool = False) -> tuple:
    """Per alloc site without ``addr`` (with one, when ``placed``), by ``id(stmt)``: its
    TileSpec (a MultiSpec for a multi-slot region) and its live range ``(first, last)`` in the
    function's pre-order statement numbering; a view of a buffer (:data:`VIEWS`) keeps the
    buffer live while it is used."""
    # by pre-order index: a statement's last statement (itself, or the last one of its
    # regions) and the indices of the loops around it
    ends, loops_at = [], []
    uses = {}                        # SSA name (a view's: its buffer's) -> the indices using it
    root = {}                        # a view's SSA name -> the buffer's
    allocs = []                      # (stmt, index) of the alloc sites, in pre-order

    def visit(stmts, loops):
        for s in stmts:
            i = len(ends)
            ends.append(i)
            loops_at.append(loops)
            used = s.used_names()
            if used:
                if s.name in VIEWS and s.results:
                    root[s.results[0]] = root.get(used[0], used[0])
                for v in used:
                    v = root.get(v, v)
                    at = uses.get(v)
                    if at is None:
                        uses[v] = [i]
                    else:
                        at.append(i)
            if s.name in ALLOCS:
                allocs.append((s, i))
            if s.regions:
                inner = loops + (i,) if s.name in ("scf.for", "scf.while") else loops
                for r in s.regions:
                    for b in r:
                        visit(b.stmts, inner)
                ends[i] = len(ends) - 1
    visit(f.body, ())
    specs, ranges = {}, {}
    for s, lo in allocs:
        if s.has_key("addr") != placed or not s.results:
            continue
        spec = prog.types.spec_of(s)
        if spec is None:
            continue
        hi = lo
        own = loops_at[lo]
        mine = set(own)
        for u in uses.get(s.results[0], ()):
            end = ends[u]
            if end > hi:
                hi = end
            inside = loops_at[u]
            if inside is not own:            # (the same loops as the site's: none to add)
                for loop in inside:
                    if loop not in mine:
                        end = ends[loop]
                        if end > hi:
                            hi = end
        specs[id(s)] = spec
        ranges[id(s)] = (lo, hi)
    return specs, ranges


def _accesses(f: Func) -> tuple:
    """The function's statements in pre-order: ``(reads, writes, loops, conds)`` - by SSA
    name, the indices of the statements that read it (anywhere in their own text) and that
    write it (in their ``outs(...)``); per statement index, the ``(start, end)`` spans of the
    loops (``scf.for`` / ``scf.while``) and of the branching ops (``scf.if``) around it,
    outermost first."""
    reads, writes, loops, conds = {}, {}, {}, {}
    k = 0

    def visit(stmts, lp, cd):
        nonlocal k
        for s in stmts:
            i = k
            k += 1
            loops[i], conds[i] = lp, cd
            named = Counter(v.split("#")[0] for v in s.used())
            for r in s.results:
                named[r.split("#")[0]] -= 1
            if "outs" in s.text():
                for t in s.group("outs") or ():
                    if t.kind == "value":
                        name = t.text.split("#")[0]
                        writes.setdefault(name, []).append(i)
                        named[name] -= 1
            for name, n in named.items():
                if n > 0:                                 # named outside outs(...): read
                    reads.setdefault(name, []).append(i)
            span = [i, i]
            inner_lp = lp + ((span,) if s.name in ("scf.for", "scf.while") else ())
            inner_cd = cd + ((span,) if s.name == "scf.if" else ())
            for r in s.regions:
                for b in r:
                    visit(b.stmts, inner_lp, inner_cd)
            span[1] = k - 1
    visit(f.body, (), ())
    return reads, writes, loops, conds


def _live_spans(name: str, reads: dict, writes: dict, loops: dict, conds: dict) -> list:
    """The ``(lo, hi)`` statement spans over which ``name`` holds a value a later statement
    reads: from the write that reaches each read to that read.  A read in a loop that the
    reaching write is outside of keeps the value for the whole outermost such loop (every
    iteration reads it, and a write later in the body reaches the next iteration); a write in
    a branch that the read is not in reaches it only maybe, so the span starts at the branch
    op.  A read that no write of ``name`` reaches holds no value of ``name`` (another name
    of the same bytes wrote it: one buffer, two names)."""
    ws = writes.get(name, [])
    spans = []
    for r in reads.get(name, []):
        w = max((x for x in ws if x < r), default=None)
        outer = [lp for lp in loops[r] if w is None or not lp[0] <= w <= lp[1]]
        if w is None:
            if outer and any(outer[0][0] <= x <= outer[0][1] for x in ws):
                spans.append((outer[0][0], outer[0][1]))      # a value carried round the loop
            continue
        lo = w
        for c in conds[w]:
            if not c[0] <= r <= c[1]:
                lo = c[0]
                break
        spans.append((lo, outer[0][1] if outer else r))
    return spans


def _buffer_type(t) -> tuple:
    """What makes two names of the same address one buffer: the same static tile type (its
    valid shape may differ)."""
    return t.loc, t.dtype, t.rows, t.cols, t.blayout, t.slayout


def alias_notes(prog: Program) -> list:
    """Tiles placed at explicit addresses (``alloc_tile addr = %c``) whose bytes overlap,
    where one is written while the other holds a value a later statement reads: on the device
    that write clobbers the value, and so it does here.  Tiles whose lifetimes do not meet
    may share bytes (pypto's MemoryReuse places them so), and two names of one address and
    one static type are one buffer (pypto names each new value of a loop-carried or updated
    tile anew at the same address: a write through one name is the value the other reads)."""
    notes = []
    for f in prog.funcs.values():
        consts = int_constants(f)
        specs, _ = live_ranges(f, prog, placed=True)
        sites = {id(s): s for s in f.statements()}
        placed = []
        for k, spec in specs.items():
            a = sites[k].attr("addr")[0].text
            if a in consts:
                placed.append((sites[k], spec, consts[a]))
        if len(placed) < 2:
            continue
        reads, writes, loops, conds = _accesses(f)
        stmts = list(f.statements())
        for s1, t1, a1 in placed:
            n1 = s1.results[0]
            for lo, hi in _live_spans(n1, reads, writes, loops, conds):
                for s2, t2, a2 in placed:
                    if s2 is s1 or t1.loc is not t2.loc or a1 + t1.nbytes <= a2 or a2 + t2.nbytes <= a1 \
                            or (a1 == a2 and _buffer_type(t1) == _buffer_type(t2)):
                        continue
                    n2 = s2.results[0]
                    hit = next((x for x in writes.get(n2, []) if lo < x < hi), None)
                    if hit is None:
                        continue
                    w = stmts[hit]
                    notes.append(f"{w.where(prog.path)}: this writes tile {n2} [{a2}, {a2 + t2.nbytes}) of "
                                 f"{t2.loc.value} (allocated at line {s2.tok.line}), which overlaps {n1} [{a1}, "
                                 f"{a1 + t1.nbytes}) (allocated at line {s1.tok.line}) while {n1} holds a value "
                                 f"line {stmts[hi].tok.line} reads: the write changes it, as on the device")
                    break
    return sorted(set(notes), key=notes.index)
