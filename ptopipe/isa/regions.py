"""Reserved regions of a core's local memory (ring buffers, staging rings) and the tiles
assigned by TASSIGN.

Two rings may not overlap.  A tile may share bytes with a ring: on the device that is a bug
only where the bytes are written by one while the other still holds a value that is read
later.  So a tile TASSIGNed over a ring (or a ring reserved over a tile) is watched
(:class:`RingTiles`, installed on the core that owns the memory): a ring write over its bytes
(a TPOP staging its tile, a TPUSH landing in a consumer-local ring: :func:`ring_wrote`) marks
it overwritten, and reading it before the kernel writes it again is a MemoryConflictError at
the read naming the ring write; a write of it into ring bytes that hold a tile the consumer
has not finished with is reported at that write (a consumer-local ring slot still unconsumed
or held), or ends that staged tile's life (reading it afterwards is reported at the read).
With the race checker on, the watched tile's accesses are recorded on the core's memory too,
so that a ring write of another core the pipe's flags do not order with them is a race even
where the simulator ran it after them (``KernelChecks`` reports it as a tile in the ring).
A TASSIGN view into a popped tile the core still holds is that tile (it lives as long as the
slot is held).

Two placed tiles that share some bytes without either holding the other (a bias tile at 0x0 of
2 KiB and an output tile at 0x400) are watched the same way: an instruction writing one marks
the other overwritten where their valid bytes meet, and reading the other before the kernel
writes it again is reported, naming the write.  A tile inside another (a part of a
tile written through its own view) and tiles used one after the other are not reported.  A ring
write over a tile is a MemoryConflictError; another tile's is a run warning at the read (the
simulated bytes are the device's: the numbers show it as well)."""
from __future__ import annotations

from weakref import ref

from ..arch import MemSpace
from ..arch.vocab import TileLayout, TileType
from ..errors import MemoryConflictError


def reserve(core, space: MemSpace, base: int, nbytes: int, label: str, where: str | None = None,
            ring=None) -> None:
    """Mark [base, base+nbytes) of ``core``'s memory as a ring; no other ring may overlap it.
    ``where``: the line reported (default: ``core``'s; a binding on another core passes its own).
    ``ring``: what the region holds - ``("stage", channel, side)`` a consumer's staging ring,
    ``("ring", channel)`` a consumer-local ring - for the check of a tile written over it."""
    mem = core.memory(space, label)
    mem.check(base, nbytes, label)
    res = core.isa.setdefault("reserved", [])
    for (sp, lo, hi, lab, _ring) in res:
        if sp is space and lo < base + nbytes and base < hi:
            if lab == label:
                return
            other = _bound_at(core, _ring)
            raise MemoryConflictError(
                f"{label} [{base:#x}, {base + nbytes:#x}) overlaps {lab} [{lo:#x}, {hi:#x}) in {mem.label}"
                + (f" (bound at {other})" if other else ""),
                where=where or str(core.where()),
                fix=f"place the ring buffers in disjoint regions: start this one at {hi:#x} or above, or "
                    f"end it at {lo:#x} or below")
    res.append((space, base, base + nbytes, label, ring))
    for tid, (lo, hi, _desc, sp, _loc, held) in core.isa.get("tiles", {}).items():
        tile = held()
        if tile is not None and sp is space and lo < base + nbytes and base < hi:
            watch(core).tiles[tid] = tile


def _bound_at(core, ring):
    """Where the pipe of a reserved region was bound on ``core`` (its address was given
    there), or None: ``ring`` is the region's ``("stage", channel, side)`` or ``("ring",
    channel)``."""
    if not ring:
        return None
    if ring[0] == "stage":
        side = ring[2]
    else:       # the consumer's side, else the end that bound it first (the other may come later)
        side = ring[1].sides.get(core.index) or next(iter(ring[1].sides.values()), None)
    return getattr(side, "bound_at", None)


def register_tile(tile, core) -> None:
    """Called by TASSIGN: a tile inside one slot (or staging slot) that holds a tile this core
    popped and has not yet freed is a view of that tile (``tile.binding`` is then the slot's,
    as the popped tile's); a tile over other ring bytes is watched (:class:`RingTiles`)."""
    lo, hi = tile.addr, tile.addr + tile.nbytes
    shares = False
    views = core.isa.setdefault("ring_views", {})
    views.pop(id(tile), None)
    for (sp, rlo, rhi, _lab, ring) in core.isa.get("reserved", ()):
        if sp is tile.space and rlo < hi and lo < rhi:
            from .pipe.diagnostics import held_slot_at     # (pipe imports this module)
            held = held_slot_at(core, tile.space, lo, hi)
            if held is not None:
                # a view into a popped tile this core holds: it lives as long as the slot is
                # held, as the popped tile does (reading it after the TFREE is a use after free)
                tile.binding = held
                forget_tile(core, tile)                    # its earlier placement ends
                # where it was placed and the ring's bytes: a use after free of a tile the kernel
                # meant as its own (a ring bound at its default address 0) says so
                views[id(tile)] = (ref(tile), core.where(), rlo, rhi, _bound_at(core, ring))
                return
            shares = True
    placed = core.isa.setdefault("tiles", {})
    placed[id(tile)] = (lo, hi, tile.placement(), tile.space, core.where(), ref(tile, _gone(core.isa, id(tile))))
    w = core.isa.get("ring_tiles")
    if w is not None:
        w.marks.pop(id(tile), None)                        # a new placement: no earlier value
        w.tiles.pop(id(tile), None)
        w.overlaps.pop(id(tile), None)
    if shares:
        watch(core).tiles[id(tile)] = tile
    for tid, (tlo, thi, _d, sp, _loc, held) in placed.items():
        if tid != id(tile) and sp is tile.space and tlo < hi and lo < thi:
            other = held()
            # two tiles in part over one another (but a column view: one's valid region inside
            # the other's rows at the same pitch); or one inside another where a fractal layout
            # makes the simulator's row-major bytes another element order than the device's
            if other is not None and (not (tlo <= lo and hi <= thi) and not (lo <= tlo and thi <= hi)
                                      and not _view_of(tile, other) and not _view_of(other, tile)
                                      or not _same_order(tile, other)):
                w = watch(core)
                w.overlaps[tid], w.overlaps[id(tile)] = other, tile


def _gone(isa: dict, key: int):
    """The callback of a placed tile's weak reference: a tile the kernel no longer holds can
    never be read again, so its placement goes (a kernel that places a tile per iteration
    keeps no tile of an earlier one alive); where it was placed stays known by its bytes,
    for a report naming the TASSIGN of a tile used earlier (``placed_before``)."""
    def gone(r) -> None:
        placed = isa.get("tiles", {})
        e = placed.get(key)
        if e is not None and e[5] is r:
            del placed[key]
            isa.setdefault("placed_before", {})[(e[3], e[0], e[1])] = e[4]
    return gone


def placed_at(core, space, lo: int, hi: int):
    """Where the kernel placed a tile of bytes [lo, hi) of ``core``'s ``space`` (TASSIGN's
    line; a tile still held first), else None."""
    for (tlo, thi, _d, sp, loc, _r) in core.isa.get("tiles", {}).values():
        if tlo == lo and thi == hi and sp is space:
            return loc
    return core.isa.get("placed_before", {}).get((space, lo, hi))


def forget_tile(core, tile) -> None:
    """``tile``'s placement on ``core`` ends (a TPOP binds it to a ring or staging slot)."""
    if core.isa.get("tiles", {}).pop(id(tile), None) is not None:
        w = core.isa.get("ring_tiles")
        if w is not None:
            w.marks.pop(id(tile), None)
            w.tiles.pop(id(tile), None)


def popped_into(core, tile, label: str, where, note: str = "") -> None:
    """A TPOP staged ``tile`` in ``core``'s staging ring ``label``: its own placement ends, and
    the tiles that share the bytes it landed in no longer hold their values (``note``: see
    :func:`ring_wrote`)."""
    forget_tile(core, tile)
    ring_wrote(core, tile.space, tile.addr, tile.addr + tile.nbytes, label, "TPOP", where, tile, note)


def ring_wrote(owner, space: MemSpace, lo: int, hi: int, label: str, op: str, where, exclude=None,
               note: str = "") -> None:
    """A ring write (``op`` at ``where``, ``label`` the ring) put bytes [lo, hi) into ``owner``'s
    memory ``space``: the watched tiles there (not ``exclude``, the tile the write lands in)
    no longer hold their values.  ``note``: what the fix of a read of such a tile adds (the
    ring's ``Channel.unused_buf_note``)."""
    w = owner.isa.get("ring_tiles")
    if w is None:
        return
    placed = owner.isa.get("tiles", {})
    for tid, t in w.tiles.items():
        e = placed.get(tid)
        if e is not None and t is not exclude and e[3] is space and e[0] < hi and lo < e[1]:
            w.marks[tid] = (t, label, op, str(where), note)


def watch(core) -> "RingTiles":
    """The core's :class:`RingTiles` (installed on first use)."""
    w = core.isa.get("ring_tiles")
    if w is None:
        w = core.isa["ring_tiles"] = RingTiles(core)
    return w


class RingTiles:
    """The tiles of one core that share bytes with a ring or staging ring, and which of them a
    ring write has overwritten (``marks``: id -> (tile, ring, op, line, the fix's note)).  It wraps the core's
    ``issue*`` methods (as :class:`~ptopipe.sim.porder.PipeOrder` does; only on a core with
    such tiles): an instruction reading a marked tile is reported, one writing it gives it a
    new value - after its write is checked against the ring's live data."""

    def __init__(self, core):
        self.core = core
        self.tiles: dict = {}          # id(tile) -> tile
        self.overlaps: dict = {}       # id(tile) -> tile: placed tiles sharing part of their bytes
        self.warned: set = set()       # (line, id(tile)) of the reads of overwritten tiles warned of
        self.marks: dict = {}
        self._issue, self._w, self._r = core.issue, core.issue_w, core.issue_r
        self._rw, self._rrw = core.issue_rw, core.issue_rrw
        core.issue, core.issue_w, core.issue_r = self.issue, self.issue_w, self.issue_r
        core.issue_rw, core.issue_rrw = self.issue_rw, self.issue_rrw

    def _read(self, s, name: str) -> None:
        m = self.marks.get(id(s))
        if m is not None and m[0] is s:
            if len(m) == 6:             # another tile's write: a warning (the device reads the same)
                self._overwritten(s, name, m)
            else:
                raise self._clobbered(s, name, m)
        if self.tiles.get(id(s)) is s:
            self._ordered(s, False, name)

    def _write(self, d, name: str) -> None:
        if self.tiles.get(id(d)) is d:
            self.marks.pop(id(d), None)
            _write_over_ring(self.core, d, name)
            self._ordered(d, True, name)
        if self.overlaps.get(id(d)) is d:
            self.marks.pop(id(d), None)
            self._write_over_tiles(d, name)

    def _write_over_tiles(self, d, name: str) -> None:
        """``name`` writes ``d``, which shares bytes with other placed tiles: those whose valid
        bytes it writes no longer hold their values."""
        span = _valid_span(d)
        if span is None:
            return
        lo, hi = span
        placed = self.core.isa.get("tiles", {})
        for tid, t in self.overlaps.items():
            e = placed.get(tid)
            other = _valid_span(t) if t is not d and e is not None and e[5]() is t and t.space is d.space else None
            if other is not None and other[0] < hi and lo < other[1]:
                self.marks[tid] = (t, d, name, str(self.core.where()), max(lo, other[0]), min(hi, other[1]))

    def _ordered(self, tile, write: bool, name: str) -> None:
        """With the race checker on, the access is recorded on the core's memory: a ring write
        of another core into its bytes must be ordered with it by the pipe's flags (a push the
        simulator happened to run after the tile's last read may land before it on the
        device) - a race is reported at the later of the two."""
        core = self.core
        chk = core.cluster.checker
        if chk is not None:
            lo = tile.addr
            chk.access(core, core.memory(tile.space), lo, lo + tile.nbytes, None, write, name, core.where())

    def issue_w(self, pipe, cost, d, name, args=None) -> int:
        self._write(d, name)
        return self._w(pipe, cost, d, name, args)

    def issue_r(self, pipe, cost, s, name, args=None) -> int:
        self._read(s, name)
        return self._r(pipe, cost, s, name, args)

    def issue_rw(self, pipe, cost, s, d, name, args=None) -> int:
        self._read(s, name)
        self._write(d, name)
        return self._rw(pipe, cost, s, d, name, args)

    def issue_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        self._read(s0, name)
        self._read(s1, name)
        self._write(d, name)
        return self._rrw(pipe, cost, s0, s1, d, name, args)

    def issue(self, pipe, cost, srcs=(), dsts=(), name="", args=None):
        for s in srcs:
            self._read(s, name)
        for d in dsts:
            self._write(d, name)
        return self._issue(pipe, cost, srcs, dsts, name, args)

    def _clobbered(self, tile, name: str, mark) -> MemoryConflictError:
        core = self.core
        _t, ring, op, at, note = mark
        lo, hi, desc, _sp, loc, _tile = core.isa["tiles"][id(tile)]
        desc = str(desc)                               # (rendered once: the tile as TASSIGN placed it)
        here = str(core.where())
        return MemoryConflictError(
            f"{name} reads {desc} [{lo:#x}, {hi:#x}), which the {op} at {at} overwrote: the tile shares bytes "
            f"with the {ring}, and the ring's write landed while the tile still held the value read here",
            where=here,
            details=f"the tile was assigned at {loc}\n{op} at {at} wrote {ring} over it\n{name} at {here} reads it",
            fix=f"move the tile out of {ring}, or finish reading it before the {op} at {at} (a tile may share "
                "a ring's bytes only while the ring does not write them)" + note,
            findings=[{"kind": "ring_clobber", "tile": desc, "ring": ring, "ring_write": at,
                       "read": here, "op": name}])


    def _overwritten(self, tile, name: str, mark) -> None:
        """``name`` reads ``tile`` after an instruction wrote another tile over part of it: a run
        warning at the read, once per line and tile (the simulated bytes are the device's, so
        the numbers show it too)."""
        core = self.core
        del self.marks[id(tile)]
        _t, writer, op, at, lo, hi = mark
        here = core.where()
        key = (str(here), id(tile))
        if key in self.warned:
            return
        self.warned.add(key)
        tiles = core.isa["tiles"]
        placed, wplaced = tiles[id(tile)][4], tiles.get(id(writer), (None,) * 5)[4]
        head = (f"{name} reads {tile.describe()} (placed at {placed}), whose bytes [{lo:#x}, {hi:#x}) the {op} at "
                f"{at} wrote through {writer.describe()} (placed at {wplaced})")
        if _same_order(tile, writer):
            core.cluster.warnings.append((
                f"{head}: the two tiles overlap, so it reads that write, not its own value - place them in "
                f"disjoint bytes, or finish reading the first before the {op}", here))
        else:
            core.cluster.warnings.append((
                f"{head}, another tile over those bytes in a fractal layout (NZ / ZN / ZZ): the simulator holds "
                f"each tile as its row-major matrix, so the elements read here are not the ones the device's "
                f"fractal order gives this tile (a sub-tile of an NZ Acc at a row offset reads other rows) - "
                f"its numbers differ from the device's; read the data through the tile that wrote it (a "
                f"smaller valid region, TEXTRACT)", here))


def _view_of(v, t) -> bool:
    """Is tile ``v`` a view of part of tile ``t``: both row-major at one row pitch, ``v``'s valid
    region inside ``t``'s static rows and columns (a column block of ``t``, as a kernel fills a
    wide tile through narrower tiles placed along its first row)?"""
    pitch = t.cols * t.item
    if not (_row_major(v) and _row_major(t)) or v.cols * v.item != pitch or v._addr < t._addr:
        return False
    rows, col = divmod(v._addr - t._addr, pitch)
    return col + v.valid_cols * v.item <= pitch and rows + v.valid_rows <= t.rows


def _same_order(a, b) -> bool:
    """Do tiles ``a`` and ``b`` see their common bytes as the device does?  The simulator holds
    each tile as its row-major matrix from its address: the device's order when both tiles'
    layouts put their elements in row-major order, else only for one storage under two names
    (the same address, shape, element size and layout)."""
    if _row_major(a) and _row_major(b):
        return True
    return (a._addr, a.rows, a.cols, a.item, a.layout) == (b._addr, b.rows, b.cols, b.item, b.layout)


def _row_major(t) -> bool:
    """Does ``t``'s layout put its elements in row-major order over its static shape?  ND does;
    DN a row or column; NZ and ZZ one column of fractals (a fractal row of 64 bytes in an Acc
    tile's 1 KiB fractals, 32 in the others' 512 B) - an NZ tile of one row too."""
    lay = t.layout
    if lay is TileLayout.ND:
        return True
    if lay is TileLayout.DN:
        return t.rows == 1 or t.cols == 1
    if lay is TileLayout.NZ or lay is TileLayout.ZZ:
        return t.cols * t.item == (64 if t.loc is TileType.Acc else 32) or (lay is TileLayout.NZ and t.rows == 1)
    return False


def _valid_span(t) -> "tuple | None":
    """[lo, hi) of the bytes ``t``'s valid region spans (None: none)."""
    a, vr, vc = t._addr, t.valid_rows, t.valid_cols
    if a is None or not vr or not vc:
        return None
    return a, a + ((vr - 1) * t.cols + vc) * t.item


def _write_over_ring(core, tile, name: str) -> None:
    """``name`` writes watched ``tile``: the ring bytes it covers must not hold a tile the
    consumer has not finished with - a consumer-local ring slot still unconsumed or held is
    reported here; a staged tile still in use no longer holds its value (reading it is reported
    at the read, as a use after free naming this write)."""
    lo, hi = tile.addr, tile.addr + tile.nbytes
    for (sp, rlo, rhi, label, ring) in core.isa.get("reserved", ()):
        if ring is None or sp is not tile.space or not (rlo < hi and lo < rhi):
            continue
        if ring[0] == "stage":
            ch, side = ring[1], ring[2]
            for s in side.stage_slots or ():
                n = s.nbytes or ch.slot_size
                if s.bound is not None and s.bound == s.gen and s.addr < hi and lo < s.addr + n:
                    s.clobber = (s.gen, core.where(), None, f"{name} of {tile.describe()}")
                    s.gen += 1
            continue
        ch = ring[1]
        side = ch.sides.get(core.index)
        if side is None:
            continue
        for tag in range(ch.slot_num):
            a = ch.local_base + tag * ch.slot_size
            if not (a < hi and lo < a + ch.slot_size):
                continue
            for s in side.slots[tag]:
                if s.state != "free":
                    raise MemoryConflictError(
                        f"{name} writes {tile.describe()} [{lo:#x}, {hi:#x}) over slot {tag} of {ch.name} "
                        f"[{a:#x}, {a + ch.slot_size:#x}), which holds the tile pushed at {s.push_loc} - "
                        + ("not yet popped" if s.state == "written" else "popped and not yet freed")
                        + ": the write overwrites it",
                        where=str(core.where()),
                        details=f"the tile was assigned at {core.isa['tiles'][id(tile)][4]}",
                        fix=f"move the tile out of {label}, or write it only while the slot is free (after its "
                            "TFREE, before the producer's next push into it is possible)" + ch.unused_buf_note())
