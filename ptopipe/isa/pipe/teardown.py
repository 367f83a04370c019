"""Kernel exit on the rings: the producer's teardown (pto-isa's ``~TPipe()`` drain of pending
free credits), the per-flag ledger of a launch, and credits one launch leaves to the next.

At kernel end every producer side drains what the protocol model says is still pending on
each free flag (:meth:`~.protocol.ProtocolModel.teardown_drain`).  A drain that waits for
more credits than are outstanding is the hang the device shows at the destructor
(:class:`DeadlockError` at the line where the pipe goes out of scope); credits left after
the drain are a leak (what the next launch on the same FlagID would inherit).  The ledger
row of a flag says, for one launch: credits inherited, sent (SETs), consumed by the
kernels' WAITs, drained by the teardown, left.

With several launches (``run(..., launches=K)``) the flag counters carry over; a WAIT that
takes an inherited credit is reported there, naming the launch that left it
(:func:`carried_credit`).
"""
from __future__ import annotations

import sys
from functools import lru_cache

from ...errors import DeadlockError, ProtocolError
from ...sim.location import SourceLoc, is_internal


#: the fix of free credits left after the teardown drain
TEARDOWN_LEAK_FIX = ("let every push wait where the protocol waits (setAllocateStatus(false) on a push that "
                     "would wait leaves its credit behind), or take the credit back with that wait before the "
                     "kernel ends; send one free per popped tile (none where the TPOP already freed the slot: "
                     "pto-isa's A5 GM rings); the flag counter outlives the kernel")


def scope_end(core):
    """Where a pipe bound now goes out of scope: the last line of the kernel function the
    core runs (or, if that is not user code, of the user function that binds the pipe; an
    interpreted kernel: the binding's own location)."""
    if core.loc_override is not None:
        return core.loc_override
    kernel = getattr(getattr(core, "kernel", None), "__code__", None)
    f = sys._getframe(1)
    user = None
    while f is not None:
        if f.f_code is kernel:
            user = f
            break
        if user is None and not is_internal(f.f_code):
            user = f
        f = f.f_back
    if user is None:
        return core.where()
    code = user.f_code
    return SourceLoc(code.co_filename, _last_line(code) or user.f_lineno, None, code.co_name)


@lru_cache(maxsize=256)
def _last_line(code) -> int | None:
    """The last line of a function's code (a scan of its line table: once per kernel, not
    once per pipe bound in every run)."""
    return max((ln for _s, _e, ln in code.co_lines() if ln is not None), default=None)


def _drain_name(model, ch) -> str:
    if model.protocol.value != "pto-isa":
        return "the producer's teardown (one wait per slot's free flag)"
    if model.teardown_drain(ch, 0) == ch.sync_period and _drain_bug(model, ch) is not None:
        return f"the producer's TPipe destructor (pto-isa ~TPipe: a fixed SyncPeriod = {ch.sync_period} waits)"
    return "the producer's TPipe destructor (pto-isa ~TPipe: numPopFree - numPushWait)"


def _drain_bug(model, ch):
    """The library bug behind ``ch``'s drain, if its model has one (a fixed SyncPeriod drain, or
    the constructor credits whose destructor drains SyncPeriod)."""
    if model.ctor_credit_pipe(ch):
        return model.bug("ctor_credit_local") or model.bug("ctor_credit_pipes")
    return model.bug("fixed_drain") if model.fixed_drain and not ch.wait_every else None


def _free_links(ch, side):
    """(lane, flag) of every free flag a producer side waits on."""
    for i, p in enumerate(side.flag_links):
        seen = []
        for tag_flags in side.free_flags:
            f = tag_flags[i]
            if f not in seen:
                seen.append(f)
                yield p, f


def _row(f, launch: int) -> dict:
    inherited = f.origin["left"] if f.origin else 0
    consumed = inherited + f.sets - f.drained - f.count
    ch = f.owner
    return {"launch": launch, "flag": f.id, "name": f.name, "signal": f.signal,
            "pipe": ch.name if ch is not None else None, "inherited": inherited, "sent": f.sets,
            "consumed": consumed, "drained": f.drained, "left": f.count}


def describe_row(r: dict) -> str:
    what = f"{r['name']}" + (f" ({r['signal']} of {r['pipe']})" if r["pipe"] else "")
    inh = f"inherited {r['inherited']} / " if r["inherited"] else ""
    return (f"{what}: {inh}sent {r['sent']} / consumed {r['consumed']} / drained {r['drained']} "
            f"/ left {r['left']}")


def teardown(cluster, launch: int = 1) -> list:
    """Run every producer's teardown drain; returns the leaks it finds, ``[(what, where)]``
    (free credits left after the drain).  Raises DeadlockError for a drain that waits for
    more credits than are outstanding."""
    found = []
    for ring in {id(ch.sim_ring): ch.sim_ring for ch in cluster.state.channels.values()
                 if ch.sim_ring is not None}.values():
        err = ring.stall()          # the CPU simulator hangs where the device runs on
        if err is not None:
            raise err
    for ch in cluster.state.channels.values():
        model = ch.model
        for side in ch.sides.values():
            if side.role != "producer":
                continue
            pushed = side.pushed
            need_all = model.teardown_drain(ch, pushed)
            end = side.scope_end
            bug = _drain_bug(model, ch)
            for p, f in _free_links(ch, side):
                if f.sender.index not in ch.sides:
                    continue        # the link's consumer never bound: it sent nothing to drain
                # (a lane only the CPU simulator adds may leave its tiles unfreed: the simulator
                # has no destructor drain, and on the device the lane is not the pipe's)
                need = min(need_all, f.count) if p in ch.cfg.sim_lanes else need_all
                if need > f.count and p in ch.silent_lanes:
                    raise _silent_lane_hang(ch, side, f, p, need, end)
                if need > f.count:
                    r = _row(f, launch)
                    raise DeadlockError(
                        f"teardown of {ch.name} on {side.core.name} hangs: {_drain_name(model, ch)} at kernel end "
                        f"waits for {need} free credit{'s' if need != 1 else ''} on {f.name} but only "
                        f"{f.count} {'is' if f.count == 1 else 'are'} outstanding (sent {r['sent']} / "
                        f"consumed {r['consumed']} / awaited {need})",
                        where=str(end),
                        details=(f"{bug.note()}\n" if bug else "") +
                                f"protocol {model.name}, SlotNum {ch.slot_num}, SyncPeriod "
                                f"{ch.sync_period}: after {pushed} pushes the protocol expects "
                                f"{need} more free credit(s) than the pushes waited for\n"
                                f"the pipe was bound at {side.bound_at}; the device hangs here "
                                f"(AICPU timeout) instead of returning",
                        fix=(f"{bug.upgrade()} (the kernel is right: {model.name}'s destructor waits for "
                             f"{need} credits, {f.count} pending); with this pto-isa, push a number of "
                             "tiles that leaves exactly SyncPeriod release notifications pending" if bug else
                             model.moved_notice_fix(ch, ch.moved_silent[0], extra=False) if ch.moved_silent else
                             "the consumer must send every free the protocol counts on: pop every tile "
                             "pushed and release each one with its free on (setFreeStatus(false) or a "
                             "missing TPOP/TFREE leaves the destructor waiting)"),
                        findings=[dict(r, kind="teardown_hang", awaited=need, where=str(end))])
                if need:
                    f.count -= need
                    f.drained += need
                    del f.arrivals[:need]
                    if f.set_clocks:
                        del f.set_clocks[:need]
                    if f.pipe_orders:
                        del f.pipe_orders[:need]
                if f.count > 0:
                    r = _row(f, launch)
                    found.append((f"{f.name} (free of {ch.name}) keeps {f.count} credit"
                                  f"{'s' if f.count != 1 else ''} after the teardown drain (sent {r['sent']} / "
                                  f"consumed {r['consumed']} / drained {r['drained']}): "
                                  f"{_surplus_cause(ch, f, r, pushed)}; the next launch on this FlagID "
                                  f"inherits {'them' if f.count != 1 else 'it'} and its producer overruns "
                                  "the ring", end))
    return found


def _silent_lane_hang(ch, side, f, p: int, need: int, end) -> DeadlockError:
    """The Cube's ``~TMPipe`` waiting for the free of Vector lane ``p``, which the pto-isa TMPipe's
    VecCubeRatio leaves out: that lane constructed the pipe (its start-up credit let a push
    through) and pops nothing, so the wait never returns."""
    from .diagnostics import silent_lane_cause
    lane = side.core.cluster.aiv(p)
    lside = ch.sides[lane.index]
    state = (f"constructed the pipe at {lside.bound_at} but never pops and frees its tiles (its constructor's "
             f"start-up free credit let the Cube's first push through)")
    cause, fix = silent_lane_cause(ch, side.core.name, "TMPipe destructor", end, lane, "free", state)
    return DeadlockError(
        f"teardown of {ch.name} on {side.core.name} hangs: {cause}", where=str(end),
        details=(f"the producer's TMPipe destructor (pto-isa ~TMPipe: one prod.allocate()) waits for {need} free "
                 f"credit{'s' if need != 1 else ''} on {f.name}, {f.count} outstanding; the pipe was bound at "
                 f"{side.bound_at}"),
        fix=fix, findings=[dict(_row(f, 1), kind="tmpipe_one_lane", core=lane.name, pipe=ch.name,
                                waiter=side.core.name, where=str(end))])


def drain_now(core, ch, side) -> None:
    """The teardown of producer ``side`` of ``ch`` when its pipe object went out of scope before
    the kernel's end and ``core`` constructs the pipe again (:func:`.binding.reopen`): the drain
    of :func:`teardown`, as WAITs that block until the consumer's frees arrive - the credits the
    next object's pushes must not take - counted as drained.  Returns the credits waited for on
    each free flag."""
    if side.pending_alloc:
        tag, _gt, loc = side.pending_alloc[0]
        raise ProtocolError(f"{core.name} constructs {ch.name} again while its earlier object went out of "
                            f"scope with slot {tag} TALLOCed and never pushed", where=str(core.where()),
                            details=f"TALLOC at {loc}", fix="TPUSH every TALLOCed slot before the pipe object "
                                                          "goes out of scope")
    need_all = ch.model.teardown_drain(ch, side.pushed)
    what = f"the drain of the earlier {ch.name} object (bound at {side.bound_at}, out of scope)"
    for p, f in _free_links(ch, side):
        for _ in range(need_all):       # (a consumer that has not bound yet: its frees are still to come)
            core.wait_flag(f, lambda: f"{what}: wait free from {f.sender.name}",
                           {"channel": ch, "signal": "free", "tag": 0})
            f.drained += 1
    return need_all


def _surplus_cause(ch, f, r: dict, pushed: int) -> str:
    """Why a free flag holds credits after the drain: the consumer sent more frees than
    ``pushed`` tiles are due, or the producer skipped a wait the protocol makes."""
    side = next(sd for sd in ch.sides.values() if sd.role == "producer")
    tag = next((t for t, flags in enumerate(side.free_flags) if f in flags), 0)
    due = ch.model.frees_due(ch, pushed, tag)
    if r["sent"] > due:
        return f"the consumer sent {r['sent']} frees where {due} are due for {pushed} pushes{ch.surplus_note()}"
    if ch.startup_credits and not ch.wait_every:
        bug = _drain_bug(ch.model, ch)
        if bug is not None:
            return (f"the constructor's {ch.startup_credits} start-up credit(s) and the start-up window both "
                    f"count, and the fixed destructor drain leaves the release notifications on the flag - "
                    f"{bug.note()} ({bug.upgrade()})")
        return (f"the constructor's {ch.startup_credits} start-up credit(s) and the start-up window both "
                "count (pto-isa-head on A5: GM-backed and split pipes), and the fixed destructor drain "
                "leaves the release notifications on the flag")
    bug = _drain_bug(ch.model, ch)
    if bug is not None:
        return f"{bug.note()} ({bug.upgrade()})"
    return "a push skipped its free-slot wait"


def ledger(cluster, launch: int = 1) -> list:
    """The ledger rows of every flag a launch used (SET, inherited or left non-zero)."""
    return [_row(f, launch) for f in cluster.flags() if f.sets or f.count or f.origin or f.drained]


def carried_credit(cluster, core, flag) -> None:
    """A WAIT took a credit an earlier launch left on ``flag`` (``Cluster.carried_hooks``):
    the ring's ledger is off from here on - an overrun, reported at this instruction."""
    o = flag.origin or {}
    k = o.get("launch", "an earlier launch")
    ch = flag.owner
    pipe = f" of {ch.name}" if ch is not None else ""
    where = str(core.where())
    if flag.signal == "ready":
        what = (f"{core.name} pops data launch {k} pushed and never popped: it takes a ready credit launch "
                f"{k} left on {flag.name}{pipe} ({o.get('left', '?')} left), so it runs one tile ahead of "
                f"this launch's producer and reads a slot before it is written")
        fix = (f"launch {k} must pop every tile it pushes (its consumer popped fewer): the ready flag "
               "counter survives the kernel and the next launch reuses the FlagID")
    else:
        what = (f"{core.name} takes a free credit launch {k} left on {flag.name}{pipe} ({o.get('left', '?')} "
                f"left): this wait passes although this launch's consumer has not freed the slot, so the "
                f"producer overruns the ring")
        fix = (f"launch {k} must leave no free credit behind: every push waits where the protocol waits "
               "(setAllocateStatus(false) skips a wait) and the teardown drains the rest")
    raise ProtocolError(what, where=where,
                        details=(f"launch {k} ledger: " + describe_row(o)) if o else None,
                        fix=fix, findings=[{"kind": "carried_credit", "flag": flag.id, "launch": k,
                                            "left": o.get("left"), "where": where}])


def explain_carried(cluster) -> str:
    """Deadlock explainer: the credits this launch inherited."""
    rows = [f for f in cluster.flags() if f.origin]
    if not rows:
        return ""
    return "credits inherited from earlier launches:\n" + "\n".join(
        f"  {f.name}: {f.origin['left']} left by launch {f.origin['launch']}, {f.carried} not yet consumed"
        for f in rows)
