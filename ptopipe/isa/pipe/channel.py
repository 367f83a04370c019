"""Channel and slot state: :class:`Channel` (one unidirectional ring), :class:`Slot` (one
slot as one consumer peer sees it), :class:`Side` (one core's cursors on a channel) and the
handle a kernel holds, :class:`PipeHandle` (one or two channels of one core).

Every slot keeps a generation and a state (free / written / held) per consumer, so a write
into a slot that is still unconsumed or held, and a read of a zero-copy tile after its
TFREE, are reported instead of silently corrupting data.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field

from ...arch.vocab import C2V, V2C
from ...errors import ProtocolError
from ...sim import CoreKind
from .diagnostics import describe_ring
from ...protocol.model import ProtocolModel


class Slot:
    """One ring slot as seen by one consumer peer."""
    __slots__ = ("tag", "gen", "state", "layout", "push_split", "push_loc", "pop_loc", "free_gen", "free_loc",
                 "free_names", "reads")
    #: fields that count events, not cycles (the fast-forward engine's moves: sim.periodic)
    counter_fields = ("gen", "free_gen", "pop_gen")

    def __init__(self, tag: int):
        self.tag = tag
        self.gen = 0
        self.state = "free"     # free | written | held
        self.layout = None      # (dtype, valid rows, valid cols, split, TileLayout, rows, cols) of the last push (None: empty)
        self.push_split = None  # the split of the last address-flow push (TPUSH of a GlobalTensor)
        self.push_loc = None
        self.pop_loc = None
        self.free_gen = -1      # the generation the latest TFREE ended, and that TFREE's line
        self.free_loc = None
        # (tag, TPOP line) of the other held pop that TFREE named, when it named one (isa.pipe.ops)
        self.free_names = None
        # reads of a tile bound zero-copy to this slot on a GM pipe (MTE2 / MTE3 / FIX), as
        # (generation, GM pipe entry, end cycle, op, line) - the race checker's, for a free
        # SET that does not wait for them (ProtocolModel.free_after_readers)
        self.reads = None


class StageSlot(Slot):
    """One slot of a consumer's local staging ring (A2A3 GM rings: pto-isa LocalSlotNum),
    where a popped tile without an address of its own is loaded."""
    __slots__ = ("side", "addr", "pop_gen", "nbytes", "clobber", "bound")

    def __init__(self, tag: int, side: "Side", addr: int):
        super().__init__(tag)
        self.side = side
        self.addr = addr
        self.pop_gen = None              # the generation whose TPOP pop_loc is (checkers on)
        self.nbytes = 0                  # bytes of the tile staged last (a staging stride by tile size)
        self.clobber = None              # (generation, TPOP line, library bug) that overwrote it
        self.bound = None                # the generation its latest TPOP bound a tile to


class Side:
    """One core's cursors on one channel (the AIC, or one AIV peer)."""
    __slots__ = ("core", "role", "index", "freed", "held", "pending_alloc", "allocate",
                 "record", "wait", "free", "bound_at", "staging", "stage_num", "stage_slots", "links", "flag_links",
                 "ready_flags", "free_flags", "slots", "popped", "tfrees", "scope_end", "extra_free",
                 "self_freed", "switched_off", "pop_holds", "zeroed", "repops", "closed", "earlier")
    #: fields that count events, not cycles (the fast-forward engine's moves: sim.periodic)
    counter_fields = ("index", "freed", "tfrees", "self_freed", "pushed", "zeroed", "popped")
    #: fields that are simulated times: a held pop's entry carries when its load's reads end
    #: (with the staging slot's generation, a count)
    time_fields = ("held",)

    def __init__(self, core, role: str, bound_at):
        self.core = core
        self.role = role                 # "producer" | "consumer"
        self.index = 0                   # tiles pushed / popped (pto-isa tileIndex)
        self.freed = 0                   # tiles freed (consumer)
        # short FIFO lists (at most SlotNum entries)
        # consumer, oldest first: (tag, tile|gt, loc, read_end, dst, split, stage); dst = the
        # address a tile loaded from a GM ring was loaded to (on this core), else None; stage =
        # the tile's (StageSlot, generation) when it was popped into the local staging ring
        self.held: list = []
        # consumer, where the protocol frees inside the tile TPOP (the TFREE is then a no-op):
        # (pop index, split, loc, stage) of the latest tile TPOPs, so that a TFREE still checks
        # its split and ends the staged copy's lifetime; ``tfrees`` counts those TFREEs
        self.popped: list = []
        self.tfrees = 0
        self.extra_free = None           # the first TFREE with no TPOP to pair (pto-isa GM rings):
        #                                  (its line, its number, the TPOPs before it)
        self.self_freed = 0              # tile TPOPs that freed their slot themselves (pto-isa GM rings)
        self.zeroed = None               # [TPOPs, first TPOP line] the library handed zeros (pop_zeroes)
        # where the TPOP frees its slot itself: (pop index, warning, line) of a TPOP into a tile
        # whose pop ``index`` had no TFREE yet - said at the exit if that TFREE came (ops._check_repop)
        self.repops: list = []
        self.pending_alloc: list = []    # producer: (tag, gt, loc) TALLOCed but not TPUSHed
        self.allocate = True             # setAllocateStatus
        self.record = True               # setRecordStatus
        self.wait = True                 # setWaitStatus
        self.free = True                 # setFreeStatus
        self.switched_off: dict = {}     # switch name -> the line that turned it off (for diagnoses)
        # consumer under sparse free notifications: TPOP line -> [slots held at its latest pop,
        # slots held at two consecutive pops there (None: not yet)] - a hold that grows after
        # it was steady is a skipped TFREE, not the notification rule (deadlock diagnoses)
        self.pop_holds: dict = {}
        self.bound_at = bound_at
        self.scope_end = bound_at        # where the pipe goes out of scope (its teardown runs)
        self.closed = False              # the pipe object went out of scope (a C++ TPipe's destructor)
        self.earlier = None              # producer of a pipe constructed again: (the earlier object's
        #                                  binding, its pushes, the credits its teardown drained)
        self.staging = None              # base address of the local staging ring
        self.stage_num = 0               # its slots: this consumer's own TPipe LocalSlotNum
        self.stage_slots = None          # Slots of the local staging ring (generations)
        self.links = ()                  # the AIV peers whose slots this side writes / reads
        self.flag_links = ()             # the AIV lanes whose flags it signals / waits on (links, but
        #                                  a pto-isa TMPipe's Cube: both, Channel.handshake)
        # per tag: the ready / free flags and the slots of every linked peer (set at binding)
        self.ready_flags: list = []
        self.free_flags: list = []
        self.slots: list = []

    @property
    def pushed(self) -> int:
        """Tiles a producer side has pushed (a TALLOC takes its slot before its TPUSH)."""
        return self.index - len(self.pending_alloc)


@dataclass
class Channel:
    """A unidirectional ring between the AIC and its AIV peers."""
    way: str                      # C2V | V2C
    cfg: object                   # the TPipe
    model: ProtocolModel
    slot_num: int
    slot_size: int
    ready_id: int                 # first flag id (per-tag flags: + tag)
    free_id: int
    in_gm: bool
    gm_base: int | None = None
    local_base: int | None = None
    ctrl: bool = False
    sides: dict = field(default_factory=dict)      # core.index -> Side
    slots: dict = field(default_factory=dict)      # peer -> [Slot]
    ready_flags: dict = field(default_factory=dict)  # peer -> [Flag]
    free_flags: dict = field(default_factory=dict)
    name: str = ""
    _views: dict = field(default_factory=dict)
    plans: dict = field(default_factory=dict)   # per tile geometry: checked push/pop plans
    bounds: dict = field(default_factory=dict)  # the slot / part bounds of address-flow pointers (flows.slot_bounds)
    # TPUSH / TPOP take their replayed fast paths (the run's ``fast_paths``; False: the
    # reference path every time, which tests/isa/test_fast_paths.py compares with)
    replay: bool = True
    # the CPU simulator's one ring of both ways of a DIR_BOTH pipe (cpusim.SharedRing; None: not
    # that model)
    sim_ring: object = None
    # the first TFREE without a split that sent a free the protocol's sparse rule would not have
    # (pto-isa A5's TFREE(pipe) notifies on every call: ProtocolModel.unsplit_free_every), for
    # the diagnosis of the overwrite its extra credit allows
    unsplit_free_at: str | None = None
    # TFREEs whose free notification tested a later TPOP's index than the tile they released
    # and so disagreed with the producer's count (pto-isa: ProtocolModel.notice_at_latest_pop),
    # for the diagnoses of the overwrite an extra credit allows and the hang a missing one
    # causes: the first one that sent a credit not counted on, (TFREE line, release #, latest
    # TPOP #), and the first few distinct lines that sent none where one was counted on
    moved_extra: tuple | None = None
    moved_silent: list = field(default_factory=list)
    # the first tile TFREE that freed a slot its TPOP had freed already (pto-isa A5, GM ring):
    # where the surplus credits a teardown reports come from
    free_again_at: str | None = None
    # the first TILE_NO_SPLIT transfer of a two-lane pipe where such a transfer is AIV0's alone
    # (ProtocolModel.nosplit_lane0: A5): from it on, the pipe's transfers are
    # AIV0's (``lanes``); AIV1 keeps only its construction and teardown
    lane0_at: str | None = None
    # the lanes of ``cfg.sim_lanes`` whose start-up free credits are posted (binding._startup_credits)
    credited: set = field(default_factory=set)
    # a TILE_UP_DOWN ring in GM, with the checkers on: tile index -> (lane, valid rows, TPOP line)
    # of the first of the two Vector lanes to pop it (ops._check_lane_rows)
    lane_rows: dict = field(default_factory=dict)
    # the consumer buffer address its TPipe was given for a direction the pipe does not have
    # (binding._unused_consumer_buf), for the diagnosis of a tile in the ring: None, else
    # (argument, address, the argument that places this ring)
    unused_buf: tuple | None = None
    # the sides of pipe objects that went out of scope before their core constructed the pipe
    # again (binding.reopen): their transactions still count
    retired: list = field(default_factory=list)

    def __post_init__(self):
        m = self.model
        self.sync_period = m.sync_period(self.cfg)
        # the pushes after which the ring's behaviour repeats: its tags (SlotNum), its free
        # batches (SyncPeriod) and a consumer's two staging slots (sim.periodic's blocks)
        self.cycle = math.lcm(self.slot_num, self.sync_period, 2)
        # the model's decisions the hot ops read, as plain attributes (decided once here)
        self.wait_every = m.waits_every(self.cfg)   # every push waits, every release signals
        self.startup_credits = m.channel_credits(self)   # free SETs per link at bind
        self.hold_limit = self.slot_num if m.bounded_hold else 1 << 62
        self.pop_frees = m.pop_frees(self.in_gm)
        self.always_stage = m.always_stage
        self.tfree_frees = self.pop_frees and m.tfree_after_pop_frees   # pto-isa A5: frees twice
        self.free_pipe = m.free_pipe(self)          # the pipe a consumer's TFREE signals from
        self.free_after_readers = m.free_after_readers   # ... after every read of the tile
        self.stage_by_tile = m.stage_stride_tile         # staging stride: the tile's size, not SlotSize
        # the pipes a tile TPUSH reads and a tile TPOP writes its tile on (None: a zero-copy TPOP)
        self.push_pipe = m.ring_data("TPUSH", self.way, self.in_gm)[0]
        self.pop_pipe = m.ring_data("TPOP", self.way, self.in_gm)[0]
        self.wait_pipe = m.ready_wait_pipe(self.way)   # what a zero-copy TPOP's ready wait holds
        # lanes the library waits for that never free (the CPU simulator's second lane of a
        # one-lane C2V pipe): then no TFREE releases a slot to the producer
        self.lost_lanes = m.lost_lanes(self)
        # some TPOPs hand the kernel zeros instead of the tile (the CPU simulator's AIV1 of a
        # no-split C2V ring: ProtocolModel.pop_zeroes decides which)
        self.zero_pops = m.nosplit_c2v_lane1_zeros
        # the Vector lanes whose flags the Cube waits on and sets: the peers, or both lanes of a
        # pto-isa TMPipe whatever its VecCubeRatio (ProtocolModel.handshake_lanes)
        self.handshake = m.handshake_lanes(self.cfg)
        self.lanes_fixed = m.lanes_fixed(self.cfg)     # ... whatever a transfer's split

    @property
    def protocol(self):
        return self.model.protocol

    @property
    def peers(self) -> tuple:
        return self.cfg.peers

    @property
    def lanes(self) -> tuple:
        """The Vector lanes of the pipe's transfers: its peers, or AIV0 alone once a NO_SPLIT
        transfer made them so (``lane0_at``)."""
        return (0,) if self.lane0_at is not None else self.cfg.peers

    @property
    def flag_lanes(self) -> tuple:
        """The Vector lanes whose flags the Cube's transfers wait on and set: :attr:`lanes`, or
        both lanes of a pto-isa TMPipe that has one (``handshake``)."""
        return (0,) if self.lane0_at is not None else self.handshake

    @property
    def silent_lanes(self) -> tuple:
        """The lanes the Cube makes handshakes with that are no peers of the pipe - the lane a
        pto-isa TMPipe's VecCubeRatio leaves out: their flags are waited on, their data never moves."""
        return tuple(p for p in self.handshake if p not in self.cfg.peers)

    def phase(self) -> tuple:
        """Where each side's cursors are in the ring's ``cycle``: two states of a run whose
        phases are equal use the same slots, staging slots and free batches next (the
        fast-forward engine's blocks end on equal phases, :mod:`ptopipe.sim.periodic`)."""
        c = self.cycle
        return tuple((s.index % c, s.freed % c, s.tfrees % c) for s in self.sides.values())

    # transaction counts, derived from the sides' cursors (TALLOCed slots are not pushed yet).
    # ``tiles`` counts slot fills; the others count instructions summed over the cores
    @property
    def tiles(self) -> int:
        per_core: dict = {}
        for s in self._all_sides():
            if s.role == "producer":
                per_core[s.core.index] = per_core.get(s.core.index, 0) + s.pushed
        return max(per_core.values(), default=0)

    @property
    def pushes(self) -> int:
        return sum(s.pushed for s in self._all_sides() if s.role == "producer")

    @property
    def pops(self) -> int:
        return sum(s.index for s in self._all_sides() if s.role == "consumer")

    @property
    def frees(self) -> int:
        """TFREE instructions: a TPOP that freed its own slot (pto-isa, GM ring) counts its
        later TFREE (``tfrees``), not its slot release."""
        return sum(s.freed - s.self_freed + s.tfrees for s in self._all_sides() if s.role == "consumer")

    def _all_sides(self):
        """The sides bound now and those of pipe objects constructed again since (``retired``)."""
        return (*self.sides.values(), *self.retired) if self.retired else self.sides.values()

    def unused_buf_note(self) -> str:
        """The fix's note for a tile this ring overwrites or covers when its TPipe was given the
        ring's address in the other direction's argument (:attr:`unused_buf`; "" otherwise)."""
        if self.unused_buf is None:
            return ""
        arg, buf, other = self.unused_buf
        return (f"; the pipe's {arg}={buf:#x} is unused (it has no such ring) and its {other} is the consumer's "
                f"buffer: pass {buf:#x} as {other}")

    def free_again_note(self) -> str:
        """Why the consumer's frees outnumber the slots it took, where the protocol doubles them
        (:attr:`tfree_frees`: pto-isa on A5, a tile TPOP from a GM ring frees the slot itself and
        the TFREE after it frees it again), for a surplus's diagnosis ("" otherwise)."""
        if not self.tfree_frees:
            return ""
        at = self.free_again_at
        return (" (pto-isa on A5: a tile TFREE after a TPOP from a GM ring frees the slot a second time"
                + (f": the TFREE at {at}" if at is not None else "") + ")")

    def surplus_note(self) -> str:
        """Why the consumer's free credits outnumber what the producer counts on (a surplus at
        exit, a free flag overflowing), for its diagnosis: a TFREE that tested a later TPOP's
        index and sent a credit not counted on (:attr:`moved_extra`), else
        :meth:`free_again_note` ("" when neither)."""
        if self.moved_extra is not None and self.free_again_at is None:
            return f" ({self.model.moved_notice_fix(self, self.moved_extra, extra=True)})"
        return self.free_again_note()

    def view(self, mem, addr: int, dtype, shape, strides=None):
        """A (cached) typed view of slot memory."""
        key = (id(mem), addr, dtype, shape, strides)
        v = self._views.get(key)
        if v is None:
            v = self._views[key] = mem.view(addr, dtype, shape, strides, what=lambda: f"{self.name} slot")
        return v

    def describe_state(self) -> str:
        """Slots (free/full/held per consumer), cursors and flag counts, for reports."""
        return describe_ring(self)


def link_side(ch: "Channel", side: Side, links: tuple, flag_links: tuple | None = None) -> None:
    """Give ``side`` the slots of the Vector lanes ``links`` and the ready / free flags of the lanes
    ``flag_links`` (``links`` by default), per tag (one counter flag per way where the protocol
    has no per-tag flags)."""
    per_tag = ch.model.per_tag_flags
    flag_links = links if flag_links is None else flag_links
    side.links = links
    side.flag_links = flag_links
    side.ready_flags = [tuple(ch.ready_flags[p][t if per_tag else 0] for p in flag_links)
                        for t in range(ch.slot_num)]
    side.free_flags = [tuple(ch.free_flags[p][t if per_tag else 0] for p in flag_links)
                       for t in range(ch.slot_num)]
    side.slots = [tuple(ch.slots[p][t] for p in links) for t in range(ch.slot_num)]


class _SideCtl:
    """``pipe.prod`` / ``pipe.cons``: the status switches of pto-isa's Producer/Consumer."""

    def __init__(self, handle: "PipeHandle", role: str):
        self._h = handle
        self._role = role

    def _sides(self):
        core = self._h.core
        core.unrecorded(f"pipe.{self._role}")     # the ring's state, exactly
        return [ch.sides[core.index] for ch in self._h.channels.values()
                if ch.sides[core.index].role == self._role]

    def _switch(self, name: str, on: bool) -> None:
        off = None if on else self._h.core.where()
        for s in self._sides():
            setattr(s, name, bool(on))
            if off is None:
                s.switched_off.pop(name, None)
            else:
                s.switched_off[name] = off

    def setAllocateStatus(self, on: bool) -> None:
        self._switch("allocate", on)

    def setRecordStatus(self, on: bool) -> None:
        self._switch("record", on)

    def setWaitStatus(self, on: bool) -> None:
        self._switch("wait", on)

    def setFreeStatus(self, on: bool) -> None:
        self._switch("free", on)

    def getAllocateStatus(self) -> bool:
        return all(s.allocate for s in self._sides())

    def isRecord(self) -> bool:
        return all(s.record for s in self._sides())

    def getTileId(self) -> int:
        s = self._sides()
        return s[0].index if s else 0


#: the instructions of each end of a ring
_OPS = {"producer": "TALLOC / TPUSH", "consumer": "TPOP / TFREE"}


class PipeHandle:
    """One core's view of a pipe (one or two channels).  Pass it to TPUSH/TPOP/TFREE."""

    def __init__(self, cfg, core):
        self.cfg = cfg
        self.core = core
        self.channels: dict = {}
        self._by_role: dict = {}
        # (channel, this core's side) per role, once checked by end(); TPUSH / TPOP / TFREE
        # read them inline
        self.producer_end = self.consumer_end = None
        # a Vector core that is not one of the pipe's peers constructed it (pto-isa's A5 no-split
        # test: every core constructs the pipe, AIV1 never uses it): the ConfigError a use of it
        # on that core raises (binding.bind_pipe); None: a peer's handle
        self.not_a_peer = None
        self.prod = _SideCtl(self, "producer")
        self.cons = _SideCtl(self, "consumer")

    @property
    def c2v(self) -> Channel | None:
        return self.channels.get(C2V)

    @property
    def v2c(self) -> Channel | None:
        return self.channels.get(V2C)

    def end(self, role: str, core, op: str) -> tuple:
        """(channel, side) of ``core`` in ``role`` on this pipe (checked once, then cached)."""
        e = getattr(self, f"{role}_end")
        if e is not None and core is self.core:
            return e
        ch = self.channel(role, core, op)
        e = (ch, ch.sides[core.index])
        setattr(self, f"{role}_end", e)
        return e

    def channel(self, role: str, core, op: str) -> Channel:
        ch = self._by_role.get(role)
        if ch is not None and core is self.core:
            return ch
        if self.not_a_peer is not None:
            what, fix = self.not_a_peer
            from ...errors import ConfigError
            raise ConfigError(f"{op} on {core.name}: {what}", where=str(core.where()), fix=fix)
        want = (C2V if core.kind is CoreKind.AIC else V2C) if role == "producer" else \
               (V2C if core.kind is CoreKind.AIC else C2V)
        ch = self.channels.get(want)
        if ch is None:
            have = "/".join(self.channels) or "no"
            side = "Cube" if core.kind is CoreKind.AIC else "Vector"
            other = "consumer" if role == "producer" else "producer"
            raise ProtocolError(
                f"{op} on {core.name}: a {side} core is the {role} only of a {want} ring, but this "
                f"pipe has {have} direction", where=str(core.where()),
                fix=f"on this pipe the {side} core is the {other} ({_OPS[other]}): the {role}'s {op} is "
                    f"the peer's to make, or, for data the {side} core "
                    f"{'sends' if role == 'producer' else 'receives'}, bind a {want} (or BOTH) pipe")
        if core is not self.core:
            raise ProtocolError(f"{op} on {core.name} uses a pipe bound on {self.core.name}",
                                where=str(core.where()),
                                fix="bind the pipe on each core (call the TPipe in each kernel)")
        self._by_role[role] = ch
        return ch

    def __repr__(self) -> str:
        return f"<pipe {'/'.join(self.channels)} on {self.core.name}>"
