"""What the pipe layer tells the user: the ring state (for deadlock reports and
``describe_state``), what a blocked core holds, slot misuse errors (overwrite while in
use, use after free) and the leaks at kernel end (held slots, uncommitted TALLOCs, data
pushed but never popped)."""
from __future__ import annotations

from ...arch.vocab import C2V
from ...errors import ProtocolError

_STATE_WORD = {"free": "free", "written": "full", "held": "held"}


def explain(cluster) -> str:
    """Deadlock explainer: the state of every ring."""
    chans = cluster.shared.get("channels", {})
    if not chans:
        return ""
    return "ring state:\n" + "\n".join(describe_ring(c) for c in chans.values())


def holdings(cluster, core) -> list:
    """What ``core`` holds on the rings: popped-but-not-freed slots, TALLOCs not pushed."""
    out = []
    for ch in cluster.shared.get("channels", {}).values():
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
    """(cause, fix) naming the culprit of a deadlock on the rings, or None: the lane that
    never runs (or never binds the pipe), the free credit withheld by the protocol's
    notification rule (with its arithmetic), or the TPOP whose TFREE the blocked push
    waits for (the oldest slot the waited-for consumer holds on that pipe)."""
    for c in blocked:
        w = c.waiting
        ch, signal = w.info.get("channel"), w.info.get("signal")
        if ch is None or signal not in ("ready", "free") or not hasattr(ch, "sides"):
            continue
        other = w.flag.sender
        found = _absent_lane(cluster, ch, c, other, signal) or \
            (_free_culprit(ch, c, other) if signal == "free" else None)
        if found:
            return found
    return None


def _absent_lane(cluster, ch, core, other, signal):
    """The core ``core`` waits for never takes part in ``ch``: no kernel, no binding, or a
    binding of another pipe of the same direction (the two ends disagree on the FlagID)."""
    if other.index in ch.sides:
        return None
    role = "consumer" if signal == "free" else "producer"
    twin = next((c2 for c2 in cluster.shared.get("channels", {}).values()
                 if c2 is not ch and c2.way == ch.way and other.index in c2.sides
                 and core.index not in c2.sides), None)
    if twin is not None:
        return (f"{core.name} binds {ch.name} at {ch.sides[core.index].bound_at} but {other.name} binds "
                f"{twin.name} at {twin.sides[other.index].bound_at}: the two ends of the pipe use different "
                f"FlagIDs, so {core.name}'s {'TPUSH' if signal == 'free' else 'TPOP'} waits on a flag "
                f"{other.name} never sets",
                "producer and consumer must use the same FlagID (and direction, SlotNum) for one pipe")
    why = "runs no kernel" if other.state.value == "idle" else f"never binds it ({other.state.value})"
    cause = (f"{other.name} is a {role} lane of {ch.name} but {why}: {core.name} waits for "
             f"its {'free' if signal == 'free' else 'ready'} signal, which never comes")
    if other.name.startswith("AIV"):
        rest = tuple(p for p in ch.peers if f"AIV{p}" != other.name)
        fix = (f"run the Vector kernel on {other.name} too (aiv=fn runs one function on both sub-blocks) and "
               f"bind the pipe there" + (f", or give the pipe peers={rest} (one lane)" if rest else ""))
    else:
        fix = f"run the Cube kernel and bind {ch.name} on it"
    return cause, fix


def _free_culprit(ch, core, cons):
    """A producer blocked on a free credit: withheld by the notification rule, or a slot
    the consumer popped and never freed."""
    pside, cside = ch.sides.get(core.index), ch.sides.get(cons.index)
    if pside is None or cside is None:
        return None
    i = pside.index - len(pside.pending_alloc)
    withheld = ch.model.withheld_credit(ch, i, cside.freed, cons.name)
    if withheld:
        state = ("is blocked at " + str(cons.where())) if cons.state.value == "blocked" else "has ended"
        if cside.held:
            state += (f", holding {len(cside.held)} popped tile(s) (oldest: slot {cside.held[0][0]}, TPOP at "
                      f"{cside.held[0][2]})")
        return f"{withheld[0]}; {cons.name} {state}", withheld[1]
    if cside.held:
        tag, loc = cside.held[0][0], cside.held[0][2]
        state = "is blocked" if cons.state.value == "blocked" else "has ended"
        return (f"{core.name}'s push #{i} waits for {cons.name}'s TFREE #{ch.model.frees_needed(ch, i)} of "
                f"{ch.name}; {cons.name} has made {cside.freed}, {state} and still holds slot {tag} "
                f"popped by the TPOP at {loc} (the next TFREE would release it)", ch.model.held_fix(loc))
    return None


def ring_state(ch) -> dict:
    """Structured state of one channel: slots per consumer peer, cursors per side."""
    n = ch.slot_num
    sides = []
    for s in ch.sides.values():
        d = {"core": s.core.name, "role": s.role}
        if s.role == "producer":
            d.update(pushed=s.index, next_tag=s.index % n, allocated=[t for t, _, _ in s.pending_alloc])
        else:
            d.update(popped=s.index, freed=s.freed, pop_tag=s.index % n,
                     free_tag=(s.held[0][0] if s.held else s.index % n),
                     held=[h[0] for h in s.held])
        sides.append(d)
    flags = {}
    for p in ch.peers:
        flags[p] = {"ready": [f.count for f in ch.ready_flags.get(p, ())],
                    "free": [f.count for f in ch.free_flags.get(p, ())]}
    roles = {s.role for s in ch.sides.values()}
    return {"pipe": ch.name, "direction": ch.way, "protocol": ch.protocol.value, "slot_num": n,
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
    return ProtocolError(
        f"{op} overwrites slot {s.tag} of {ch.name}, {how}",
        where=str(loc or core.where()),
        details=f"push #{ch.sides[core.index].index}, protocol {ch.protocol.value}, "
                f"SlotNum {ch.slot_num}, SyncPeriod {ch.sync_period}",
        fix=ch.model.overwrite_fix(ch, ch.sides[core.index].allocate))


def slot_use_after_free(tile, core) -> ProtocolError:
    slot, gen = tile.binding
    staged = slot.__class__.__name__ == "StageSlot"
    what = "a staging copy of a GM ring slot" if staged else f"slot {slot.tag} (zero-copy)"
    if slot.free_gen == gen and slot.free_loc is not None:
        # the TFREE that ended this tile's life (a later reuse may have followed)
        cause = f"released by the TFREE at {slot.free_loc}"
    else:
        cause = "reused by a later TPOP" if staged else "released (TFREE) or reused"
    popped = f"popped at {slot.pop_loc}" if slot.pop_loc and not staged else None
    return ProtocolError(
        f"use after free: {tile.describe()} holds {what}, {cause} since it was popped",
        where=str(core.where()),
        details="\n".join(x for x in (popped, f"TFREE at {slot.free_loc}" if slot.free_gen == gen
                                       and slot.free_loc is not None else None) if x) or None,
        # a GM ring's staging buffer has LocalSlotNum places: a later TPOP reuses one even
        # where the protocol (pto-isa) already freed the GM slot inside the first TPOP
        fix=("finish reading the popped tile before TFREE (and before a later TPOP reuses its staging "
             "place: LocalSlotNum bounds the popped tiles held at once), or copy it (TMOV) to a tile "
             "of your own") if staged else
            ("finish reading the popped tile before its TFREE (the tile is the ring slot itself, which "
             "the producer may refill at once), or copy it (TMOV) to a tile of your own"),
        findings=[{"kind": "use_after_free", "slot": slot.tag, "staged": staged,
                   "freed_at": str(slot.free_loc) if slot.free_gen == gen else None}])


def leaks(cluster) -> list:
    """Held slots, uncommitted TALLOCs and pushed-but-never-popped data at kernel end."""
    out = []
    for ch in cluster.shared.get("channels", {}).values():
        for side in ch.sides.values():
            for h in side.held:
                out.append((f"{side.core.name} ends holding slot {h[0]} of {ch.name} (TPOP without TFREE)",
                            h[2]))
            for tag, _gt, loc in side.pending_alloc:
                out.append((f"{side.core.name} ends with slot {tag} of {ch.name} TALLOCed but never TPUSHed", loc))
        for p in ch.peers:
            for s in ch.slots[p]:
                if s.state == "written":
                    who = cluster.aiv(p).name if ch.way == C2V else "AIC"
                    out.append((f"slot {s.tag} of {ch.name} was pushed but {who} never popped it", s.push_loc))
    return out
