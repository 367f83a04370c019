"""Binding (initialisation): one core binds its half of a pipe.

Validates the configuration against the platform, finds or creates the :class:`Channel`
of each way (the first core to bind creates it, claims its flags and reserves a
consumer-local ring; the second must agree), attaches the core's :class:`Side` with its
per-tag flags and slots, and posts the consumer's start-up credits (the protocol model
says how many).
"""
from __future__ import annotations

import numbers

import numpy as np

from ...arch import MemSpace, PipeUnit
from ...arch.vocab import C2V, LOCAL_SLOT_NUM, V2C, Direction, FIFOType, PlatformID, Protocol
from ...errors import ConfigError, MemoryConflictError, ProtocolError
from ...sim import CoreKind
from ..context import current_core
from ..regions import reserve
from ..tensor import GlobalTensor, GMPtr
from .channel import Channel, PipeHandle, Side, Slot, link_side
from .config import TPipe, ways as _ways
from .cpusim import SharedRing
from .diagnostics import deadlock_cause, explain, holdings, silent_lane_use
from ...protocol.geometry import not_a_peer
from ...protocol.model import PtoIsaModel, cluster_model, model_for, platform_kind
from ...sim.location import is_cpp
from .teardown import drain_now, scope_end
from ...errors import with_article


def _loc(core) -> str:
    return str(core.where())


def channels(cluster) -> dict:
    """The cluster's channels, ``{(way, ready id, peers): Channel}`` (created on first use)."""
    ch = cluster.state.channels
    if explain not in cluster.explainers:
        cluster.explainers.append(explain)
        cluster.annotators.append(holdings)      # deadlock reports: slots a core holds
        cluster.hinters.append(deadlock_cause)   # deadlock reports: the culprit
    return ch


def _gm_addr(buf, core, what: str) -> tuple:
    """(address, size or None) of a GM slot buffer argument."""
    if isinstance(buf, GlobalTensor):
        return buf.data().addr, buf.nbytes
    if isinstance(buf, GMPtr):
        return buf.addr, None
    if isinstance(buf, (int, np.integer)) and buf > 0:
        return int(buf), None
    null = buf is None or (isinstance(buf, (int, np.integer)) and buf == 0)
    got = "a null pointer (nullptr / None)" if null else repr(buf)
    fix = ("pass the GM slot buffer kernel argument: a __gm__ pointer to SlotNum x SlotSize bytes "
           "(in Python ptopipe.gm_buffer(nbytes))")
    if null and core.cluster.platform.id is PlatformID.PLATFORM_A2A3:
        fix += ("; every TPipe ring is in GM on A2A3 - a null GM_SLOT_BUFFER is A5's spelling of a ring in "
                "the consumer's UB / L1, which A2A3 does not have")
    raise ConfigError(f"{what}: a GM_SLOT_BUFFER is required for a ring in GM, got {got}", where=_loc(core),
                      fix=fix)


def bind_pipe(cfg: TPipe, gm_slot_buffer=None, c2v_consumer_buf: int = 0,
              v2c_consumer_buf: int = 0) -> PipeHandle:
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
    _check_whole_numbers(core, cfg, c2v_consumer_buf, v2c_consumer_buf)
    model = cluster_model(cluster)
    bad = model.unsupported(cfg, direction)
    if bad is not None:
        raise ConfigError(bad[0], where=_loc(core), fix=bad[1])
    if cfg.slot_num < 1 or cfg.slot_size <= 0:
        raise ConfigError(f"pipe needs SlotNum >= 1 and SlotSize > 0 (got {cfg.slot_num}, {cfg.slot_size})",
                          where=_loc(core),
                          fix="TPipe(flag_id, direction, slot_size, slot_num): give SlotSize the bytes of the "
                              "largest tile a slot holds and SlotNum the slots of the ring (e.g. 2 to 8)")
    if cfg.slot_size % plat.alignment:
        if cfg.fifo is not None:        # TMPipe: the slot size is the larger tile's byte size
            raise ConfigError(f"TMPipe SlotSize {cfg.slot_size} (the byte size of its larger tile) is not "
                              f"{plat.alignment}-byte aligned", where=_loc(core),
                              fix=f"use producer/consumer tiles of a multiple of {plat.alignment} bytes "
                                  "(pad the tile's columns), or a TPipe with an explicit SlotSize")
        raise ConfigError(f"SlotSize {cfg.slot_size} is not {plat.alignment}-byte aligned", where=_loc(core),
                          fix=f"round SlotSize up to a multiple of {plat.alignment}")
    # a TMPipe's LocalFiFoDepth may be 0: pto-isa's DataFIFO without a local FIFO, whose pop
    # loads into the tile's own address
    fewest = 0 if cfg.fifo is not None else 1
    if isinstance(cfg.local_slot_num, bool) or not isinstance(cfg.local_slot_num, int) or \
            cfg.local_slot_num < fewest:
        raise ConfigError(f"pipe LocalSlotNum {cfg.local_slot_num!r} is not a number of staging slots",
                          where=_loc(core), fix=f"give LocalSlotNum >= {fewest} (the default is 2)")
    sp = cfg.sync_period
    if sp is not None and (isinstance(sp, bool) or not isinstance(sp, int) or sp < 0):
        raise ConfigError(f"pipe SyncPeriod (FiFoSyncT) {sp!r} is not a number of slots", where=_loc(core),
                          fix="give FiFoSyncT >= 1, or 0 / None for pto-isa's rule")
    if not cfg.peers or any(p not in (0, 1) for p in cfg.peers):
        raise ConfigError(f"pipe peers must be Vector sub-blocks 0 and/or 1, got {cfg.peers}", where=_loc(core),
                          fix="give peers=(0, 1) (both Vector cores, the default) or peers=(0,) (AIV0 alone)")
    ways = _ways(direction)
    unused = _unused_consumer_buf(core, direction, ways, c2v_consumer_buf, v2c_consumer_buf)
    # the lane a pto-isa TMPipe's VecCubeRatio leaves out: its flags are the Cube's all the same
    # (ProtocolModel.handshake_lanes), so it binds a side that signals and waits but moves no data
    silent = core.kind is CoreKind.AIV and core.subblock not in cfg.peers and \
        core.subblock in model.handshake_lanes(cfg)
    if core.kind is CoreKind.AIV and core.subblock not in cfg.peers and not silent:
        if cfg.fifo is not None or not (cfg.stray_ok or is_cpp(core.where())):
            raise ConfigError(f"{core.name} binds a pipe whose peers are {cfg.peers}", where=_loc(core),
                              fix=not_a_peer(is_cpp(core.where())))
        return _stray_construction(core, cfg, direction, ways, model)
    both = len(ways) == 2
    n = cfg.slot_num
    depth = model.fifo_depth(plat)
    if depth is not None and n > depth:
        raise ConfigError(f"SlotNum {n} exceeds the FIFO depth limit {depth} of {plat.name}",
                          where=_loc(core), fix=f"give the pipe at most {depth} slots")
    fifo = cfg.fifo
    if fifo in (FIFOType.VEC_FIFO, FIFOType.MAT_FIFO):
        want = FIFOType.VEC_FIFO if ways == (C2V,) else FIFOType.MAT_FIFO
        if plat.ring_in_gm or fifo is not want:
            raise ConfigError(
                f"{fifo.value} on {with_article(direction.name)} pipe on {plat.name}: " +
                ("rings are in GM on this platform" if plat.ring_in_gm else
                 f"a consumer-local {direction.name} ring is {with_article(want.value)}"),
                where=_loc(core), fix="use GM_FIFO" if plat.ring_in_gm else f"use {want.value} or GM_FIFO")
    in_gm = (plat.ring_in_gm or gm_dir or direction is Direction.DIR_V2C_CTRL
             or fifo in (FIFOType.GM_FIFO, FIFOType.CTRL_FIFO))
    handle = PipeHandle(cfg, core)
    gm_addr = gm_size = None
    if in_gm:
        gm_addr, gm_size = _gm_addr(gm_slot_buffer, core, "pipe binding")
        need = n * cfg.slot_size * len(ways)
        if gm_size is None:
            _check_gm_argument(core, cfg, gm_addr, need, ways, getattr(gm_slot_buffer, "bounds", None))
        if gm_size is not None and gm_size < need:
            _agree_first(core, cfg, ways, n, in_gm)
            raise ConfigError(f"GM_SLOT_BUFFER holds {gm_size} bytes but the ring needs {need} "
                              f"({len(ways)} x SlotNum {n} x SlotSize {cfg.slot_size})", where=_loc(core),
                              fix=f"allocate at least {need} bytes; or, if the other end of the pipe "
                                  "binds a smaller ring, give both ends the same SlotNum and SlotSize "
                                  "(the two ends must agree)")
    limit = model.flag_limit(plat)
    for k, way in enumerate(ways):
        ready_id, free_id = model.flag_ids(cfg.flag_id, k, n)
        if ready_id < 0 or model.flags_top(ready_id, free_id, n) > limit:
            msg, fix = model.flag_range_error(way, ready_id, free_id, cfg.flag_id, n, plat, both)
            raise ConfigError(f"{msg} (under the {model.name} protocol)", where=_loc(core),
                              fix=fix + _device_note(cluster, model, cfg))
        consumer_buf = c2v_consumer_buf if way == C2V else v2c_consumer_buf
        base = model.ring_base(gm_addr, k, n, cfg.slot_size) if in_gm else consumer_buf
        handle.channels[way] = ch = _attach(core, cfg, way, model, n, ready_id, free_id, in_gm, base, consumer_buf)
        if unused is not None:
            ch.unused_buf = unused
    if silent:
        handle.not_a_peer = silent_lane_use(core, handle.channels[ways[0]])
    if model.slot_state_replay and handle.channels[ways[0]].sim_ring is None:
        # the device's code (the simulator runs what is compiled for it): does its TFREE test the
        # latest TPOP with SyncPeriod > 1, so that holding tiles is wrong there too?
        dev = model_for(model.compiles_as, model.platform) if model.compiles_as is not None else model
        sp = dev.sync_period(cfg)
        moves = sp if dev.notice_moves(n, sp) and not dev.pop_frees(in_gm) else 0
        ring = SharedRing(f"{'DIR_BOTH ' if both else ''}pipe FlagID {cfg.flag_id}", n, both, C2V in ways,
                          device_period=moves, rule=dev.NOTICE_RULE)
        for way in ways:
            handle.channels[way].sim_ring = ring
    return handle


def _stray_construction(core, cfg: TPipe, direction, ways, model) -> PipeHandle:
    """A Vector core constructs a TPipe whose one lane it is not (pto-isa's A5 no-split test
    constructs the pipe at function scope on every core; AIV1 then skips the loop): on the
    device that core's constructor runs the consumer's start-up ``cons.free()`` calls on its own
    free flag (``ProtocolModel.stray_ctor_credits``), which no wait of the pipe reads - posted
    here on that flag, where a later pipe of this core on those ids, or the next launch, finds
    them - and its destructor waits for nothing.  A warning at the construction, not a refusal;
    a use of the pipe on this core is the ConfigError the construction used to be."""
    cluster = core.cluster
    here = _loc(core)
    peers = ",".join("AIV%d" % p for p in cfg.peers)
    credits = []
    for k, way in enumerate(ways):
        n = model.stray_ctor_credits(cfg, way)
        if n:
            _ready, free_id = model.flag_ids(cfg.flag_id, k, cfg.slot_num)
            flag = cluster.flag(core, cluster.aic, free_id)
            for _ in range(n):
                cluster.set_flag(core, flag, core.clock)
            credits.append(f"{n} stray free credit{'s' if n != 1 else ''} on {flag.name}")
    pipe = f"{direction.name} pipe FlagID {cfg.flag_id} (peers {peers})"
    posted = (f"its constructor posts {' and '.join(credits)} ({model.name}: the TPipe constructor's "
              "cons.free() runs on every core that constructs it, and no wait of this one-lane pipe reads "
              f"{core.name}'s flag - a later pipe of {core.name} on these ids, or the next launch, inherits "
              "them)" if credits else
              f"under {model.name} {core.name}'s constructor and destructor signal nothing (a local "
              "no-split TPipe posts no start-up credits)")
    warnings = cluster.warnings
    if not any(w[1] == here for w in warnings):
        warnings.append((f"{core.name} constructs {pipe}, whose one Vector lane is AIV0: {posted}; "
                         f"{core.name} must not use the pipe", here))
    handle = PipeHandle(cfg, core)
    handle.not_a_peer = (f"{core.name} uses {pipe}, constructed at {here}, whose peers are {cfg.peers}",
                         not_a_peer(True))
    return handle


def _attach(core, cfg, way, model, n, ready_id, free_id, in_gm, base, consumer_buf):
    cluster = core.cluster
    chans = channels(cluster)
    key = (way, ready_id, cfg.peers)
    role = "producer" if (way == C2V) == (core.kind is CoreKind.AIC) else "consumer"
    ch = chans.get(key)
    earlier = None
    if ch is None:
        ch = Channel(way, cfg, model, n, cfg.slot_size, ready_id, free_id, in_gm,
                     gm_base=base if in_gm else None, local_base=None if in_gm else base,
                     ctrl=cfg.direction is Direction.DIR_V2C_CTRL, replay=cluster.context.fast_paths,
                     name=_channel_name(cfg, way))
        _claim_flags(core, ch)
        for p in cfg.peers:
            ch.slots[p] = [Slot(t) for t in range(n)]
        chans[key] = ch
        if not in_gm:
            _reserve_rings(core, ch)
    else:
        old = ch.sides.get(core.index)
        earlier = None
        if old is not None:
            if not old.closed:
                _bound_twice(core, ch, cfg)
            earlier = reopen(core, ch, old)
        _agree(core, ch, cfg, n, base, in_gm)
    if in_gm:
        # checked at every core's binding, not only the first: the pipes sharing bytes may have
        # been created by different cores (AIV0 one, AIV1 the other), but the AIC binds both
        _check_gm_ring(core, ch, chans)
    side = Side(core, role, core.where())
    side.scope_end = scope_end(core)
    side.earlier = earlier
    if core.kind is CoreKind.AIC:
        link_side(ch, side, ch.lanes, ch.flag_lanes)
    else:       # (a lane that is no peer of a pto-isa TMPipe: its flags, no slots)
        link_side(ch, side, (core.subblock,) if core.subblock in ch.peers else (), (core.subblock,))
    if role == "consumer" and consumer_buf is not None and in_gm:
        side.staging = consumer_buf
        side.stage_num = cfg.local_slot_num     # the consumer's own TPipe (ch.cfg is the first binder's)
        # (pto-isa's default LocalSlotNum is what a one-slot TPipe that names none gets)
        if cfg.local_slot_num > max(n, LOCAL_SLOT_NUM) and not ch.ctrl:
            _idle_staging(core, ch, cfg, n)
    ch.sides[core.index] = side
    if role == "consumer":
        # the consumer's start-up credits (seed 003: every slot pre-signalled free)
        # (the constructor's: every peer's, though the pipe's transfers may be AIV0's alone, and
        # a pto-isa TMPipe's Cube's to both Vector lanes, whatever its VecCubeRatio)
        _startup_credits(core, ch, ch.handshake if core.kind is CoreKind.AIC else side.flag_links)
    elif ch.cfg.sim_lanes:
        # the CPU simulator's slots start free for a lane only it adds, constructed or not
        _startup_credits(core, ch, ch.cfg.sim_lanes)
    return ch


def _startup_credits(core, ch, lanes) -> None:
    """Post ``ch``'s start-up free credits of each Vector lane in ``lanes`` from ``core`` (a lane
    pto-isa's CPU simulator adds, ``TPipe.sim_lanes``, has them once, from whichever of the
    producer and that lane binds first)."""
    credits = ch.startup_credits
    po = core.porder       # (the race checker: sent from the scalar pipe)
    order = po.hb[PipeUnit.S] if po is not None else None
    for p in lanes:
        if p in ch.cfg.sim_lanes:
            if p in ch.credited:
                continue
            ch.credited.add(p)
        flags = ch.free_flags[p]
        for j in range(credits):
            core.cluster.set_flag(core, flags[j % len(flags)], core.clock, order)


def _check_whole_numbers(core, cfg: TPipe, c2v_consumer_buf, v2c_consumer_buf) -> None:
    """FlagID, SlotSize and SlotNum are integers, and so is a consumer buffer address: a
    float (``SLOT * 1.5``, ``DEPTH / 2``) or a string is a ConfigError at the binding line, not
    an int() truncation or a TypeError deep in the ring's arithmetic (C++ template arguments
    and addresses are integers)."""
    for what, v in (("FlagID", cfg.flag_id), ("SlotSize", cfg.slot_size), ("SlotNum", cfg.slot_num)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise ConfigError(f"pipe {what} {v!r} is not an integer", where=_loc(core),
                              fix=f"give {what} as a whole number (use // for a computed value)")
    for what, v in (("C2V consumer buffer", c2v_consumer_buf), ("V2C consumer buffer", v2c_consumer_buf)):
        if isinstance(v, (bool, float, str, np.floating)):
            raise ConfigError(f"pipe {what} address {v!r} is not an integer byte address", where=_loc(core),
                              fix="give the ring's local address as a whole number of bytes, e.g. 0x10000")


def _unused_consumer_buf(core, direction, ways, c2v_buf, v2c_buf) -> tuple | None:
    """Warn (once per construction site) of a consumer buffer address given for a direction the
    pipe does not have: pto-isa's TPipe constructor takes both and ignores it, so the ring of
    the direction the pipe has sits at the other argument - at 0, over the kernel's own tiles,
    when a V2C pipe is given its L1 ring base as ``c2v_consumer_buf`` and 0 as
    ``v2c_consumer_buf``.  (The same address in both is common and harmless.)  Returns (the
    argument, its address, the argument that places the ring) for the pipe's channel, or None."""
    for way, buf, arg, other, used in ((C2V, c2v_buf, "c2v_consumer_buf", "v2c_consumer_buf", v2c_buf),
                                       (V2C, v2c_buf, "v2c_consumer_buf", "c2v_consumer_buf", c2v_buf)):
        if way in ways or not isinstance(buf, numbers.Integral) or not buf or used:
            continue
        what = (f"{direction.name} pipe given {arg}={buf:#x}, which a {direction.name} pipe does not use "
                f"(it has no {way} ring): its {other} (0) is the "
                f"consumer's buffer (its ring on A5, its staging ring where the ring is in GM) - pass the "
                f"address as {other}, and 0 as {arg}")
        core.cluster.warn_once(what, _loc(core))
        return arg, buf, other
    return None


def _idle_staging(core, ch, cfg: TPipe, n: int) -> None:
    """Warn (once per construction site) of a consumer's LocalSlotNum above SlotNum: pto-isa
    accepts it (no static_assert) and rotates its pops over every staging slot, but a consumer
    holds at most SlotNum popped tiles, so the staging buffer's bytes beyond SlotNum slots are
    never needed.  (Not for pto-isa's default LocalSlotNum, which a one-slot TPipe naming none
    gets.)"""
    word = "LocalFiFoDepth" if cfg.fifo is not None else "LocalSlotNum"
    extra, total = (cfg.local_slot_num - n) * cfg.slot_size, cfg.local_slot_num * cfg.slot_size
    what = (f"{ch.name}: {word} {cfg.local_slot_num} is more than SlotNum {n}; a consumer holds at most {n} "
            f"popped tiles, so {extra} of the {total} bytes of the consumer's staging buffer "
            f"({cfg.local_slot_num} slots of SlotSize {cfg.slot_size}) are never needed - declare {word} "
            f"at most {n}")
    core.cluster.warn_once(what, _loc(core))


def _channel_name(cfg: TPipe, way: str) -> str:
    """A ring named as the kernel declared its pipe: the FlagID of the TPipe (a two-way pipe's
    V2C ring uses derived flag ids - FlagID + 2 under pto-isa - which reports give as the flags
    a core waits on, not as the pipe's name)."""
    peers = ",".join("AIV%d" % p for p in cfg.peers)
    direction = Direction(cfg.direction)
    if len(_ways(direction)) == 2:
        return f"{direction.name} pipe FlagID {cfg.flag_id} ({way} way, peers {peers})"
    return f"{way} pipe FlagID {cfg.flag_id} (peers {peers})"


def end_scope(handle: PipeHandle) -> None:
    """The kernel's pipe object ``handle`` went out of scope (a C++ TPipe / TMPipe destructor):
    its core may construct the pipe again (:func:`reopen`).  Its teardown runs then, or at
    kernel end; this records nothing else and never raises (the destructor cannot report)."""
    core = handle.core
    for ch in handle.channels.values():
        side = ch.sides.get(core.index)
        if side is not None and side.core is core:
            side.closed = True


def reopen(core, ch: Channel, old: Side) -> tuple | None:
    """``core`` constructs ``ch``'s pipe again after the object of its side ``old`` went out of
    scope (pto-isa builds a TPipe per task: its ``~TPipe()`` drains the credits the object's
    pushes left, and the new object's tile index starts at 0): ``old``'s teardown runs now -
    a producer waits for its drain (:func:`.teardown.drain_now`), a consumer must have freed
    what it popped - and the core gets a fresh side.  Returns, for a producer, what the new
    side's diagnoses tell of the earlier object (``Side.earlier``)."""
    earlier = None
    if old.role == "producer":
        earlier = (old.bound_at, old.pushed, drain_now(core, ch, old))
    elif old.held:
        pops = ", ".join(str(h[2]) for h in old.held)
        raise ProtocolError(
            f"{core.name} constructs {ch.name} again while its earlier object went out of scope holding "
            f"{len(old.held)} popped tile{'s' if len(old.held) != 1 else ''} it never freed",
            where=_loc(core), details=f"earlier object bound at {old.bound_at}; TPOP at {pops}",
            fix="TFREE every popped tile before the pipe object goes out of scope (its slot is never released "
                "otherwise, and the producer waits for it)")
    ch.retired.append(ch.sides.pop(core.index))
    return earlier


def _bound_twice(core, ch: Channel, cfg: TPipe) -> None:
    """A core binds a FlagID it already bound in this launch: both pipes would count on the
    same flags.  The same TPipe constructed again (the same line and configuration, e.g. inside
    a loop) is told apart from a second pipe that reuses the FlagID (another construction)."""
    first = ch.sides[core.index].bound_at
    here = _loc(core)
    same_pipe = (cfg.slot_size, cfg.slot_num, cfg.direction) == (ch.slot_size, ch.slot_num, ch.cfg.direction)
    if same_pipe and str(first) == here:
        raise ConfigError(
            f"{core.name} binds {ch.name} a second time in one launch (first bound at {first})",
            where=here, details="each binding is a new TPipe object: its tile index restarts at 0 "
                                "while the flag counters keep the first one's credits",
            fix="bind the pipe once per kernel, before the loop, and pass the handle around; to run the "
                "kernel again use a new launch (run(..., launches=K) / --launches K)")
    model = ch.model
    top = model.flags_top(ch.ready_id, ch.free_id, ch.slot_num)
    lo = min(ch.ready_id, ch.free_id)
    ids = f"{lo}..{top - 1}" if top - 1 > lo else f"{lo}"
    nxt = model.next_flag_id(ch.cfg.flag_id, len(_ways(Direction(ch.cfg.direction))), ch.slot_num)
    layout = ("one flag per slot from FlagID, each ring after the other's" if model.per_tag_flags else
              "FlagID (ready) and FlagID + 1 (free) for one ring, FlagID .. FlagID + 3 for a DIR_BOTH pipe")
    raise ConfigError(
        f"two pipes use the same flag ids on {core.name}: {ch.name} constructed at {first} and the "
        f"{Direction(cfg.direction).name} pipe FlagID {cfg.flag_id} constructed at {here} both use flag ids "
        f"{ids}", where=here,
        details=f"first pipe: {first}, SlotSize {ch.cfg.slot_size} x SlotNum {ch.cfg.slot_num}\n"
                f"second pipe: {here}, SlotSize {cfg.slot_size} x SlotNum {cfg.slot_num}\n"
                "each pipe would take the other's ready and free signals as its own",
        fix=f"give the second pipe its own FlagID outside {lo}..{top - 1}, e.g. FlagID {nxt} (the "
            f"{model.name} flag layout: {layout}; flags may not be shared between pipes of one launch)")


def _claim_flags(core, ch: Channel) -> None:
    cluster = core.cluster
    aic = cluster.aic
    count = ch.slot_num if ch.model.per_tag_flags else 1
    for p in ch.handshake:
        aiv = cluster.aiv(p)
        prod, cons = (aic, aiv) if ch.way == C2V else (aiv, aic)
        ready = [cluster.flag(prod, cons, ch.ready_id + t) for t in range(count)]
        free = [cluster.flag(cons, prod, ch.free_id + t) for t in range(count)]
        for f in ready + free:
            if f.sync_at is not None:
                raise ConfigError(
                    f"{ch.name} counts on {f.name}, which the kernel sets / waits on itself (a cross-core "
                    f"sync at {f.sync_at}, under the {ch.model.name} protocol): the ring and the kernel "
                    "would take each other's SETs", where=_loc(core), fix=flag_taken_fix(cluster, ch, f.id))
            if f.owner is not None and f.owner is not ch:
                if f.owner is _other_end(core, ch):
                    raise _flag_mismatch(core, ch, f.owner)
                raise ConfigError(
                    f"{ch.name} and {f.owner.name} share {f.name} (under the {ch.model.name} protocol)",
                    where=_loc(core),
                    fix="two pipes on the same peer may not share a flag: give them disjoint FlagID ranges "
                        f"({_flag_range(ch)} and {_flag_range(f.owner)})"
                        + _device_note(cluster, ch.model, ch.cfg, f.owner.cfg))
            f.owner = ch
        for f in ready:
            f.signal = "ready"      # a wait on it is a "waiting for data" stall
        for f in free:
            f.signal = "free"
        ch.ready_flags[p] = ready
        ch.free_flags[p] = free


def flag_taken_fix(cluster, ch: Channel, fid: int) -> str:
    """The fix of a kernel's own cross-core sync on flag id ``fid`` that ``ch``'s ring counts on:
    another id, and under a flag-per-slot protocol (spec) whether pto-isa's ring leaves it free."""
    fix = f"give the sync a flag id the pipes do not use ({_flag_range(ch)})"
    if ch.model.per_tag_flags:
        device = model_for(Protocol.PTO_ISA, platform_kind(cluster.platform))
        claims = device.flag_claims(ch.cfg.flag_id, _ways(Direction(ch.cfg.direction)), ch.slot_num,
                                    cluster.platform)
        if claims is not None and all(i != fid for _s, i in claims):
            fix += (f"; under pto-isa (the device library), which uses {PtoIsaModel.FLAG_RULE}, "
                    f"flag {fid} is free: run it with --protocol pto-isa")
    return fix


def _device_note(cluster, model, *cfgs) -> str:
    """Under a flag-per-slot protocol (spec), what the device library says of the flags of
    pipes ``cfgs`` that do not fit: pto-isa's two counter flags per ring may fit them."""
    if not model.per_tag_flags:
        return ""
    device = model_for(Protocol.PTO_ISA, platform_kind(cluster.platform))
    claims = [device.flag_claims(c.flag_id, _ways(Direction(c.direction)), c.slot_num, cluster.platform)
              for c in cfgs]
    if any(c is None for c in claims) or (len(claims) == 2 and claims[0] & claims[1]):
        return ""
    return (f"; under pto-isa (the device library), which uses {PtoIsaModel.FLAG_RULE}, "
            f"{'these pipes get' if len(cfgs) > 1 else 'this pipe gets'} flags of "
            f"{'their' if len(cfgs) > 1 else 'its'} own: run it with --protocol pto-isa")


def _flag_range(ch: Channel) -> str:
    """The flag ids a channel's way uses (the protocol model's rule), for messages."""
    top = ch.model.flags_top(ch.ready_id, ch.free_id, ch.slot_num)
    lo = min(ch.ready_id, ch.free_id)
    return f"{ch.name} uses {lo}..{top - 1}" if top - 1 > lo else f"{ch.name} uses {lo}"


def _other_end(core, ch: Channel):
    """A pipe of ``ch``'s direction and peers bound so far only by the *other* end (never by
    ``core``) - with ``ch``'s FlagID differing, most likely the same pipe: the two ends
    disagree on its FlagID (asked only when their flags or rings collide)."""
    role = "producer" if (ch.way == C2V) == (core.kind is CoreKind.AIC) else "consumer"
    for o in channels(core.cluster).values():
        if o is not ch and o.way == ch.way and o.peers == ch.peers and o.sides \
                and core.index not in o.sides and all(sd.role != role for sd in o.sides.values()):
            return o
    return None


def _flag_mismatch(core, ch: Channel, other: Channel) -> ConfigError:
    side = next(iter(other.sides.values()))
    return ConfigError(
        f"the two ends of the {ch.way} pipe use different FlagIDs: {side.core.name} bound FlagID "
        f"{other.ready_id} at {side.bound_at}, {core.name} binds FlagID {ch.ready_id}",
        where=_loc(core), details=f"their flags or rings collide: {_flag_range(other)}, {_flag_range(ch)}",
        fix="producer and consumer must give the pipe the same FlagID (the TPipe's first parameter)")


def _check_gm_ring(core, ch: Channel, chans: dict) -> None:
    """Two GM rings sharing bytes would overwrite each other's slots without any flag
    saying so (e.g. an element count used as a byte offset into GM_SLOT_BUFFER)."""
    lo, hi = ch.gm_base, ch.gm_base + ch.slot_num * ch.slot_size
    for other in chans.values():
        # only pipes this core binds too: two ends binding different FlagIDs on one buffer
        # (M2) are a flag mismatch, reported as such by the deadlock explainer
        if other is ch or other.gm_base is None or core.index not in other.sides:
            continue
        olo, ohi = other.gm_base, other.gm_base + other.slot_num * other.slot_size
        if lo < ohi and olo < hi:
            side = other.sides[core.index]
            bug = ch.model.bug("both_rings_alias")
            if bug is not None and other.cfg == ch.cfg and other.way != ch.way:
                # the two ways of one DIR_BOTH pipe: the library put them on the same bytes
                raise MemoryConflictError(
                    f"{ch.model.name} places both rings of this DIR_BOTH pipe at GM_SLOT_BUFFER "
                    f"[{lo:#x}, {hi:#x}): its C2V and V2C tiles overwrite each other once more than one "
                    f"is in flight", where=_loc(core),
                    details=f"{bug.note()}\nthe pipe bound by {side.core.name} at {side.bound_at}",
                    fix=f"{bug.upgrade()} (and allocate 2 x SlotNum x SlotSize bytes of GM_SLOT_BUFFER, as "
                        "the fixed library places the V2C ring after the C2V one); with this pto-isa use a "
                        "DIR_C2V pipe and a DIR_V2C pipe with their own GM_SLOT_BUFFERs and FlagIDs",
                    findings=[{"kind": "library_bug", "bug": bug.key, "fixed": bug.fixed,
                               "where": _loc(core)}])
            raise MemoryConflictError(
                f"the GM ring of {ch.name} [{lo:#x}, {hi:#x}) overlaps the GM ring of {other.name} "
                f"[{olo:#x}, {ohi:#x})", where=_loc(core),
                details=f"{other.name} bound by {side.core.name} at {side.bound_at}\n"
                        f"{ch.name} bound by {core.name} at {_loc(core)}",
                fix="give each pipe its own SlotNum x SlotSize bytes of GM_SLOT_BUFFER: a GM tensor of "
                    "its own (a pl kernel: another pl.Tensor parameter for the second init, and a "
                    "gm_buffer for it in the run's args), or a pointer past the other ring's bytes "
                    "(GM pointer offsets count elements of the buffer's dtype: bytes for gm_buffer)")


def _check_gm_argument(core, cfg: TPipe, addr: int, need: int, ways, bounds=None) -> None:
    """A GM_SLOT_BUFFER given as a raw pointer: its rings must stay inside the kernel
    argument the pointer points into (``run`` records the arguments' GM extents; a pointer
    derived from an argument carries that argument as its ``bounds``, even once moved past
    it), else they overwrite the next tensor without any flag saying so."""
    args = core.cluster.context.gm_args
    if bounds is not None and isinstance(bounds[2], str):
        home = (bounds[2], bounds[0], bounds[1])
    else:
        home = next(((name, lo, hi) for name, lo, hi in args if lo <= addr < hi), None)
    if home is None or addr + need <= home[2]:
        return
    name, lo, hi = home
    end = addr + need
    what = (f"{len(ways)} rings x " if len(ways) > 1 else "") + f"SlotNum {cfg.slot_num} x SlotSize {cfg.slot_size}"
    victims = [(n2, l2, h2) for n2, l2, h2 in args if l2 < end and hi <= l2]
    ring = f"the GM ring{'s' if len(ways) > 1 else ''} of {'/'.join(ways)} pipe FlagID {cfg.flag_id} [{addr:#x}, {end:#x})"
    fix = (f"the pointer is {addr - lo} bytes into {name!r}, which has {hi - addr} bytes from there: allocate "
           f"{addr - lo + need} bytes for {name!r}, or use fewer or smaller slots")
    if victims:
        names = ", ".join(f"argument {n2!r} [{l2:#x}, {h2:#x})" for n2, l2, h2 in victims)
        raise MemoryConflictError(
            f"{ring} ({what}) runs past the end of its GM argument {name!r} [{lo:#x}, {hi:#x}) into {names}",
            where=_loc(core), details=f"the ring bytes [{hi:#x}, {end:#x}) belong to {names}", fix=fix)
    raise ConfigError(f"{ring} ({what}) runs past the end of its GM argument {name!r} [{lo:#x}, {hi:#x})",
                      where=_loc(core), fix=fix)


def _sync_period_unread(core, ch: Channel, cfg: TPipe, other) -> None:
    """A warning for the two ends of a pipe declaring different SyncPeriods (FiFoSyncT)
    under a protocol that does not read it (spec, pto-isa's CPU simulator): the run passes,
    but pto-isa - each end applying its own - refuses the pipe (the ConfigError of
    :func:`_agree` under ``--protocol pto-isa``)."""
    lib = model_for(Protocol.PTO_ISA, platform_kind(core.cluster.platform))
    mine, theirs = lib.sync_period(cfg), lib.sync_period(ch.cfg)
    if mine == theirs or other is None:
        return

    def declared(c: TPipe, sp: int) -> str:
        return str(c.sync_period) if c.sync_period else f"none (pto-isa's default for SlotNum {c.slot_num}: {sp})"
    here = _loc(core)
    what = (f"{ch.name}: SyncPeriod (FiFoSyncT) {declared(cfg, mine)} here but {declared(ch.cfg, theirs)} "
            f"on the other end ({other.core.name} at {other.bound_at}): {ch.model.name} "
            "does not read SyncPeriod, so this run passes, but under pto-isa each end applies its own: a "
            "producer waiting for a free the consumer never sends deadlocks, the other way round overwrites "
            "(--protocol pto-isa refuses the pipe) - declare the same TPipe / TMPipe on both ends")
    core.cluster.warn_once(what, here)


def _agree_first(core, cfg: TPipe, ways, n: int, in_gm: bool) -> None:
    """Before a ring too big for its GM_SLOT_BUFFER is reported: if the other end already bound
    this pipe with another SlotNum / SlotSize (whose ring fit), that disagreement is the mistake,
    and :func:`_agree` reports it naming both ends."""
    for ch in channels(core.cluster).values():
        if (ch.cfg.flag_id == cfg.flag_id and ch.way in ways and ch.cfg.peers == cfg.peers
                and (ch.slot_num, ch.slot_size) != (n, cfg.slot_size)):
            _agree(core, ch, cfg, n, None, in_gm)


def _agree(core, ch: Channel, cfg: TPipe, n: int, base, in_gm: bool) -> None:
    other = next(iter(ch.sides.values()), None)

    def where() -> str | None:          # (the details of an error below: made only then)
        return f"other side bound by {other.core.name} at {other.bound_at}" if other else None
    if cfg.slot_size != ch.slot_size or n != ch.slot_num:
        raise ConfigError(f"{ch.name}: {core.name} binds SlotSize {cfg.slot_size} x SlotNum {n} but the "
                          f"other side has {ch.slot_size} x {ch.slot_num}", where=_loc(core), details=where(),
                          fix="producer and consumer must declare the same TPipe configuration")
    sp = ch.model.sync_period(cfg)
    if sp != ch.sync_period:
        # each end applies its own SyncPeriod on the device: a producer waiting on a free the
        # consumer never sends deadlocks, the other way round overwrites
        raise ConfigError(f"{ch.name}: {core.name} binds SyncPeriod (FiFoSyncT) {sp} but the other side "
                          f"has {ch.sync_period}", where=_loc(core), details=where(),
                          fix="producer and consumer must declare the same TPipe / TMPipe configuration")
    _sync_period_unread(core, ch, cfg, other)
    if in_gm != ch.in_gm:
        # compared first: the base checks below format the other side's base of the same kind
        mine, theirs = ("GM", "the consumer's local memory") if in_gm else ("the consumer's local memory", "GM")
        raise ConfigError(f"{ch.name}: {core.name} places the ring in {mine} but the other side "
                          f"places it in {theirs}", where=_loc(core), details=where(),
                          fix="use the same direction (e.g. both DIR_C2V or both DIR_C2V_GM) and FIFO "
                              "kind on both ends of the pipe")
    if in_gm and base != ch.gm_base:
        raise ConfigError(f"{ch.name}: {core.name} places the ring at GM {base:#x} but the other side "
                          f"uses {ch.gm_base:#x}", where=_loc(core), details=where(),
                          fix="pass the same GM_SLOT_BUFFER to both kernels")
    if not in_gm and base != ch.local_base:
        consumer = (ch.way == C2V) == (core.kind is CoreKind.AIV)
        cbase = base if consumer else ch.local_base      # the ring is in the consumer's memory
        raise ConfigError(f"{ch.name}: {core.name} places the ring at {base:#x} but the other side "
                          f"uses {ch.local_base:#x}", where=_loc(core), details=where(),
                          fix=f"the ring is in the consumer's memory at the consumer's base: give the "
                              f"producer that base, {cbase:#x} (a Python kernel's TPipe(...)(fifo, "
                              f"{cbase:#x}), a C++ TPipe constructor's consumer buffer argument; the pl "
                              "DSL's pl.import_peer_buffer of the consumer's reserve_buffer does it)")


def _reserve_rings(core, ch: Channel) -> None:
    cluster = core.cluster
    space = MemSpace.UB if ch.way == C2V else MemSpace.L1
    size = ch.slot_num * ch.slot_size
    consumers = [cluster.aic] if ch.way == V2C else [cluster.aiv(p) for p in ch.peers]
    for c in consumers:
        cap = cluster.platform.mem_size(space)
        if ch.local_base < 0 or ch.local_base + size > cap:
            raise ConfigError(
                f"{ch.name} ring [{ch.local_base:#x}, {ch.local_base + size:#x}) (SlotNum {ch.slot_num} x "
                f"SlotSize {ch.slot_size}) does not fit {c.name}'s {space.value} of {cap:#x} bytes",
                where=_loc(core),
                fix=(f"use a consumer buffer base <= {cap - size:#x}" if size <= cap else
                     f"the ring alone needs {size} bytes: use fewer or smaller slots"))
        o = _other_end(core, ch)
        if o is not None and o.local_base is not None and \
                o.local_base < ch.local_base + size and ch.local_base < o.local_base + o.slot_num * o.slot_size:
            raise _flag_mismatch(core, ch, o)
        reserve(c, space, ch.local_base, size, f"{ch.name} ring", _loc(core), ring=("ring", ch))   # the binding's line
