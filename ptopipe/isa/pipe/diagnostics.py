"""What the pipe layer tells the user: the ring state (for deadlock reports and
``describe_state``), what a blocked core holds, the culprit of a deadlock (a lane that never
takes part in a pipe's handshakes, a wait-for cycle of TPOPs or of TPUSHes on full rings, a
TPOP on a pipe never pushed, a withheld or held free credit), slot misuse errors (overwrite
while in use, use after free) and the leaks at kernel end (held slots, uncommitted TALLOCs,
data pushed but never popped)."""
from __future__ import annotations

from ...arch.vocab import C2V
from ...errors import MemoryConflictError, ProtocolError
from ...protocol.geometry import one_lane
from ...sim import CoreKind, CoreState
from ...sim.location import is_cpp

_STATE_WORD = {"free": "free", "written": "full", "held": "held"}


def explain(cluster) -> str:
    """Deadlock explainer: the state of every ring."""
    chans = cluster.state.channels
    if not chans:
        return ""
    return "ring state:\n" + "\n".join(describe_ring(c) for c in chans.values())


def holdings(cluster, core) -> list:
    """What ``core`` holds on the rings: popped-but-not-freed slots, TALLOCs not pushed."""
    out = []
    for ch in cluster.state.channels.values():
        side = ch.sides.get(core.index)
        if side is None:
            continue
        for h in side.held:
            tag, loc = h[0], h[2]
            out.append({"text": f"slot {tag} of {ch.name} (TPOP at {loc}, no TFREE yet)",
                        "where": str(loc), "slot": tag, "pipe": ch.name, "kind": "held"})
        for tag, _gt, loc in side.pending_alloc:
            out.append({"text": f"slot {tag} of {ch.name} (TALLOC at {loc}, no TPUSH yet)",
                        "where": str(loc), "slot": tag, "pipe": ch.name, "kind": "allocated"})
    return out


def deadlock_cause(cluster, blocked):
    """The culprit of a deadlock on the rings, as ``dict(cause=, fix=)`` (plus ``where`` and
    ``finding`` when it heads the report), or None, in this order: the lane that never takes
    part (runs no kernel, never binds the pipe, or binds another FlagID); a cycle of TPOPs
    (each consumer waits for data its peer pushes only after its own TPOP); a TPOP on a pipe
    that never had a TPUSH while the producer is stuck elsewhere (a wrong pipe on one side);
    a cycle of TPUSHes on full rings; the free credit withheld by the protocol's
    notification rule (with its arithmetic), or the TPOP whose TFREE the blocked push waits
    for (the oldest slot the waited-for consumer holds on that pipe)."""
    waits = []
    for c in blocked:
        w = c.waiting
        ch, signal = w.info.get("channel"), w.info.get("signal")
        if ch is None or signal not in ("ready", "free") or not hasattr(ch, "sides"):
            continue
        waits.append((c, w, ch, signal, w.flag.sender))
    for c, w, ch, signal, other in waits:
        found = _simulator_stall(ch, c, signal, other)
        if found:
            return found
    for c, w, ch, _signal, other in waits:
        found = _silent_lane(cluster, ch, c, other, w) or _absent_lane(cluster, ch, c, other, w)
        if found:
            return found
    # every blocked core waits on a ring, on a peer that is blocked too: a wait-for cycle
    cycle = len(waits) == len(blocked) and all(o.state is CoreState.BLOCKED for *_, o in waits)
    found = (_pop_cycle(waits) if cycle else None) or _never_pushed(cluster, waits) or \
        (_full_cycle(waits) if cycle else None)
    if found:
        return found
    for c, _w, ch, signal, other in waits:
        found = _free_culprit(ch, c, other) if signal == "free" else _stopped_producer(ch, c, other)
        if found:
            return found
    return None


def _last_at(side, ch, pop: bool = True):
    """The line of ``side``'s latest TPOP (``pop``) or TPUSH of ``ch``, else where it bound
    the pipe."""
    n = side.index if pop else side.pushed
    if n and side.slots:
        for sl in side.slots[(n - 1) % ch.slot_num]:
            loc = sl.pop_loc if pop else sl.push_loc
            if loc is not None:
                return loc
    return side.bound_at


def _stopped_consumer(ch, core, cons, pside, cside):
    """``core``'s push waits for a free from ``cons``, whose kernel returned: the consumer
    stopped - holding a popped slot, or after popping fewer tiles than are pushed.  The
    report is about the consumer, at its line."""
    i = pside.pushed
    if cside.held:
        tag, loc = cside.held[0][0], cside.held[0][2]
        cause = (f"{cons.name} returned holding slot {tag} of {ch.name} popped at {loc} without its TFREE "
                 f"({cside.index} TPOPs, {cside.freed} TFREEs); {core.name}'s push #{i} at {core.where()} waits "
                 "for that free")
        fix = ch.model.held_fix(loc, ch)
    else:
        loc = _last_at(cside, ch)
        last = f"last TPOP at {loc}" if cside.index else f"it bound the pipe at {loc} and popped none"
        cause = (f"{cons.name} returned after popping {cside.index} tile(s) of {ch.name} ({last}), "
                 f"but {core.name} pushes more: its push #{i} at {core.where()} waits for a slot {cons.name} "
                 "would have freed")
        fix = (f"{core.name} waits for a free from {cons.name}, whose kernel returned: make {cons.name} pop (and "
               f"free) every tile {core.name} pushes to {ch.name} - compare the trip counts of the loops on every "
               f"core and both Vector lanes (a lane-dependent trip count or an early return?); {core.name} has "
               f"pushed {i} so far, {cons.name} popped {cside.index}")
    return {"cause": cause, "fix": fix, "where": str(loc),
            "finding": {"kind": "consumer_stopped", "core": cons.name, "pipe": ch.name, "where": str(loc),
                        "pops": cside.index, "frees": cside.freed, "waiter": core.name, "pushes": i}}


def _stopped_producer(ch, core, prod):
    """``core``'s TPOP waits for a tile from ``prod``, whose kernel returned after pushing
    fewer tiles than ``core`` pops (a slot TALLOCed and never pushed is the fallback hint's):
    the two trip counts to compare, with the producer's last TPUSH.  The report stays at the
    TPOP that waits - the extra pop, or the pop of a tile the producer should have pushed."""
    if prod.state is not CoreState.DONE:
        return None
    pside, cside = ch.sides.get(prod.index), ch.sides.get(core.index)
    if pside is None or cside is None or pside.role != "producer" or pside.pending_alloc:
        return None
    loc = _last_at(pside, ch, pop=False)
    last = f"last TPUSH at {loc}" if pside.pushed else f"it bound the pipe at {loc} and pushed none"
    cause = (f"{prod.name} returned after pushing {pside.pushed} tile(s) to {ch.name} ({last}), but "
             f"{core.name} pops more: its pop #{cside.index} at {core.where()} waits for a tile {prod.name} "
             "would have pushed")
    fix = (f"{core.name} waits for a tile from {prod.name}, whose kernel returned: check that the number of "
           "TPOPs matches the number of TPUSHes on every core and both Vector lanes (a lane-dependent trip "
           f"count or an early return?); {prod.name} pushed {pside.pushed} to {ch.name}, {core.name} popped "
           f"{cside.index}")
    return {"cause": cause, "fix": fix, "where": str(core.where()),
            "finding": {"kind": "producer_stopped", "core": prod.name, "pipe": ch.name, "where": str(loc),
                        "pushes": pside.pushed, "waiter": core.name, "pops": cside.index}}


def _lanes(items) -> list:
    """``[(core, text(name))]`` -> texts, where cores whose texts differ only in their own
    name (the two Vector lanes, typically) are said once: "AIV0 ... (likewise AIV1)"."""
    groups = {}
    for core, text in items:
        groups.setdefault(text("\0"), (text, []))[1].append(core.name)
    return [text(names[0]) + (f" (likewise {', '.join(names[1:])})" if names[1:] else "")
            for text, names in groups.values()]


def _op(core) -> str:
    return core.waiting.what.split()[0]


def _pop_cycle(waits):
    """Every blocked core is in a TPOP, waiting for data a blocked peer would push only after
    its own TPOP returns: TPOPs ordered before the TPUSHes the other side needs, or a branch
    that skips a TPUSH (or TPOP) on one side only."""
    if not all(s == "ready" for _c, _w, _ch, s, _o in waits):
        return None
    what = _lanes((c, lambda n, c=c, ch=ch, o=o: f"{n}'s TPOP at {c.where()} waits for data on {ch.name} "
                                                 f"from {o.name}") for c, _w, ch, _s, o in waits)
    chans = list({id(ch): ch for _c, _w, ch, _s, _o in waits}.values())

    def counts(c):
        return lambda n: f"{n} " + " and ".join(
            f"pushed {ch.sides[c.index].pushed} to {ch.name}" if ch.sides[c.index].role == "producer"
            else f"popped {ch.sides[c.index].index} from {ch.name}" for ch in chans if c.index in ch.sides)
    per_core = _lanes((c, counts(c)) for c, *_ in waits)
    return {"cause": ("a cycle of TPOPs: each blocked core is a consumer waiting for data its blocked peer "
                      "would push only after its own TPOP returns, if at all - " + ", ".join(what) + "; so far " +
                      "; ".join(per_core)),
            "fix": ("push before popping what the other side needs: TPUSH the tile your peer waits for "
                    "before the TPOP of a tile that peer produces only afterwards; where a TPUSH or TPOP "
                    "sits under a branch (or a loop), make both sides' conditions and counts agree, so "
                    "every pipe gets as many TPOPs as TPUSHes")}


def _never_pushed(cluster, waits):
    """A TPOP waits on a pipe its producer has never pushed to, while that producer is blocked
    (typically pushing a pipe whose tiles the waiting consumer has not popped): one side names
    the wrong pipe (handle, FlagID or id), or the two sides use the pipes in different orders."""
    for c, _w, ch, signal, prod in waits:
        pside = ch.sides.get(prod.index)
        if signal != "ready" or pside is None or pside.pushed or prod.state is not CoreState.BLOCKED:
            continue
        pch = prod.waiting.info.get("channel")
        cause = (f"{c.name}'s TPOP at {c.where()} waits on {ch.name}, which has had no TPUSH at all "
                 f"({prod.name} pushed 0 to it), and {prod.name} is blocked in its {_op(prod)} at "
                 f"{prod.where()}" + (f" on {pch.name}" if pch is not None and pch is not ch else ""))
        full = [(d, d.sides[prod.index], d.sides[c.index]) for d in cluster.state.channels.values()
                if d is not ch and prod.index in d.sides and c.index in d.sides
                and d.sides[prod.index].role == "producer" and d.sides[c.index].role == "consumer"]
        full = [(d, ps, cs) for d, ps, cs in full if ps.pushed > cs.index or cs.held]
        if not full:
            return {"cause": cause,
                    "fix": (f"check that {prod.name} pushes to the pipe {c.name} pops (a wrong pipe handle, "
                            "FlagID or id on one side?) and that both sides use their pipes in the same order")}
        d, ps, cs = full[0]
        # where the tiles nobody pops were pushed: the suspect TPUSH
        lane = d.slots[c.subblock if c.kind is CoreKind.AIV else prod.subblock]
        n = ps.pushed - cs.index
        locs = list(dict.fromkeys(str(sl.push_loc) for k in range(n)
                                  for sl in (lane[(cs.index + k) % d.slot_num],)
                                  if sl.state == "written" and sl.push_loc is not None))
        at = f" (TPUSH at {', '.join(locs)})" if locs else ""
        cause += (f"; {d.name} holds {n} tile(s) {prod.name} pushed{at} that {c.name} has not popped "
                  f"({prod.name} pushed {ps.pushed}, {c.name} popped {cs.index})")
        if cs.held:
            cause += f" and {c.name} holds slot {cs.held[0][0]} of it (TPOP at {cs.held[0][2]}, no TFREE yet)"
        push = f"the TPUSH at {', '.join(locs)}" if locs else f"{prod.name}'s TPUSHes to {d.name}"
        withheld = _withheld_on(pch, prod, c)
        if withheld is not None:          # a slot is free: only the protocol's notification is missing
            return {"cause": f"{cause}; {withheld[0]}",
                    "fix": (f"{withheld[1]}; or push to {ch.name} before {prod.name} needs that credit - unless "
                            f"one side names the wrong pipe (a wrong pipe handle, FlagID or id): check that {push} "
                            f"and {c.name}'s TPOP at {c.where()} use the pipe they mean")}
        fix = (f"{prod.name} never pushes to {ch.name} before it needs {c.name} to make room in {d.name}: "
               f"likely one side names the wrong pipe (a wrong pipe handle, FlagID or id) - check that {push} "
               f"and {c.name}'s TPOP at {c.where()} use the pipe they mean; if the order is intended, pop the "
               f"pipes in the order {prod.name} pushes them ({d.name}, SlotNum {d.slot_num}, cannot hold what "
               f"{prod.name} pushes before its first push to {ch.name})")
        return {"cause": cause, "fix": fix}
    return None


def _withheld_on(pch, prod, cons):
    """(cause, fix) when ``prod`` is blocked pushing ``pch`` for a free credit that ``cons``'s
    TFREEs have earned but the protocol's notification rule (pto-isa's SyncPeriod) has not
    sent; else None."""
    if pch is None or prod.waiting.info.get("signal") != "free" or not hasattr(pch, "sides"):
        return None
    pside, cside = pch.sides.get(prod.index), pch.sides.get(cons.index)
    if pside is None or cside is None or cside.role != "consumer":
        return None
    return pch.model.withheld_credit(pch, pside.pushed, cside.freed, cons.name, cpp=is_cpp(cons.where()))


def _full_cycle(waits):
    """Every blocked core is in a TPUSH, waiting for a free slot its blocked peer would give
    only after its own TPUSH returns, and at least one of those rings is really full (its
    consumer has freed nothing the producer could use): the producers run more tiles ahead
    than the rings hold.  Only then is a credit withheld by the notification rule (pto-isa
    SyncPeriod) on another ring not named as the cause: a smaller period releases no slot of
    the full ring.  Rings where a consumer holds popped slots are left to
    :func:`_free_culprit` (a missing or late TFREE)."""
    if not all(s == "free" for _c, _w, _ch, s, _o in waits):
        return None
    edges = []
    for c, _w, ch, _s, cons in waits:
        pside, cside = ch.sides.get(c.index), ch.sides.get(cons.index)
        if pside is None or cside is None or cside.held:
            return None
        i = pside.pushed
        edges.append((c, ch, cons, i, cside, i - cside.freed >= ch.slot_num))
    if not any(e[5] for e in edges):
        return None                       # no ring is full: the notification rule withholds

    def state(c, ch, cons, i, cside, full):
        if full:
            return lambda n: (f"{n}'s TPUSH at {c.where()} waits for a free slot of {ch.name} (SlotNum "
                              f"{ch.slot_num} full: {n} pushed {i}, {cons.name} popped {cside.index})")
        k = cside.freed % ch.sync_period
        return lambda n: (f"{n}'s TPUSH at {c.where()} waits for a free slot of {ch.name} ({n} pushed {i}, "
                          f"{cons.name} popped and freed {cside.freed}, {i - cside.freed} of SlotNum "
                          f"{ch.slot_num} slots in use; SyncPeriod {ch.sync_period} has not announced {k} "
                          f"of those TFREEs)")
    what = _lanes((e[0], state(*e)) for e in edges)
    notes = _lanes((c, lambda n, c=c, ch=ch, k=cside.freed % ch.sync_period:
                    f"sync_period=1 would let {n} push {k} more tile(s) into {ch.name}, which breaks the cycle "
                    f"only if {n} then pops before it pushes again")
                   for c, ch, _cons, _i, cside, full in edges if not full)
    chans = list({id(e[1]): e[1] for e in edges}.values())
    one = len({ch.way for ch in chans}) == 2 and len({ch.cfg for ch in chans}) == 1
    return {"cause": ("both producers are blocked on full rings" +
                      (" of the two ways (C2V and V2C) of one DIR_BOTH pipe" if one else "") +
                      ", each consumer would pop only after its own blocked TPUSH - " + ", ".join(what)),
            "fix": ("deepen the rings (a larger SlotNum) or pop before pushing more (reduce the lag): a side "
                    "must TPOP its peer's tiles before it has pushed SlotNum tiles the peer has not freed"
                    + "".join(f"; {n}" for n in notes))}


def _simulator_stall(ch, core, signal, other=None):
    """A stall the device would not have, caused by pto-isa's CPU simulator (the model's
    ``simulator``): a one-lane C2V pipe whose slots the simulator releases only after a second
    Vector lane freed them too (``Channel.lost_lanes``), or a lane only the simulator adds
    (``TPipe.sim_lanes``) that ``core`` waits for and that did not free the slot."""
    if signal != "free" or not ch.model.simulator:
        return None
    sim_lane = other is not None and other.kind is CoreKind.AIV and other.subblock in ch.cfg.sim_lanes
    if not (ch.lost_lanes or sim_lane):
        return None
    side = ch.sides.get(core.index)
    i = side.pushed if side is not None else 0
    loc = str(core.where())
    lost = ch.lost_lanes or (other.subblock,)
    lanes = ", ".join(f"AIV{p}" for p in lost)
    lside = ch.sides.get(other.index) if sim_lane else None
    did = (f"{lanes} never pops it, so no TFREE releases a slot" if lside is None or not lside.index else
           f"{lanes} popped {lside.index} and freed {lside.freed} of its tiles, so the slot of tile "
           f"#{i - ch.slot_num} is not released")
    cause = (f"pto-isa's CPU simulator causes this stall, not the kernel: it hands a TILE_NO_SPLIT C2V tile to "
             f"every Vector thread it runs (IsDualLaneC2VActive: two sub-blocks) and releases the slot only "
             f"after each of them freed it (remaining_consumers = get_subblockdim()), but {ch.name} has one "
             f"lane on the device, AIV0 - {did} and {core.name}'s push #{i} at "
             f"{loc} waits forever (the NPU's header serves AIV0 alone: on the device this kernel runs)")
    fix = ("run the CPU simulator's Vector threads with a sub-block dim of 1 for this kernel "
           "(cpu_sim::ScopedExecutionContext(block, sub, 1), as pto-isa's A5 no-split tests do), or let "
           f"{lanes} pop and free every tile too; the kernel itself needs no change")
    return {"cause": cause, "fix": fix, "where": loc,
            "finding": {"kind": "simulator_stall", "pipe": ch.name, "waiter": core.name, "where": loc,
                        "lanes": list(lost), "push": i}}


def _ratio(ch) -> str:
    """The VecCubeRatio that gives TMPipe ``ch`` its one lane."""
    return "V1C1_VEC1" if tuple(ch.peers) == (1,) else "V1C1_VEC0"


def silent_lane_cause(ch, waiter: str, op: str, loc, lane, signal: str, state: str) -> tuple:
    """(cause, fix) of the Cube blocked at ``op`` (``loc``) of pto-isa TMPipe ``ch`` for the
    ``signal`` ("ready" / "free") of Vector core ``lane``, which the pipe's VecCubeRatio leaves
    out (``Channel.silent_lanes``) and which never sends it - ``state`` says why (runs no
    kernel, constructed the pipe and never pops, ...).  The device hangs there: the rule is
    :meth:`~ptopipe.protocol.model.ProtocolModel.handshake_lanes`."""
    a5 = ch.model.platform == "a5"
    other, sub, ratio, lane0 = lane.name, lane.subblock, _ratio(ch), ch.peers[0]
    moves = "TPOP" if ch.way == C2V else "TPUSH"
    fid = ch.free_id if signal == "free" else ch.ready_id
    if a5:
        name = "FlagIDPlusOne" if signal == "free" else "FlagID"
        code = ("a5/TPush.hpp TMPipe::Producer::allocate: wait_intra_block(PIPE_FIX, FlagIDPlusOne) and "
                "wait_intra_block(PIPE_FIX, FlagIDPlusOne + VEC_CORE_ID_OFFSET)" if signal == "free" else
                "a5/TPush.hpp TMPipe::Consumer::wait: wait_intra_block(..., FlagID) and "
                "wait_intra_block(..., FlagID + VEC_CORE_ID_OFFSET)")
        flag = (f"the Cube's flag id {fid + 16} ({name} + 16: {other} sets its own id {fid}, which reaches the "
                f"Cube as {fid + 16})" if sub else f"the Cube's flag id {fid} ({name})")
    else:
        code = (f"a2a3/TPush.hpp TMPipe: the Cube's wait_flag_dev({'FlagID + 1' if signal == 'free' else 'FlagID'})"
                " completes once both Vector cores have set the id (ffts_cross_core_sync in CV_CORES_SYNC mode)")
        flag = f"flag id {fid}, which the Cube's wait counts from both Vector cores"
    cause = (f"{waiter}'s {op} at {loc} waits for {other}'s {signal} signal on {ch.name} ({flag}), and {other} "
             f"{state}: pto-isa's TMPipe makes both Vector lanes part of every handshake of the Cube, whatever "
             f"its VecCubeRatio ({ratio} gives the data to AIV{lane0} alone; pto-isa {code}), so a TMPipe only "
             f"AIV{lane0} serves hangs on the device (AICPU timeout)")
    cpp = is_cpp(str(loc))
    ratio2 = "VecCubeRatio::V2C1_VECS" if cpp else "vc_ratio=VecCubeRatio.V2C1_VECS"
    if ch.ctrl:     # (TPipe(DIR_V2C_CTRL) does not compile in pto-isa: no one-lane control pipe)
        fix = (f"serve the control pipe from both Vector lanes: declare it {ratio2} (the default), both lanes "
               "constructing it and pushing every control word (the same word into the same slot: the Cube reads "
               "it once both have pushed)")
    else:
        fix = (f"serve the pipe from both Vector lanes: declare it {ratio2} (the default) with a Vec tile of half "
               f"the Cube tile's rows (or columns), both lanes constructing it and making every {moves} of their "
               "half (pto-isa's isSplitM / isSplitN)")
        if not a5:
            fix += ("; A2A3 has no one-lane pipe (every wait of the Cube counts both Vector cores): a lane without "
                    "data of its own replays each handshake of a TPipe with an empty tile (SetValid(0, 0))")
        elif cpp:
            fix += ("; or, for one Vector lane (AIV0) on A5, a TPipe<..., IsNoSplit = true> with TILE_NO_SPLIT "
                    "transfers, whose no-split handshakes use AIV0's flags only (setIntraBlockBySplit / "
                    "waitIntraBlockBySplit), the Vector kernel's body under `if (get_subblockid() == 0) { ... }`")
        else:
            fix += ("; or, for one Vector lane (AIV0) on A5, a TPipe(..., peers=(0,)) with TILE_NO_SPLIT "
                    "transfers, whose no-split handshakes use AIV0's flags only")
    return cause, (f"{fix} (under --protocol spec, which follows seed 001's 1 Cube : 1 Vector TMPipe, the Cube "
                   "waits for the one lane alone)")


def silent_lane_use(core, ch) -> tuple:
    """(what, fix) of the ConfigError a use of pto-isa TMPipe ``ch`` raises on ``core``, the
    Vector core its VecCubeRatio leaves out (``PipeHandle.not_a_peer``).  Constructing it is
    what the device does too (its flags are the Cube's); its data moves are not modelled."""
    _cause, fix = silent_lane_cause(ch, "AIC", "wait", core.where(), core, "free", "")
    return (f"{core.name} uses {ch.name}, whose VecCubeRatio {_ratio(ch)} gives its data to AIV{ch.peers[0]} "
            "alone", fix)


def _silent_lane(cluster, ch, core, other, w):
    """``core`` (the Cube) waits for a handshake of ``other``, the Vector core a pto-isa TMPipe's
    VecCubeRatio leaves out (``Channel.silent_lanes``): it runs no kernel, never constructs the
    pipe, or constructed it (its start-up credit counted) and moves no tile through it."""
    if other.kind is not CoreKind.AIV or other.subblock not in getattr(ch, "silent_lanes", ()):
        return None
    signal, tag = w.info.get("signal"), w.info.get("tag")
    op, loc = w.what.split()[0], str(core.where())
    side = ch.sides.get(other.index)
    if side is not None:
        state = (f"constructed the pipe at {side.bound_at} but never "
                 f"{'pops and frees its tiles' if ch.way == C2V else 'pushes a tile'}"
                 + (" (the constructor's start-up free credit let the Cube's first push through)"
                    if ch.way == C2V and signal == "free" else ""))
    elif other.state is CoreState.IDLE:
        state = "runs no kernel"
    elif other.state is CoreState.DONE:
        state = "returned without constructing the pipe"
    else:
        state = f"never constructs the pipe ({other.state.value} at {other.where()})"
    cause, fix = silent_lane_cause(ch, core.name, op, loc, other, signal, state)
    return {"cause": cause, "fix": fix, "where": loc,
            "finding": {"kind": "tmpipe_one_lane", "core": other.name, "pipe": ch.name, "waiter": core.name,
                        "op": op, "where": loc, "signal": signal, "tag": tag}}


def _absent_lane(cluster, ch, core, other, w):
    """``core`` waits for a handshake of ``other``, which never takes part in ``ch``: it runs
    no kernel (typically AIV1 of a two-lane pipe dispatched on lane 0 only - on the device an
    AICPU timeout), returned or blocked without binding it, or bound another pipe of the
    same direction (the two ends disagree on the FlagID)."""
    if other.index in ch.sides:
        return None
    signal, tag = w.info.get("signal"), w.info.get("tag")
    op, loc = w.what.split()[0], str(core.where())
    twin = next((c2 for c2 in cluster.state.channels.values()
                 if c2 is not ch and c2.way == ch.way and other.index in c2.sides
                 and core.index not in c2.sides), None)
    if twin is not None:
        return {"cause": f"{core.name} binds {ch.name} at {ch.sides[core.index].bound_at} but {other.name} "
                         f"binds {twin.name} at {twin.sides[other.index].bound_at}: the two ends of the pipe "
                         f"use different FlagIDs, so {core.name}'s {op} waits on a flag {other.name} never sets",
                "fix": "producer and consumer must use the same FlagID (and direction, SlotNum) for one pipe"}
    if other.state is CoreState.IDLE:
        running = [x.name for x in cluster.cores if x.kind is CoreKind.AIV and x.state is not CoreState.IDLE]
        state = "runs no kernel" + (f": the group dispatches only {', '.join(running)}" if running else "")
    elif other.state is CoreState.DONE:
        state = "returned without binding the pipe"
    else:
        state = f"never binds it ({other.state.value} at {other.where()})"
    cause = (f"{other.name} never takes part in {ch.name}: {core.name}'s {op} at {loc} waits for "
             f"{other.name}'s {signal}[{tag}] handshake, but {other.name} {state}")
    if other.kind is CoreKind.AIV and len(ch.peers) > 1 and ch.cfg.one_lane:
        cause += (f"; the kernel declares the pipe one-lane (IsNoSplit = true), but under "
                  f"{ch.model.name} on {cluster.platform.name} an IsNoSplit pipe has both Vector lanes in "
                  "every handshake")
        fix = _one_lane_fix(cluster, ch, other)
    elif other.kind is CoreKind.AIV and len(ch.peers) > 1:
        rest = next(p for p in ch.peers if p != other.subblock)
        cause += f"; a pipe with lanes {','.join(f'AIV{p}' for p in ch.peers)} needs both in every handshake"
        fix = (f"dispatch the kernel on both Vector sub-blocks and let {other.name} take part in every "
               f"handshake: a lane with no data of its own replays the same "
               f"{'TPOP / TFREE' if ch.way == C2V else 'TPUSH'} sequence with an empty valid shape "
               f"(tile.SetValid(0, 0): no data moves, the flags do); or, if only AIV{rest} uses it, "
               + (f"give the pipe one lane ({one_lane(is_cpp(loc))})" if rest == 0 else
                  f"bind it with peers=({rest},) (an ISA TPipe)"))
    elif other.kind is CoreKind.AIV:
        fix = (f"dispatch the kernel on {other.name} (it is the pipe's only lane) and pair its "
               "TPUSH / TPOP / TFREE with the Cube's")
    else:
        fix = "run a Cube kernel that binds this pipe and pairs its TPUSH / TPOP / TFREE with the Vector cores'"
    return {"cause": cause, "fix": fix, "where": loc,
            "finding": {"kind": "absent_lane", "core": other.name, "state": other.state.value,
                        "pipe": ch.name, "waiter": core.name, "op": op, "where": loc,
                        "signal": signal, "tag": tag}}


def _one_lane_fix(cluster, ch, other) -> str:
    """The fix of a stall on a pipe the kernel declares one-lane (``TPipe<..., IsNoSplit =
    true>``) that the run's model gives both Vector lanes, ``other`` taking no part: the kernel
    is written for the device's one-lane form (A5, :func:`~ptopipe.protocol.model.nosplit_one_lane`),
    which ``--protocol spec`` and ``pto-isa`` run there; pto-isa's CPU simulator runs it with
    one Vector thread only."""
    from ...protocol.model import compile_model
    plat = cluster.platform.name
    replay = (f"or, to keep the {ch.model.name} protocol, let {other.name} take part too: run the "
              f"pipe's construction and every {'TPOP / TFREE' if ch.way == C2V else 'TPUSH'} of it there as "
              "well, with an empty tile (tile.SetValid(0, 0): no data moves, the flags do)")
    if compile_model("pto-isa", plat).nosplit_lane0:
        return ("this kernel is written for the device's one-lane NO_SPLIT pipe, where a TPipe<..., IsNoSplit = "
                f"true> has one Vector lane, AIV0, and {other.name} takes no part (A5): run it with "
                f"--protocol pto-isa or spec; {replay}")
    return ("this kernel gives the pipe one lane as the device does on A5 only (TPipe<..., IsNoSplit = true>, "
            f"{other.name} taking no part): run it with --platform a5; {replay}")


def _free_culprit(ch, core, cons):
    """A producer blocked on a free credit: a consumer that returned (whatever credit the
    notification rule withholds, it pops nothing more), a credit withheld by the notification
    rule, or a slot the consumer popped and never freed."""
    pside, cside = ch.sides.get(core.index), ch.sides.get(cons.index)
    if pside is None or cside is None:
        return None
    i = pside.pushed
    if cons.state is CoreState.DONE:      # no notification rule makes a returned consumer pop more
        return _stopped_consumer(ch, core, cons, pside, cside)
    if ch.moved_silent:                   # TFREEs whose free index sent no credit (pto-isa)
        moved = ch.model.withheld_by_index(ch, i, cside.freed, cons.name, ch.moved_silent)
        if moved is not None:
            return {"cause": moved[0], "fix": moved[1], "where": ch.moved_silent[0][0],
                    "finding": {"kind": "withheld_by_index", "core": cons.name, "pipe": ch.name,
                                "where": ch.moved_silent[0][0], "pops": cside.index, "frees": cside.freed,
                                "waiter": core.name, "pushes": i}}
    withheld = ch.model.withheld_credit(ch, i, cside.freed, cons.name, cpp=is_cpp(cons.where()))
    skipped = _skipped_free(cside, cons) if withheld else None
    if skipped is not None:
        loc, steady = skipped
        n = len(cside.held)
        return {"cause": f"{cons.name} skipped a TFREE of {ch.name}: its TPOP at {loc} popped holding {steady} "
                         f"slot(s) on consecutive iterations and now pops holding {n} (oldest: slot "
                         f"{cside.held[0][0]}, TPOP at {cside.held[0][2]}) - {cside.index} TPOPs, "
                         f"{cside.freed} TFREEs; {core.name}'s push #{i} waits for the free that TFREE would "
                         f"have sent ({cons.name} is blocked at {cons.where()})",
                "fix": f"give every TPOP of {ch.name} its TFREE on every path (a branch or an early "
                       f"continue that skips one?): {cons.name} made {cside.index - cside.freed} TFREE(s) fewer "
                       f"than TPOPs; pto-isa's SyncPeriod {ch.sync_period} is not the cause",
                "where": str(cons.where()),
                "finding": {"kind": "skipped_tfree", "core": cons.name, "pipe": ch.name,
                            "where": str(cons.where()), "pops": cside.index, "frees": cside.freed}}
    if withheld:
        state = f"is blocked at {cons.where()}"
        if cside.held:
            state += (f", holding {len(cside.held)} popped tile(s) (oldest: slot {cside.held[0][0]}, TPOP at "
                      f"{cside.held[0][2]})")
        return {"cause": f"{withheld[0]}; {cons.name} {state}", "fix": withheld[1]}
    if cside.held:
        across = _held_across_pipes(ch, core, cons, cside, i)
        if across is not None:
            return across
        tag, loc = cside.held[0][0], cside.held[0][2]
        state = "is blocked" if cons.state.value == "blocked" else "has ended"
        return {"cause": f"{core.name}'s push #{i} waits for {cons.name}'s TFREE #{ch.model.frees_needed(ch, i)} "
                         f"of {ch.name}; {cons.name} has made {cside.freed}, {state} and still holds slot {tag} "
                         f"popped by the TPOP at {loc} (the next TFREE would release it)",
                "fix": ch.model.held_fix(loc, ch)}
    return None


def _held_across_pipes(ch, core, cons, cside, i):
    """``core``'s push #``i`` of ``ch`` waits for the free of a slot ``cons`` holds, while
    ``cons`` is blocked in a TPOP of another pipe that ``core`` feeds, before the TFREE that
    would release the slot: a cycle through the two pipes.  The consumer pops the other pipe
    more often than the producer pushes it before this push (a TPOP too many per iteration),
    or frees this pipe's slot only after that TPOP.  The report is at that TPOP, where the
    cycle closes (the TFREE the kernel does have is never reached); None if it is not so."""
    if cons.state is not CoreState.BLOCKED:
        return None
    w = cons.waiting
    och = w.info.get("channel")
    if och is None or och is ch or w.info.get("signal") != "ready" or w.flag.sender is not core \
            or not hasattr(och, "sides"):
        return None
    oprod, ocons = och.sides.get(core.index), och.sides.get(cons.index)
    if oprod is None or ocons is None or oprod.role != "producer":
        return None
    tag, loc = cside.held[0][0], cside.held[0][2]
    at = str(cons.where())
    cause = (f"{cons.name} holds slot {tag} of {ch.name} (TPOP at {loc}) and is blocked in its TPOP at {at} "
             f"of {och.name}, before the TFREE that would release that slot; the TPOP waits for a tile "
             f"{core.name} pushes to {och.name} only after its push #{i} to {ch.name} at {core.where()}, which "
             f"waits for that TFREE: a cycle through the two pipes ({core.name} pushed {oprod.pushed} tile(s) "
             f"to {och.name}, {cons.name} popped {ocons.index})")
    fix = (f"{cons.name} pops {och.name} more often than {core.name} pushes it before its next push to "
           f"{ch.name}: give the TPOP at {at} exactly one TPUSH of {core.name} (compare the TPOPs of "
           f"{och.name} per iteration with {core.name}'s TPUSHes), or, if the order is intended, TFREE the "
           f"slot of {ch.name} popped at {loc} before the TPOP at {at}")
    return {"cause": cause, "fix": fix, "where": at,
            "finding": {"kind": "held_across_pipes", "core": cons.name, "pipe": och.name, "where": at,
                        "held_pipe": ch.name, "held_at": str(loc), "waiter": core.name,
                        "pushes": oprod.pushed, "pops": ocons.index}}


def _skipped_free(cside, cons):
    """(TPOP line, its steady hold) when ``cons`` is blocked in a TPOP holding more popped
    slots than it held there on two consecutive iterations: a TFREE was skipped since (a
    deliberate lag holds more from its first iterations on, then steadily), else None."""
    if cons.state.value != "blocked" or not cside.held:
        return None
    w = cons.where()
    if w is None:
        return None
    for loc, (_last, steady) in cside.pop_holds.items():
        if steady is not None and (loc[0], loc[1]) == (w[0], w[1]) and len(cside.held) > steady:
            return w, steady
    return None


def ring_state(ch) -> dict:
    """Structured state of one channel: slots per consumer peer, cursors per side."""
    n = ch.slot_num
    sides = []
    for s in ch.sides.values():
        d = {"core": s.core.name, "role": s.role}
        if s.role == "producer":
            # a TALLOC takes its slot (advances the index) before its TPUSH commits it
            d.update(pushed=s.pushed, next_tag=s.index % n,
                     allocated=[t for t, _, _ in s.pending_alloc])
        else:
            d.update(popped=s.index, freed=s.freed, pop_tag=s.index % n,
                     free_tag=(s.held[0][0] if s.held else s.index % n),
                     held=[h[0] for h in s.held])
        sides.append(d)
    flags = {}
    for p in (*ch.peers, *ch.silent_lanes):
        flags[p] = {"ready": [f.count for f in ch.ready_flags.get(p, ())],
                    "free": [f.count for f in ch.free_flags.get(p, ())]}
    roles = {s.role for s in ch.sides.values()}
    return {"pipe": ch.name, "direction": ch.way, "protocol": ch.model.name, "slot_num": n,
            "slot_size": ch.slot_size, "where": "GM" if ch.in_gm else ("UB" if ch.way == C2V else "L1"),
            "slots": {p: [_STATE_WORD.get(sl.state, sl.state) for sl in ch.slots[p]] for p in ch.peers},
            "sides": sides, "flags": flags,
            "missing": [r for r in ("producer", "consumer") if r not in roles]}


def describe_ring(ch) -> str:
    st = ring_state(ch)
    lines = [f"  {st['pipe']} ({st['direction']}, {st['protocol']}, SlotNum {st['slot_num']} x "
             f"{st['slot_size']} B in {st['where']})"]
    for d in st["sides"]:
        if d["role"] == "producer":
            lines.append(f"    {d['core']:5s} producer: pushed {d['pushed']}, next tag {d['next_tag']}"
                         + (f", TALLOCed {d['allocated']}" if d["allocated"] else ""))
        else:
            lines.append(f"    {d['core']:5s} consumer: popped {d['popped']}, freed {d['freed']}, pop tag "
                         f"{d['pop_tag']}, free tag {d['free_tag']}, holds {d['held'] or 'nothing'}")
    for m in st["missing"]:
        lines.append(f"    no {m} bound: nobody will {'push to' if m == 'producer' else 'pop from'} this ring "
                     "(do producer and consumer use the same FlagID?)")
    for p, slots in st["slots"].items():
        cells = " ".join(f"{t}:{s}" for t, s in enumerate(slots))
        fl = st["flags"][p]
        lines.append(f"    AIV{p} slots [{cells}]  ready flags {fl['ready']}  free flags {fl['free']}")
    for p in ch.silent_lanes:
        fl = st["flags"][p]
        lines.append(f"    AIV{p} no slots (a lane of the Cube's handshakes only)  ready flags {fl['ready']}  "
                     f"free flags {fl['free']}")
    return "\n".join(lines)


def overwrite_error(core, ch, s, op: str, loc) -> ProtocolError:
    """A push into slot ``s`` that a consumer has not popped or still holds."""
    if ch.way == C2V:
        who = next(core.cluster.aiv(p).name for p in ch.peers if ch.slots[p][s.tag] is s)
    else:
        who = "AIC"
    how = ("reused before freed: " + who + " popped it" + (f" at {s.pop_loc}" if s.pop_loc else "")
           + " and has not freed it (no TFREE yet)"
           if s.state == "held" else
           "written before it was read: " + who + " has not popped the previous tile"
           + (f" (pushed at {s.push_loc})" if s.push_loc else ""))
    side = ch.sides[core.index]
    fix = ch.model.overwrite_fix(ch, side.allocate)
    if side.earlier is not None and side.index < ch.slot_num:
        at, pushed, drained = side.earlier
        fix = (f"this pipe object's pushes start at slot 0 again: the earlier object (bound at {at}) pushed "
               f"{pushed} tile{'s' if pushed != 1 else ''} and its teardown waited for {drained} free "
               f"credit{'s' if drained != 1 else ''} per flag ({ch.model.name}), not for every slot's free - "
               "construct the pipe once, before the loop, or push a number of tiles per object after which "
               "the drain waits for the last free (a multiple of SyncPeriod)")
    return ProtocolError(
        f"{op} overwrites slot {s.tag} of {ch.name}, {how}",
        where=str(loc or core.where()),
        details=f"push #{side.index}, protocol {ch.model.name}, "
                f"SlotNum {ch.slot_num}, SyncPeriod {ch.sync_period}",
        fix=fix)


def held_slot_at(core, space, lo: int, hi: int):
    """(slot, generation) of the ring slot or staging slot of ``core`` in memory ``space``
    that holds a popped tile not yet freed and contains bytes [lo, hi) - what a TASSIGN view
    into a popped tile binds to, so that reading the view after the TFREE is a use after
    free - else None."""
    for ch in core.cluster.state.channels.values():
        side = ch.sides.get(core.index)
        if side is None or side.role != "consumer":
            continue
        for h in side.held:
            stage = h[6]
            if stage is not None:
                st, gen = stage
                if st.gen == gen and st.addr <= lo and hi <= st.addr + ch.slot_size:
                    return stage
            elif not ch.in_gm and h[1].__class__.__name__ == "Tile" and h[1].space is space:
                base = ch.local_base + h[0] * ch.slot_size
                if base <= lo and hi <= base + ch.slot_size:
                    sl = side.slots[h[0]][0]
                    return sl, sl.gen
        for p in side.popped:          # a GM ring's tile TPOP that freed its slot (pto-isa)
            stage = p[3]
            if stage is not None:
                st, gen = stage
                if st.gen == gen and st.addr <= lo and hi <= st.addr + ch.slot_size:
                    return stage
    return None


def released_by(slot, gen: int, op: str, what: str = "view") -> tuple:
    """``(cause, why, fix)`` of ``op`` using ``slot`` popped at generation ``gen`` after its
    release: ``cause`` names the TFREE that released it (None: not known); when that TFREE named
    another held slot's ``what`` (``Slot.free_names``: a popped "view" or "tile"), ``why`` says
    why it released this one and ``fix`` frees in pop order (else both are empty / None)."""
    if slot.free_gen != gen or slot.free_loc is None:
        return None, "", None
    by = slot.free_loc
    names = slot.free_names
    if names is None:
        return f"released by the TFREE at {by}", "", None
    tag, popped = names
    return (f"released by the TFREE at {by}",
            f"; that TFREE names the {what} popped at {popped}" + (f" (slot {tag})" if tag is not None else "")
            + ", but a TFREE releases the oldest "
            "slot held, whatever it names"
            + (" (pto-isa's TFREE(pipe, gmTensor) uses the tensor only to pick the overload)" if what == "view"
               else ""),
            f"free the popped {what}s in the order they were popped (first a TFREE for the {what} popped at "
            f"{slot.pop_loc}, then one for {popped}), or move the {op} before the TFREE at {by}")


def slot_use_after_free(tile, core) -> ProtocolError:
    slot, gen = tile.binding
    staged = slot.__class__.__name__ == "StageSlot"
    what = "a staging copy of a GM ring slot" if staged else f"slot {slot.tag} (zero-copy)"
    clobber = getattr(slot, "clobber", None)
    if clobber is not None and clobber[0] == gen and len(clobber) > 3:
        # a write of a kernel's tile that shares the staging ring's bytes (isa.regions)
        _g, at, _bug, by = clobber
        return MemoryConflictError(
            f"{tile.describe()} holds a staging copy of a GM ring slot, overwritten since by the {by} at {at}: "
            "that tile shares the staging ring's bytes", where=str(core.where()),
            details=f"popped at {slot.pop_loc}" if slot.pop_loc and slot.pop_gen == gen else None,
            fix=f"move the tile written at {at} out of the staging ring (LocalSlotNum x SlotSize from the "
                "consumer buffer), or finish reading the popped tile (or TMOV it away) before that write",
            findings=[{"kind": "ring_clobber", "tile": tile.describe(), "ring_write": str(at),
                       "read": str(core.where())}])
    if clobber is not None and clobber[0] == gen:
        # a library that strides its staging ring by tile size put a later pop on these bytes
        _g, at, bug = clobber
        return ProtocolError(
            f"use after free: {tile.describe()} holds a staging copy of a GM ring slot, overwritten by the "
            f"TPOP at {at}, which the library staged on the same bytes", where=str(core.where()),
            details=bug.note() if bug is not None else None,
            fix=(f"{bug.upgrade()}; with this pto-isa, pop tiles of one size per ring, or read (or TMOV "
                 "away) a popped tile before popping a smaller one") if bug is not None else None)
    # a staging slot's pop_loc is its latest TPOP's: this tile's if that TPOP made generation gen
    mine = not staged or slot.pop_gen == gen
    # the TFREE that ended this tile's life, when known (a later reuse may have followed)
    cause, why, order_fix = released_by(slot, gen, "read", "tile")
    if cause is None and staged:
        # the latest TPOP staged onto these bytes is the one that overwrote the copy
        cause = f"reused by the later TPOP at {slot.pop_loc}" if slot.pop_loc and not mine else \
            "reused by a later TPOP"
    elif cause is None:
        cause = "released (TFREE) or reused"
    popped = f"popped at {slot.pop_loc}" if slot.pop_loc and mine else None
    view = core.isa.get("ring_views", {}).get(id(tile))
    placed = None
    if view is not None and view[0]() is tile:          # (not another tile since given its id)
        _t, at, rlo, rhi, bound = view
        placed = (f"this tile was placed at {at} inside the ring's bytes [{rlo:#x}, {rhi:#x})"
                  + (f" (bound at {bound})" if bound else "") + ", over the popped tile: it is a view of "
                  "that tile, not a tile of its own - if it is meant as one, place it outside the ring, "
                  "or give the ring another consumer buffer (TPipe(...)(gm, c2v_consumer_buf, "
                  "v2c_consumer_buf): 0 by default)")
    return ProtocolError(
        f"use after free: {tile.describe()} holds {what}, {cause} since it was popped{why}",
        where=str(core.where()),
        details="\n".join(x for x in (popped, f"TFREE at {slot.free_loc}" if slot.free_gen == gen
                                       and slot.free_loc is not None else None, placed) if x) or None,
        # a GM ring's staging buffer has LocalSlotNum places: a later TPOP reuses one even
        # where the protocol (pto-isa) already freed the GM slot inside the first TPOP
        fix=order_fix if order_fix is not None else
            ("finish reading the popped tile before TFREE (and before a later TPOP reuses its staging "
             "place: LocalSlotNum bounds the popped tiles held at once; declare more with the 5th TPipe "
             "parameter, or local_slot_num= on pl.*_initialize_pipe), or copy it (TMOV) to a tile "
             "of your own") if staged else
            ("finish reading the popped tile before its TFREE (the tile is the ring slot itself, which "
             "the producer may refill at once), or copy it (TMOV) to a tile of your own"),
        findings=[{"kind": "use_after_free", "slot": slot.tag, "staged": staged,
                   "freed_at": str(slot.free_loc) if slot.free_gen == gen else None}])


def leaks(cluster, unpopped: bool = True) -> list:
    """Held slots, uncommitted TALLOCs and (``unpopped``) pushed-but-never-popped data at
    kernel end.  Unpopped data stays in the ring for a next launch (its ready credits carry
    over); held slots and TALLOCs die with the kernel."""
    out = []
    for ch in cluster.state.channels.values():
        for side in ch.sides.values():
            for h in side.held:
                out.append((f"{side.core.name} ends holding slot {h[0]} of {ch.name} (TPOP without TFREE: "
                            f"{side.index} TPOPs, {side.freed} TFREEs)", h[2]))
            for tag, _gt, loc in side.pending_alloc:
                out.append((f"{side.core.name} ends with slot {tag} of {ch.name} TALLOCed but never TPUSHed", loc))
        for p in ch.peers if unpopped else ():
            if p in ch.cfg.sim_lanes:
                continue        # (a lane only the CPU simulator adds: the device's pipe has none)
            for s in ch.slots[p]:
                if s.state == "written":
                    who = cluster.aiv(p).name if ch.way == C2V else "AIC"
                    core = cluster.aiv(p) if ch.way == C2V else cluster.aic
                    out.append((f"slot {s.tag} of {ch.name} was pushed but {who} never popped it"
                                f"{_unpopped_why(cluster, ch, p, core)}", s.push_loc))
    return out


def _unpopped_why(cluster, ch, lane, core) -> str:
    """Why ``core`` left a tile of lane ``lane`` of ``ch`` unpopped: it never bound the pipe,
    or it stopped popping - how many it popped of how many were pushed, and its last TPOP
    (the trip count to compare with the producer's)."""
    who = core.name
    side = ch.sides.get(core.index)
    if side is None:
        return (f" ({who} never binds the pipe: every lane of a pipe with lanes "
                f"{','.join('AIV%d' % q for q in ch.peers)} takes part in every handshake, a lane "
                "with no data replays it with an empty valid shape)")
    prod = cluster.aic if ch.way == C2V else cluster.aiv(lane)
    pside = ch.sides.get(prod.index)
    pushed = f" of the {pside.pushed} {prod.name} pushed" if pside is not None else ""
    last = f"last TPOP at {_last_at(side, ch)}" if side.index else f"it bound the pipe at {side.bound_at}"
    return f" ({who} popped {side.index}{pushed}; {last})"


def unpaired_frees(cluster) -> list:
    """Portability warnings where the TPOP frees its slot itself (pto-isa, GM ring: the
    TFREE is a no-op there): TPOPs with no TFREE, and TFREEs with no TPOP, run on this
    platform but hang or break on A5 and under the spec protocol."""
    out = []
    # (on A5 itself, its consumer-local rings: a GM ring there is what frees in the TPOP)
    elsewhere = ("A5's consumer-local rings and the spec protocol" if cluster.platform.name == "a5"
                 else "A5 and under the spec protocol")
    for ch in cluster.state.channels.values():
        if not ch.pop_frees:
            continue
        for side in ch.sides.values():
            if side.role != "consumer":
                continue
            where = f"harmless here (pto-isa's TPOP frees the GM slot on {cluster.platform.name}) but " \
                    f"a slot never freed on {elsewhere}"
            n = side.self_freed
            if side.tfrees < n:
                # the first TPOP left unpaired (TFREE j pairs TPOP j), or, past the pops the run
                # remembers (``ops._POPPED_MAX``), the oldest remembered: unpaired too
                popped = side.popped
                loc = popped[-min(n - side.tfrees, len(popped))][2] if popped else None
                out.append((f"{n - side.tfrees} of {n} TPOPs of {ch.name} on "
                            f"{side.core.name} have no TFREE: {where}", loc))
            elif side.extra_free is not None:
                loc, k, before = side.extra_free
                what = (f"{side.core.name} TFREEs {ch.name} {side.tfrees} times after {n} TPOPs: the extra "
                        "TFREE" if side.tfrees > n else
                        f"{side.core.name}'s TFREE #{k} of {ch.name} has no TPOP to pair (it follows {before} "
                        f"TPOP(s) and {k - 1} TFREE(s)): a TFREE before its TPOP")
                out.append((f"{what} is a no-op here but a misuse on {elsewhere}", loc))
    return out


def held_repops(cluster) -> list:
    """Where the TPOP frees its slot itself (pto-isa, GM ring): the TPOPs into a tile whose
    earlier pop the kernel freed only after them (``ops._check_repop``), said at the exit, when
    the TFREE that ended that hold is known; a pop never TFREEd is :func:`unpaired_frees`'s."""
    out = []
    for ch in cluster.state.channels.values():
        if ch.pop_frees:
            for side in ch.sides.values():
                out += [(what, here) for i, what, here in side.repops if side.tfrees > i]
    return out


def zeroed_pops(cluster) -> list:
    """Warnings where the library handed a TPOP zeros instead of its tile (pto-isa's CPU
    simulator on AIV1 of a TILE_NO_SPLIT C2V ring, ``ProtocolModel.pop_zeroes``): what the
    kernel computed from them is the simulator's, not the device's."""
    from ...protocol.model import compile_model
    out = []
    for ch in cluster.state.channels.values():
        if not ch.zero_pops:
            continue
        device = compile_model(ch.model.protocol, ch.model.platform or "a2a3")
        there = ("on the device (pto-isa on A5) a TILE_NO_SPLIT C2V tile reaches AIV0 only and AIV1's TPOP "
                 "of it is an error (`--protocol pto-isa` reports it)" if device.nosplit_lane0 else
                 "on the device AIV1's TPOP loads the tile as AIV0's does")
        for side in ch.sides.values():
            if side.zeroed is not None:
                n, loc = side.zeroed
                out.append((f"{n} TPOP{'s' if n != 1 else ''} of {ch.name} on {side.core.name} got zeros: "
                            "pto-isa's CPU simulator fills the second Vector lane's TILE_NO_SPLIT tile with "
                            f"zeros (TPOP_IMPL), so what {side.core.name} computes from it is the simulator's, "
                            f"not the device's: {there}", loc))
    return out
