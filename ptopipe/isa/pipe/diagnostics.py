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
    how = ("still holds it (popped" + (f" at {s.pop_loc}" if s.pop_loc else "") + ", not yet freed)"
           if s.state == "held" else
           "has not popped the previous tile yet" + (f" (pushed at {s.push_loc})" if s.push_loc else ""))
    return ProtocolError(
        f"{op} overwrites slot {s.tag} of {ch.name} while {who} {how}",
        where=str(loc or core.where()),
        details=f"push #{ch.sides[core.index].index}, protocol {ch.protocol.value}, "
                f"SlotNum {ch.slot_num}, SyncPeriod {ch.sync_period}",
        fix=ch.model.overwrite_fix())


def slot_use_after_free(tile, core) -> ProtocolError:
    slot, gen = tile.binding
    return ProtocolError(
        f"use after free: {tile.describe()} holds the data of slot {slot.tag} (zero-copy on a local "
        f"ring, a staging copy on a GM ring), which was released (TFREE) or reused since it was popped",
        where=str(core.where()),
        details=f"popped at {slot.pop_loc}" if slot.pop_loc else None,
        # a GM ring's staging buffer has LocalSlotNum places: a later TPOP reuses one even
        # where the protocol (pto-isa) already freed the GM slot inside the first TPOP
        fix="finish reading the popped tile before TFREE (and before a later TPOP reuses its staging "
            "place: LocalSlotNum bounds the popped tiles held at once), or copy it (TMOV) to a tile "
            "of your own")


def leaks(cluster, unpopped: bool = True) -> list:
    """Held slots, uncommitted TALLOCs and (``unpopped``) pushed-but-never-popped data at
    kernel end.  Unpopped data stays in the ring for a next launch (its ready credits carry
    over); held slots and TALLOCs die with the kernel."""
    out = []
    for ch in cluster.shared.get("channels", {}).values():
        for side in ch.sides.values():
            for h in side.held:
                out.append((f"{side.core.name} ends holding slot {h[0]} of {ch.name} (TPOP without TFREE)",
                            h[2]))
            for tag, _gt, loc in side.pending_alloc:
                out.append((f"{side.core.name} ends with slot {tag} of {ch.name} TALLOCed but never TPUSHed", loc))
        for p in ch.peers if unpopped else ():
            for s in ch.slots[p]:
                if s.state == "written":
                    who = cluster.aiv(p).name if ch.way == C2V else "AIC"
                    out.append((f"slot {s.tag} of {ch.name} was pushed but {who} never popped it", s.push_loc))
    return out
