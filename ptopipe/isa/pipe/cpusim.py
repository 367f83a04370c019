"""pto-isa's CPU simulator's slot state of a pipe (``include/pto/cpu/TPush.hpp``,
``TPipe::SharedState``), replayed alongside the run (``ProtocolModel.slot_state_replay``).

The CPU simulator keeps ONE ring of SlotNum slots per pipe - for both ways of a DIR_BOTH pipe
too - with one producer cursor (``next_producer_slot``) and a per-slot direction
(``transfer_dirs``), where the NPU headers and ptopipe keep SlotNum slots per way.  Its rules,
as the replay applies them:

- a whole-tile producer (the Cube's C2V push, a one-lane V2C push) waits until fewer than
  SlotNum slots are committed and the cursor slot is free, writes it, commits it and moves
  the cursor;
- a split V2C producer lane waits only until fewer than SlotNum slots are committed and it
  has no claim on the cursor slot - NOT until that slot is free - and the slot is committed
  (and the cursor moved) when both lanes wrote it: a C2V tile not yet consumed in that slot
  is overwritten and lost;
- a split C2V consumer lane takes the first C2V slot from the C2V consumer cursor it has not
  taken yet, once a slot is committed (``occupied > 0``);
- a whole-tile consumer (the Cube's V2C pop, a one-lane C2V pop) takes the first slot of its
  direction from its cursor that no consumer holds, queued on the pending-slot list;
- a TFREE releases the slot of the core's LATEST TPOP of the pipe (``Consumer::tileIndex``),
  except that the first TFREE after a whole-tile pop takes the oldest pending slot: a core
  that holds two popped tiles frees one slot twice and never the other.  A release
  decrements the slot's consumers still to free it; the last one (or one past it) clears the
  slot, moves a split C2V consumer cursor past it and decrements ``occupied`` - again for a
  slot freed twice, which can leave ``occupied`` below the slots still committed.

Not replayed: a TILE_NO_SPLIT C2V tile popped by both Vector lanes (the simulator's path
depends on the pipe's IsNoSplit).  Every TPUSH / TPOP / TFREE of the pipe is queued per core in the order the run made them and
applied as soon as the simulator's rules allow (the run's order is the interleaving); what is
left at kernel end can never be applied - the CPU simulator hangs there, a stall the device
does not have (:meth:`SharedRing.stall`, raised by the teardown)."""
from __future__ import annotations

from collections import deque

from ...arch.vocab import C2V, V2C, TileSplitAxis
from ...errors import DeadlockError

_NO_SPLIT = TileSplitAxis.TILE_NO_SPLIT


class SharedRing:
    """The CPU simulator's one slot state of pipe ``name`` of ``slot_num`` slots (``both``: a
    DIR_BOTH pipe)."""

    def __init__(self, name: str, slot_num: int, both: bool = True, c2v: bool = True, device_period: int = 0,
                 rule: str = ""):
        n = self.n = slot_num
        self.name, self.both, self.c2v = name, both, c2v
        # the device's SyncPeriod where its TFREE tests the latest TPOP's index (``rule``), so
        # that a core holding several popped tiles is wrong on the device too (0: not so)
        self.device_period, self.rule = device_period, rule
        self.cursor = 0                  # next_producer_slot
        self.cons_cursor = {C2V: 0, V2C: 0}
        self.occupied = 0
        self.dirs = [None] * n           # the way of the tile committed in each slot
        self.tiles = [None] * n          # (way, tile number, TPUSH line) of that tile
        self.remaining = [0] * n         # consumers still to free it
        self.claimed = [0] * n           # split C2V consumer lanes that popped it (mask)
        self.alloc = [0] * n             # split V2C producer lanes that claimed / wrote it (mask)
        self.done = [0] * n
        self.busy = [0] * n
        self.popped: list = []           # slots popped by whole-tile consumers, oldest first
        self.index: dict = {}            # core -> the slot of its latest TPOP (Consumer::tileIndex)
        self.tracked: dict = {}          # core -> its latest TPOP is on the pending-slot list
        self.refreed: list = []          # (core, slot freed again, TFREE line, slots it still holds)
        self.held: dict = {}             # core -> the slots it popped and has not freed (the device's order)
        self.lane_slot: dict = {}        # split V2C producer lane -> the slot it claimed
        self.pushed = {C2V: 0, V2C: 0}   # tiles committed per way
        self.queues: dict = {}           # core -> deque of (op, way, split, loc)
        self.clobbered: list = []        # (lost tile, slot, core, TPUSH line)
        # a TILE_NO_SPLIT C2V tile consumed by both Vector lanes: the simulator takes one of two
        # paths (AIV1 inactive, or both lanes counted) on the pipe's IsNoSplit, which the run
        # does not know - the replay stops and reports nothing
        self.off = False

    def record(self, core, op: str, way: str, split, loc) -> None:
        """Queue ``core``'s ``op`` ("push" | "pop" | "free") on ``way`` and apply what the
        simulator's rules allow."""
        if self.off:
            return
        if way == V2C and split == _NO_SPLIT and op == "push" and core.subblock == 1:
            return      # TPush_impl: a TILE_NO_SPLIT Vec tile of the second lane is not pushed
        if way == C2V and split == _NO_SPLIT and op != "push" and core.subblock == 1:
            self.off = True
            self.queues.clear()
            return
        q = self.queues.get(core)
        if q is None:
            q = self.queues[core] = deque()
        q.append((op, way, split, loc))
        progress = True
        while progress:
            progress = False
            for c, qq in self.queues.items():
                while qq and self._apply(c, *qq[0]):
                    qq.popleft()
                    progress = True

    # -- the simulator's rules -------------------------------------------------------------
    def _apply(self, core, op, way, split, loc) -> bool:
        if op == "push":
            if way == V2C and split != _NO_SPLIT:
                return self._lane_push(core, loc)
            return self._push(way, split, loc)
        if op == "pop":
            lane = way == C2V and split != _NO_SPLIT          # a split C2V consumer lane
            s = self._lane_pop(core) if lane else self._pop(way)
            if s is None:
                return False
            self.index[core] = s
            self.tracked[core] = not lane           # (a whole-tile pop is on the pending-slot list)
            self.held.setdefault(core, []).append(s)
            return True
        self._free(core, split, loc)
        return True

    def _free(self, core, split, loc) -> None:
        """``Consumer::free``: the slot of the core's latest pop (the oldest pending one for the
        first free after a whole-tile pop) loses a consumer; the last one clears it."""
        s = self.index.get(core)
        if self.tracked.get(core) and self.popped:
            s = self.index[core] = self.popped.pop(0)
            self.tracked[core] = False
        if s is None:
            return
        held = self.held.get(core, [])
        if s in held:
            held.remove(s)
        else:
            self.refreed.append((core, s, loc, list(held)))
        if self.remaining[s] > 1:
            self.remaining[s] -= 1
            return
        self._release(s)
        if split != _NO_SPLIT and (self.both or self.c2v):
            self.cons_cursor[C2V] = (s + 1) % self.n

    def _push(self, way, split, loc) -> bool:
        s = self.cursor
        if self.occupied >= self.n or self.busy[s] or self.dirs[s] is not None:
            return False
        self._commit(s, way, 2 if way == C2V and split != _NO_SPLIT else 1, loc)
        return True

    def _lane_push(self, core, loc) -> bool:
        bit = 1 << core.subblock
        s = self.cursor
        if self.occupied >= self.n or self.alloc[s] & bit:
            return False
        if self.dirs[s] is not None and not self.alloc[s]:
            # the slot still holds a committed tile: the lane writes over it
            self.clobbered.append((self.tiles[s], s, core, loc))
        self.alloc[s] |= bit
        self.busy[s] = 1
        self.done[s] |= bit
        if self.done[s] == 0b11:
            self.alloc[s] = self.done[s] = 0
            self._commit(s, V2C, 1, loc)
        return True

    def _commit(self, s, way, consumers, loc) -> None:
        self.busy[s] = 1
        self.dirs[s] = way
        self.tiles[s] = (way, self.pushed[way], loc)
        self.pushed[way] += 1
        self.remaining[s] = consumers
        self.cursor = (s + 1) % self.n
        self.occupied += 1

    def _find(self, way, reject) -> int | None:
        start = self.cons_cursor[way]
        for k in range(self.n):
            s = (start + k) % self.n
            if self.dirs[s] == way and not reject(s):
                return s
        return None

    def _lane_pop(self, core) -> int | None:
        bit = 1 << core.subblock
        s = self._find(C2V, lambda c: self.claimed[c] & bit) if self.occupied > 0 else None
        if s is not None:
            self.claimed[s] |= bit
        return s

    def _pop(self, way) -> int | None:
        s = self._find(way, lambda c: c in self.popped)
        if s is not None:
            self.cons_cursor[way] = (s + 1) % self.n
            self.popped.append(s)
        return s

    def _release(self, s) -> None:
        self.remaining[s] = self.claimed[s] = self.busy[s] = 0
        self.dirs[s] = None
        self.occupied -= 1

    # -- kernel end -----------------------------------------------------------------------
    def stall(self) -> DeadlockError | None:
        """The hang of the CPU simulator, if some core's TPUSH / TPOP / TFREE can never be
        applied under its rules; None if the replay ran to the end."""
        stuck = [(c, q[0]) for c, q in self.queues.items() if q]
        if not stuck or self.off:
            return None
        lines = [f"  {c.name:5s} {'TPUSH' if op == 'push' else 'TPOP' if op == 'pop' else 'TFREE'} {w} at "
                 f"{loc}: {_why(op)}" for c, (op, w, _s, loc) in stuck]
        where = next((str(loc) for _c, (op, _w, _s, loc) in stuck if op == "pop"), str(stuck[0][1][3]))
        fix = ("the simulator, not the kernel, causes this: run it with the DIR_BOTH pipe's SlotNum doubled "
               "(SlotNum per way in its shared ring, as ptopipe's C++ test does), or use a DIR_C2V and a "
               "DIR_V2C pipe; the kernel needs no change for the device")
        kept = next(((c, h) for c, h in self.held.items() if h), None)
        if self.refreed or kept:
            # (a slot the device's pop-order frees released but the simulator's did not: held
            # twice and freed latest first, or freed again)
            c, slots = (self.refreed[0][0], self.refreed[0][3]) if self.refreed else kept
            again = (f"{c.name}'s TFREE at {self.refreed[0][2]} releases slot {self.refreed[0][1]} again: "
                     if self.refreed else "")
            device = ("the device frees in pop order" if not self.device_period else
                      f"the device frees in pop order, but there {self.rule}: with SyncPeriod "
                      f"{self.device_period} a TFREE made after a later TPOP sends that TPOP's credit, not its "
                      "own, so the kernel is wrong on the device too")
            cause = (f"{again}the simulator's TFREE releases the slot of the core's latest TPOP of the pipe "
                     f"(Consumer::free frees its tileIndex), not the oldest it holds, so {c.name}, which held "
                     f"more than one popped tile, never releases slot{'s' if len(slots) > 1 else ''} "
                     f"{', '.join(map(str, slots)) or '?'} and the ring stops when it comes round to it ({device})")
            if self.device_period:
                fix = ("TFREE each popped tile before the next TPOP of the pipe (hold one at a time): the simulator "
                       "needs it, and so does the device, whose TFREE sends its free credit by the latest TPOP's "
                       "index (--protocol pto-isa reports what the held tiles do there)")
            else:
                fix = ("the simulator, not the kernel, causes this: to run it there, TFREE each popped tile before "
                       "the next TPOP of the pipe (hold one at a time); the kernel needs no change for the device "
                       "(--protocol pto-isa)")
        elif self.clobbered:
            (way, k, at), s, c, loc = self.clobbered[0]
            cause = (f"{c.name}'s split V2C TPUSH at {loc} writes slot {s} of the simulator's one ring, which "
                     f"still holds {way} tile #{k} (pushed at {at}) not yet consumed: the simulator's split V2C "
                     f"allocate waits only for fewer than SlotNum = {self.n} committed slots, not for the slot, "
                     f"and both ways of a DIR_BOTH pipe share those SlotNum slots - the {way} tile is lost "
                     "(or its data overwritten), so a TPOP waits for it forever")
        elif not self.both:
            cause = (f"its one ring of SlotNum = {self.n} slots fills where the device's flags would let the "
                     "cores go on")
        else:
            cause = (f"both ways of the DIR_BOTH pipe share the simulator's one ring of SlotNum = {self.n} slots "
                     "(one producer cursor): it fills with tiles of one direction while each side waits to "
                     "consume a tile of the other (pto-isa issue #301)")
        return DeadlockError(
            f"pto-isa's CPU simulator hangs on {self.name}, a stall the device does not have: {cause}",
            where=where,
            details="the simulator's threads stop at:\n" + "\n".join(lines) +
                    f"\nits ring: {self.occupied} of {self.n} slots committed, directions "
                    f"[{' '.join(str(d) for d in self.dirs)}]; on the device (and under --protocol pto-isa) "
                    "each way has its own SlotNum slots",
            fix=fix,
            findings=[{"kind": "simulator_stall", "pipe": self.name, "where": where,
                       "stuck": [{"core": c.name, "op": op, "way": w, "where": str(loc)}
                                 for c, (op, w, _s, loc) in stuck]}])


def _why(op: str) -> str:
    return {"push": "no slot it may write", "pop": "no tile of its direction for it",
            "free": "waits behind its earlier instructions"}[op]
