"""VerifyPipes, the two kernels together: can their cross-core op orders complete?

Each core's pipe ops on its one explored path (a kernel of straight-line code and loops of
static trip count, no branch on data) - TPUSH, TPOP, TFREE per direction, in program order -
are run against each other with seed 003's ring rules: a TPUSH needs a free slot of its
ring (pushed - freed < SLOT_NUM, per Vector lane), a TPOP a pushed tile (pushed > popped);
a Cube op on a two-lane ring takes part for both lanes.  When no core can go on and some
have not finished, the kernels wait for each other forever (a hang on the device, the
simulator's DeadlockError): one finding at the op each stuck core waits in.  Pipe ops under
a loop of unknown trip count or a data-dependent branch are not run (several paths; the
simulator's deadlock detector covers them)."""
from __future__ import annotations

from ..arch.vocab import Direction

C2V, V2C = Direction.DIR_C2V, Direction.DIR_V2C
_PRODUCER = {C2V: None, V2C: "aiv"}      # who pushes: None = the Cube, "aiv" = each lane


def stuck_cores(traces: dict, lanes: tuple, slot_num: dict) -> dict:
    """``traces``: core -> [(kind, ring, op)] (core None = the AIC, 0 / 1 = AIV lanes);
    ``slot_num``: ring -> SLOT_NUM (every ring of the traces).  Returns {core: (kind, ring, op)} of the cores
    stuck when no core can go on, or {} when every trace completes."""
    pushed = {(d, ln): 0 for d in slot_num for ln in lanes}
    popped, freed = dict(pushed), dict(pushed)
    pos = {core: 0 for core in traces}

    def ready(core, kind, d) -> bool:
        mine = lanes if core is None else (core,)
        if kind == "push":
            return all(pushed[d, ln] - freed[d, ln] < slot_num[d] for ln in mine)
        if kind == "pop":
            return all(pushed[d, ln] > popped[d, ln] for ln in mine)
        return True

    def step(core, kind, d) -> None:
        for ln in (lanes if core is None else (core,)):
            {"push": pushed, "pop": popped, "free": freed}[kind][d, ln] += 1

    moved = True
    while moved:
        moved = False
        for core, trace in traces.items():
            while pos[core] < len(trace) and ready(core, *trace[pos[core]][:2]):
                step(core, *trace[pos[core]][:2])
                pos[core] += 1
                moved = True
    return {core: traces[core][pos[core]] for core in traces if pos[core] < len(traces[core])}
