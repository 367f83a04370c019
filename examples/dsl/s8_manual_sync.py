"""S8: out = A @ B + bias (S1's C2V pipeline) written for the manual synchronisation mode:
every dependency between two pipes of one core is an explicit PTO-AS event
(pl.record_event / pl.wait_event, pto-isa's set_flag / wait_flag).

Cube, per 16-row block i:   load A block (MTE2) -> move to L0A (MTE1) -> matmul (M) -> TPUSH.
Vector, per block:          TPOP -> load bias (MTE2) -> add (V) -> store (MTE3) -> TFREE.

The forward edges (MTE2->MTE1, MTE1->M, M->FIX; MTE2->V, V->MTE3) are recorded and waited
for in the same iteration.  The loop-carried edges (the next load must not overwrite a buffer
the previous move / add still reads: MTE1->MTE2, M->MTE1; V->MTE2, MTE3->V; the next matmul
must not overwrite the accumulator the previous TPUSH still reads: FIX->M) are primed before
the loop (the first iteration has nothing to wait for) and drained after it, so that every
record has its wait on every path and trip count.  The ring instructions order only their
cross-core flags (pto-isa, docs/events.md): the TPUSH reads the accumulator on PIPE_FIX
(hence M->FIX and FIX->M); on A2A3 the TPOP loads the tile on PIPE_MTE2, in order before the
bias load, so the bias's MTE2->V event orders it before the add too, and the add's V->MTE2
event orders it before the TPOP that reloads its staging slot two iterations on.  Runs clean
under ``--sync manual`` (its default, ``sync="manual"``) and auto.

Run:  ptopipe run examples/dsl/s8_manual_sync.py [--platform a5] [--protocol pto-isa]
      ptopipe check examples/dsl/s8_manual_sync.py --variant all
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

TM, K, N = 16, 32, 32
SLOT_SIZE = TM * N * 4
HR = TM // 2                          # one Vector core's UP_DOWN half


def build(M, depth):
    SLOTS = depth

    @pl.aiv
    def vector(bias: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
               fifo: pl.Tensor[[SLOTS * SLOT_SIZE], pl.u8]):
        pipe_buf = pl.reserve_buffer(name="c2v_slot_buffer", size=SLOTS * SLOT_SIZE, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT_SIZE, fifo, c2v_consumer_buf=pipe_buf.base,
                               v2c_consumer_buf=0, slot_num=SLOTS)
        sub = pl.get_subblockid()
        pl.record_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)      # prime: bias buffer free
        pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)      # prime: out buffer free
        for i in pl.range(M // TM):
            row0 = i * TM + sub * HR
            part = pl.TPOP(pipe_buf, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)
            b = pl.load(bias, [row0, 0], [HR, N])
            pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)
            o = pl.add(part, b)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
            pl.TFREE(pipe_buf)
            pl.store(o, [row0, 0], out)
            pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)
        pl.wait_event(pl.PIPE_V, pl.PIPE_MTE2, pl.EVENT_ID0)        # drain the primed events
        pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, pl.EVENT_ID0)

    @pl.aic
    def cube(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[SLOTS * SLOT_SIZE], pl.u8]):
        peer_buf = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT_SIZE, fifo, c2v_consumer_buf=peer_buf.base,
                               v2c_consumer_buf=0, slot_num=SLOTS)
        b_l1 = pl.load(b, [0, 0], [K, N], space=pl.Mat)
        pl.record_event(pl.PIPE_MTE2, pl.PIPE_MTE1, pl.EVENT_ID1)
        pl.wait_event(pl.PIPE_MTE2, pl.PIPE_MTE1, pl.EVENT_ID1)
        b_l0 = pl.move(b_l1, space=pl.Right)
        pl.record_event(pl.PIPE_MTE1, pl.PIPE_MTE2, pl.EVENT_ID0)   # prime: A's L1 block free
        pl.record_event(pl.PIPE_M, pl.PIPE_MTE1, pl.EVENT_ID0)      # prime: L0A free
        pl.record_event(pl.PIPE_FIX, pl.PIPE_M, pl.EVENT_ID0)       # prime: L0C free
        for i in pl.range(M // TM):
            pl.wait_event(pl.PIPE_MTE1, pl.PIPE_MTE2, pl.EVENT_ID0)
            a_l1 = pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat)
            pl.record_event(pl.PIPE_MTE2, pl.PIPE_MTE1, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_MTE2, pl.PIPE_MTE1, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_M, pl.PIPE_MTE1, pl.EVENT_ID0)
            a_l0 = pl.move(a_l1, space=pl.Left)
            pl.record_event(pl.PIPE_MTE1, pl.PIPE_MTE2, pl.EVENT_ID0)
            pl.record_event(pl.PIPE_MTE1, pl.PIPE_M, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_MTE1, pl.PIPE_M, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_FIX, pl.PIPE_M, pl.EVENT_ID0)
            acc = pl.matmul(a_l0, b_l0)
            pl.record_event(pl.PIPE_M, pl.PIPE_MTE1, pl.EVENT_ID0)
            pl.record_event(pl.PIPE_M, pl.PIPE_FIX, pl.EVENT_ID0)
            pl.wait_event(pl.PIPE_M, pl.PIPE_FIX, pl.EVENT_ID0)
            pl.TPUSH(acc, peer_buf, split=pl.TILE_UP_DOWN)           # reads acc on PIPE_FIX
            pl.record_event(pl.PIPE_FIX, pl.PIPE_M, pl.EVENT_ID0)
        pl.wait_event(pl.PIPE_MTE1, pl.PIPE_MTE2, pl.EVENT_ID0)     # drain
        pl.wait_event(pl.PIPE_M, pl.PIPE_MTE1, pl.EVENT_ID0)
        pl.wait_event(pl.PIPE_FIX, pl.PIPE_M, pl.EVENT_ID0)

    return pl.program(cube, vector, name=f"s8_manual_sync_m{M}_d{depth}")


KERNELS = KernelSet(build)


def make_args(rng, M=64, depth=4):
    return dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32), out=np.zeros((M, N), np.float32),
                fifo=ptopipe.gm_buffer(depth * SLOT_SIZE), M=M, depth=depth)


def golden(args, **_):
    return {"out": args["a"] @ args["b"] + args["bias"]}


VARIANTS = {"default": dict(M=64, depth=4), "m16_d1": dict(M=16, depth=1),
            "m128_d2": dict(M=128, depth=2)}

SCENARIO = ptopipe.Scenario("dsl_s8_manual_sync", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__, sync="manual")
