"""Event tokens and TSYNC, as pto-isa's ``Event<SrcOp, DstOp>`` / ``RecordEvent``.

Every instruction returns an :class:`Event` that records when it completes; ``TSYNC(e...)``
holds the core's issue until those events have completed, and ``TSYNC(Op.TADD)`` is a
barrier on the pipe that op runs on (the pipes pto-isa's TSYNC<Op> takes on the platform).
"""
from __future__ import annotations

from enum import Enum
from functools import partial
from operator import itemgetter

from ..arch import PipeUnit
from ..arch.catalogue import OPS
from ..errors import KernelError
from .context import current_core


# pto-isa's ``Op`` names with the pipe its ``OpPipeEntry`` gives each (include/pto/common/
# event.hpp): the movement and cube ops, TVEC (any vector op) and every vector instruction of
# the op catalogue (the V pipe); TMOV_M2V has no entry there (pipe None: no TSYNC<Op> barrier)
_PIPES = {"TLOAD": PipeUnit.MTE2, "TSTORE_ACC": PipeUnit.FIX, "TSTORE_VEC": PipeUnit.MTE3,
          "TMOV_M2L": PipeUnit.MTE1, "TMOV_M2S": PipeUnit.FIX, "TMOV_M2B": PipeUnit.MTE1,
          "TMOV_M2V": None, "TMOV_V2M": PipeUnit.FIX, "TMATMUL": PipeUnit.M}
_PIPES["TVEC"] = PipeUnit.V
_PIPES.update((op.name, op.pipe) for op in OPS.values() if op.pipe is PipeUnit.V)
# ... and its other names, of a pipe or of ops the catalogue has no vector entry for (an
# ``Event<Op::SCALAR, Op::TRANDOM>`` that Init() records on the scalar pipe)
_PIPES.update({"SCALAR": PipeUnit.S, "VECTOR": PipeUnit.V, "TRESHAPE": PipeUnit.S, "TEXPANDS_MAT": PipeUnit.MTE2,
               "TMOV_V2V": PipeUnit.V, "TEXTRACT_V2M": PipeUnit.FIX, "TMOV_M2R": PipeUnit.MTE1,
               "TMOV_A2V": PipeUnit.FIX, "TMOV_A2M": PipeUnit.FIX, "TSTORE_MAT": PipeUnit.MTE3,
               "TGEMV": PipeUnit.M, "TEXTRACT_M2LR": PipeUnit.MTE1, "TEXTRACT_A2M": PipeUnit.FIX,
               "TINSERT_A2M": PipeUnit.FIX, "TIMG2COL": PipeUnit.MTE1, "SETFMATRIX": PipeUnit.S,
               "SET_IMG2COL_RPT": PipeUnit.S, "SET_IMG2COL_PADDING": PipeUnit.S, "TSUBRELUCONV": PipeUnit.V,
               "TPREFETCH": PipeUnit.MTE2, "TFILLPAD_VEC": PipeUnit.V, "TFILLPAD_MAT": PipeUnit.MTE2,
               "MGATHER_VEC": PipeUnit.V, "MGATHER_MAT": PipeUnit.MTE2, "MSCATTER": PipeUnit.V})
Op = Enum("Op", {name: name for name in _PIPES}, module=__name__)
Op.__doc__ = "An instruction kind of ``TSYNC<Op>()`` (pto-isa's ``Op``)."
Op.pipe = property(lambda self: _PIPES[self.value])     # the pipe its instructions run on

#: the pipes ``TSYNC<Op>()`` (a ``pipe_barrier`` of the op's pipe) takes per platform, and the
#: line of pto-isa's TSYNC_IMPL whose static assert refuses the others: A2A3 S / V / M / MTE1 /
#: MTE2 / MTE3 / FIX, A5 MTE2 / MTE3 only (no vector-op barrier there)
_BARRIER_PIPES = {"a2a3": frozenset((PipeUnit.S, PipeUnit.V, PipeUnit.M, PipeUnit.MTE1, PipeUnit.MTE2,
                                     PipeUnit.MTE3, PipeUnit.FIX)),
                  "a5": frozenset((PipeUnit.MTE2, PipeUnit.MTE3))}
_BARRIER_RULE = {"a2a3": "include/pto/npu/a2a3/TSync.hpp:36", "a5": "include/pto/npu/a5/TSync.hpp:29"}


class Event(tuple):
    """The completion of one instruction (``RecordEvent``): ``(op, core, end)``.

    A tuple, so instructions create it without running Python code (``new_event``)."""
    __slots__ = ()

    def __new__(cls, op: str, core, end: int):
        return tuple.__new__(cls, (op, core, end))

    def __getnewargs__(self):          # pickle: the fields, as __new__ takes them
        return tuple(self)

    op = property(itemgetter(0))
    core = property(itemgetter(1))
    end = property(itemgetter(2))

    def Wait(self) -> None:
        TSYNC(self)

    def __repr__(self) -> str:
        return f"<Event {self[0]} done@{self[2]}>"


new_event = partial(tuple.__new__, Event)   # new_event((op, core, end)): the hot-path constructor


def record(op) -> Event:
    """pto-isa's ``Event<SrcOp, DstOp>::Init()`` / ``Record()`` (event.hpp): an event set on
    ``op``'s pipe now, with no instruction of its own - it completes when that pipe has done
    what the core issued to it so far (a kernel's scalar work before a vector op: ``Event<
    Op::SCALAR, Op::TRANDOM> e; e.Init(); TRANDOM(dst, key, counter, e)``)."""
    core = current_core()
    op = op if isinstance(op, Op) else Op(op)
    pipe = op.pipe
    return new_event((op.value, core, core.clock if pipe is None else max(core.clock, core.pipe_free[pipe])))


def TSYNC(*events) -> None:
    """``TSYNC(e0, e1, ...)`` waits for event tokens; ``TSYNC(Op.TADD)`` is a barrier of the
    op's pipe (here V: A2A3 only), ``TSYNC(Op.TLOAD)`` of MTE2 (:data:`_BARRIER_PIPES`); an op
    whose pipe the platform's TSYNC_IMPL refuses is a KernelError at the line."""
    core = current_core()
    for e in events:
        if isinstance(e, Op):
            plat = core.cluster.platform.name
            rules = plat if plat in _BARRIER_PIPES else "a2a3"
            ok = _BARRIER_PIPES[rules]
            if e.pipe not in ok:
                takes = " / ".join(sorted(p.name for p in ok))
                raise KernelError(f"TSYNC<{e.value}>() is no barrier on {plat}: "
                                  + (f"pto-isa's {e.value} has no pipe of its own" if e.pipe is None else
                                     f"pto-isa's TSYNC<Op> there takes ops of {takes} only, not "
                                     f"{e.pipe.name}"),
                                  where=str(core.where()),
                                  fix="use TSYNC(event) (the instruction's event token) or pipe_barrier / "
                                      f"set_flag / wait_flag (pto-isa's {_BARRIER_RULE[rules]} static-asserts "
                                      f"{takes} for TSYNC<Op>)")
            t = core.pipe_free[e.pipe]
            if core.porder is not None:         # (the race checker) the pipe's work before all
                core.porder.fence(e.pipe)
        elif isinstance(e, Event):
            if e.core is not core:
                if e.core.cluster is not core.cluster:
                    raise KernelError(f"TSYNC on an event of an earlier run ({e[0]} on {e.core.name})",
                                      where=str(core.where()),
                                      fix="events belong to the run that made them; wait on this run's")
                raise KernelError(f"TSYNC on an event of {e.core.name} inside {core.name}",
                                  where=str(core.where()),
                                  fix="events synchronise pipes of one core; use a TPipe across cores")
            t = e.end
            ps = core.psync
            if ps is not None and ps.manual:    # manual sync: waiting on an event orders
                ps.fence()                      # every pipe after it (conservatively: all)
            if core.porder is not None:         # (the race checker: the same)
                core.porder.fence()
        elif e is None:
            # pto-isa's TSYNC takes events; a None is a variable that never got an
            # instruction's event (e.g. ``prev = None`` before a loop that waits on it)
            raise KernelError("TSYNC(None): None is not an event - this TSYNC (or an instruction's "
                              "event argument) waits for nothing", where=str(core.where()),
                              fix="pass the Event an instruction returned (e = TLOAD(...); TSYNC(e)), "
                                  "or leave the TSYNC out where there is nothing to wait for (the "
                                  "first iteration of a loop)")
        elif e.__class__.__name__ == "Tile":
            # an instruction given a tile beyond the operands of its ISA form: its trailing
            # arguments are wait events
            raise KernelError(f"a Tile where a wait event goes: {e!r} follows the operands this form of the "
                              "instruction takes", where=str(core.where()),
                              fix="pass the operands pto-isa's overload takes, then wait events (docs/cpp.md "
                                  "lists the tmp-tile forms ptopipe takes); a tmp tile pto-isa's form does "
                                  "not have goes out")
        else:
            raise KernelError(f"TSYNC expects Event tokens or an Op, got {e!r}", where=str(core.where()))
        if t > core.clock:
            core.hold(t, "event", e)      # counted as an event stall of this core
    core.clock += 1
    b = core.budget = core.budget - 1     # toward the budget: a TSYNC loop cannot run forever
    if core.instructions > b or core.until is not None:
        core.check_step()
