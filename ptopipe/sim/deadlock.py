"""Deadlock explanation: what every blocked core waits for, what it holds, the wait-for
cycle, and (from the layers above, through ``cluster.explainers``) the state of the rings.

Upper layers describe what a core *holds* (e.g. ring slots popped but not freed) through
``cluster.annotators``: callables ``(cluster, core) -> [dict(text=..., where=...)]``, and
name the culprit through ``cluster.hinters``: callables ``(cluster, blocked)`` returning
None or ``dict(cause=..., fix=...)`` - with ``where`` and ``finding`` when the cause is
itself the headline (e.g. a pipe lane that never takes part); the pipe layer knows its
protocol, the generic hints below are the fallback.
"""
from __future__ import annotations

from ..errors import DeadlockError
from .core import CoreState
from .flags import SYNCALL_FLAG


def _signal(w) -> str:
    sig, tag = w.info.get("signal"), w.info.get("tag")
    if sig:
        return f"{sig}[{tag}]" if tag is not None else sig
    return w.flag.name


def _holds(cluster, core) -> list:
    out = []
    for ann in getattr(cluster, "annotators", ()):
        out.extend(ann(cluster, core) or ())
    return out


def _compact(held) -> list:
    """Holdings grouped per pipe and source line: 'slots 0,1,2 of P (TPOP at f.py:9, no TFREE)'."""
    groups = {}
    for h in held:
        if "slot" in h and "pipe" in h:
            groups.setdefault((h["pipe"], h.get("kind"), h.get("where")), []).append(h["slot"])
        else:
            groups.setdefault((h["text"], None, None), [])
    out = []
    for (pipe, kind, where), slots in groups.items():
        if not slots:
            out.append(pipe)
            continue
        what = "TPOP" if kind == "held" else "TALLOC"
        miss = "no TFREE" if kind == "held" else "no TPUSH"
        out.append(f"slot{'s' if len(slots) > 1 else ''} {','.join(map(str, slots))} of {pipe} "
                   f"({what} at {where}, {miss})")
    return out


def _state_word(core) -> str:
    return {CoreState.DONE: "finished (its kernel returned)",
            CoreState.IDLE: "runs no kernel"}.get(core.state, core.state.value)


def wait_chain(cluster, blocked) -> tuple:
    """(text, [steps]) of the wait-for chain starting at the first blocked core."""
    steps, seen = [], []
    c = blocked[0]
    while c is not None and c.state is CoreState.BLOCKED and c not in seen:
        seen.append(c)
        w = c.waiting
        held = _holds(cluster, c)
        steps.append({"core": c.name, "waits": _signal(w), "flag": w.flag.id,
                      "from": w.flag.sender.name, "holds": _compact(held)})
        c = w.flag.sender
    parts = []
    for i, s in enumerate(steps):
        h = f" holds {'; '.join(s['holds'])} and" if s["holds"] and i else ""
        flag = "" if s["flag"] == SYNCALL_FLAG else f" (flag {s['flag']} from {s['from']})"
        parts.append(f"{s['core']}{h} waits {s['waits']}{flag}")
    text = " <- ".join(parts)
    if c is not None and c in seen:
        text += f" <- {c.name}: cycle"
        cycle = True
    else:
        text += f" <- {c.name}, which {_state_word(c)} and will never SET it" if c is not None else ""
        cycle = False
    return text, steps, cycle


def explain(cluster, blocked) -> DeadlockError:
    entries, lines = [], ["blocked:"]
    for c in blocked:
        w = c.waiting
        ch = w.info.get("channel")
        loc = str(c.where())
        held = _holds(cluster, c)
        # sparse frees (pto-isa): one notification per `sync_period` TFREEs; the channel's
        # protocol model sets it (1 under spec)
        sync = getattr(ch, "sync_period", 1)
        e = {"core": c.name, "instruction": w.what, "op": w.what.split()[0], "where": loc,
             "waits": _signal(w), "signal": w.info.get("signal"), "tag": w.info.get("tag"),
             "flag": w.flag.id, "flag_from": w.flag.sender.name, "flag_to": w.flag.receiver.name,
             "flag_count": w.flag.count, "pipe": getattr(ch, "name", None),
             "direction": getattr(ch, "way", None), "holds": held,
             "sync_period": sync, "pending_frees": _pending_frees(ch, w, sync),
             "sender_blocked": w.flag.sender.state is CoreState.BLOCKED,
             "sender_done": w.flag.sender.state is CoreState.DONE,
             "unpushed": _unpushed(ch, w.flag.sender),
             "sync": w.flag.sync_at if ch is None else None, **_fill(ch, c, w)}
        entries.append(e)
        pipe = f" on {e['pipe']}" if e["pipe"] else ""
        if w.flag.id == SYNCALL_FLAG:
            lines.append(f"  {c.name:5s} {e['op']:6s} at {loc}: waits for {w.flag.sender.name} to reach its SYNCALL")
        else:
            lines.append(f"  {c.name:5s} {e['op']:6s} at {loc}: waits {e['waits']} = flag {w.flag.id} "
                         f"{w.flag.sender.name}->{w.flag.receiver.name} (count {w.flag.count}){pipe}")
        for h in held:
            lines.append(f"  {'':5s} holds {h['text']}")
    for c in cluster.cores:
        if c.state is not CoreState.BLOCKED:
            lines.append(f"  {c.name:5s} {_state_word(c)}")
    chain, steps, cycle = wait_chain(cluster, blocked)
    lines.append("wait-for: " + chain)
    for ex in cluster.explainers:
        text = ex(cluster)
        if text:
            lines.append(text)
    findings = [dict(kind="blocked", **e) for e in entries]
    findings.append({"kind": "wait_for", "text": chain, "steps": steps, "cycle": cycle})
    # the rings a blocked core waits on, per pipe: the two ways of one bidirectional pipe
    # share its configuration (``cfg``), so they are one pipe to the user
    pipes = {getattr(c.waiting.info.get("channel"), "cfg", None) or e["pipe"] for c, e in zip(blocked, entries)
             if e["pipe"]}
    fix, what, where = None, None, entries[0]["where"]
    for hinter in cluster.hinters:
        found = hinter(cluster, blocked)
        if found:
            fix = found["fix"]
            lines.append("cause: " + found["cause"])
            findings.append({"kind": "cause", "text": found["cause"]})
            if "finding" in found:            # the cause heads the report
                findings.append(found["finding"])
                what, where = found["cause"], found["where"]
            break
    what = what or f"{len(blocked)} core(s) blocked forever ({', '.join(c.name for c in blocked)})"
    return DeadlockError(
        f"deadlock: {what}", where=where, details="\n".join(lines), fix=fix or _hint(entries, len(pipes)),
        findings=findings)


def _unpushed(ch, sender):
    """Where ``sender`` TALLOCed a slot of ``ch`` it never TPUSHed (the address flow), or None."""
    side = getattr(ch, "sides", {}).get(sender.index)
    pending = getattr(side, "pending_alloc", None)
    return str(pending[0][2]) if pending else None


def _fill(ch, core, w) -> dict:
    """For a producer waiting for a free slot of ``ch``: the ring's SlotNum, the tiles it
    pushed and the waited-for consumer lane popped (empty when either side is not bound)."""
    sides = getattr(ch, "sides", {})
    mine, theirs = sides.get(core.index), sides.get(w.flag.sender.index)
    if w.info.get("signal") != "free" or mine is None or theirs is None:
        return {}
    return {"slot_num": ch.slot_num, "pushed": mine.index, "popped": theirs.index}


def _order_cycle(entries) -> str | None:
    """The fix of a deadlock through two rings: a producer blocked on a ring its consumer has
    not popped while SlotNum tiles fill it, that consumer waiting in a TPOP of another ring
    of the same producer, whose next tile comes after the blocked push.  None otherwise."""
    for e in entries:
        if "slot_num" not in e or e["pushed"] - e["popped"] < e["slot_num"]:
            continue
        x = next((x for x in entries if x["core"] == e["flag_from"] and x["signal"] == "ready"
                  and x["pipe"] and x["pipe"] != e["pipe"] and x["flag_from"] == e["core"]), None)
        if x is None:
            continue
        return (f"{x['core']} drains {x['pipe']} (its TPOP at {x['where']}) while {e['pipe']} is full "
                f"({e['core']} pushed {e['pushed']}, {x['core']} popped {e['popped']}, SlotNum "
                f"{e['slot_num']}): {e['core']}'s TPUSH at {e['where']} waits for a slot of {e['pipe']} "
                f"before it pushes the next tile of {x['pipe']}. Pop the rings in the order "
                f"{e['core']} pushes them (one TPOP of each ring per iteration, as the TPUSHes "
                f"alternate), or give {e['pipe']} a SlotNum of at least the tiles pushed into it "
                f"before {x['core']} starts popping it")
    return None


def _pending_frees(ch, w, sync: int) -> int:
    """TFREEs the waited-for consumer made that a sparse (pto-isa) notification has not
    announced yet: the producer's wait needs ``sync - pending`` more."""
    if sync <= 1 or w.info.get("signal") != "free":
        return 0
    side = getattr(ch, "sides", {}).get(w.flag.sender.index)
    return getattr(side, "freed", 0) % sync if side is not None else 0


def _hint(entries, n_pipes: int) -> str:
    held = [h for e in entries for h in e["holds"]]
    free_waits = [e for e in entries if e["signal"] == "free"]
    if free_waits and held:
        h = held[0]
        return (f"{h['text']}: call TFREE after the TPOP at {h.get('where')} (every TPOP needs a "
                f"TFREE before the ring wraps back to its slot)")
    pipes = {e["pipe"] for e in entries if e["pipe"]}
    sparse = [e for e in free_waits if e["pending_frees"]]
    if sparse:
        e = sparse[0]
        return (f"{e['core']} waits for a free on {e['pipe']}: {e['flag_from']} has freed "
                f"{e['pending_frees']} slot(s) since its last notification, but protocol pto-isa "
                f"notifies only every {e['sync_period']} TFREEs (SyncPeriod), and {e['flag_from']} "
                f"{'is blocked' if e['sender_blocked'] else 'ended'} before its next one: free earlier, "
                "deepen the ring, or give the pipe sync_period=1")
    barrier = [e for e in entries if e.get("flag") == SYNCALL_FLAG]
    if barrier:
        e = barrier[0]
        state = "returned" if e["sender_done"] else "is blocked elsewhere" if e["sender_blocked"] else "goes on"
        return (f"{e['core']} waits at a SYNCALL for {e['flag_from']}, which {state} without reaching one: every "
                "core the barrier's core_type names must reach each SYNCALL the same number of times (a "
                "SYNCALL under a core- or lane-dependent branch, or an early return?)")
    own = [e for e in entries if e.get("sync")]
    if own:                 # a cross-core flag the kernel waits on itself (no ring's)
        e = own[0]
        state = "returned" if e["sender_done"] else "is blocked" if e["sender_blocked"] else "goes on"
        return (f"{e['core']} waits for cross-core flag {e['flag']} from {e['flag_from']}, which {state} "
                f"without setting it: set flag {e['flag']} on {e['flag_from']} once for every wait "
                "(a cross-core SET of the same id: pto.sync.set, set_intra_block or ffts_cross_core_sync; on A5 "
                "the Cube's ids 16..31 are AIV1's)")
    done = [e for e in entries if e.get("sender_done") and not e["pending_frees"]]
    if done:
        e = done[0]
        if e.get("unpushed"):
            return (f"{e['flag_from']} TALLOCed a slot of {e['pipe']} at {e['unpushed']} and returned without "
                    "its TPUSH: commit every TALLOCed slot with TPUSH(pipe, tensor)")
        pair = "TPOPs matches the number of TPUSHes" if e["signal"] == "ready" else \
            "TFREEs matches the number of TPOPs"
        return (f"{e['core']} waits for {e['waits']} from {e['flag_from']}, whose kernel returned: "
                f"check that the number of {pair} on every core and both Vector lanes (a "
                "lane-dependent trip count or an early return?)")
    order = _order_cycle(entries)
    if order:
        return order
    if n_pipes > 1:
        return ("the blocked cores wait on different pipes (" + ", ".join(sorted(pipes)) + "): check that "
                "producer and consumer use the same FlagID, direction and SlotNum")
    if free_waits:
        return ("a producer waits for a free slot: check that the consumer calls TFREE after every TPOP, "
                "and that both sides use the same FlagID and pipe")
    if any(e["signal"] == "ready" for e in entries):
        return ("a consumer waits for data that is never pushed: check that the number of TPOPs matches "
                "the number of TPUSHes and that both sides use the same FlagID")
    return "check the pairing of SET and WAIT"
