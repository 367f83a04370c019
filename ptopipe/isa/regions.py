"""Reserved regions of a core's local memory (ring buffers, staging rings) and the tiles
assigned by TASSIGN, so that a tile overlapping a ring is reported (both ways round) - except
a view into a popped tile the core still holds."""
from __future__ import annotations

from ..arch import MemSpace
from ..errors import MemoryConflictError


def reserve(core, space: MemSpace, base: int, nbytes: int, label: str, where: str | None = None) -> None:
    """Mark [base, base+nbytes) of ``core``'s memory as a ring; no tile may overlap it.
    ``where``: the line reported (default: ``core``'s; a binding on another core passes its own)."""
    mem = core.memory(space, label)
    mem.check(base, nbytes, label)
    res = core.isa.setdefault("reserved", [])
    for (sp, lo, hi, lab) in res:
        if sp is space and lo < base + nbytes and base < hi:
            if lab == label:
                return
            raise MemoryConflictError(
                f"{label} [{base:#x}, {base + nbytes:#x}) overlaps {lab} [{lo:#x}, {hi:#x}) in {mem.label}",
                where=where or str(core.where()), fix="place the ring buffers in disjoint regions")
    for (lo, hi, desc, sp, loc) in core.isa.get("tiles", {}).values():
        if sp is space and lo < base + nbytes and base < hi:
            raise MemoryConflictError(
                f"{label} [{base:#x}, {base + nbytes:#x}) overlaps {desc} [{lo:#x}, {hi:#x}) in {mem.label}",
                where=where or str(core.where()), details=f"the tile was assigned at {loc}",
                fix="move the tile or the ring so that SLOT_NUM * SLOT_SIZE does not overlap other tiles")
    res.append((space, base, base + nbytes, label))


def register_tile(tile, core) -> None:
    """Called by TASSIGN: the tile may not overlap a reserved region of its memory, unless it
    lies inside one slot (or staging slot) that holds a tile this core popped and has not yet
    freed: a view of that tile (``tile.binding`` is then the slot's, as the popped tile's)."""
    lo, hi = tile.addr, tile.addr + tile.nbytes
    for (sp, rlo, rhi, lab) in core.isa.get("reserved", ()):
        if sp is tile.space and rlo < hi and lo < rhi:
            from .pipe.diagnostics import held_slot_at     # (pipe imports this module)
            held = held_slot_at(core, tile.space, lo, hi)
            if held is not None:
                # a view into a popped tile this core holds: it lives as long as the slot is
                # held, as the popped tile does (reading it after the TFREE is a use after free)
                tile.binding = held
                core.isa.get("tiles", {}).pop(id(tile), None)     # its earlier placement ends
                return
            raise MemoryConflictError(
                f"{tile.describe()} [{lo:#x}, {hi:#x}) overlaps {lab} [{rlo:#x}, {rhi:#x})",
                where=str(core.where()),
                fix="move the tile out of the ring buffer region (SLOT_NUM * SLOT_SIZE)")
    core.isa.setdefault("tiles", {})[id(tile)] = (lo, hi, tile.placement(), tile.space, core.where())
