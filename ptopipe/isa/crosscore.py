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

They count on the simulator's cross-core flags, the ones the ring protocol counts on: a SET
fires once the instructions of its pipe issued before it have completed and orders what
happens before that pipe's next instruction; a WAIT holds the core until a SET arrives
(a WAIT nothing will SET is a deadlock at the WAIT).  A flag a pipe's ring counts on is not
free for the kernel to use: either order of the two is a ConfigError at the later one."""
from __future__ import annotations

from ..arch.vocab import SyncPipe
from ..errors import ConfigError, KernelError
from ..sim import CoreKind
from ..sim.core import CoreState
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
    end = core.issue_s(unit, core.costs.flag_op, what.split()[0])
    po = core.porder          # (the race checker: what happens before the SET, on its pipe)
    order = po.last if po is not None else None
    for f in flags:
        core.cluster.set_flag(core, f, end, order)


def _wait(core, senders, fid: int, what: str) -> None:
    for s in senders:
        f = _flag(core, s, core, fid, what)
        core.wait_flag(f, lambda s=s: f"{what} (wait cross-core flag {fid} from {s.name})")


__all__ = ["FFTS_MODE_VAL", "ffts_cross_core_sync", "getFFTSMsg", "set_intra_block", "wait_flag_dev",
           "wait_intra_block"]
