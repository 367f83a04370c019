"""The cross-core pipes: TPipe / TMPipe, the seed-003 init API, and TPUSH / TPOP / TFREE /
TALLOC for both the tile flow and the address-based GlobalTensor flow.

One :class:`Channel` is one unidirectional ring (C2V or V2C) between the Cube core and
its Vector peers.  It owns the slots, the per-peer flags and the cursors of both sides.
Two protocol models are implemented on the same channel:

``spec`` (seed 003, the default)
    per-tag flags ``ready[tag] = FlagID + tag`` / ``free[tag] = FlagID + tag``; the
    consumer pre-signals every slot free at initialisation; TPUSH = wait free[tag] ->
    write -> set ready[tag]; TPOP = wait ready[tag] -> load (GM ring) or bind zero-copy
    (consumer-local ring) and *hold*; TFREE = set free for the oldest held slot.
``pto-isa`` (what pto-isa's C++ does)
    counter flags ready = FlagID, free = FlagID+1 (BOTH: +2 / +3 for V2C),
    ``SyncPeriod = SlotNum <= 2 ? SlotNum : SlotNum / 2``, the producer waits only when
    ``i >= SlotNum and i % SyncPeriod == 0``, the consumer notifies when
    ``(i + 1) % SyncPeriod == 0``; on A2A3 the tile TPOP frees inside TPOP and the tile
    TFREE is a no-op.

Every slot keeps a generation and a state (free / written / held) per consumer, so a
write into a slot that is still unconsumed or held, and a read of a zero-copy tile after
its TFREE, are reported instead of silently corrupting data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from operator import setitem

import numpy as np

from ..arch import MemSpace, PipeUnit
from ..arch.vocab import (C2V, DIR_BOTH, DIR_BOTH_GM, DIR_C2V, DIR_C2V_GM, DIR_V2C, DIR_V2C_CTRL,  # noqa: F401
                          DIR_V2C_GM, TILE_LEFT_RIGHT, TILE_NO_SPLIT, TILE_UP_DOWN, V2C, Direction,
                          FIFOType, Protocol, TileSplitAxis, VecCubeRatio)
from ..errors import ConfigError, ProtocolError
from ..sim import CoreKind
from ..sim.location import caller_loc
from ..sim.trace import RingArgs
from .context import current_core
from .events import Event, TSYNC, new_event
from .ops import arr
from .tensor import GlobalTensor, GMPtr
from .regions import reserve
from .tile import Tile, TileType, bind
from .checks import SlotPtr, describe_ring, holdings


def _loc(core) -> str:
    return str(core.where())


def _here(core):
    """The kernel line of the ISA call being executed (cheap: a fixed frame depth)."""
    o = core.loc_override
    return o if o is not None else caller_loc(3)


def _enter(pipe, obj, split, events, role: str, op: str):
    """The common prologue of TPUSH / TPOP / TALLOC: accept both argument orders, wait
    for the events, and find the core, the kernel line, the channel and this core's side.
    (TPUSH and TPOP, the hottest instructions, carry an inline copy.)"""
    core = current_core()
    loc = core.loc_override or caller_loc(3)         # caller_loc <- _enter <- TALLOC <- kernel
    if pipe.__class__ is not PipeHandle:
        pipe, obj = _args(pipe, obj)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = _split(split)
    ch, side = pipe.end(role, core, op)
    return core, loc, obj, split, ch, side


# ---------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TPipe:
    """``TPipe<FlagID, DirType, SlotSize, SlotNum, LocalSlotNum>`` - a pipe type.

    Call it on a core to bind that core's half: ``pipe = TPipe(0, DIR_C2V, 16384, 4)(gm_buf)``
    or ``TPipe[0, DIR_C2V, 16384, 4](gm_buf, c2v_consumer_buf, v2c_consumer_buf)``.
    ``peers`` are the Vector sub-blocks on the pipe (both by default).
    """
    flag_id: int
    direction: Direction
    slot_size: int
    slot_num: int
    local_slot_num: int = 2
    peers: tuple = (0, 1)
    sync_period: int | None = None   # None: the pto-isa rule; TMPipe sets FiFoSyncT
    fifo: FIFOType | None = None     # TMPipe's FIFO kind; None: implied by the direction

    def __class_getitem__(cls, params):
        return cls(*params) if isinstance(params, tuple) else cls(params)

    def __call__(self, gm_slot_buffer=None, c2v_consumer_buf: int = 0, v2c_consumer_buf: int = 0):
        return bind_pipe(self, gm_slot_buffer, c2v_consumer_buf, v2c_consumer_buf)


def TMPipe(flag_id: int, fifo_type: FIFOType, depth: int, sync_t: int, prod_tile: Tile,
           cons_tile: Tile, en_unit_flag: bool = False, local_depth: int = 2,
           vc_ratio: VecCubeRatio = VecCubeRatio.V2C1_VECS) -> TPipe:
    """``TMPipe<FlagID, FiFoType, FiFoDepth, FiFoSyncT, TileProd, TileCons, ...>`` as a TPipe.

    The direction follows from the tile locations (Acc->Vec: C2V, Vec->Mat: V2C) or the
    FIFO kind (CTRL_FIFO: V2C control); the slot size from the larger of the two tiles."""
    if fifo_type is FIFOType.CTRL_FIFO:
        direction = Direction.DIR_V2C_CTRL
    elif prod_tile.loc is TileType.Acc and cons_tile.loc is TileType.Vec:
        direction = Direction.DIR_C2V
    elif prod_tile.loc is TileType.Vec and cons_tile.loc is TileType.Mat:
        direction = Direction.DIR_V2C
    else:
        raise ConfigError(f"TMPipe: producer {prod_tile.loc.value} -> consumer {cons_tile.loc.value} "
                          "is not a cross-core path", fix="use Acc->Vec (C2V) or Vec->Mat (V2C)")
    slot = max(prod_tile.nbytes, cons_tile.nbytes)
    return TPipe(flag_id, direction, slot, depth, local_depth, tuple(vc_ratio.value),
                 sync_period=sync_t, fifo=fifo_type)


# ---------------------------------------------------------------------------------------
# slots and channel state
# ---------------------------------------------------------------------------------------
class Slot:
    """One ring slot as seen by one consumer peer."""
    __slots__ = ("tag", "gen", "state", "layout", "push_loc", "pop_loc")

    def __init__(self, tag: int):
        self.tag = tag
        self.gen = 0
        self.state = "free"     # free | written | held
        self.layout = None      # (dtype, rows, cols, split) of the last push
        self.push_loc = None
        self.pop_loc = None


class Side:
    """One core's cursors on one channel (the AIC, or one AIV peer)."""
    __slots__ = ("core", "role", "index", "freed", "held", "pending_alloc", "allocate",
                 "record", "wait", "free", "bound_at", "staging", "stage_slots", "links",
                 "ready_flags", "free_flags", "slots")

    def __init__(self, core, role: str, bound_at):
        self.core = core
        self.role = role                 # "producer" | "consumer"
        self.index = 0                   # tiles pushed / popped (pto-isa tileIndex)
        self.freed = 0                   # tiles freed (consumer)
        # short FIFO lists (at most SlotNum entries)
        self.held: list = []             # consumer: (tag, tile|gt, loc, read_end), oldest first
        self.pending_alloc: list = []    # producer: (tag, gt, loc) TALLOCed but not TPUSHed
        self.allocate = True             # setAllocateStatus
        self.record = True               # setRecordStatus
        self.wait = True                 # setWaitStatus
        self.free = True                 # setFreeStatus
        self.bound_at = bound_at
        self.staging = None              # base address of the local staging ring
        self.stage_slots = None          # Slots of the local staging ring (generations)
        self.links = ()                  # the AIV peers this side signals / waits on
        # per tag: the ready / free flags and the slots of every linked peer (set at binding)
        self.ready_flags: list = []
        self.free_flags: list = []
        self.slots: list = []


@dataclass
class Channel:
    """A unidirectional ring between the AIC and its AIV peers."""
    way: str                      # C2V | V2C
    cfg: TPipe
    protocol: Protocol
    slot_num: int
    slot_size: int
    sync_period: int
    ready_id: int                 # first flag id (spec: + tag)
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

    @property
    def peers(self) -> tuple:
        return self.cfg.peers

    # transaction counts, derived from the sides' cursors (TALLOCed slots are not pushed yet)
    @property
    def pushes(self) -> int:
        return sum(s.index - len(s.pending_alloc) for s in self.sides.values() if s.role == "producer")

    @property
    def pops(self) -> int:
        return sum(s.index for s in self.sides.values() if s.role == "consumer")

    @property
    def frees(self) -> int:
        return sum(s.freed for s in self.sides.values() if s.role == "consumer")

    def view(self, mem, addr: int, dtype, shape, strides=None):
        """A (cached) typed view of slot memory."""
        key = (id(mem), addr, dtype, shape, strides)
        v = self._views.get(key)
        if v is None:
            v = self._views[key] = mem.view(addr, dtype, shape, strides, what=lambda: f"{self.name} slot")
        return v

    def __post_init__(self):
        self.is_spec = self.protocol is Protocol.SPEC

    def should_wait_free(self, i: int) -> bool:
        if self.slot_num == 1:
            return i > 0
        return i >= self.slot_num and i % self.sync_period == 0

    def should_notify_free(self, i: int) -> bool:
        if self.slot_num == 1:
            return True
        return (i + 1) % self.sync_period == 0

    def describe_state(self) -> str:
        """Slots (free/full/held per consumer), cursors and flag counts, for reports."""
        return describe_ring(self)


def _channels(cluster) -> dict:
    ch = cluster.shared.get("channels")
    if ch is None:
        ch = cluster.shared["channels"] = {}
        cluster.explainers.append(_explain)
        cluster.annotators.append(holdings)      # deadlock reports: slots a core holds
    return ch


def _explain(cluster) -> str:
    chans = cluster.shared.get("channels", {})
    if not chans:
        return ""
    return "ring state:\n" + "\n".join(c.describe_state() for c in chans.values())


# ---------------------------------------------------------------------------------------
# binding (initialisation)
# ---------------------------------------------------------------------------------------
def _protocol(cluster) -> Protocol:
    return cluster.shared.get("protocol", Protocol.SPEC)


def _ways(direction: Direction) -> tuple:
    d = Direction(direction)
    if d in (Direction.DIR_C2V, Direction.DIR_C2V_GM):
        return (C2V,)
    if d in (Direction.DIR_V2C, Direction.DIR_V2C_GM, Direction.DIR_V2C_CTRL):
        return (V2C,)
    return (C2V, V2C)


def _gm_addr(buf, core, what: str) -> tuple:
    """(address, size or None) of a GM slot buffer argument."""
    if isinstance(buf, GlobalTensor):
        return buf.data().addr, buf.nbytes
    if isinstance(buf, GMPtr):
        return buf.addr, None
    if isinstance(buf, (int, np.integer)) and buf > 0:
        return int(buf), None
    raise ConfigError(f"{what}: a GM_SLOT_BUFFER is required for a ring in GM, got {buf!r}",
                      where=_loc(core),
                      fix="pass the GM slot buffer kernel argument (e.g. ptopipe.gm_buffer(nbytes))")


def bind_pipe(cfg: TPipe, gm_slot_buffer=None, c2v_consumer_buf: int = 0, v2c_consumer_buf: int = 0,
              flag_ids: dict | None = None):
    """Bind the calling core's half of pipe ``cfg``; returns a :class:`PipeHandle`."""
    core = current_core()
    cluster = core.cluster
    plat = cluster.platform
    try:
        direction = Direction(cfg.direction)
    except ValueError:
        raise ConfigError(f"invalid pipe direction {cfg.direction!r}", where=_loc(core),
                          fix="use DIR_C2V, DIR_V2C, DIR_BOTH, DIR_V2C_CTRL or a *_GM direction (A5)") from None
    gm_dir = direction in (Direction.DIR_C2V_GM, Direction.DIR_V2C_GM, Direction.DIR_BOTH_GM)
    if gm_dir and not plat.gm_directions:
        raise ConfigError(f"{direction.name} is A5-only; {plat.name} rings are always in GM",
                          where=_loc(core), fix=f"use {direction.name[:-3]} on {plat.name}")
    if cfg.slot_num < 1 or cfg.slot_size <= 0:
        raise ConfigError(f"pipe needs SlotNum >= 1 and SlotSize > 0 (got {cfg.slot_num}, {cfg.slot_size})",
                          where=_loc(core))
    if cfg.slot_size % plat.alignment:
        raise ConfigError(f"SlotSize {cfg.slot_size} is not {plat.alignment}-byte aligned", where=_loc(core),
                          fix=f"round SlotSize up to a multiple of {plat.alignment}")
    if not cfg.peers or any(p not in (0, 1) for p in cfg.peers):
        raise ConfigError(f"pipe peers must be Vector sub-blocks 0 and/or 1, got {cfg.peers}", where=_loc(core))
    if core.kind is CoreKind.AIV and core.subblock not in cfg.peers:
        raise ConfigError(f"{core.name} binds a pipe whose peers are {cfg.peers}", where=_loc(core),
                          fix="add this sub-block to peers= or do not bind the pipe on this core")
    protocol = _protocol(cluster)
    ways = _ways(direction)
    both = len(ways) == 2
    n = cfg.slot_num
    if n > plat.max_fifo_depth and protocol is Protocol.PTO_ISA:
        raise ConfigError(f"SlotNum {n} exceeds the FIFO depth limit {plat.max_fifo_depth} of {plat.name}",
                          where=_loc(core))
    fifo = cfg.fifo
    if fifo in (FIFOType.VEC_FIFO, FIFOType.MAT_FIFO):
        want = FIFOType.VEC_FIFO if _ways(direction) == (C2V,) else FIFOType.MAT_FIFO
        if plat.ring_in_gm or fifo is not want:
            raise ConfigError(
                f"{fifo.value} on a {direction.name} pipe on {plat.name}: " +
                ("rings are in GM on this platform" if plat.ring_in_gm else
                 f"a consumer-local {direction.name} ring is a {want.value}"),
                where=_loc(core), fix="use GM_FIFO" if plat.ring_in_gm else f"use {want.value} or GM_FIFO")
    in_gm = (plat.ring_in_gm or gm_dir or direction is Direction.DIR_V2C_CTRL
             or fifo in (FIFOType.GM_FIFO, FIFOType.CTRL_FIFO))
    sync = cfg.sync_period or (n if n <= 2 else n // 2)
    handle = PipeHandle(cfg, core)
    gm_addr = gm_size = None
    if in_gm:
        gm_addr, gm_size = _gm_addr(gm_slot_buffer, core, "pipe binding")
        need = n * cfg.slot_size * len(ways)
        if gm_size is not None and gm_size < need:
            raise ConfigError(f"GM_SLOT_BUFFER holds {gm_size} bytes but the ring needs {need} "
                              f"({len(ways)} x SlotNum {n} x SlotSize {cfg.slot_size})", where=_loc(core),
                              fix=f"allocate at least {need} bytes")
    for k, way in enumerate(ways):
        if flag_ids is not None:
            ready_id = free_id = flag_ids[way]
        elif protocol is Protocol.SPEC:
            ready_id = free_id = cfg.flag_id + k * n
        else:
            ready_id, free_id = cfg.flag_id + 2 * k, cfg.flag_id + 2 * k + 1
        limit = plat.flags_per_direction if protocol is Protocol.SPEC else plat.hw_flag_ids
        top = (ready_id + n) if protocol is Protocol.SPEC else max(ready_id, free_id) + 1
        if ready_id < 0 or top > limit:
            if protocol is Protocol.SPEC:
                msg = (f"{way} ring uses flags {ready_id}..{ready_id + n - 1} (FlagID {cfg.flag_id}, "
                       f"SlotNum {n}) but a peer has only {limit} flags per direction")
                fix = f"use FlagID + SlotNum <= {limit} per direction (SlotNum {plat.slot_num_bidirectional} per direction when bidirectional)"
            else:
                msg = f"{way} ring uses flag ids {ready_id}/{free_id}; the hardware has ids 0..{limit - 1}"
                fix = f"use FlagID + {3 if both else 1} < {limit}"
            raise ConfigError(msg, where=_loc(core), fix=fix)
        base = None
        if in_gm:
            base = gm_addr + k * n * cfg.slot_size
        else:
            base = c2v_consumer_buf if way == C2V else v2c_consumer_buf
        ch = _attach(core, cfg, way, protocol, n, sync, ready_id, free_id, in_gm, base,
                     c2v_consumer_buf if way == C2V else v2c_consumer_buf)
        handle.channels[way] = ch
    return handle


def _attach(core, cfg, way, protocol, n, sync, ready_id, free_id, in_gm, base, consumer_buf):
    cluster = core.cluster
    chans = _channels(cluster)
    key = (way, ready_id, cfg.peers)
    role = "producer" if (way == C2V) == (core.kind is CoreKind.AIC) else "consumer"
    ch = chans.get(key)
    if ch is None:
        ch = Channel(way, cfg, protocol, n, cfg.slot_size, sync, ready_id, free_id, in_gm,
                     gm_base=base if in_gm else None, local_base=None if in_gm else base,
                     ctrl=cfg.direction is Direction.DIR_V2C_CTRL,
                     name=f"{way} pipe FlagID {ready_id} (peers {','.join('AIV%d' % p for p in cfg.peers)})")
        _claim_flags(core, ch)
        for p in cfg.peers:
            ch.slots[p] = [Slot(t) for t in range(n)]
        chans[key] = ch
        if not in_gm:
            _reserve_rings(core, ch)
    else:
        _agree(core, ch, cfg, n, base, in_gm)
    if core.index in ch.sides:
        raise ConfigError(f"{core.name} binds {ch.name} twice: two pipes on this core share FlagID {ready_id}",
                          where=_loc(core), details=f"first bound at {ch.sides[core.index].bound_at}",
                          fix="give every pipe its own FlagID range (flags may not be shared between pipes)")
    side = Side(core, role, core.where())
    side.links = links = _links(ch, core)
    k = (lambda t: t) if ch.is_spec else (lambda t: 0)   # pto-isa: one counter flag per way
    side.ready_flags = [tuple(ch.ready_flags[p][k(t)] for p in links) for t in range(ch.slot_num)]
    side.free_flags = [tuple(ch.free_flags[p][k(t)] for p in links) for t in range(ch.slot_num)]
    side.slots = [tuple(ch.slots[p][t] for p in links) for t in range(ch.slot_num)]
    if role == "consumer" and consumer_buf is not None and in_gm:
        side.staging = consumer_buf
    ch.sides[core.index] = side
    if role == "consumer" and protocol is Protocol.SPEC:
        # seed 003: the consumer pre-signals every slot free before its main loop
        for p in side.links:
            for f in ch.free_flags[p]:
                cluster.set_flag(core, f, core.clock)
    return ch


def _links(ch: Channel, core) -> tuple:
    return ch.peers if core.kind is CoreKind.AIC else (core.subblock,)


def _claim_flags(core, ch: Channel) -> None:
    cluster = core.cluster
    aic = cluster.aic
    for p in ch.peers:
        aiv = cluster.aiv(p)
        prod, cons = (aic, aiv) if ch.way == C2V else (aiv, aic)
        if ch.is_spec:
            ready = [cluster.flag(prod, cons, ch.ready_id + t) for t in range(ch.slot_num)]
            free = [cluster.flag(cons, prod, ch.free_id + t) for t in range(ch.slot_num)]
        else:
            ready = [cluster.flag(prod, cons, ch.ready_id)]
            free = [cluster.flag(cons, prod, ch.free_id)]
        for f in ready + free:
            if f.owner is not None and f.owner is not ch:
                raise ConfigError(
                    f"{ch.name} and {f.owner.name} share {f.name}",
                    where=_loc(core),
                    fix="two pipes on the same peer may not share a flag: give them disjoint FlagID ranges "
                        "(spec: FlagID..FlagID+SlotNum-1; pto-isa: FlagID, FlagID+1)")
            f.owner = ch
        for f in ready:
            f.signal = "ready"      # a wait on it is a "waiting for data" stall
        for f in free:
            f.signal = "free"
        ch.ready_flags[p] = ready
        ch.free_flags[p] = free


def _agree(core, ch: Channel, cfg: TPipe, n: int, base, in_gm: bool) -> None:
    other = next(iter(ch.sides.values()), None)
    where = f"other side bound by {other.core.name} at {other.bound_at}" if other else None
    if cfg.slot_size != ch.slot_size or n != ch.slot_num:
        raise ConfigError(f"{ch.name}: {core.name} binds SlotSize {cfg.slot_size} x SlotNum {n} but the "
                          f"other side has {ch.slot_size} x {ch.slot_num}", where=_loc(core), details=where,
                          fix="producer and consumer must declare the same TPipe configuration")
    if in_gm and base != ch.gm_base:
        raise ConfigError(f"{ch.name}: {core.name} places the ring at GM {base:#x} but the other side "
                          f"uses {ch.gm_base:#x}", where=_loc(core), details=where,
                          fix="pass the same GM_SLOT_BUFFER to both kernels")
    if not in_gm and base != ch.local_base:
        raise ConfigError(f"{ch.name}: {core.name} places the ring at {base:#x} but the other side "
                          f"uses {ch.local_base:#x}", where=_loc(core), details=where,
                          fix="the producer must use the consumer's buffer base (pl.import_peer_buffer)")


def _consumers(ch: Channel, cluster) -> list:
    return [cluster.aic] if ch.way == V2C else [cluster.aiv(p) for p in ch.peers]


def _reserve_rings(core, ch: Channel) -> None:
    cluster = core.cluster
    space = MemSpace.UB if ch.way == C2V else MemSpace.L1
    size = ch.slot_num * ch.slot_size
    for c in _consumers(ch, cluster):
        cap = cluster.platform.mem_size(space)
        if ch.local_base < 0 or ch.local_base + size > cap:
            raise ConfigError(
                f"{ch.name} ring [{ch.local_base:#x}, {ch.local_base + size:#x}) (SlotNum {ch.slot_num} x "
                f"SlotSize {ch.slot_size}) does not fit {c.name}'s {space.value} of {cap:#x} bytes",
                where=_loc(core),
                fix=(f"use a consumer buffer base <= {cap - size:#x}" if size <= cap else
                     f"the ring alone needs {size} bytes: use fewer or smaller slots"))
        reserve(c, space, ch.local_base, size, f"{ch.name} ring")


# ---------------------------------------------------------------------------------------
# handles
# ---------------------------------------------------------------------------------------
class _SideCtl:
    """``pipe.prod`` / ``pipe.cons``: the status switches of pto-isa's Producer/Consumer."""

    def __init__(self, handle: "PipeHandle", role: str):
        self._h = handle
        self._role = role

    def _sides(self):
        core = self._h.core
        return [ch.sides[core.index] for ch in self._h.channels.values()
                if ch.sides[core.index].role == self._role]

    def setAllocateStatus(self, on: bool) -> None:
        for s in self._sides():
            s.allocate = bool(on)

    def setRecordStatus(self, on: bool) -> None:
        for s in self._sides():
            s.record = bool(on)

    def setWaitStatus(self, on: bool) -> None:
        for s in self._sides():
            s.wait = bool(on)

    def setFreeStatus(self, on: bool) -> None:
        for s in self._sides():
            s.free = bool(on)

    def getAllocateStatus(self) -> bool:
        return all(s.allocate for s in self._sides())

    def isRecord(self) -> bool:
        return all(s.record for s in self._sides())

    def getTileId(self) -> int:
        s = self._sides()
        return s[0].index if s else 0


class PipeHandle:
    """One core's view of a pipe (one or two channels).  Pass it to TPUSH/TPOP/TFREE."""

    def __init__(self, cfg: TPipe, core):
        self.cfg = cfg
        self.core = core
        self.channels: dict = {}
        self._by_role: dict = {}
        # (channel, this core's side) per role, once checked by end(); TPUSH / TPOP / TFREE
        # read them inline
        self.producer_end = self.consumer_end = None
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
        want = (C2V if core.kind is CoreKind.AIC else V2C) if role == "producer" else \
               (V2C if core.kind is CoreKind.AIC else C2V)
        ch = self.channels.get(want)
        if ch is None:
            have = "/".join(self.channels) or "no"
            side = "Cube" if core.kind is CoreKind.AIC else "Vector"
            raise ProtocolError(
                f"{op} on {core.name}: a {side} core is the {role} only of a {want} ring, but this "
                f"pipe has {have} direction", where=_loc(core),
                fix=f"{'TPUSH' if role == 'producer' else 'TPOP'} from the {side} core needs a "
                    f"{want} (or BOTH) pipe")
        if core is not self.core:
            raise ProtocolError(f"{op} on {core.name} uses a pipe bound on {self.core.name}",
                                where=_loc(core), fix="bind the pipe on each core (call the TPipe in each kernel)")
        self._by_role[role] = ch
        return ch

    def __repr__(self) -> str:
        return f"<pipe {'/'.join(self.channels)} on {self.core.name}>"




def _dir_mask(mask) -> Direction:
    try:
        d = Direction(mask)
    except ValueError:
        d = None
    if d not in (Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH):
        raise ConfigError(f"invalid DIR_MASK {mask!r}", where=_loc(current_core()),
                          fix="use DIR_C2V, DIR_V2C or DIR_C2V | DIR_V2C")
    return d


def _initialize(dir_mask, slot_size, gm_slot_buffer, c2v_consumer_buf, v2c_consumer_buf, peers, want):
    core = current_core()
    if core.kind is not want:
        name = "aic_initialize_pipe" if want is CoreKind.AIC else "aiv_initialize_pipe"
        raise ConfigError(f"{name} called on {core.name}", where=_loc(core),
                          fix="call aic_initialize_pipe on the Cube core and aiv_initialize_pipe on Vector cores")
    d = _dir_mask(dir_mask)
    plat = core.cluster.platform
    both = d is Direction.DIR_BOTH
    n = plat.slot_num_for(both)
    if _protocol(core.cluster) is Protocol.SPEC:
        ids = {C2V: 0, V2C: n if both else 0}
    else:
        ids = {C2V: 0, V2C: 2 if both else 0}
    cfg = TPipe(0, d, int(slot_size), n, peers=tuple(peers))
    h = bind_pipe(cfg, gm_slot_buffer if plat.ring_in_gm else None, c2v_consumer_buf,
                  v2c_consumer_buf, flag_ids=ids) if plat.ring_in_gm else \
        bind_pipe(cfg, None, c2v_consumer_buf, v2c_consumer_buf, flag_ids=ids)
    return h


def aic_initialize_pipe(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER=None, C2V_CONSUMER_BUF: int = 0,
                        V2C_CONSUMER_BUF: int = 0, peers=(0, 1)) -> PipeHandle:
    """Seed 003: bind the Cube core's rings; SLOT_NUM = 8 one way, 4 per direction both ways.

    As V2C consumer it pre-signals every slot free.  A2A3 rings live in GM_SLOT_BUFFER
    (C2V ring first, then V2C); A5 rings in the consumer's UB (C2V) / L1 (V2C)."""
    return _initialize(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER, C2V_CONSUMER_BUF, V2C_CONSUMER_BUF,
                       peers, CoreKind.AIC)


def aiv_initialize_pipe(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER=None, C2V_CONSUMER_BUF: int = 0,
                        V2C_CONSUMER_BUF: int = 0, peers=(0, 1)) -> PipeHandle:
    """Seed 003: bind a Vector core's rings; as C2V consumer it pre-signals every slot free."""
    return _initialize(DIR_MASK, SLOT_SIZE, GM_SLOT_BUFFER, C2V_CONSUMER_BUF, V2C_CONSUMER_BUF,
                       peers, CoreKind.AIV)


# ---------------------------------------------------------------------------------------
# slot geometry
# ---------------------------------------------------------------------------------------
def _full_shape(split, rows: int, cols: int) -> tuple:
    if split == TileSplitAxis.TILE_UP_DOWN:
        return rows * 2, cols
    if split == TileSplitAxis.TILE_LEFT_RIGHT:
        return rows, cols * 2
    return rows, cols


def _part_offset(split, sub: int, rows: int, cols: int, item: int) -> int:
    if split == TileSplitAxis.TILE_UP_DOWN:
        return sub * rows * cols * item
    if split == TileSplitAxis.TILE_LEFT_RIGHT:
        return sub * cols * item
    return 0


def _part_of(arr: np.ndarray, split, sub: int) -> np.ndarray:
    r, c = arr.shape
    if split == TileSplitAxis.TILE_UP_DOWN:
        return arr[sub * (r // 2):(sub + 1) * (r // 2)]
    if split == TileSplitAxis.TILE_LEFT_RIGHT:
        return arr[:, sub * (c // 2):(sub + 1) * (c // 2)]
    return arr


def _split(split) -> TileSplitAxis:
    if split.__class__ is TileSplitAxis:
        return split
    try:
        return TileSplitAxis(split)
    except ValueError:
        raise ProtocolError(f"invalid TileSplitAxis {split!r}",
                            fix="use TILE_NO_SPLIT, TILE_UP_DOWN or TILE_LEFT_RIGHT") from None


# ---------------------------------------------------------------------------------------
# the instructions
# ---------------------------------------------------------------------------------------
def _args(a, b):
    """Accept ``(pipe, x)`` and ``(x, pipe)`` argument orders, as the seeds use both."""
    if isinstance(a, PipeHandle):
        return a, b
    if isinstance(b, PipeHandle):
        return b, a
    raise ProtocolError(f"expected a pipe (from TPipe(...)(...) or *_initialize_pipe), got "
                        f"{type(a).__name__} and {type(b).__name__}", where=_loc(current_core()))


def _wait(core, ch: Channel, flag, op: str, signal: str, tag: int, index: int) -> int:
    """WAIT for a ready/free flag of ``ch``; the description is built only if it blocks
    (callers WAIT directly when ``flag.count`` shows it will not)."""

    def what() -> str:
        other = flag.sender.name
        if ch.is_spec:
            return f"{op} (wait {signal}[{tag}] from {other})"
        return f"{op} (wait {signal} from {other}, {'push' if signal == 'free' else 'pop'} #{index})"
    return core.wait_flag(flag, what, {"channel": ch, "signal": signal, "tag": tag})


def _producer_wait(core, ch: Channel, side: Side, op: str) -> int:
    """Wait until the slot for push ``side.index`` is free; returns its tag."""
    i = side.index
    tag = i % ch.slot_num
    if side.allocate and (ch.is_spec or ch.should_wait_free(i)):
        for f in side.free_flags[tag]:
            if f.count:
                core.wait_flag(f, None)
            else:
                _wait(core, ch, f, op, "free", tag, i)
    return tag


def _producer_record(core, side: Side, tag: int, at: int) -> None:
    if side.record:
        set_flag = core.cluster.set_flag
        for f in side.ready_flags[tag]:
            set_flag(core, f, at)


def _mark_written(core, ch: Channel, side: Side, tag: int, layout, op: str, loc) -> None:
    """A producer wrote slot ``tag``: it must not be unconsumed or held by a consumer (each
    consumer's copy of the slot for C2V; the producing AIV's part for V2C)."""
    slots = side.slots[tag]
    for s in slots:
        if s.state != "free":
            raise _overwrite(core, ch, s, op, loc)
    for s in slots:
        s.state = "written"
        s.layout = layout
        s.push_loc = loc


def _overwrite(core, ch: Channel, s: Slot, op: str, loc) -> ProtocolError:
    if ch.way == C2V:
        who = next(core.cluster.aiv(p).name for p in ch.peers if ch.slots[p][s.tag] is s)
    else:
        who = "AIC"
    how = ("still holds it (popped" + (f" at {s.pop_loc}" if s.pop_loc else "") + ", not yet freed)"
           if s.state == "held" else
           "has not popped the previous tile yet" + (f" (pushed at {s.push_loc})" if s.push_loc else ""))
    return ProtocolError(
        f"{op} overwrites slot {s.tag} of {ch.name} while {who} {how}",
        where=str(loc or core.where()),
        details=f"push #{ch.sides[core.index].index}, protocol {ch.protocol.value}, "
                f"SlotNum {ch.slot_num}, SyncPeriod {ch.sync_period}",
        fix=("pto-isa's sparse free notifications need SlotNum % SyncPeriod == 0 "
             "(SlotNum <= 3 or even); use an even SlotNum" if not ch.is_spec else
             "do not skip the free-slot wait (setAllocateStatus) while slots are in use"))


def _check_layout(core, ch: Channel, slot: Slot, dtype, rows: int, cols: int, split, op: str) -> None:
    lay = slot.layout
    if lay is None:
        return
    pdtype, prow, pcol, psplit = lay
    if ch.way == C2V:
        ok = pdtype == dtype and _full_shape(split, rows, cols) == (prow, pcol)
        # A GM slot holds the whole tile, so the producer's split only matters for local rings
        if ok and not ch.in_gm and psplit != split:
            ok = False
    else:
        ok = pdtype == dtype and _full_shape(psplit, prow, pcol) == (rows, cols)
    if not ok:
        cons = f"{rows}x{cols} {np.dtype(dtype).name} ({TileSplitAxis(split).name})"
        prod = f"{prow}x{pcol} {pdtype.name} ({TileSplitAxis(psplit).name})"
        raise ProtocolError(
            f"{op} on {core.name}: the consumer tile {cons} does not match the pushed tile {prod} "
            f"of slot {slot.tag}", where=_loc(core),
            details=f"pushed at {slot.push_loc}" if slot.push_loc else None,
            fix="producer and consumer must agree on dtype, shape and split mode "
                "(UP_DOWN halves rows, LEFT_RIGHT halves columns)")


class _PushPlan:
    """What a TPUSH of one tile geometry does, worked out (and checked) once per channel."""
    __slots__ = ("dsts", "unit", "cost", "layout")

    def __init__(self, dsts, unit, cost, layout):
        self.dsts, self.unit, self.cost, self.layout = dsts, unit, cost, layout


def _push_plan(core, ch: Channel, tile: Tile, split) -> _PushPlan:
    shape = (tile.valid_rows, tile.valid_cols)
    want = TileType.Acc if ch.way == C2V else TileType.Vec
    if tile.loc is not want:
        raise ProtocolError(f"TPUSH on {ch.way}: the producer tile must be {want.value}, got {tile.describe()}",
                            where=_loc(core),
                            fix="TMATMUL into an Acc tile" if want is TileType.Acc else "push a Vec tile")
    item = tile.dtype.itemsize
    rows, cols = shape
    nbytes = rows * cols * item
    full = _full_shape(split, rows, cols) if ch.way == V2C else (rows, cols)
    if full[0] * full[1] * item > ch.slot_size:
        raise ProtocolError(
            f"TPUSH of {tile.describe()} ({nbytes} bytes"
            + (f", {full[0]}x{full[1]} slot layout" if full != (rows, cols) else "")
            + f") does not fit SlotSize {ch.slot_size} of {ch.name}",
            where=_loc(core), fix="push smaller tiles or declare a larger SlotSize")
    cluster = core.cluster
    dsts = []
    for tag in range(ch.slot_num):
        if ch.way == C2V and ch.in_gm:
            dsts.append(((ch.view(cluster.gm, ch.gm_base + tag * ch.slot_size, tile.dtype, shape), None),))
        elif ch.way == C2V:
            per_peer = []
            for p in ch.peers:
                pshape = _part_shape(split, rows, cols)
                ub = cluster.aiv(p).memory(MemSpace.UB)
                per_peer.append((ch.view(ub, ch.local_base + tag * ch.slot_size, tile.dtype, pshape), p))
            dsts.append(tuple(per_peer))
        else:
            mem = cluster.gm if ch.in_gm else cluster.aic.memory(MemSpace.L1)
            off = _part_offset(split, core.subblock, rows, cols, item)
            base = (ch.gm_base if ch.in_gm else ch.local_base) + tag * ch.slot_size + off
            dsts.append(((ch.view(mem, base, tile.dtype, shape, (full[1], 1)), None),))
    if ch.way == C2V:
        unit, dst_space = PipeUnit.FIX, ("GM" if ch.in_gm else "UB")
    else:
        unit, dst_space = PipeUnit.MTE3, ("GM" if ch.in_gm else "L1")
    return _PushPlan(dsts, unit, core.costs.move(tile.sname, dst_space, nbytes),
                     (tile.dtype, rows, cols, split))


def _part_shape(split, rows: int, cols: int) -> tuple:
    if split == TileSplitAxis.TILE_UP_DOWN:
        return rows // 2, cols
    if split == TileSplitAxis.TILE_LEFT_RIGHT:
        return rows, cols // 2
    return rows, cols


def _plan(core, ch: Channel, tile: Tile, split, make):
    """The checked push/pop plan of ``tile`` on ``ch``: made once per tile geometry, then
    cached on the tile as ``(ch, split, core, plan)`` (TPUSH/TPOP check that cache inline)."""
    key = (core.index, tile.loc, tile.dtype, tile.rows, tile.cols, tile.valid_rows, tile.valid_cols,
           int(split), ch.way)
    plan = ch.plans.get(key)
    if plan is None:
        plan = ch.plans[key] = make(core, ch, tile, split)
    tile._plan = (ch, split, core, plan)
    return plan


def TPUSH(pipe, tile, split=TileSplitAxis.TILE_NO_SPLIT, *events) -> Event:
    """Producer: wait for a free slot, write ``tile`` into it, signal ready, advance.

    With a GlobalTensor instead of a tile (address flow), commit the oldest TALLOCed slot."""
    # _enter(), inline: this prologue is a good part of the cost of the hottest instructions
    core = current_core()
    loc = core.loc_override or caller_loc(2)          # caller_loc <- TPUSH <- kernel
    if pipe.__class__ is not PipeHandle:
        pipe, tile = _args(pipe, tile)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = _split(split)
    e = pipe.producer_end
    ch, side = e if e is not None and core is pipe.core else pipe.end("producer", core, "TPUSH")
    if tile.__class__ is not Tile or ch.ctrl:
        if isinstance(tile, GlobalTensor):
            return _push_commit(core, ch, side)
        if ch.ctrl:
            return _push_ctrl(core, ch, side, tile)
        raise ProtocolError(f"TPUSH expects a Tile or GlobalTensor, got {type(tile).__name__}", where=_loc(core))
    src = tile._valid if tile.core is core and tile.binding is None else arr(tile, core, "TPUSH tile")
    c = tile._plan
    plan = c[3] if c is not None and c[0] is ch and c[1] is split and c[2] is core else \
        _plan(core, ch, tile, split, _push_plan)
    tag = _producer_wait(core, ch, side, "TPUSH")
    for dst, peer in plan.dsts[tag]:
        core.pending.append((setitem, dst, Ellipsis, src if peer is None else _part_of(src, split, peer)))
    _mark_written(core, ch, side, tag, plan.layout, "TPUSH", loc)
    chk = core.cluster.checker
    if chk is not None:
        chk.ring_access(core, ch, tag, True, "TPUSH", loc, *src.shape, tile.dtype.itemsize, split)
    end = core.issue_r(plan.unit, plan.cost, tile, "TPUSH",
                        RingArgs(ch.name, tag, src.shape) if core.trace is not None else None)
    side.index += 1
    _producer_record(core, side, tag, end)
    return new_event(("TPUSH", core, end))


def _push_ctrl(core, ch: Channel, side: Side, tile) -> Event:
    core.cluster.sync()                                # a value read from memory by Python
    val = int(np.asarray(arr(tile, core, "TPUSH control tile")).flat[0]) if isinstance(tile, Tile) else int(tile)
    tag = _producer_wait(core, ch, side, "TPUSH")
    core.cluster.gm.view(ch.gm_base + tag * ch.slot_size, np.uint32, (1,))[0] = val & 0xFFFFFFFF
    _mark_written(core, ch, side, tag, (np.dtype(np.uint32), 1, 1, TileSplitAxis.TILE_NO_SPLIT), "TPUSH",
                  core.where())
    _, end = core.issue(PipeUnit.S, 1, (), (), "TPUSH",
                        RingArgs(ch.name, tag, None, "ctrl") if core.trace is not None else None)
    side.index += 1
    _producer_record(core, side, tag, end)
    return new_event(("TPUSH", core, end))


def _push_commit(core, ch: Channel, side: Side) -> Event:
    if not side.pending_alloc:
        raise ProtocolError(f"TPUSH(GlobalTensor) on {ch.name} without a preceding TALLOC", where=_loc(core),
                            fix="address flow: TALLOC -> TSTORE... -> TPUSH")
    tag, _gt, _loc0 = side.pending_alloc.pop(0)
    _mark_written(core, ch, side, tag, None, "TPUSH", core.where())
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TPUSH",
                        RingArgs(ch.name, tag, None, "commit") if core.trace is not None else None)
    # the data were written by TSTOREs: signal after they complete
    t = max(end, max(core.pipe_free[PipeUnit.FIX], core.pipe_free[PipeUnit.MTE3]))
    _producer_record(core, side, tag, t)
    return new_event(("TPUSH", core, t))


def TALLOC(pipe, gm_tensor: GlobalTensor, split=TileSplitAxis.TILE_NO_SPLIT, *events) -> Event:
    """Address flow, producer: wait for a free slot and assign its GM address to ``gm_tensor``."""
    core, _loc0, gm_tensor, split, ch, side = _enter(pipe, gm_tensor, split, events, "producer", "TALLOC")
    if not ch.in_gm:
        raise ProtocolError(f"TALLOC on {ch.name}: the address flow needs a ring in GM",
                            where=_loc(core), fix="on A5 use a *_GM direction (e.g. DIR_C2V_GM)")
    if not isinstance(gm_tensor, GlobalTensor):
        raise ProtocolError(f"TALLOC expects a GlobalTensor, got {type(gm_tensor).__name__}", where=_loc(core))
    if gm_tensor.nbytes > ch.slot_size:
        raise ProtocolError(f"TALLOC of {gm_tensor.describe()} ({gm_tensor.nbytes} bytes) does not fit "
                            f"SlotSize {ch.slot_size}", where=_loc(core))
    tag = _producer_wait(core, ch, side, "TALLOC")
    off = 0
    if ch.way == V2C:
        off = _part_offset(split, core.subblock, gm_tensor.shape[3], gm_tensor.shape[4], gm_tensor.dtype.itemsize)
    gm_tensor.assign(GMPtr(ch.gm_base + tag * ch.slot_size + off, gm_tensor.dtype))
    side.pending_alloc.append((tag, gm_tensor, core.where()))
    side.index += 1
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TALLOC",
                        RingArgs(ch.name, tag) if core.trace is not None else None)
    return new_event(("TALLOC", core, end))


class _PopPlan:
    """What a TPOP of one tile geometry does, worked out (and checked) once per channel."""
    __slots__ = ("srcs", "cost", "ok_layout")

    def __init__(self, srcs, cost):
        self.srcs, self.cost, self.ok_layout = srcs, cost, None


def _pop_plan(core, ch: Channel, tile: Tile, split) -> _PopPlan:
    want = TileType.Vec if ch.way == C2V else TileType.Mat
    if tile.loc is not want:
        raise ProtocolError(f"TPOP on {ch.way}: the consumer tile must be {want.value}, got {tile.describe()}",
                            where=_loc(core))
    rows, cols, item = tile.rows, tile.cols, tile.dtype.itemsize
    if not ch.in_gm:
        if rows * cols * item > ch.slot_size:
            raise ProtocolError(f"TPOP of {tile.describe()} does not fit SlotSize {ch.slot_size} of {ch.name}",
                                where=_loc(core), fix="pop tiles of the pushed shape")
        return _PopPlan(None, core.costs.flag_op)
    gm = core.cluster.gm
    srcs = []
    for tag in range(ch.slot_num):
        if ch.way == C2V:
            full = _full_shape(split, rows, cols)
            off = _part_offset(split, core.subblock, rows, cols, item)
            v = ch.view(gm, ch.gm_base + tag * ch.slot_size + off, tile.dtype, (rows, cols), (full[1], 1))
        else:
            v = ch.view(gm, ch.gm_base + tag * ch.slot_size, tile.dtype, (rows, cols))
        srcs.append(v[:tile.valid_rows, :tile.valid_cols])
    return _PopPlan(srcs, core.costs.move("GM", tile.sname, rows * cols * item))


def TPOP(pipe, tile=None, split=TileSplitAxis.TILE_NO_SPLIT, *events):
    """Consumer: wait for data, load (GM ring) or bind zero-copy (local ring) and hold the slot.

    With a GlobalTensor (address flow) assign the slot address to it instead.  On a
    DIR_V2C_CTRL pipe, returns the control value."""
    core = current_core()                              # _enter(), inline (see TPUSH)
    loc = core.loc_override or caller_loc(2)
    if pipe.__class__ is not PipeHandle:
        pipe, tile = _args(pipe, tile)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = _split(split)
    e = pipe.consumer_end
    ch, side = e if e is not None and core is pipe.core else pipe.end("consumer", core, "TPOP")
    i = side.index
    tag = i % ch.slot_num
    if side.wait:
        for f in side.ready_flags[tag]:
            if f.count:
                core.wait_flag(f, None)
            else:
                _wait(core, ch, f, "TPOP", "ready", tag, i)
    if ch.is_spec and len(side.held) >= ch.slot_num:
        # checked after the wait: holding every slot, the WAIT above deadlocks first (and the
        # deadlock report names the TPOPs lacking a TFREE); here the producer skipped a wait
        first = side.held[0]
        raise ProtocolError(
            f"TPOP on {core.name} would hold more than SlotNum={ch.slot_num} slots of {ch.name}",
            where=_loc(core), details=f"oldest held slot {first[0]} popped at {first[2]}",
            fix="call TFREE after you finish with each popped tile")
    if tile.__class__ is not Tile or ch.ctrl:
        if ch.ctrl:
            return _pop_ctrl(core, ch, side, tag)
        if isinstance(tile, GlobalTensor):
            return _pop_address(core, ch, side, tag, tile, split, loc)
        raise ProtocolError(f"TPOP expects a Tile or GlobalTensor, got {type(tile).__name__}", where=_loc(core))
    c = tile._plan
    plan = c[3] if c is not None and c[0] is ch and c[1] is split and c[2] is core else \
        _plan(core, ch, tile, split, _pop_plan)
    slots = side.slots[tag]
    ok = plan.ok_layout
    for s in slots:
        lay = s.layout
        if lay is not ok and lay is not None and lay != ok:
            _check_layout(core, ch, s, tile.dtype, tile.rows, tile.cols, split, "TPOP")
            plan.ok_layout = lay
    if plan.srcs is not None:                      # GM ring: load into the tile
        if tile.addr is None or not ch.is_spec:
            _bind_staging(core, ch, side, tile, i)
        elif tile.core is not core:
            arr(tile, core)
        core.pending.append((setitem, tile._valid, Ellipsis, plan.srcs[tag]))
        chk = core.cluster.checker
        if chk is not None:
            chk.ring_access(core, ch, tag, False, "TPOP", loc, tile.rows, tile.cols, tile.dtype.itemsize, split)
        end = core.issue_w(PipeUnit.MTE2, plan.cost, tile, "TPOP",
                            RingArgs(ch.name, tag, tile.shape) if core.trace is not None else None)
        read_end = end
    else:                                          # consumer-local ring: zero-copy binding
        bind(tile, core, ch.local_base + tag * ch.slot_size)
        slot = slots[0]
        tile.binding = (slot, slot.gen)
        end = core.issue_w(PipeUnit.S, plan.cost, tile, "TPOP",
                            RingArgs(ch.name, tag, tile.shape) if core.trace is not None else None)
        read_end = None
    for s in slots:                                # hold the slot
        s.state = "held"
        s.pop_loc = loc
    side.index = i + 1
    if ch.is_spec or not ch.in_gm:
        side.held.append((tag, tile, loc, read_end))
    else:
        _release(core, ch, side, tag, read_end, tile)     # pto-isa A2A3: TPOP frees inside
    return new_event(("TPOP", core, end))


def _bind_staging(core, ch: Channel, side: Side, tile: Tile, i: int) -> None:
    """Assign the popped tile to the consumer's local staging ring (pto-isa LocalSlotNum)."""
    n = ch.cfg.local_slot_num
    stage = side.stage_slots
    if stage is None:
        stage = side.stage_slots = [Slot(k) for k in range(n)]
        reserve(core, tile.space, side.staging or 0, n * tile.nbytes, f"{ch.name} local staging")
    bind(tile, core, (side.staging or 0) + (i % n) * tile.nbytes)
    s = stage[i % n]
    s.gen += 1
    tile.binding = (s, s.gen)


def _pop_address(core, ch: Channel, side: Side, tag: int, gt: GlobalTensor, split, loc) -> Event:
    if not ch.in_gm:
        raise ProtocolError(f"TPOP(GlobalTensor) on {ch.name}: the address flow needs a ring in GM",
                            where=_loc(core), fix="on A5 use a *_GM direction (e.g. DIR_C2V_GM)")
    off = 0
    if ch.way == C2V:
        off = _part_offset(split, core.subblock, gt.shape[3], gt.shape[4], gt.dtype.itemsize)
    slots = side.slots[tag]
    slot = slots[0]
    gt.assign(SlotPtr(ch.gm_base + tag * ch.slot_size + off, gt.dtype, slot, slot.gen, ch.name))
    for s in slots:
        s.state = "held"
        s.pop_loc = loc
    side.index += 1
    side.held.append((tag, gt, loc, None))
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TPOP",
                        RingArgs(ch.name, tag, None, "addr") if core.trace is not None else None)
    return new_event(("TPOP", core, end))


def _pop_ctrl(core, ch: Channel, side: Side, tag: int) -> int:
    core.cluster.sync()
    val = int(core.cluster.gm.view(ch.gm_base + tag * ch.slot_size, np.uint32, (1,))[0])
    side.index += 1
    core.issue(PipeUnit.S, 1, (), (), "TPOP",
               RingArgs(ch.name, tag, None, "ctrl") if core.trace is not None else None)
    for s in side.slots[tag]:
        s.state = "held"
    _release(core, ch, side, tag, None, None)
    return val


def _release(core, ch: Channel, side: Side, tag: int, read_end, obj) -> None:
    """Mark slot ``tag`` free for this consumer and signal the producer per the protocol."""
    for s in side.slots[tag]:
        s.state = "free"
        s.gen += 1
    at = core.clock
    if obj.__class__ is Tile and obj.read_end > at:
        at = obj.read_end
    if read_end is not None and read_end > at:
        at = read_end
    k = side.freed
    side.freed = k + 1
    if side.free and (ch.is_spec or ch.should_notify_free(k)):
        set_flag = core.cluster.set_flag
        for f in side.free_flags[tag]:
            set_flag(core, f, at)


def TFREE(pipe, obj=None, split=TileSplitAxis.TILE_NO_SPLIT, *events) -> Event:
    """Consumer: release the oldest held slot (signal free, advance).

    Under ``protocol="pto-isa"`` on an A2A3 GM ring the tile-flow TFREE is a no-op: the
    tile TPOP already released the slot."""
    core = current_core()
    if obj is not None or pipe.__class__ is not PipeHandle:
        if obj is None:
            raise ProtocolError(f"TFREE expects a pipe, got {type(pipe).__name__}", where=_loc(core))
        pipe, obj = _args(pipe, obj)
    if events:
        TSYNC(*events)
    e = pipe.consumer_end
    ch, side = e if e is not None and core is pipe.core else pipe.end("consumer", core, "TFREE")
    if not ch.is_spec and ch.in_gm and not isinstance(obj, GlobalTensor) and not side.held:
        _, end = core.issue(PipeUnit.S, 0, (), (), "TFREE",
                            RingArgs(ch.name, None, None, "no-op") if core.trace is not None else None)
        return new_event(("TFREE", core, end))
    if not side.held:
        raise ProtocolError(f"TFREE on {core.name} with no held slot of {ch.name}",
                            where=_loc(core),
                            details=f"{side.index} popped, {side.freed} freed",
                            fix="call TFREE exactly once after each TPOP")
    tag, held_obj, _loc0, read_end = side.held.pop(0)
    chk = core.cluster.checker
    if chk is not None and not ch.in_gm and held_obj.__class__ is Tile:
        chk.ring_access(core, ch, tag, False, "TFREE", _here(core), held_obj.rows, held_obj.cols,
                        held_obj.dtype.itemsize, 0)
    # _release bumps the slot generation: a zero-copy tile bound to it is now stale
    end = core.issue_s(PipeUnit.MTE2 if ch.in_gm else PipeUnit.S, core.costs.flag_op, "TFREE",
                       RingArgs(ch.name, tag) if core.trace is not None else None)
    _release(core, ch, side, tag, read_end, held_obj)
    return new_event(("TFREE", core, end))


TPOPDONE = TFREE


def slot_use_after_free(tile: Tile, core) -> ProtocolError:
    slot, gen = tile.binding
    return ProtocolError(
        f"use after free: {tile.describe()} is bound zero-copy to slot {slot.tag}, which was released "
        f"(TFREE) or reused since it was popped", where=_loc(core),
        details=f"popped at {slot.pop_loc}" if slot.pop_loc else None,
        fix="finish reading the popped tile before TFREE, or copy it (TMOV) to a tile of your own")


# ---------------------------------------------------------------------------------------
# end-of-kernel leaks
# ---------------------------------------------------------------------------------------
def leaks(cluster) -> list:
    """Held slots, uncommitted TALLOCs and pushed-but-never-popped data at kernel end."""
    out = []
    for ch in cluster.shared.get("channels", {}).values():
        for side in ch.sides.values():
            for tag, _obj, loc, _ in side.held:
                out.append((f"{side.core.name} ends holding slot {tag} of {ch.name} (TPOP without TFREE)", loc))
            for tag, _gt, loc in side.pending_alloc:
                out.append((f"{side.core.name} ends with slot {tag} of {ch.name} TALLOCed but never TPUSHed", loc))
        for p in ch.peers:
            for s in ch.slots[p]:
                if s.state == "written":
                    who = cluster.aiv(p).name if ch.way == C2V else "AIC"
                    out.append((f"slot {s.tag} of {ch.name} was pushed but {who} never popped it", s.push_loc))
    return out
