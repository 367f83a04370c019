"""The LocalSlotNum of a ring whose init leaves it out, in one place for the simulator's
``.pto`` run, the ``.pto`` reader and writer, the passes and the C++ writer: pto-isa
``TPipe``'s default, and the ``TPipe<FlagID, Dir, SlotSize, SlotNum, LocalSlotNum, nosplit>``
ptoas writes for each of a ``.pto``'s pipe inits (PTOAS ``PTOLowerFrontendPipeOps`` and
``PTOToEmitC``).  LocalSlotNum is the number of staging slots a consumer of a ring in GM
holds its popped tiles in, so the most popped tiles it may hold at once.  Also the FlagID
ptoas gives each pipe init of a kernel function (:func:`ptoas_flag_bases`): a frontend
init's ``id`` names its pipe, it is no flag number."""
from __future__ import annotations

from ..arch import get_platform
from ..arch.vocab import LOCAL_SLOT_NUM
from .model import FIRST_FLAG_ID

#: the ``.pto`` pipe inits by what ptoas lowers them to: the frontend op
#: (``pto.aic_/aiv_initialize_pipe``), a ring in GM, a ring in the consumer's local memory
FRONTEND, L2G2L, L2L = "frontend", "l2g2l", "l2l"


def default_local_slot_num(slot_num: int | None = None) -> int:
    """pto-isa ``TPipe``'s default LocalSlotNum (:data:`~ptopipe.arch.vocab.LOCAL_SLOT_NUM`),
    but at most the ring's ``slot_num``: the staging slots live in the consumer's buffer of
    SLOT_NUM * SLOT_SIZE bytes (a one-slot ring stages in one slot, not past its buffer)."""
    return LOCAL_SLOT_NUM if slot_num is None else min(LOCAL_SLOT_NUM, slot_num)


def frontend_ring(dir_mask: int, platform) -> tuple:
    """``(SLOT_NUM, local_slot_num)`` of the ring ptoas builds from a ``pto.aic_/aiv_initialize_pipe``
    whose attribute block gives only ``dir_mask``, ``slot_size`` (and ``nosplit``).  PTOAS's
    PTOLowerFrontendPipeOps fixes SlotNum at seed 003's default (8 one way, 4 both ways) and
    its ResolveReservedBuffers the FlagID at 0; on A2A3 the ring is an
    ``initialize_l2g2l_pipe`` whose LocalSlotNum is that SlotNum (ptoas writes
    ``TPipe<0, DIR_C2V, SlotSize, 8, 8, false>``), on A5 an ``initialize_l2l_pipe``, printed
    with pto-isa's default LocalSlotNum (``None``: an A5 consumer-local ring stages nothing)."""
    plat = get_platform(platform or "a2a3")
    n = plat.slot_num_for(int(dir_mask) & 3 == 3)
    return n, (n if plat.ring_in_gm else None)


def ptoas_local_slot_num(kind: str, dir_mask: int, platform, slot_num: int | None = None,
                         local_slot_num: int | None = None, flag_id: int | None = None) -> int | None:
    """The LocalSlotNum of the ring a ``.pto`` pipe init of ``kind`` (:data:`FRONTEND`,
    :data:`L2G2L`, :data:`L2L`) builds, given the attributes it names (None: absent): the one it
    names; an ``initialize_l2g2l_pipe``'s SlotNum (PTOToEmitC: ``local_slot_num`` absent ->
    ``getSlotNum()``); a frontend init's :func:`frontend_ring`, when it names neither SlotNum nor
    FlagID (``flag_base``: attributes ptoas 0.27 refuses there, which ptopipe reads for rings of
    its own: those take pto-isa's default; the ``id`` naming a pipe is no FlagID).  None:
    pto-isa's default, :func:`default_local_slot_num`."""
    if local_slot_num is not None:
        return local_slot_num
    if kind == L2G2L:
        return slot_num
    if kind == FRONTEND and slot_num is None and flag_id is None:
        return frontend_ring(dir_mask, platform)[1]
    return None


def ptoas_flag_bases(inits: list, model) -> list:
    """The FlagID of each pipe init of one kernel function, as ptoas assigns them (PTOAS
    ``PTOResolveReservedBuffers``, ``assignPeerAwareFlagBases``, the ptoas pypto targets).
    ``inits`` in program order, each ``(frontend_id, dir_mask, slot_num, flag_base)``:
    ``frontend_id`` the ``id`` of a ``pto.aic_/aiv_initialize_pipe`` (the pipe's name; 0 when
    absent, ptoas's default) or None for a lower-level init, ``flag_base`` the FlagID the init
    names (None: ptoas picks it).  A named FlagID is kept; the others, frontend pipes first in
    the order of (id, direction), then the rest in program order, take the lowest range of
    flags that overlaps no range taken so far - ``model`` (:class:`~.model.ProtocolModel`)
    says how many flags a ring takes (pto-isa: FlagID and FlagID + 1 per way, at an even
    FlagID as ptoas aligns them; seed 003: one per slot)."""
    def top(base, dir_mask, slot_num):
        return model.next_flag_id(base, 2 if int(dir_mask) & 3 == 3 else 1, slot_num)

    out, used = [None] * len(inits), []
    for i, (_fid, d, n, fb) in enumerate(inits):
        if fb is not None:
            out[i] = fb
            used.append((fb, top(fb, d, n)))
    align = 1 if model.per_tag_flags else 2
    free = [i for i, x in enumerate(inits) if x[3] is None]
    free.sort(key=lambda i: (0, inits[i][0], int(inits[i][1]) & 3, i) if inits[i][0] is not None
              else (1, 0, 0, i))
    for i in free:
        _fid, d, n, _fb = inits[i]
        base = FIRST_FLAG_ID
        while True:
            base += -base % align
            hi = top(base, d, n)
            clash = [t for lo, t in used if lo < hi and base < t]
            if not clash:
                break
            base = max(clash)
        out[i] = base
        used.append((base, hi))
    return out
