"""Cross-core flags set and waited on by the kernel itself: the CCE intrinsics pto-isa's
cross-core events use and ptoas lowers ``pto.sync.set`` / ``pto.sync.wait`` to (PTOAS
``PTOToEmitC``):

* A2A3 - ``ffts_cross_core_sync(pipe, getFFTSMsg(FFTS_MODE_VAL, id))`` / ``wait_flag_dev(id)``.
  In FFTS mode 2 (the Cube-Vector sync of one cluster) a Cube SET reaches every Vector core
  and a Cube WAIT completes once every Vector core has SET the id; a Vector core's SET reaches
  the Cube, its WAIT takes the Cube's SET.
* A5 - ``set_intra_block(pipe, id)`` / ``wait_intra_block(pipe, id)``.  On the Cube ids 0..15
  are AIV0's flags and 16..31 AIV1's (ptoas mirrors a ``PIPE_FIX`` SET to id + 16 so that both
  Vector cores get it); a Vector core's ids 0..15 are its own flags with the Cube.

And pto-isa's ``SYNCALL<CoreType>()`` (``SyncAll.hpp``; PTO-AS ``pto.syncall``): a barrier of
every core of the launch that ``CoreType`` names (AIV only, AIC only, or both) after a
``pipe_barrier(PIPE_ALL)``, so each participant's memory accesses before it happen before every
participant's accesses after it.  One cluster is simulated, so the participants are its cores
of that kind that run a kernel; one that finishes without reaching the barrier leaves the
others waiting: a deadlock at their SYNCALL.  The barrier counts on flags of its own (an id
outside the hardware's: the device's FFTS sync-all never takes a SET meant for a ring or the
kernel).  The soft form (a GM counter polled by every participant) orders the same way; its
workspace counter is the barrier's own and is not written here.

They count on the simulator's cross-core flags, the ones the ring protocol counts on: a SET
fires once the instructions of its pipe issued before it have completed and orders what
happens before that pipe's next instruction; a WAIT holds the core until a SET arrives
(a WAIT nothing will SET is a deadlock at the WAIT).  A flag a pipe's ring counts on is not
free for the kernel to use: either order of the two is a ConfigError at the later one."""
from __future__ import annotations

import numpy as np

from ..arch.vocab import SyncAllMode, SyncCoreType, SyncPipe
from ..errors import ConfigError, KernelError
from ..sim import CoreKind
from ..sim.core import CoreState
from ..sim.flags import SYNCALL_FLAG
from ..sim.pipesync import check_pipe
from .context import current_core

#: pto-isa a2a3/TSync.hpp: the FFTS mode of a Cube-Vector sync, and the message's fields
FFTS_MODE_VAL = 2
_MODE_OFFSET, _MODE_WIDTH, _ID_OFFSET, _ID_WIDTH, _COUNT_WIDTH = 4, 0x3, 8, 0xF, 0xF
#: A5: the Cube's flag ids of AIV1 are AIV0's + this (pto-isa a5 ``VEC_CORE_ID_OFFSET``)
VEC_CORE_ID_OFFSET = 16


def getFFTSMsg(mode: int, event_id: int, base_const: int = 1) -> int:
    """pto-isa's ``getFFTSMsg``: the FFTS message of a cross-core SET of ``event_id``."""
    return ((base_const & _COUNT_WIDTH) + ((mode & _MODE_WIDTH) << _MODE_OFFSET)
            + ((event_id & _ID_WIDTH) << _ID_OFFSET))


def ffts_cross_core_sync(pipe: SyncPipe, msg: int) -> None:
    """A2A3: SET the cross-core flag of ``msg`` (``getFFTSMsg``) once ``pipe`` is done."""
    core = current_core()
    _platform(core, True, "ffts_cross_core_sync")
    mode = (msg >> _MODE_OFFSET) & _MODE_WIDTH
    if mode != FFTS_MODE_VAL:
        raise KernelError(
            f"ffts_cross_core_sync in FFTS mode {mode}: ptopipe models mode {FFTS_MODE_VAL}, the "
            "Cube-Vector sync of one cluster (modes 0 and 1 sync cores of other clusters)",
            where=str(core.where()), fix=f"use mode {FFTS_MODE_VAL} (ffts_mode = {FFTS_MODE_VAL}, the default)")
    fid = (msg >> _ID_OFFSET) & _ID_WIDTH
    _set(core, pipe, _peers(core), fid, f"ffts_cross_core_sync id {fid}")


def wait_flag_dev(flag_id: int) -> None:
    """A2A3: wait for the cross-core SET of ``flag_id`` (on the Cube: from every Vector core)."""
    core = current_core()
    _platform(core, True, "wait_flag_dev")
    fid = _id(core, flag_id, core.cluster.platform.hw_flag_ids, "wait_flag_dev")
    _wait(core, _peers(core), fid, f"wait_flag_dev({fid})")


def set_intra_block(pipe: SyncPipe, flag_id: int) -> None:
    """A5: SET cross-core flag ``flag_id`` once ``pipe`` is done (the Cube's ids 16..31 are AIV1's)."""
    core = current_core()
    _platform(core, False, "set_intra_block")
    peer, fid = _a5_peer(core, flag_id, "set_intra_block")
    _set(core, pipe, (peer,), fid, f"set_intra_block id {flag_id}")


def wait_intra_block(pipe: SyncPipe, flag_id: int) -> None:
    """A5: wait on ``pipe`` for the cross-core SET of ``flag_id`` (the Cube's 16..31: AIV1's)."""
    core = current_core()
    _platform(core, False, "wait_intra_block")
    check_pipe(core, pipe, "wait_intra_block pipe")
    peer, fid = _a5_peer(core, flag_id, "wait_intra_block")
    _wait(core, (peer,), fid, f"wait_intra_block({pipe.name}, {flag_id})")


#: pto-isa ``SYNCALL_SOFT_WORKSPACE_INT32``: the soft barrier's workspace is one 64-byte line
SOFT_WORKSPACE_INT32 = 16


def SYNCALL(core_type: SyncCoreType = SyncCoreType.AIVOnly, mode: SyncAllMode = SyncAllMode.Hard,
            workspace=None, used_cores: int = 0) -> None:
    """pto-isa ``SYNCALL<CoreType>()`` / ``SYNCALL<Mode, CoreType>(gmWorkspace, usedCores)``:
    wait until every participating core of the launch has reached its SYNCALL; what each did
    before happens before what any does after.  A core ``core_type`` leaves out only drains
    its pipes (pto-isa's ``#if defined(__DAV_VEC__)`` / ``__DAV_CUBE__`` guards)."""
    from .sync import pipe_barrier
    core = current_core()
    if not isinstance(core_type, SyncCoreType) or not isinstance(mode, SyncAllMode):
        raise KernelError(f"SYNCALL({core_type!r}, {mode!r}): core_type is a SyncCoreType, mode a SyncAllMode",
                          where=str(core.where()), fix="e.g. SYNCALL(SyncCoreType.Mix)")
    kinds = {SyncCoreType.AIVOnly: (CoreKind.AIV,), SyncCoreType.AICOnly: (CoreKind.AIC,),
             SyncCoreType.Mix: (CoreKind.AIC, CoreKind.AIV)}[core_type]
    cl = core.cluster
    if cl.context.blocks > 1:
        # the barrier spans every block of the launch, but the blocks run one after another
        raise ConfigError(f"SYNCALL waits for the cores of all {cl.context.blocks} blocks of the launch, and "
                          "ptopipe runs the blocks one after another: a barrier across them cannot be "
                          "simulated", where=str(core.where()),
                          fix="run the kernel as one block (--blocks 1 / blocks=1), or order the blocks' "
                              "GM work without SYNCALL")
    running = [c for c in (cl.aic, cl.aiv(0), cl.aiv(1)) if c.kind in kinds and c.state is not CoreState.IDLE]
    if mode is SyncAllMode.Soft:
        _soft_operands(core, workspace, used_cores, len(running), core_type)
    pipe_barrier(SyncPipe.PIPE_ALL)
    if core.kind not in kinds:
        return
    peers = tuple(c for c in running if c is not core)
    what = f"SYNCALL<{core_type.name}>"
    if peers:
        _set(core, SyncPipe.PIPE_FIX if core.kind is CoreKind.AIC else SyncPipe.PIPE_MTE3, peers, SYNCALL_FLAG,
             what)
        for p in peers:
            f = _flag(core, p, core, SYNCALL_FLAG, what)
            core.wait_flag(f, lambda p=p: f"{what} (waits for {p.name} to reach its SYNCALL)")
    if mode is SyncAllMode.Soft:
        pipe_barrier(SyncPipe.PIPE_ALL)


def _soft_operands(core, workspace, used_cores, n: int, core_type) -> None:
    """The soft barrier's workspace (an int32 GlobalTensor of at least one 64-byte line) and
    participant count (0: the launch's; else it must be the launch's ``n``: more never
    arrive - the device polls until its timeout -, fewer release the barrier early)."""
    from .tensor import GlobalTensor
    where = str(core.where())
    if not isinstance(workspace, GlobalTensor) or workspace.dtype != np.int32 or \
            int(np.prod(workspace.shape)) < SOFT_WORKSPACE_INT32:
        raise ConfigError(f"soft SYNCALL needs its GM workspace as an int32 tensor of at least "
                          f"{SOFT_WORKSPACE_INT32} elements (one 64-byte line), got {workspace!r}",
                          where=where, fix=f"pass an int32 GM tensor of {SOFT_WORKSPACE_INT32} elements, zeroed")
    if isinstance(used_cores, bool) or not isinstance(used_cores, (int, np.integer)) or used_cores < 0:
        raise KernelError(f"soft SYNCALL used_cores {used_cores!r} is not a core count", where=where,
                          fix="give 0 (the launch's count) or the number of participating cores")
    if used_cores and used_cores != n:
        raise ConfigError(
            f"soft SYNCALL<{core_type.name}> with used_cores = {used_cores}, but the launch has {n} participating "
            f"core(s) (ptopipe simulates one cluster): the barrier would "
            + ("wait for cores that never arrive" if used_cores > n else "release before every core arrived"),
            where=where, fix=f"pass used_cores = 0 (the launch's count) or {n}")


def _platform(core, a2a3: bool, name: str) -> None:
    if core.cluster.platform.ring_in_gm != a2a3:
        other = "set_intra_block / wait_intra_block" if a2a3 else "ffts_cross_core_sync / wait_flag_dev"
        raise KernelError(f"{name} is the {'A2A3' if a2a3 else 'A5'} cross-core flag intrinsic, run on "
                          f"{core.cluster.platform.name}", where=str(core.where()),
                          fix=f"on {core.cluster.platform.name} use {other}")


def _id(core, flag_id, limit: int, name: str) -> int:
    if isinstance(flag_id, bool) or not isinstance(flag_id, int) or not 0 <= flag_id < limit:
        raise KernelError(f"{name}: cross-core flag id {flag_id!r} is outside 0..{limit - 1}",
                          where=str(core.where()), fix=f"use a flag id 0..{limit - 1}")
    return flag_id


def _peers(core) -> tuple:
    """The cores an A2A3 mode-2 SET of ``core`` reaches (and its WAIT waits for): the Cube for
    a Vector core; for the Cube every Vector core that runs a kernel."""
    cl = core.cluster
    if core.kind is not CoreKind.AIC:
        return (cl.aic,)
    return tuple(c for c in (cl.aiv(0), cl.aiv(1)) if c.state is not CoreState.IDLE)


def _a5_peer(core, flag_id, name: str) -> tuple:
    """(peer core, flag id) of an A5 intra-block flag id of ``core``."""
    cl = core.cluster
    n = cl.platform.hw_flag_ids
    if core.kind is CoreKind.AIC:
        fid = _id(core, flag_id, 2 * VEC_CORE_ID_OFFSET, name)
        return cl.aiv(fid // VEC_CORE_ID_OFFSET), fid % VEC_CORE_ID_OFFSET
    return cl.aic, _id(core, flag_id, n, name)


def _flag(core, sender, receiver, fid: int, what: str):
    f = core.cluster.flag(sender, receiver, fid)
    ch = f.owner
    if ch is not None:
        from .pipe.binding import flag_taken_fix
        raise ConfigError(
            f"{what} uses {f.name}, which {ch.name} counts on (under the {ch.model.name} protocol): "
            "the ring and the kernel would take each other's SETs", where=str(core.where()),
            fix=flag_taken_fix(core.cluster, ch, fid))
    if f.sync_at is None:
        f.sync_at = str(core.where())
    return f


def _set(core, pipe: SyncPipe, receivers, fid: int, what: str) -> None:
    unit = check_pipe(core, pipe, f"{what.split()[0]} pipe")
    flags = [_flag(core, core, r, fid, what) for r in receivers]
    at = str(core.where())
    for f in flags:
        f.set_at = at
    end = core.issue_s(unit, core.costs.flag_op, what.split()[0])
    po = core.porder          # (the race checker: what happens before the SET, on its pipe)
    order = po.last if po is not None else None
    for f in flags:
        core.cluster.set_flag(core, f, end, order)


def _wait(core, senders, fid: int, what: str) -> None:
    for s in senders:
        f = _flag(core, s, core, fid, what)
        core.wait_flag(f, lambda s=s: f"{what} (wait cross-core flag {fid} from {s.name})")


__all__ = ["FFTS_MODE_VAL", "SYNCALL", "SyncAllMode", "SyncCoreType", "ffts_cross_core_sync", "getFFTSMsg", "set_intra_block", "wait_flag_dev",
           "wait_intra_block"]
