"""M28: protocol="pto-isa", SlotNum 4 (SyncPeriod 4 / 2 = 2), address flow.  AIV0 pops three
slots, frees the oldest and pops two more before freeing the rest.  Under the spec protocol
that is fine (push #4 needs one TFREE).  Under pto-isa the consumer notifies the producer only
every SyncPeriod TFREEs: push #4 waits for notification #1, sent at TFREE #2, but AIV0 has made
one TFREE and waits for push #4's data - a deadlock whose report names the withheld credit and
the arithmetic, not a missing TFREE.  (pto-isa's TFREE tests the index of the latest TPOP, #2
here, which does not end a period either.  A window kept by popping the next slot before
freeing the oldest is another matter: that TFREE tests the next slot's index and sends the
credit early - the producer overwrites a slot still held.)

Run:  ptopipe check examples/misuse/m28_sync_period_credit.py [--platform a5]
"""
from ptopipe.isa import *
from _common import SLOT, T, scenario

N = 6


def _pipe(fifo):
    d = DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V
    return TPipe(0, d, SLOT, 4, peers=(0,))(fifo)


def cube(x, fifo):
    pipe = _pipe(fifo)
    v = Tile(TileType.Mat, float32, T, T, addr=0x0)
    slot = GlobalTensor(float32, (T, T))
    TLOAD(v, x)
    for i in range(N):
        TALLOC(pipe, slot)                # M28: push #4 waits for a credit never sent  <- where
        TSTORE(slot, v)
        TPUSH(pipe, slot)


def vector(fifo, out):
    pipe = _pipe(fifo)
    slots = [GlobalTensor(float32, (T, T)) for _ in range(N)]
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(3):
        TPOP(pipe, slots[i])
    TLOAD(o, slots[0])
    TFREE(pipe, slots[0])
    TPOP(pipe, slots[3])
    TPOP(pipe, slots[4])                  # M28: pops a fifth slot holding three
    for i in range(1, 5):
        TLOAD(o, slots[i])
        TFREE(pipe, slots[i])
    TPOP(pipe, slots[5])
    TLOAD(o, slots[5])
    TFREE(pipe, slots[5])
    TSTORE(out, o)


SCENARIO = scenario("m28_sync_period_credit", cube, (vector, None), __doc__, protocol="pto-isa")
