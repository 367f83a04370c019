"""TPREFETCH_ASYNC: pto-isa's L2 prefetch of a GM tensor through the SDMA engine
(docs/isa/TPREFETCH_ASYNC.md; include/pto/comm/async/sdma/TPrefetchAsyncImpl.hpp,
sdma_cmo_intrin.hpp), its :class:`PrefetchAsyncContext` and the :class:`AsyncEvent` it returns.

``TPREFETCH_ASYNC(src, ctx, *events)`` asks the SDMA engine to stage ``src`` in the L2 cache:
no byte of GM or of a local memory changes (ptopipe has no cache, so the later TLOADs cost what
they cost).  What the Vector core itself does, as pto-isa's NPU code runs it, is modelled:

- the event is valid - the prefetch is submitted - when the context has an SDMA workspace and
  ``src`` is a flat contiguous one-line tensor (``Shape<1, 1, 1, 1, n>``, unit stride) of at
  least one byte; otherwise the device submits nothing and returns an empty event
  (``valid()`` false), as here (a run warning says why, once per line);
- a submitted prefetch writes its SQE on the scalar unit and ends with ``pipe_barrier(PIPE_ALL)``
  (AddOneCmoSqe): the core's pipes drain before anything after it issues;
- the context's SDMA bookkeeping goes through a 256-byte scratch tile at UB 0x0
  (``PrefetchAsyncContext::scratchTile``, TASSIGNed there by TPREFETCH_ASYNC_IMPL): bytes a
  kernel wrote there before are overwritten on the device with the SDMA runtime's values, which
  ptopipe does not know - a run warning at the TPREFETCH_ASYNC names them (with the checkers
  on), the bytes themselves keep their values here;
- only a Vector core has the UB scratch: on the Cube it is a KernelError.

``AsyncEvent.Wait(session)`` / ``Test(session)`` return True at once (an empty event's do so on
the device too; a submitted one's wait for the SDMA engine, which ptopipe does not simulate).
pto-isa's CPU simulator makes TPREFETCH_ASYNC a no-op returning an empty event whatever the
arguments (its ``valid()`` is always false).  The SDMA workspace (prepared on the host by
``SdmaWorkspaceManager``) is not read: any GM pointer stands for it.
"""
from __future__ import annotations

from ..arch import MemSpace, PipeUnit
from ..arch.catalogue import PREFETCH_ASYNC_SQE_WRITES, PREFETCH_ASYNC_SCRATCH
from ..sim.core import CoreKind
from ..sim.pipesync import psync
from .context import current_core
from .events import Event, TSYNC
from .ops import _err, _not_a_tensor
from .tensor import GlobalTensor, GMPtr


class AsyncSession:
    """pto-isa's ``comm::AsyncSession`` as a PrefetchAsyncContext holds it (its SDMA state is the
    device runtime's; here it only names the session a Wait is given)."""
    __slots__ = ()


class AsyncEvent(Event):
    """pto-isa's ``comm::AsyncEvent`` of a submitted TPREFETCH_ASYNC (an Event: its end is the
    instruction's)."""
    __slots__ = ()

    def valid(self) -> bool:
        return True

    def Wait(self, session=None) -> bool:
        """Wait for the SDMA engine: done at once (ptopipe does not simulate it)."""
        return True

    def Test(self, session=None) -> bool:
        return True


class EmptyAsyncEvent:
    """The empty ``comm::AsyncEvent`` of a TPREFETCH_ASYNC that submitted nothing (no Event: a
    C++ kernel gets handle 0 for it, whose ``valid()`` is false)."""
    __slots__ = ()

    def valid(self) -> bool:
        return False

    def Wait(self, session=None) -> bool:
        return True

    def Test(self, session=None) -> bool:
        return True


class PrefetchAsyncContext:
    """pto-isa's ``PrefetchAsyncContext(workspace[, &externalSession])``: the SDMA workspace (a
    GM pointer or tensor; None: none) and the session a Wait takes (``GetSession()``)."""
    __slots__ = ("workspace", "session", "external")

    def __init__(self, workspace=None, session: AsyncSession | None = None):
        if workspace is not None and not isinstance(workspace, (GMPtr, GlobalTensor)):
            raise _err(current_core(), f"PrefetchAsyncContext workspace {workspace!r} is not a GM pointer",
                       "pass the SDMA workspace the host prepared, a GM argument of the kernel")
        self.workspace = workspace
        self.session = AsyncSession()
        self.external = session

    def GetSession(self) -> AsyncSession:
        return self.external if self.external is not None else self.session


def _flat(src: GlobalTensor) -> bool:
    """pto-isa's TPrefetchAsyncIsFlatContiguous1D: one line of packed elements."""
    (d0, d1, d2, d3, d4), (p0, p1, p2, p3, p4) = src.shape, src.stride
    return (p4 == 1 and p3 == d4 and p2 == d3 * p3 and p1 == d2 * p2 and p0 == d1 * p1
            and d0 == d1 == d2 == d3 == 1)


def TPREFETCH_ASYNC(src: GlobalTensor, ctx, *events) -> "AsyncEvent | EmptyAsyncEvent":
    """Stage ``src`` in L2 through the SDMA engine (see the module docstring).  ``ctx``: a
    :class:`PrefetchAsyncContext`, or its workspace alone (a GM pointer, None: none - the C++
    context's, as it crosses the ABI)."""
    core = current_core()
    core.unrecorded("TPREFETCH_ASYNC")
    if events:
        TSYNC(*events)
    if not isinstance(ctx, PrefetchAsyncContext):
        ctx = PrefetchAsyncContext(ctx)
    if core.kind is not CoreKind.AIV:
        raise _err(core, f"TPREFETCH_ASYNC on {core.name}: its context keeps the SDMA bookkeeping in a UB scratch "
                         "tile (PrefetchAsyncContext::scratchTile, a Vec tile at 0x0), which the Cube has not",
                   "prefetch from a Vector core")
    if src.__class__ is not GlobalTensor:
        raise _not_a_tensor(core, src, "TPREFETCH_ASYNC source")
    if src.ptr is None:
        raise src.unassigned("TPREFETCH_ASYNC")
    src.matrix(core.cluster.gm)             # (its bytes within its run argument)
    why = ("the context has no SDMA workspace" if ctx.workspace is None else
           "the tensor is not one flat contiguous line (Shape<1, 1, 1, 1, n>, unit stride)" if not _flat(src) else
           "the tensor is empty" if src.nbytes == 0 else None)
    uw = core.unwritten
    if ctx.workspace is not None and uw is not None and uw.touches(MemSpace.UB, 0, PREFETCH_ASYNC_SCRATCH):
        core.cluster.warn_once(
            f"TPREFETCH_ASYNC: its context's SDMA scratch is UB 0x0..{PREFETCH_ASYNC_SCRATCH - 1:#x} "
            "(pto-isa's PrefetchAsyncContext::scratchTile), where this kernel wrote bytes before: the device "
            "overwrites them with the SDMA runtime's values (ptopipe keeps them) - place the kernel's tiles from "
            f"UB {PREFETCH_ASYNC_SCRATCH:#x} up while it prefetches", core.where())
    if why is not None:
        core.cluster.warn_once(f"TPREFETCH_ASYNC of {src.describe()} submits nothing and returns an empty event "
                               f"(valid() false): {why}", core.where())
        core.issue(PipeUnit.S, core.costs.scalar_op, (), (), "TPREFETCH_ASYNC")
        return EmptyAsyncEvent()
    writes = PREFETCH_ASYNC_SQE_WRITES[core.cluster.platform.id]
    _, end = core.issue(PipeUnit.S, writes * core.costs.scalar_op, (), (), "TPREFETCH_ASYNC")
    psync(core).drain("TPREFETCH_ASYNC's pipe_barrier(PIPE_ALL)")
    return AsyncEvent("TPREFETCH_ASYNC", core, end)


__all__ = ["AsyncEvent", "AsyncSession", "EmptyAsyncEvent", "PrefetchAsyncContext", "TPREFETCH_ASYNC"]
